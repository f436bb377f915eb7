//! A session's sandbox policy and the `bwrap` command line that applies it.
//!
//! The process sees a read-only system (programs, libraries, `/etc`), its own `/proc` and
//! `/dev`, the directories its policy lets it read or write, and nothing else of the host: no
//! other workspace, no server home, no other process. Mounts are applied in order, later over
//! earlier, so a denied path inside a writable one stays denied.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::host::host_support;
use crate::net::bridge::{BRIDGE_ARG, INSIDE_EXE, INSIDE_SOCKET};

mod access;
pub use access::{ReadRefusal, WriteRefusal};

/// What every sandboxed process reads (never writes). On merged-`/usr` hosts `/bin` and the
/// like are symlinks into `/usr`; they are recreated as symlinks.
const SYSTEM: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

/// What a session's processes may do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// Workspaces: of those that hold the working directory, the innermost is writable.
    pub workspaces: Vec<PathBuf>,
    /// With no workspace holding it, whether the working directory itself is writable.
    pub cwd_writable: bool,
    /// Whether a process may start only inside one of `workspaces` (a team server's tenant: a
    /// working directory elsewhere, such as another tenant's, would be bound into its view).
    pub within_workspaces: bool,
    /// Directories (or files) they may always write, such as the session's own directory.
    pub writable: Vec<PathBuf>,
    /// Directories (or files) they may read beyond the system.
    pub readable: Vec<PathBuf>,
    /// Paths hidden even inside a readable or writable one.
    pub denied: Vec<PathBuf>,
    /// The session's own temporary directory, seen as `/tmp` by all of its processes; a
    /// fresh empty `/tmp` per process when there is none.
    pub tmp: Option<PathBuf>,
    /// Whether they may use the network (otherwise they get a network namespace of their own,
    /// with nothing but a loopback device).
    pub network: bool,
    /// Without `network`: the proxy they reach the network through, with its host rules
    /// ([`crate::net`]); none, nothing beyond their own loopback.
    pub proxy: Option<std::sync::Arc<crate::net::Proxy>>,
    /// Whether what the server does in-process for the session (its HTTP MCP servers) may
    /// reach loopback, private and other internal addresses ([`crate::egress`]).
    pub internal_network: bool,
    /// When set, only these environment variables reach them (see [`crate::SAFE_ENV`]).
    pub env_allow: Option<Vec<String>>,
    /// Variables that never reach them (tokens the host keeps for itself).
    pub env_deny: Vec<String>,
    /// The group whose resource limits its processes share (a team server's tenant's).
    pub cgroup: Option<std::sync::Arc<crate::Cgroup>>,
    /// System calls refused to its processes (a shared server's); none when unset.
    pub seccomp: Option<std::sync::Arc<crate::Seccomp>>,
    /// Whether a user may let one operation past this policy when asked (the original's
    /// `allowBypass`); never on a team server's floor.
    pub bypass: bool,
    /// Why no process can start under this policy (a rule this sandbox cannot enforce); every
    /// start fails with it rather than run less confined than asked.
    pub refusal: Option<String>,
}

/// A command line ready to spawn: `program args…` with exactly `env`.
#[derive(Debug, Clone, PartialEq)]
pub struct Wrapped {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
}

impl Policy {
    /// The command that runs `program args…` in `cwd` under this policy, with `env` filtered
    /// as the policy says. Fails (with the reason, to show the user) where the host cannot
    /// sandbox: a policy is never silently dropped.
    pub fn wrap(
        &self,
        program: &OsStr,
        args: &[OsString],
        cwd: &Path,
        env: &[(String, String)],
    ) -> Result<Wrapped, String> {
        if let Some(refusal) = &self.refusal {
            return Err(refusal.clone());
        }
        if self.within_workspaces && self.workspace_of(&real(cwd)).is_none() {
            return Err(format!(
                "{} is outside the session's workspace; its processes start only inside it",
                cwd.display()
            ));
        }
        let support = host_support();
        let Some(bwrap) = &support.bwrap else {
            return Err(support.reason.clone().unwrap_or_else(|| "the command sandbox is unavailable".into()));
        };
        if let Some(tmp) = &self.tmp {
            // Made on the first process that needs it; a failure shows as bwrap's own error.
            let _ = std::fs::create_dir_all(tmp);
        }
        let (program, args) = self.launch(bwrap.clone(), self.bwrap_args(program, args, cwd));
        Ok(Wrapped { program, args, env: crate::env::build(env, self.env_allow.as_deref(), &self.env_deny) })
    }

