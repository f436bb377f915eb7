//! Resource limits for a group of sandboxed processes (a team server's tenant): how many
//! processes they may have at once, how much memory they may use together, and their share of
//! the CPU when the machine is busy (the same for every group: a tenant running a hundred
//! processes gets as much as one running one), through the host's cgroups. Each process joins its group before `bwrap` starts (a shell writes its own
//! pid into the group and then runs `bwrap` in its place), so nothing it starts is outside.
//!
//! cgroup v1 (separate `pids` and `memory` hierarchies, as on these hosts) is used where the
//! server may create groups beneath its own; on a cgroup v2 host, groups beneath the server's
//! own cgroup, which needs the `pids` and `memory` controllers delegated to it. Where neither
//! works, [`Cgroup::create`] says why: limits that were asked for are never silently dropped.

use std::path::{Path, PathBuf};

/// What a group's processes may use together; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_processes: Option<u64>,
    pub max_memory_bytes: Option<u64>,
    /// The group's weight against the others' when the CPU is contended (cgroup v2's
    /// `cpu.weight` scale: 1-10000, 100 the usual).
    pub cpu_weight: Option<u64>,
}

impl Limits {
    pub fn any(&self) -> bool {
        self.max_processes.is_some() || self.max_memory_bytes.is_some() || self.cpu_weight.is_some()
    }
}

/// One group, in every hierarchy that carries one of its limits. Removed (when empty) on drop.
#[derive(Debug, PartialEq, Eq)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
}

/// Where this process's groups are made: `skipper-<pid>` beneath its own cgroup.
fn own_root(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v1 = Path::new("/sys/fs/cgroup").join(controller);
    if v1.join("cgroup.procs").exists() {
        // `ID:controllers:path`, the controllers comma-separated.
        let path = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers.split(',').any(|c| c == controller).then(|| path.trim_start_matches('/').to_string())
        })?;
        return Some(v1.join(path));
    }
    let unified = Path::new("/sys/fs/cgroup");
    if unified.join("cgroup.controllers").exists() {
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        return Some(unified.join(path.trim_start_matches('/')));
    }
    None
}

/// Removes the (empty) groups of servers that are gone: `skipper-<pid>` with no such process.
fn sweep_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("skipper-").and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        if let Ok(children) = std::fs::read_dir(entry.path()) {
            for child in children.flatten().filter(|c| c.path().is_dir()) {
                let _ = std::fs::remove_dir(child.path());
            }
        }
        let _ = std::fs::remove_dir(entry.path());
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing {}: {e}", path.display()))
}

impl Cgroup {
    /// The group `name` of this server, with `limits` (at least one set).
    pub fn create(name: &str, limits: &Limits) -> Result<Self, String> {
        let group = format!("skipper-{}", std::process::id());
        // Built up as the directories are made, so that a failure part way removes them again.
        let mut made = Self { dirs: Vec::new() };
        let mut wanted: Vec<(&str, &str, String)> = Vec::new();
        if let Some(n) = limits.max_processes {
            wanted.push(("pids", "pids.max", n.to_string()));
        }
        if let Some(bytes) = limits.max_memory_bytes {
            let v1 = Path::new("/sys/fs/cgroup/memory").exists();
            wanted.push(("memory", if v1 { "memory.limit_in_bytes" } else { "memory.max" }, bytes.to_string()));
        }
        if let Some(weight) = limits.cpu_weight {
            let weight = weight.clamp(1, 10_000);
            // v1 `cpu.shares`: 1024 is the usual share, as 100 is the usual weight.
            match Path::new("/sys/fs/cgroup/cpu").exists() {
                true => wanted.push(("cpu", "cpu.shares", (weight * 1024 / 100).max(2).to_string())),
                false => wanted.push(("cpu", "cpu.weight", weight.to_string())),
            }
        }
        for (controller, file, value) in wanted {
            let root =
                own_root(controller).ok_or_else(|| format!("this host has no {controller} cgroup controller"))?;
            sweep_stale(&root);
            let dir = root.join(&group).join(name);
            std::fs::create_dir_all(&dir).map_err(|e| format!("creating cgroup {}: {e}", dir.display()))?;
            if !made.dirs.contains(&dir) {
                made.dirs.push(dir.clone());
            }
            write(&dir.join(file), &value)?;
        }
        Ok(made)
    }

    /// The files a process writes its pid to to join this group (in every hierarchy); the
    /// sandbox's launcher does so before it becomes `bwrap` (`Policy::wrap`), so the process is
    /// in the group from its first instruction on.
    pub(crate) fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Only an empty group can go; one whose processes are still ending stays behind,
        // empty, and costs nothing.
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
            if let Some(parent) = dir.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Whether this host lets the test make a pids group (it skips, saying so, where not).
    fn groups_here() -> bool {
        match Cgroup::create("probe", &Limits { max_processes: Some(100), ..Default::default() }) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("skipped: {e}");
                false
            }
        }
    }

    #[test]
    fn a_groups_processes_are_counted_and_capped_from_the_start() {
        if !groups_here() {
            return;
        }
        let group = Cgroup::create("capped", &Limits { max_processes: Some(8), ..Default::default() }).unwrap();
        let group = std::sync::Arc::new(group);
        let policy = crate::Policy { cgroup: Some(group.clone()), ..Default::default() };
        let script = "echo inside=$(grep -c skipper- /proc/self/cgroup); for i in $(seq 30); do sleep 2 & done; wait";
        let (program, args) = policy.launch("/bin/sh".into(), vec!["-c".into(), script.into()]);
        let out = std::process::Command::new(program).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("inside=1"), "the command ran inside the group: {text}");
        assert!(text.contains("fork"), "past 8 processes a fork fails: {text}");
        let pids = std::fs::read_to_string(group.dirs[0].join("pids.max")).unwrap();
        assert_eq!(pids.trim(), "8");
    }

    #[test]
    fn a_groups_cpu_share_is_its_weight_and_its_processes_are_in_it() {
        if !groups_here() {
            return;
        }
        let group = match Cgroup::create("weighted", &Limits { cpu_weight: Some(50), ..Default::default() }) {
            Ok(g) => std::sync::Arc::new(g),
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let dir = &group.dirs[0];
        let (file, want) = if dir.join("cpu.shares").exists() { ("cpu.shares", "512") } else { ("cpu.weight", "50") };
        assert_eq!(std::fs::read_to_string(dir.join(file)).unwrap().trim(), want);
        let policy = crate::Policy { cgroup: Some(group.clone()), ..Default::default() };
        let (program, args) = policy.launch("/bin/cat".into(), vec!["/proc/self/cgroup".into()]);
        let out = std::process::Command::new(program).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let group_path = dir.to_string_lossy();
        let tail = group_path.split("skipper-").nth(1).unwrap();
        assert!(text.lines().any(|l| l.contains("cpu") && l.ends_with(&format!("skipper-{tail}"))), "{text}");
    }
}
