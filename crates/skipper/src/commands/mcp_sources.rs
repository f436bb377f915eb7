//! Every MCP server a user has configured, from each place one can be: the user's
//! `mcp-config.json`, the trusted work tree's `.mcp.json`, and enabled installed plugins. All
//! reads go through agent-config's owners of those files.

use std::path::{Path, PathBuf};

use agent_config::mcp_config::{McpConfigError, McpConfigStore};
use agent_config::plugins::PluginStore;
use agent_config::workspace_mcp;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    User,
    Workspace(PathBuf),
    Plugin(String),
}

impl Source {
    /// As `--json` names it.
    pub fn tag(&self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Workspace(_) => "workspace",
            Source::Plugin(_) => "plugin",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Found {
    pub name: String,
    pub config: Value,
    pub source: Source,
    pub enabled: bool,
}

impl Found {
    /// The configuration with where it came from and whether it is on, as `--json` shows it.
    pub fn to_json(&self) -> Value {
        let mut o = self.config.as_object().cloned().unwrap_or_default();
        o.insert("source".into(), Value::String(self.source.tag().into()));
        match &self.source {
            Source::Workspace(path) => {
                o.insert("sourcePath".into(), Value::String(path.display().to_string()));
            }
            Source::Plugin(plugin) => {
                o.insert("sourcePlugin".into(), Value::String(plugin.clone()));
            }
            Source::User => {}
        }
        o.insert("enabled".into(), Value::Bool(self.enabled));
        Value::Object(o)
    }

    /// `local`, `http`, `sse`, …: the configured type, else what the entry's shape says.
    pub fn kind(&self) -> String {
        match self.config.get("type").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None if self.config.get("url").is_some() && self.config.get("command").is_none() => "http".into(),
            None => "local".into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Config(#[from] McpConfigError),
    #[error(transparent)]
    File(#[from] agent_config::FileError),
    #[error(transparent)]
    Plugins(#[from] agent_config::plugins::PluginError),
}

/// Every server, user's first, then the workspace's, then plugins'.
pub fn all(home: &Path, cwd: &Path) -> Result<Vec<Found>, SourceError> {
    let store = McpConfigStore::new(home.to_path_buf());
    let disabled = store.disabled()?;
    let on = |name: &str| !disabled.iter().any(|d| d == name);
    let mut out: Vec<Found> = Vec::new();
    let mut add = |servers: Map<String, Value>, source: Source, enabled: bool| {
        for (name, config) in servers {
            out.push(Found { enabled: enabled && on(&name), name, config, source: source.clone() });
        }
    };
    add(store.list()?, Source::User, true);
    if let Some(ws) = workspace_mcp::trusted(cwd, home, &[])? {
        add(ws.servers, Source::Workspace(ws.path), true);
    }
    for plugin in PluginStore::new(home.to_path_buf()).installed()? {
        let servers = agent_config::plugins::manifest::mcp_servers(Path::new(&plugin.cache_path));
        add(servers, Source::Plugin(plugin.name.clone()), plugin.enabled);
    }
    Ok(out)
}
