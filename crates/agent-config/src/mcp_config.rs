//! The user's MCP servers (`mcp.config.*`): `$COPILOT_HOME/mcp-config.json` holds them as
//! `{"mcpServers": {name: config}}`; the names turned off for new sessions are
//! `disabledMcpServers` in `$COPILOT_HOME/settings.json` (see `user_settings::names`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json_file::{FileError, JsonFile};
use crate::user_settings;

pub const FILE_NAME: &str = "mcp-config.json";

/// `mcp-config.json`: the servers by name, each configuration kept as the client gave it (the
/// MCP client reads it); other keys are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    #[serde(default)]
    pub mcp_servers: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The owner of `<home>/mcp-config.json`.
pub fn file(home: &Path) -> JsonFile<McpConfig> {
    JsonFile::new(home.join(FILE_NAME))
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum McpConfigError {
    #[error("MCP server '{0}' already exists")]
    Exists(String),
    #[error("MCP server '{0}' is not configured")]
    NotConfigured(String),
    #[error(transparent)]
    File(#[from] FileError),
}

/// The user's MCP settings of one `$COPILOT_HOME`, over its two files.
pub struct McpConfigStore {
    home: PathBuf,
}

impl McpConfigStore {
    pub fn new(home: PathBuf) -> Self {
        Self { home }
    }

    /// The configured servers by name.
    pub fn list(&self) -> Result<Map<String, Value>, McpConfigError> {
        Ok(file(&self.home).read()?.mcp_servers)
    }

    fn edit(
        &self,
        f: impl FnOnce(&mut Map<String, Value>) -> Result<(), McpConfigError>,
    ) -> Result<(), McpConfigError> {
        file(&self.home).update(|c| f(&mut c.mcp_servers))
    }

    pub fn add(&self, name: &str, config: Value) -> Result<(), McpConfigError> {
        self.edit(|s| {
            if s.contains_key(name) {
                return Err(McpConfigError::Exists(name.into()));
            }
            s.insert(name.into(), config);
            Ok(())
        })
    }

    pub fn update(&self, name: &str, config: Value) -> Result<(), McpConfigError> {
        self.edit(|s| {
            let slot = s.get_mut(name).ok_or_else(|| McpConfigError::NotConfigured(name.into()))?;
            *slot = config;
            Ok(())
        })
    }

    /// Removes a configured server (and its name from the disabled list); an unknown name is
    /// [`McpConfigError::NotConfigured`] and changes nothing.
    pub fn remove_configured(&self, name: &str) -> Result<(), McpConfigError> {
        self.edit(|s| s.remove(name).map(drop).ok_or_else(|| McpConfigError::NotConfigured(name.into())))?;
        self.set_disabled(&[name.to_string()], false)
    }

    /// Removes a server (and its name from the disabled list); an unknown name is no error.
    pub fn remove(&self, name: &str) -> Result<(), McpConfigError> {
        self.edit(|s| {
            s.remove(name);
            Ok(())
        })?;
        self.set_disabled(&[name.to_string()], false)
    }

    /// The names new sessions do not start (`disabledMcpServers`; see
    /// [`crate::user_settings::names`]).
    pub fn disabled(&self) -> Result<Vec<String>, McpConfigError> {
        Ok(user_settings::names(&self.home, user_settings::DISABLED_MCP_SERVERS)?)
    }

    /// Turns servers off (or back on) for new sessions; the list keeps its order.
    pub fn set_disabled(&self, names: &[String], disabled: bool) -> Result<(), McpConfigError> {
        user_settings::update_names(&self.home, user_settings::DISABLED_MCP_SERVERS, |list| {
            for name in names {
                user_settings::toggle(list, name, disabled);
            }
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = McpConfigStore::new(dir.path().to_path_buf());
        store.add("a", serde_json::json!({"command": "node", "args": []})).unwrap();
        assert_eq!(store.add("a", serde_json::json!({})), Err(McpConfigError::Exists("a".into())));
        store.update("a", serde_json::json!({"command": "node", "args": ["--version"]})).unwrap();
        assert_eq!(store.list().unwrap()["a"]["args"][0], "--version");
        assert_eq!(store.update("b", serde_json::json!({})), Err(McpConfigError::NotConfigured("b".into())));
        store.set_disabled(&["a".into()], true).unwrap();
        assert_eq!(store.disabled().unwrap(), vec!["a".to_string()]);
        store.set_disabled(&["a".into()], false).unwrap();
        assert!(store.disabled().unwrap().is_empty());
        store.set_disabled(&["a".into()], true).unwrap();
        store.remove_configured("a").unwrap();
        assert_eq!(store.remove_configured("a"), Err(McpConfigError::NotConfigured("a".into())));
        assert!(store.list().unwrap().is_empty());
        assert!(store.disabled().unwrap().is_empty());
        let file: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap()).unwrap();
        assert!(file["mcpServers"].as_object().unwrap().is_empty());
    }

    #[test]
    fn other_keys_survive_and_a_malformed_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, r#"{"inputs": [{"id": "token"}], "mcpServers": {"old": {"command": "x", "cwd": "/w"}}}"#)
            .unwrap();
        let store = McpConfigStore::new(dir.path().to_path_buf());
        store.add("new", serde_json::json!({"url": "http://h"})).unwrap();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file["inputs"][0]["id"], "token");
        assert_eq!(file["mcpServers"]["old"]["cwd"], "/w");
        assert_eq!(file["mcpServers"]["new"]["url"], "http://h");

        let broken = r#"{"mcpServers": ["not", "a", "map"]}"#;
        std::fs::write(&path, broken).unwrap();
        let err = store.add("x", serde_json::json!({})).unwrap_err();
        assert!(matches!(err, McpConfigError::File(FileError::Invalid { .. })), "{err}");
        assert!(err.to_string().contains(FILE_NAME));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    }
}
