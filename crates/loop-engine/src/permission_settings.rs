//! What hosts tell the server about permissions beyond approve/deny answers: each session's
//! allowed directories, URL and rule settings (`session.permissions.*`, kept on its handle:
//! the handle's `with_permissions`), and the engine's per-location tool approvals and
//! trusted folders ([`ServerPermissions`]). The approval flow itself is `permission.rs`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use protocol::generated::types::PermissionRule;

use crate::mutex::lock;

#[derive(Debug, Clone, Default)]
pub struct SessionPermissions {
    pub primary: PathBuf,
    /// The primary directory first, then the others in the order they were allowed.
    pub directories: Vec<PathBuf>,
    pub unrestricted_paths: bool,
    pub unrestricted_urls: bool,
    pub allowed_urls: Vec<String>,
    pub approved: Vec<PermissionRule>,
    pub denied: Vec<PermissionRule>,
    pub required: bool,
    pub approve_all_reads: bool,
    /// The session's own directory (its plan, files, checkpoints): the file tools read and
    /// write there without asking, as the original's do.
    pub own: Option<PathBuf>,
}

impl SessionPermissions {
    /// A session's defaults: its working directory and the temporary directory.
    pub fn for_cwd(cwd: &Path) -> Self {
        let primary = normalize(cwd);
        let directories = vec![primary.clone(), normalize(&std::env::temp_dir())];
        Self { primary, directories, ..Default::default() }
    }

    pub fn allow(&mut self, dir: &Path) {
        let dir = normalize(dir);
        if !self.directories.contains(&dir) {
            self.directories.push(dir);
        }
    }

    pub fn set_primary(&mut self, dir: &Path) {
        self.primary = normalize(dir);
        self.directories.retain(|d| d != &self.primary);
        self.directories.insert(0, self.primary.clone());
    }

    pub fn within_allowed(&self, path: &Path) -> bool {
        let path = normalize(path);
        self.unrestricted_paths || self.directories.iter().any(|d| path.starts_with(d))
    }

    /// Whether `path` is in the session's own directory.
    pub fn within_own(&self, path: &Path) -> bool {
        self.own.as_ref().is_some_and(|own| normalize(path).starts_with(own))
    }

    pub fn within_workspace(&self, path: &Path) -> bool {
        normalize(path).starts_with(&self.primary)
    }
}

/// What outlives a session: tool approvals per location (a repository or directory) and
/// trusted folders, each behind its own short lock.
#[derive(Default)]
pub struct ServerPermissions {
    locations: Mutex<HashMap<String, Vec<PermissionRule>>>,
    trusted: Mutex<BTreeSet<PathBuf>>,
}

impl ServerPermissions {
    pub fn add_location_rules(&self, key: &str, rules: Vec<PermissionRule>) {
        let mut locations = lock(&self.locations);
        let entry = locations.entry(key.to_string()).or_default();
        for rule in rules {
            if !entry.contains(&rule) {
                entry.push(rule);
            }
        }
    }

    pub fn location_rules(&self, key: &str) -> Vec<PermissionRule> {
        lock(&self.locations).get(key).cloned().unwrap_or_default()
    }

    pub fn trust(&self, dir: &Path) {
        lock(&self.trusted).insert(normalize(dir));
    }

    /// A folder is trusted when it or a folder above it was trusted.
    pub fn is_trusted(&self, dir: &Path) -> bool {
        let dir = normalize(dir);
        lock(&self.trusted).iter().any(|t| dir.starts_with(t))
    }
}

/// An absolute path with `.` and `..` resolved lexically (the path need not exist).
pub fn normalize(path: &Path) -> PathBuf {
    let absolute =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    tools::bash::analysis::lexically_normal(&absolute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_directories_cover_their_children_only() {
        let mut p = SessionPermissions::for_cwd(Path::new("/work/a"));
        assert!(p.within_allowed(Path::new("/work/a/b/c.txt")));
        assert!(!p.within_allowed(Path::new("/work/ab")));
        assert!(!p.within_allowed(Path::new("/work/a/../b/x")));
        p.allow(Path::new("/srv/data"));
        assert!(p.within_allowed(Path::new("/srv/data/x")));
        p.set_primary(Path::new("/srv/new"));
        assert_eq!(p.directories[0], PathBuf::from("/srv/new"));
        assert!(p.within_workspace(Path::new("/srv/new/child.txt")));
        assert!(!p.within_workspace(Path::new("/work/a/child.txt")));
    }

    #[test]
    fn trust_extends_to_subfolders() {
        let s = ServerPermissions::default();
        assert!(!s.is_trusted(Path::new("/x/y")));
        s.trust(Path::new("/x"));
        assert!(s.is_trusted(Path::new("/x/y")));
        assert!(!s.is_trusted(Path::new("/xy")));
    }
}
