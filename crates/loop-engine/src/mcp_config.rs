//! The user's MCP servers (`mcp.config.*`): `$COPILOT_HOME/mcp-config.json` holds them as
//! `{"mcpServers": {name: config}}`; the names turned off for new sessions are
//! `disabledMcpServers` in `$COPILOT_HOME/config.json`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::plugins::{read_json_object, write_json_object, PluginError, CONFIG_LOCK};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum McpConfigError {
    #[error("MCP server '{0}' already exists")]
    Exists(String),
    #[error("MCP server '{0}' is not configured")]
    NotConfigured(String),
    #[error("{0}")]
    File(#[from] PluginError),
}

pub struct McpConfigStore {
    home: PathBuf,
}

impl McpConfigStore {
    pub fn new(home: PathBuf) -> Self {
        Self { home }
    }

    fn path(&self) -> PathBuf {
        self.home.join("mcp-config.json")
    }

    fn servers_of(path: &Path) -> Result<serde_json::Map<String, Value>, PluginError> {
        Ok(read_json_object(path)?.get("mcpServers").and_then(Value::as_object).cloned().unwrap_or_default())
    }

    /// The configured servers by name.
    pub fn list(&self) -> Result<serde_json::Map<String, Value>, McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Self::servers_of(&self.path())?)
    }

    fn edit(
        &self,
        f: impl FnOnce(&mut serde_json::Map<String, Value>) -> Result<(), McpConfigError>,
    ) -> Result<(), McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.path();
        let mut file = read_json_object(&path)?;
        let mut servers = file.get("mcpServers").and_then(Value::as_object).cloned().unwrap_or_default();
        f(&mut servers)?;
        file.insert("mcpServers".into(), Value::Object(servers));
        Ok(write_json_object(&path, file)?)
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

    /// Removes a server (and its name from the disabled list); an unknown name is no error.
    pub fn remove(&self, name: &str) -> Result<(), McpConfigError> {
        self.edit(|s| {
            s.remove(name);
            Ok(())
        })?;
        self.set_disabled(&[name.to_string()], false)
    }

    /// The names new sessions do not start.
    pub fn disabled(&self) -> Result<Vec<String>, McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        Ok(disabled_of(&read_json_object(&self.home.join("config.json"))?))
    }

    pub fn set_disabled(&self, names: &[String], disabled: bool) -> Result<(), McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.home.join("config.json");
        let mut config = read_json_object(&path)?;
        let mut list = disabled_of(&config);
        let before = list.clone();
        list.retain(|n| !names.contains(n));
        if disabled {
            list.extend(names.iter().cloned());
        }
        if list == before {
            return Ok(());
        }
        config.insert("disabledMcpServers".into(), Value::from(list));
        Ok(write_json_object(&path, config)?)
    }
}

impl McpConfigStore {
    /// `disabledSkills` in `config.json`: skills discovered but turned off for every session.
    pub fn disabled_skills(&self) -> Result<Vec<String>, McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        Ok(list_of(&read_json_object(&self.home.join("config.json"))?, DISABLED_SKILLS))
    }

    /// Replaces `disabledSkills` (`skills.config.setDisabledSkills`).
    pub fn set_disabled_skills(&self, names: &[String]) -> Result<(), McpConfigError> {
        let _guard = CONFIG_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.home.join("config.json");
        let mut config = read_json_object(&path)?;
        let mut list: Vec<String> = Vec::new();
        for n in names {
            if !list.contains(n) {
                list.push(n.clone());
            }
        }
        config.insert(DISABLED_SKILLS.into(), Value::from(list));
        Ok(write_json_object(&path, config)?)
    }
}

const DISABLED_SKILLS: &str = "disabledSkills";

fn list_of(config: &serde_json::Map<String, Value>, key: &str) -> Vec<String> {
    config
        .get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn disabled_of(config: &serde_json::Map<String, Value>) -> Vec<String> {
    config
        .get("disabledMcpServers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
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
        store.remove("a").unwrap();
        assert!(store.list().unwrap().is_empty());
        assert!(store.disabled().unwrap().is_empty());
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("mcp-config.json")).unwrap()).unwrap();
        assert!(file["mcpServers"].as_object().unwrap().is_empty());
    }
}
