//! A repository's own settings: `.github/copilot/settings.json` (shared, committed) and
//! `.github/copilot/settings.local.json` (this checkout's), at the root of the enclosing git
//! work tree. This module is their only reader and writer. They hold only the settings a
//! repository may override (`settings_keys::REPO_KEYS`).

use std::path::{Path, PathBuf};

use crate::json_file::JsonFile;
use crate::user_settings::UserSettings;

/// Where, relative to the repository's root.
pub const SHARED: &str = ".github/copilot/settings.json";
pub const LOCAL: &str = ".github/copilot/settings.local.json";

/// The enclosing git work tree's root, else `cwd` itself.
pub fn root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

/// The owner of the repository's shared settings file.
pub fn shared_file(root: &Path) -> JsonFile<UserSettings> {
    JsonFile::new(root.join(SHARED))
}

/// The owner of this checkout's settings file.
pub fn local_file(root: &Path) -> JsonFile<UserSettings> {
    JsonFile::new(root.join(LOCAL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_enclosing_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(root(&deep), deep, "no work tree: the directory itself");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(root(&deep), dir.path());
        assert_eq!(shared_file(dir.path()).path(), dir.path().join(SHARED));
    }
}
