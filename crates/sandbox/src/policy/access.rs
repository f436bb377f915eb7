//! Whether a path is one a sandboxed process could write, or read: the server's own file tools
//! ask this for a session whose commands run sandboxed, so that what the sandbox would stop in
//! `bash` is not done by `create`, `edit` or `view` instead (the original checks its built-in
//! tools against the same policy).

use std::path::{Path, PathBuf};

use super::{real, Policy, SYSTEM};

/// Why a write falls outside a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteRefusal {
    /// Under none of the writable paths. `grant` is the folder (or file) to add to the writable
    /// paths to let it: the nearest part of the path that exists, resolved, since a sandbox can
    /// only mount what exists.
    Outside { grant: PathBuf },
    /// Under one of the denied paths: no grant lets it.
    Denied,
}

impl Policy {
    /// Why a process of this policy started in `cwd` could not write `path`; `None` if it could.
    pub fn write_refusal(&self, path: &Path, cwd: &Path) -> Option<WriteRefusal> {
        let (existing, target) = landing(path);
        let Some(target) = target else { return Some(WriteRefusal::Outside { grant: existing }) };
        if self.is_denied(&target) {
            return Some(WriteRefusal::Denied);
        }
        let cwd = real(cwd);
        let mut roots = self.writable.iter().map(|w| real(w)).chain(self.tmp.iter().map(|t| real(t)));
        if roots.any(|root| target.starts_with(root)) || self.workspace_of(&cwd).is_some_and(|w| target.starts_with(w))
        {
            return None;
        }
        Some(WriteRefusal::Outside { grant: existing })
    }
}

/// Why a read falls outside a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRefusal {
    /// Under none of the paths a sandboxed process sees.
    Outside,
    /// Under one of the denied paths.
    Denied,
}

impl Policy {
    /// Why a process of this policy started in `cwd` could not read `path`; `None` if it could.
    /// What it sees: the system, the paths it may read or write, its `/tmp`, and its working
    /// directory. Not `/proc` and `/dev`: its own are not the server's.
    pub fn read_refusal(&self, path: &Path, cwd: &Path) -> Option<ReadRefusal> {
        let Some(target) = landing(path).1 else { return Some(ReadRefusal::Outside) };
        if self.is_denied(&target) {
            return Some(ReadRefusal::Denied);
        }
        let cwd = real(cwd);
        let system = SYSTEM.iter().map(|d| real(Path::new(d)));
        let mut roots = system
            .chain(self.readable.iter().chain(&self.writable).chain(&self.tmp).map(|p| real(p)))
            .chain(std::iter::once(self.workspace_of(&cwd).unwrap_or(cwd)));
        match roots.any(|root| target.starts_with(root)) {
            true => None,
            false => Some(ReadRefusal::Outside),
        }
    }
}

impl Policy {
    /// Whether `target` (resolved) is beneath one of the denied paths.
    fn is_denied(&self, target: &Path) -> bool {
        self.denied.iter().map(|d| real(d)).any(|d| target.starts_with(d))
    }
}

/// Where an access of `path` lands: the longest leading part of it that exists, resolved, and
/// the whole path beneath that. No whole path when `..` follows a folder that does not exist:
/// it cannot be resolved, and is never let through.
fn landing(path: &Path) -> (PathBuf, Option<PathBuf>) {
    let (existing, rest) = nearest_existing(path);
    if rest.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return (existing, None);
    }
    let target = existing.join(rest);
    (existing, Some(target))
}

/// The longest leading part of `path` that exists, resolved, and what follows it as written.
fn nearest_existing(path: &Path) -> (PathBuf, PathBuf) {
    let parts: Vec<_> = path.components().collect();
    for split in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..split].iter().collect();
        if let Ok(resolved) = std::fs::canonicalize(&head) {
            return (resolved, parts[split..].iter().collect());
        }
    }
    (PathBuf::new(), path.to_path_buf())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy(dir: &Path) -> Policy {
        Policy {
            cwd_writable: true,
            writable: vec![dir.join("out")],
            denied: vec![dir.join("work/secret")],
            tmp: Some(dir.join("tmp")),
            ..Default::default()
        }
    }

    #[test]
    fn the_working_directory_the_writable_paths_and_tmp_may_be_written() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["work/secret", "out", "tmp", "elsewhere"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let p = policy(dir.path());
        let cwd = dir.path().join("work");
        for ok in ["work/a.txt", "work/new/deeper/b.txt", "out/c.txt", "tmp/d"] {
            assert_eq!(p.write_refusal(&dir.path().join(ok), &cwd), None, "{ok}");
        }
        let real_dir = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            p.write_refusal(&dir.path().join("elsewhere/x.txt"), &cwd),
            Some(WriteRefusal::Outside { grant: real_dir.join("elsewhere") })
        );
        // A missing folder is granted through the nearest one that exists.
        assert_eq!(
            p.write_refusal(&dir.path().join("elsewhere/new/x.txt"), &cwd),
            Some(WriteRefusal::Outside { grant: real_dir.join("elsewhere") })
        );
        assert_eq!(p.write_refusal(&dir.path().join("work/secret/k"), &cwd), Some(WriteRefusal::Denied));
        // Without the working directory, it is outside too.
        let no_cwd = Policy { cwd_writable: false, ..policy(dir.path()) };
        assert!(matches!(no_cwd.write_refusal(&cwd.join("a.txt"), &cwd), Some(WriteRefusal::Outside { .. })));
    }

    #[test]
    fn reads_see_the_system_the_granted_paths_and_the_working_directory_but_no_denied_path() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["work/secret", "out", "tmp", "ro", "elsewhere"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let p = Policy { cwd_writable: false, readable: vec![dir.path().join("ro")], ..policy(dir.path()) };
        let cwd = dir.path().join("work");
        for ok in ["work/a.txt", "out/b", "tmp/c", "ro/d"] {
            assert_eq!(p.read_refusal(&dir.path().join(ok), &cwd), None, "{ok}");
        }
        assert_eq!(p.read_refusal(Path::new("/usr/bin/env"), &cwd), None);
        assert_eq!(p.read_refusal(&dir.path().join("work/secret/k"), &cwd), Some(ReadRefusal::Denied));
        assert_eq!(p.read_refusal(&dir.path().join("work/secret"), &cwd), Some(ReadRefusal::Denied));
        assert_eq!(p.read_refusal(&dir.path().join("elsewhere/x"), &cwd), Some(ReadRefusal::Outside));
        assert_eq!(p.read_refusal(Path::new("/proc/self/environ"), &cwd), Some(ReadRefusal::Outside));
        std::os::unix::fs::symlink(dir.path().join("work/secret"), dir.path().join("work/link")).unwrap();
        assert_eq!(p.read_refusal(&cwd.join("link/k"), &cwd), Some(ReadRefusal::Denied), "a link leads where it leads");
    }

    #[test]
    fn a_link_or_dot_dot_is_judged_by_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["work", "elsewhere"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join("work/link")).unwrap();
        let p = policy(dir.path());
        let cwd = dir.path().join("work");
        let real_dir = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            p.write_refusal(&cwd.join("link/x.txt"), &cwd),
            Some(WriteRefusal::Outside { grant: real_dir.join("elsewhere") })
        );
        assert!(p.write_refusal(&cwd.join("../elsewhere/x.txt"), &cwd).is_some());
        assert!(p.write_refusal(&cwd.join("missing/../../elsewhere/x.txt"), &cwd).is_some());
    }
}
