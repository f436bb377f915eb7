//! [`Deps`]: what every session of an engine shares. Apart from the crate root (which holds the
//! `Engine` that builds it) so that sessions, runs and tools can use it from below.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use llm_providers::{ModelClient, ModelInfo};
use store::{EventStore, Layout, SessionIndex};

use crate::byok::SessionProviders;
use crate::error::EngineError;
use crate::mutex::lock;
use crate::telemetry;

/// Where a session reads its configuration (see [`Deps::config_scope`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigScope {
    /// Its `$COPILOT_HOME` (settings, MCP configuration, plugins, skills, agents, instructions).
    pub home: PathBuf,
    /// Configuration files are read only beneath these (`None`: anywhere); see
    /// [`agent_config::read_scope`].
    pub read_within: Option<Vec<PathBuf>>,
}

impl ConfigScope {
    /// Runs `f` (synchronous file work) reading only where this scope allows.
    pub fn reading<T>(&self, f: impl FnOnce() -> T) -> T {
        agent_config::read_scope::within(self.read_within.as_deref(), f)
    }
}

/// What every session of an engine shares.
pub(crate) struct Deps {
    pub layout: Layout,
    pub index: SessionIndex,
    /// Where logs and `workspace.yaml` metadata live (files, or the shared database).
    pub events: EventStore,
    pub model: Arc<dyn ModelClient>,
    pub http: Arc<dyn llm_providers::transport::HttpTransport>,
    pub builtins: tools::Registry,
    /// One copy for every session (each session's MCP host and user shell share it).
    pub tool_env: Arc<Vec<(String, String)>>,
    pub version: String,
    pub models: Mutex<Option<Vec<ModelInfo>>>,
    /// File telemetry (`COPILOT_OTEL_*`): spans of every session's work.
    pub spans: Option<telemetry::SpanFile>,
    /// The command sandbox of every session (see [`crate::EngineConfig::sandbox`]).
    pub sandbox: Option<sandbox::Policy>,
    /// See [`crate::EngineConfig::tenants`].
    pub tenants: Vec<TenantScope>,
    /// See [`crate::EngineConfig::trusted_folders`].
    pub trusted_folders: Vec<PathBuf>,
    /// See [`crate::Engine::set_meter`].
    pub meter: std::sync::OnceLock<Arc<dyn crate::meter::Meter>>,
}

/// A team server's tenant as the engine sees it: where its sessions run, where its
/// configuration lives, and the group whose resource limits its processes share.
#[derive(Debug, Clone)]
pub struct TenantScope {
    /// Canonical; tenants' workspaces do not overlap.
    pub workspace: PathBuf,
    pub config_home: PathBuf,
    pub cgroup: Option<Arc<sandbox::Cgroup>>,
    /// The proxy its processes (commands, user shells, local MCP servers) reach the network
    /// through, with its host rules; none: no network.
    pub network: Option<Arc<sandbox::net::Proxy>>,
    /// File access beneath the workspace, for the in-process work on its files (file tools,
    /// rewinds).
    pub files: tools::Files,
}

impl Deps {
    /// Where a session in `cwd` reads its configuration: on a team server its tenant's home
    /// (the tenant whose workspace holds `cwd`; both canonical), and project files only beneath
    /// that workspace and home; otherwise the engine's home, and anywhere.
    pub fn config_scope(&self, cwd: &Path) -> ConfigScope {
        match self.tenant(cwd) {
            Some(t) => ConfigScope {
                home: t.config_home.clone(),
                read_within: Some(vec![t.workspace.clone(), t.config_home.clone()]),
            },
            None => ConfigScope { home: self.layout.home.clone(), read_within: None },
        }
    }

    /// The tenant whose workspace holds `cwd` (a canonical path), on a team server.
    pub fn tenant(&self, cwd: &Path) -> Option<&TenantScope> {
        self.tenants.iter().find(|t| cwd.starts_with(&t.workspace))
    }

    /// Where a session in `cwd` reaches files in-process: anywhere alone; on a team server
    /// beneath its tenant's workspace, and nowhere outside every tenant's.
    pub fn files(&self, cwd: &Path) -> tools::Files {
        if self.tenants.is_empty() {
            return tools::Files::default();
        }
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        self.tenant(&cwd).map_or_else(tools::Files::nowhere, |t| t.files.clone())
    }

    /// The model catalogue, cached after the first successful fetch.
    pub async fn catalogue(&self) -> Result<Vec<ModelInfo>, EngineError> {
        if let Some(m) = lock(&self.models).clone() {
            return Ok(m);
        }
        // The one the model client read for its first call (or its warm-up) will do.
        let models = match self.model.known_models() {
            Some(models) => models,
            None => self.model.list_models().await?,
        };
        *lock(&self.models) = Some(models.clone());
        Ok(models)
    }

    /// The models a session with these providers can use: its own providers' models, then
    /// (unless one provider serves the whole session) the engine's catalogue. A catalogue that
    /// cannot be fetched leaves just the session's own.
    pub async fn session_models(&self, providers: &SessionProviders) -> Result<Vec<ModelInfo>, EngineError> {
        let mut out = providers.model_list();
        if providers.single.is_none() {
            match self.catalogue().await {
                Ok(models) => out.extend(models),
                Err(e) if !out.is_empty() => tracing::warn!(error = %e, "model catalogue unavailable"),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The catalogue's premium-request multiplier of `model` (0 when it does not say). Asked on
    /// every model call: the catalogue the model client read is kept here the first time, not
    /// copied out of it per call.
    pub fn multiplier(&self, model: &str) -> f64 {
        let mut cached = lock(&self.models);
        if cached.is_none() {
            *cached = self.model.known_models();
        }
        cached
            .as_deref()
            .and_then(|ms| ms.iter().find(|m| m.id == model))
            .and_then(ModelInfo::multiplier)
            .unwrap_or(0.0)
    }

    pub fn context_window(&self, model: &str) -> u64 {
        let cached = lock(&self.models);
        cached
            .as_ref()
            .and_then(|ms| ms.iter().find(|m| m.id == model))
            .and_then(ModelInfo::context_window)
            .unwrap_or(128_000)
    }
}