    /// `bwrap args…` as it is started: directly, or (with a resource group or a seccomp
    /// filter) by a shell that first moves itself into the group and opens the filters on the
    /// descriptors `bwrap` reads them from, then becomes `bwrap`. It fails (126) rather than
    /// run outside the group; a filter it cannot open fails the command.
    pub(crate) fn launch(&self, bwrap: PathBuf, args: Vec<OsString>) -> (PathBuf, Vec<OsString>) {
        let procs = self.cgroup.as_ref().map(|g| g.procs_files()).unwrap_or_default();
        let filters = self.seccomp.as_ref().map(|s| s.files().to_vec()).unwrap_or_default();
        if procs.is_empty() && filters.is_empty() {
            return (bwrap, args);
        }
        let mut script = String::new();
        for _ in &procs {
            script.push_str("echo $$ > \"$1\" || exit 126; shift; ");
        }
        let mut redirects = String::new();
        for (i, fd) in crate::seccomp::FDS.iter().enumerate().take(filters.len()) {
            script.push_str(&format!("f{i}=$1; shift; "));
            redirects.push_str(&format!(" {fd}<\"$f{i}\""));
        }
        script.push_str("exec \"$@\"");
        script.push_str(&redirects);
        let mut out: Vec<OsString> = vec!["-c".into(), script.into(), "sh".into()];
        out.extend(procs.into_iter().map(PathBuf::into_os_string));
        out.extend(filters.into_iter().map(PathBuf::into_os_string));
        out.push(bwrap.into_os_string());
        out.extend(args);
        (PathBuf::from("/bin/sh"), out)
    }

    fn bwrap_args(&self, program: &OsStr, args: &[OsString], cwd: &Path) -> Vec<OsString> {
        let mut out = Args::default();
        // Killed with whoever started it; its own user, PID, IPC, UTS, cgroup and network
        // namespaces; no capabilities (bwrap also sets no_new_privs, so nothing inside can
        // gain privileges through setuid programs).
        out.flag("--die-with-parent").flag("--unshare-all").flag("--cap-drop").flag("ALL");
        for a in self.seccomp.iter().flat_map(|s| s.bwrap_args()) {
            out.flag(&a);
        }
        if self.network {
            out.flag("--share-net");
        }
        for dir in SYSTEM.iter().map(Path::new) {
            match std::fs::read_link(dir) {
                Ok(target) => out.flag("--symlink").path(&target).path(dir),
                Err(_) if dir.is_dir() => out.flag("--ro-bind").path(dir).path(dir),
                Err(_) => &mut out,
            };
        }
        out.flag("--proc").flag("/proc").flag("--dev").flag("/dev");
        match &self.tmp {
            Some(tmp) => out.flag("--bind").path(tmp).flag("/tmp"),
            None => out.flag("--tmpfs").flag("/tmp"),
        };
        if self.network {
            // DNS: /etc/resolv.conf often points into /run, which is not bound otherwise.
            if let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf") {
                if !resolv.starts_with("/etc") {
                    out.flag("--ro-bind-try").path(&resolv).path(&resolv);
                }
            }
        }
        for p in &self.readable {
            let p = real(p);
            out.flag("--ro-bind-try").path(&p).path(&p);
        }
        let cwd = real(cwd);
        let workspace = self.workspace_of(&cwd);
        if workspace.is_none() {
            // Not writable, but the process starts there: it may look.
            out.flag("--ro-bind-try").path(&cwd).path(&cwd);
        }
        for p in self.writable.iter().map(|p| real(p)).chain(workspace) {
            out.flag("--bind-try").path(&p).path(&p);
        }
        for p in &self.denied {
            let p = real(p);
            if p.is_dir() {
                out.flag("--tmpfs").path(&p);
            } else if p.exists() {
                out.flag("--ro-bind").flag("/dev/null").path(&p);
            }
        }
        let proxy = self.proxy.as_ref().filter(|_| !self.network);
        if let Some(proxy) = proxy {
            // The bridge (this binary) and the proxy's socket: its only way out.
            out.flag("--ro-bind").path(proxy.exe()).flag(INSIDE_EXE);
            out.flag("--bind").path(proxy.socket()).flag(INSIDE_SOCKET);
        }
        out.flag("--chdir").path(&cwd).flag("--");
        if proxy.is_some() {
            out.flag(INSIDE_EXE).flag(BRIDGE_ARG).flag(INSIDE_SOCKET);
        }
        out.os(program);
        for a in args {
            out.os(a);
        }
        out.0
    }
}

impl Policy {
    /// The writable workspace for a process started in `cwd` (resolved), if any.
    fn workspace_of(&self, cwd: &Path) -> Option<PathBuf> {
        let roots = self.workspaces.iter().map(|w| real(w));
        let root = roots.filter(|w| cwd.starts_with(w)).max_by_key(|w| w.as_os_str().len());
        root.or_else(|| self.cwd_writable.then(|| cwd.to_path_buf()))
    }
}

/// `p` with its symlinks resolved when it exists: a bind's source and target must be the path
/// the process will use, and the working directory must be inside the binds.
fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, s: &str) -> &mut Self {
        self.0.push(s.into());
        self
    }
    fn path(&mut self, p: &Path) -> &mut Self {
        self.0.push(p.as_os_str().to_owned());
        self
    }
    fn os(&mut self, s: &OsStr) -> &mut Self {
        self.0.push(s.to_owned());
        self
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
