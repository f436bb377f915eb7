//! A repository's own MCP servers: `.mcp.json` at the root of the work tree, else
//! `.github/mcp.json`, each `{"mcpServers": {name: config}}`. They count only in a folder the
//! user trusts (`trustedFolders` in `config.json`): a checkout must not start programs of its
//! own choosing unasked. Read-only: the user edits the file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::json_file::{FileError, JsonFile};

/// The files looked for, in order; the first that exists is the one read.
pub const FILES: &[&str] = &[".mcp.json", ".github/mcp.json"];

/// A workspace's servers and the file they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceServers {
    pub path: PathBuf,
    pub servers: Map<String, Value>,
}

/// The servers of the work tree around `cwd`, if it has a file (trusted or not: see
/// [`crate::user_config::UserConfig::trusts`]).
pub fn read(cwd: &Path) -> Result<Option<WorkspaceServers>, FileError> {
    let root = crate::repo_settings::root(cwd);
    let Some(path) = FILES.iter().map(|f| root.join(f)).find(|p| p.is_file()) else { return Ok(None) };
    let file: Map<String, Value> = JsonFile::new(path.clone()).read()?;
    let servers = match file.get("mcpServers") {
        Some(Value::Object(m)) => m.clone(),
        None => Map::new(),
        Some(_) => {
            return Err(FileError::Invalid {
                path: path.display().to_string(),
                reason: "mcpServers: not an object".into(),
            })
        }
    };
    Ok(Some(WorkspaceServers { path, servers }))
}

/// The work tree's servers when the user trusts `cwd` (`trustedFolders` in `home`'s
/// `config.json`) or one of `also_trusted` holds it; `None` when it has no file or is not
/// trusted.
pub fn trusted(cwd: &Path, home: &Path, also_trusted: &[PathBuf]) -> Result<Option<WorkspaceServers>, FileError> {
    let Some(found) = read(cwd)? else { return Ok(None) };
    let trusted = also_trusted.iter().any(|f| cwd.starts_with(f)) || crate::user_config::file(home).read()?.trusts(cwd);
    Ok(trusted.then_some(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dot_file_wins_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join(".github/mcp.json"), r#"{"mcpServers": {"b": {"url": "http://h"}}}"#).unwrap();
        assert_eq!(read(dir.path()).unwrap().unwrap().servers.keys().collect::<Vec<_>>(), ["b"]);
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        let found = read(dir.path()).unwrap().unwrap();
        assert_eq!(found.path, dir.path().join(".mcp.json"));
        assert_eq!(found.servers.keys().collect::<Vec<_>>(), ["a"]);
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": []}"#).unwrap();
        assert!(read(dir.path()).is_err());
    }

    #[test]
    fn only_a_trusted_folder_gives_its_servers() {
        let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        assert_eq!(trusted(dir.path(), home.path(), &[]).unwrap(), None);
        let also = [dir.path().to_path_buf()];
        assert!(trusted(dir.path(), home.path(), &also).unwrap().is_some());
        let config = serde_json::json!({"trustedFolders": [dir.path()]});
        std::fs::write(home.path().join("config.json"), config.to_string()).unwrap();
        assert!(trusted(dir.path(), home.path(), &[]).unwrap().is_some());
    }
}
