//! The MCP servers every session of this user starts: the user's `mcp-config.json` and the
//! enabled installed plugins' servers, with the names turned off in `config.json`. Read at
//! session create/resume; an unreadable file counts as empty (and is logged), never failing
//! the session.

use std::path::Path;

use serde_json::{Map, Value};

use crate::mcp_config::McpConfigStore;
use crate::plugins::PluginStore;

#[derive(Debug, Default)]
pub struct UserServers {
    /// By name: installed plugins' first, then `mcp-config.json`'s (the user's own win).
    pub servers: Map<String, Value>,
    /// `disabledMcpServers` of `config.json`.
    pub disabled: Vec<String>,
}

impl UserServers {
    pub fn read(home: &Path) -> Self {
        let mut servers = Map::new();
        match PluginStore::new(home.to_path_buf()).installed() {
            Ok(plugins) => {
                for p in plugins.iter().filter(|p| p.enabled) {
                    servers.extend(crate::plugins::manifest::mcp_servers(Path::new(&p.cache_path)));
                }
            }
            Err(e) => tracing::warn!(error = %e, "installed plugins unreadable"),
        }
        let config = McpConfigStore::new(home.to_path_buf());
        match config.list() {
            Ok(own) => servers.extend(own),
            Err(e) => tracing::warn!(error = %e, "mcp-config.json unreadable"),
        }
        let disabled = config.disabled().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "config.json unreadable");
            Vec::new()
        });
        Self { servers, disabled }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_users_servers_and_disabled_names() {
        let home = tempfile::tempdir().unwrap();
        let store = McpConfigStore::new(home.path().to_path_buf());
        store.add("mine", json!({"command": "x"})).unwrap();
        store.add("off", json!({"command": "y"})).unwrap();
        store.set_disabled(&["off".to_string()], true).unwrap();
        let user = UserServers::read(home.path());
        assert_eq!(user.servers.keys().cloned().collect::<Vec<_>>(), ["mine", "off"]);
        assert_eq!(user.disabled, ["off"]);
        let empty = tempfile::tempdir().unwrap();
        let none = UserServers::read(empty.path());
        assert!(none.servers.is_empty() && none.disabled.is_empty());
    }
}
