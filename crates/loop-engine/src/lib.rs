//! The agent loop. An [`Engine`] owns the loaded sessions; each session is one actor task
//! ([`session::run_actor`]) that owns its conversation, runs one model call per turn, dispatches
//! tools, and emits `session.idle` after every run on every path.
//!
//! This crate knows nothing of JSON-RPC or SQL: callers subscribe with an
//! [`EventSubscriber`]; durable state goes through the `store` crate.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod actor;
pub mod attachments;
pub mod autopilot;
pub mod byok;
mod client;
pub mod compaction;
mod conversation;
mod dispatch;
mod emitter;
pub mod event_reader;
mod external;
mod handle;
pub mod history;
mod hooks;
mod mcp;
mod model_call;
mod pending;
mod permission;
mod run;
pub mod settings;
pub mod system_prompt;
mod user_input;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use llm_providers::{ModelClient, ModelInfo};
use protocol::event::SessionEvent;
use protocol::generated::types as t;
use protocol::methods::{
    LifecycleMetadata, LifecycleNotification, SessionConfigParams, SessionContext, SessionListEntry,
};
use store::{EventLog, Layout, SessionIndex, SessionRow};

pub use emitter::{ClientRequester, Emitter, EventSubscriber};
pub use handle::{
    LogLevel, NameOp, NameResult, OptionsPatch, PlanOp, PlanResult, QueuedMessage, SessionHandle, SessionView,
};
pub use pending::PendingAnswer;
pub use settings::SessionSettings;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Session not found: {0}")]
    SessionNotFound(String),
    #[error("Session already exists: {0}")]
    SessionExists(String),
    #[error("Failed to load session events: {0}")]
    Load(store::StoreError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Model(#[from] llm_providers::ProviderError),
    #[error("Invalid provider configuration: {0}")]
    InvalidProviders(String),
    /// A compaction or summary the client asked for did not happen.
    #[error("{0}")]
    Compaction(String),
}

/// Receives `session.lifecycle` notifications (created, deleted, ...).
pub trait LifecycleSubscriber: Send + Sync {
    fn subscriber_id(&self) -> u64;
    fn notify(&self, notification: &LifecycleNotification) -> bool;
}

pub struct EngineConfig {
    pub home: PathBuf,
    pub version: String,
    pub default_model: String,
    pub default_cwd: PathBuf,
    pub allow_all_tools: bool,
    /// Environment for tool subprocesses.
    pub tool_env: Vec<(String, String)>,
    pub model: Arc<dyn ModelClient>,
    /// How sessions' own providers reach the network.
    pub http: Arc<dyn llm_providers::transport::HttpTransport>,
    pub builtins: tools::Registry,
    /// How long pending client work (permissions, SDK tools) waits for a client to come back
    /// after the last one disconnected, before it is answered as "no one available".
    pub pending_grace: std::time::Duration,
}

/// What every session of an engine shares.
pub(crate) struct Deps {
    pub layout: Layout,
    pub index: SessionIndex,
    pub model: Arc<dyn ModelClient>,
    pub http: Arc<dyn llm_providers::transport::HttpTransport>,
    pub builtins: tools::Registry,
    pub tool_env: Vec<(String, String)>,
    pub version: String,
    pub models: Mutex<Option<Vec<ModelInfo>>>,
}

impl Deps {
    pub fn context_window(&self, model: &str) -> u64 {
        let cached = lock(&self.models);
        cached
            .as_ref()
            .and_then(|ms| ms.iter().find(|m| m.id == model))
            .and_then(ModelInfo::context_window)
            .unwrap_or(128_000)
    }
}

pub struct Engine {
    deps: Arc<Deps>,
    default_model: String,
    default_cwd: PathBuf,
    allow_all: bool,
    pending_grace: std::time::Duration,
    sessions: Mutex<HashMap<String, SessionHandle>>,
    lifecycle: Mutex<Vec<Arc<dyn LifecycleSubscriber>>>,
}

/// Locks a mutex, recovering it if a panicking holder poisoned it: every lock in this crate
/// guards short synchronous updates, so the data stays usable and a session must not die of it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn now() -> String {
    protocol::now_iso()
}

/// The session's working directory as an event's `context`.
pub(crate) fn cwd_context(s: &SessionSettings) -> t::WorkingDirectoryContext {
    t::WorkingDirectoryContext { cwd: s.cwd.to_string_lossy().into_owned(), ..Default::default() }
}

/// `session.resume` for a session with these settings.
pub(crate) fn resume_data(
    s: &SessionSettings,
    event_count: usize,
    events_file_size_bytes: Option<u64>,
    session_was_active: bool,
    continue_pending_work: bool,
) -> t::ResumeData {
    t::ResumeData {
        resume_time: now(),
        event_count: event_count as u64,
        events_file_size_bytes,
        selected_model: Some(s.model.clone()),
        context: Some(cwd_context(s)),
        session_was_active: Some(session_was_active),
        already_in_use: Some(false),
        continue_pending_work: Some(continue_pending_work),
        ..Default::default()
    }
}

/// A fresh index row for a session; `updated_at` moves on as events arrive.
fn index_row(id: &str, s: &SessionSettings, start_time: &str) -> SessionRow {
    SessionRow {
        id: id.to_string(),
        cwd: s.cwd.to_string_lossy().to_string(),
        model: Some(s.model.clone()),
        client_name: Some(s.client_name.clone()),
        created_at: start_time.to_string(),
        updated_at: start_time.to_string(),
        ..Default::default()
    }
}

pub(crate) async fn write_workspace_yaml(
    deps: &Deps,
    session: &SessionHandle,
    s: &SessionSettings,
    title: Option<&str>,
) {
    write_workspace_yaml_named(deps, session, s, title, false).await
}

/// `workspace.yaml` with the session's name; `user_named` when a client chose it.
pub(crate) async fn write_workspace_yaml_named(
    deps: &Deps,
    session: &SessionHandle,
    s: &SessionSettings,
    title: Option<&str>,
    user_named: bool,
) {
    let summaries = deps.layout.list_checkpoints(session.id()).await.map_or(0, |c| c.len() as u32);
    let meta = store::layout::WorkspaceMeta {
        id: session.id().to_string(),
        cwd: s.cwd.to_string_lossy().to_string(),
        client_name: Some(s.client_name.clone()),
        name: title.map(str::to_string),
        user_named,
        summary_count: summaries,
        fork_count: 0,
        created_at: session.start_time().to_string(),
        updated_at: now(),
        ..Default::default()
    };
    if let Err(e) = deps.layout.write_workspace_yaml(session.id(), &meta).await {
        tracing::warn!(session = %session.id(), error = %e, "workspace.yaml write failed");
    }
}

impl Engine {
    pub async fn open(config: EngineConfig) -> Result<Self, EngineError> {
        let layout = Layout::new(config.home.clone());
        let index = SessionIndex::open(&layout.db_path()).await?;
        Ok(Self {
            deps: Arc::new(Deps {
                layout,
                index,
                model: config.model,
                http: config.http,
                builtins: config.builtins,
                tool_env: config.tool_env,
                version: config.version,
                models: Mutex::new(None),
            }),
            default_model: config.default_model,
            default_cwd: config.default_cwd,
            allow_all: config.allow_all_tools,
            pending_grace: config.pending_grace,
            sessions: Mutex::new(HashMap::new()),
            lifecycle: Mutex::new(Vec::new()),
        })
    }

    pub fn version(&self) -> &str {
        &self.deps.version
    }

    pub fn builtins(&self) -> &tools::Registry {
        &self.deps.builtins
    }

    pub fn layout(&self) -> &Layout {
        &self.deps.layout
    }

    pub fn subscribe_lifecycle(&self, sub: Arc<dyn LifecycleSubscriber>) {
        lock(&self.lifecycle).push(sub);
    }

    pub fn unsubscribe_lifecycle(&self, id: u64) {
        lock(&self.lifecycle).retain(|s| s.subscriber_id() != id);
    }

    fn broadcast_lifecycle(&self, params: LifecycleNotification) {
        lock(&self.lifecycle).retain(|s| s.notify(&params));
    }

    /// The model catalogue, cached after the first successful fetch.
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>, EngineError> {
        if let Some(m) = lock(&self.deps.models).clone() {
            return Ok(m);
        }
        let models = self.deps.model.list_models().await?;
        *lock(&self.deps.models) = Some(models.clone());
        Ok(models)
    }

    /// The models a session can use: its own providers' models, then (unless one provider
    /// serves the whole session) the engine's catalogue. A catalogue that cannot be fetched
    /// leaves just the session's own.
    pub async fn session_models(&self, session: &SessionHandle) -> Result<Vec<ModelInfo>, EngineError> {
        let providers = session.view().settings.providers.clone();
        let mut out = providers.model_list();
        if providers.single.is_none() {
            match self.list_models().await {
                Ok(models) => out.extend(models),
                Err(e) if !out.is_empty() => tracing::warn!(error = %e, "model catalogue unavailable"),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The backend the session's current model is served by (`session.provider.getEndpoint`).
    pub async fn provider_endpoint(
        &self,
        session: &SessionHandle,
    ) -> Result<Option<llm_providers::Endpoint>, EngineError> {
        let settings = session.view().settings.clone();
        let route = byok::route(
            &settings.providers,
            &settings.model,
            &byok::RouteCtx {
                default_client: &self.deps.model,
                http: &self.deps.http,
                emitter: session.emitter_arc(),
                session_id: session.id(),
            },
        );
        Ok(route.client.endpoint().await?)
    }

    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        lock(&self.sessions).get(id).cloned()
    }

    /// The loaded session, or `SessionNotFound`.
    pub fn require(&self, id: &str) -> Result<SessionHandle, EngineError> {
        self.get(id).ok_or_else(|| EngineError::SessionNotFound(id.to_string()))
    }

    pub fn loaded_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Starts a session's actor task and returns its handle.
    fn spawn_session(
        &self,
        id: String,
        emitter: Emitter,
        settings: SessionSettings,
        start_time: String,
        conv: run::Conversation,
    ) -> SessionHandle {
        let (tx, rx) = tokio::sync::mpsc::channel(actor::INPUT_CAPACITY);
        let name =
            self.deps.layout.read_workspace_yaml(&id).ok().flatten().filter(|m| m.user_named).and_then(|m| m.name);
        let view = SessionView { settings, approvals: Vec::new(), running: false, user_named: name.is_some(), name };
        let (view_tx, view_rx) = tokio::sync::watch::channel(Arc::new(view.clone()));
        let mcp = mcp_client::McpHost::new(view.settings.cwd.clone(), self.deps.tool_env.clone());
        let emitter = Arc::new(emitter);
        mcp::attach(&mcp, emitter.clone());
        let handle = SessionHandle::new(handle::SessionParts {
            workspace_path: self.deps.layout.session_dir(&id),
            id,
            start_time,
            emitter,
            shells: Arc::new(tools::ShellManager::default()),
            mcp,
            inputs: tx,
            view: view_rx,
            stop: tokio_util::sync::CancellationToken::new(),
            compaction: Default::default(),
            interests: Default::default(),
        });
        let actor = actor::Actor::new(handle.clone(), self.deps.clone(), view, view_tx, conv);
        tokio::spawn(actor.run(rx));
        handle
    }

    pub async fn create(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
    ) -> Result<SessionHandle, EngineError> {
        settings::providers_from_params(params).map_err(EngineError::InvalidProviders)?;
        let id = params.session_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let layout = &self.deps.layout;
        if self.get(&id).is_some() || layout.events_path(&id).exists() {
            return Err(EngineError::SessionExists(id));
        }
        let settings = SessionSettings::from_params(params, &self.default_model, &self.default_cwd, self.allow_all);
        layout.ensure_session_dir(&id)?;
        let log = EventLog::open(layout.events_path(&id))?;
        let start_time = now();
        let emitter = Emitter::new(id.clone(), Some(log), None, 0);
        if let Some(sub) = subscriber {
            emitter.subscribe(sub);
        }
        self.deps.index.upsert(&index_row(&id, &settings, &start_time)).await?;
        let start = t::StartData {
            session_id: id.clone(),
            version: 1,
            producer: "copilot-agent".into(),
            copilot_version: self.deps.version.clone(),
            start_time: start_time.clone(),
            selected_model: Some(settings.model.clone()),
            reasoning_effort: settings.reasoning_effort.clone(),
            context: Some(cwd_context(&settings)),
            already_in_use: Some(false),
            remote_steerable: Some(false),
            ..Default::default()
        };
        let conv = run::Conversation::new(Vec::new(), None);
        let handle = self.spawn_session(id.clone(), emitter, settings.clone(), start_time.clone(), conv);
        lock(&self.sessions).insert(id.clone(), handle.clone());
        self.broadcast_lifecycle(LifecycleNotification {
            kind: "session.created".into(),
            session_id: id.clone(),
            metadata: Some(LifecycleMetadata { start_time: start_time.clone(), modified_time: start_time.clone() }),
        });
        handle.emitter().emit(start);
        mcp::configure(handle.mcp(), &settings, params);
        write_workspace_yaml(&self.deps, &handle, &settings, None).await;
        Ok(handle)
    }

    pub async fn resume(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
    ) -> Result<SessionHandle, EngineError> {
        let id = params.session_id.clone().ok_or_else(|| EngineError::SessionNotFound(String::new()))?;
        settings::providers_from_params(params).map_err(EngineError::InvalidProviders)?;
        if let Some(handle) = self.get(&id) {
            handle.resume(params.clone(), subscriber).await?;
            mcp::configure(handle.mcp(), &handle.view().settings, params);
            return Ok(handle);
        }
        let path = self.deps.layout.events_path(&id);
        // A long log is a blocking read: keep it off the async workers.
        let loaded = tokio::task::spawn_blocking(move || EventLog::load(&path)).await.map_err(|e| {
            EngineError::Load(store::StoreError::Io { path: id.clone(), source: std::io::Error::other(e) })
        })?;
        let loaded = match loaded {
            Ok(l) => l,
            Err(store::StoreError::NotFound(_)) => return Err(EngineError::Load(store::StoreError::NotFound(id))),
            Err(e) => return Err(EngineError::Load(e)),
        };
        let restored = history::replay(&loaded.events);
        let mut base = params.clone();
        if base.model.is_none() {
            base.model = restored.model.clone();
        }
        if base.working_directory.is_none() {
            base.working_directory = restored.cwd.clone();
        }
        let mut settings = SessionSettings::from_params(&base, &self.default_model, &self.default_cwd, self.allow_all);
        settings.resumed = true;
        if let Some(mode) = restored.mode {
            settings.mode = mode;
        }
        let log = EventLog::open(self.deps.layout.events_path(&id))?;
        let start_time = restored.start_time.clone().unwrap_or_else(now);
        let emitter = Emitter::new(id.clone(), Some(log), restored.last_event_id.clone(), loaded.events.len());
        if self.deps.index.get(&id).await?.is_none() {
            self.deps.index.upsert(&index_row(&id, &settings, &start_time)).await?;
            if let Some(title) = &restored.title {
                self.deps.index.mark_user_message(&id, title).await?;
            }
        }
        let resume_event = resume_data(
            &settings,
            loaded.events.len(),
            Some(loaded.size_bytes),
            false,
            params.continue_pending_work.unwrap_or(false),
        );
        let mut conv = run::Conversation::new(restored.messages, restored.title);
        conv.last_system = restored.last_system;
        conv.prompts = restored.prompts;
        let handle = self.spawn_session(id.clone(), emitter, settings, start_time, conv);
        let existing = {
            let mut sessions = lock(&self.sessions);
            match sessions.get(&id) {
                // A resume or create of the same id raced this one: keep the first.
                Some(first) => Some(first.clone()),
                None => {
                    sessions.insert(id.clone(), handle.clone());
                    None
                }
            }
        };
        if let Some(first) = existing {
            // Another connection loaded (or created) it meanwhile: join that one.
            handle.shutdown();
            first.resume(params.clone(), subscriber).await?;
            mcp::configure(first.mcp(), &first.view().settings, params);
            return Ok(first);
        }
        if let Some(sub) = subscriber {
            handle.subscribe(sub);
        }
        if !params.disable_resume.unwrap_or(false) {
            handle.emitter().emit(resume_event);
        }
        mcp::configure(handle.mcp(), &handle.view().settings, params);
        Ok(handle)
    }

    /// Detaches a subscriber; the last one out unloads the session (its state stays on disk).
    pub async fn detach(&self, id: &str, subscriber_id: u64) -> bool {
        let Some(handle) = self.get(id) else { return true };
        if handle.subscriber_count() <= 1 {
            // The last client is still attached, so it can answer its own sessionEnd hook.
            let input = protocol::hooks::SessionEndInput { reason: "user_exit".into() };
            hooks::invoke(&handle, t::HookType::SessionEnd, input).await;
        }
        if let Ok(true) = handle.detach(subscriber_id).await {
            self.forget(&handle);
        }
        true
    }

    /// `sessions.fork`: a new session whose log is `source`'s up to (not including) event
    /// `to_event`, or all of it. Returns the new id; the fork is resumed like any session.
    pub async fn fork(
        &self,
        source: &str,
        to_event: Option<&str>,
        new_id: Option<String>,
        name: Option<String>,
    ) -> Result<String, EngineError> {
        let layout = self.deps.layout.clone();
        Layout::check_id(source)?;
        let path = layout.events_path(source);
        let loaded = tokio::task::spawn_blocking(move || EventLog::load(path))
            .await
            .map_err(|e| EngineError::Compaction(format!("reading the event log failed: {e}")))?;
        let events = match loaded {
            Ok(l) if !l.events.is_empty() => l.events,
            Ok(_) | Err(store::StoreError::NotFound(_)) => {
                return Err(EngineError::Compaction(format!("Session {source} not found or has no persisted events")))
            }
            Err(e) => return Err(EngineError::Load(e)),
        };
        let end = match to_event {
            Some(id) => events
                .iter()
                .position(|e| e.id == id)
                .ok_or_else(|| EngineError::Compaction(format!("Event {id} not found in session {source}")))?,
            None => events.len(),
        };
        let id = new_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        if self.get(&id).is_some() || layout.events_path(&id).exists() {
            return Err(EngineError::SessionExists(id));
        }
        let mut kept = events;
        kept.truncate(end);
        let cwd = kept.iter().find_map(|e| match &e.payload {
            protocol::event::SessionEvent::SessionStart(d) => d.context.as_ref().map(|c| c.cwd.clone()),
            _ => None,
        });
        let meta = name.map(|name| store::WorkspaceMeta {
            id: id.clone(),
            cwd: cwd.unwrap_or_default(),
            name: Some(name),
            user_named: true,
            created_at: now(),
            updated_at: now(),
            ..Default::default()
        });
        let new_id = id.clone();
        tokio::task::spawn_blocking(move || -> Result<(), store::StoreError> {
            layout.ensure_session_dir(&new_id)?;
            let mut log = EventLog::open(layout.events_path(&new_id))?;
            for mut e in kept {
                // The copy names its own session; every event keeps its id and parent.
                if let protocol::event::SessionEvent::SessionStart(d) = &mut e.payload {
                    d.session_id = new_id.clone();
                }
                log.append(&e)?;
            }
            log.sync()?;
            match meta {
                Some(meta) => layout.write_workspace_yaml_blocking(&new_id, &meta),
                None => Ok(()),
            }
        })
        .await
        .map_err(|e| EngineError::Compaction(format!("writing the fork failed: {e}")))??;
        Ok(id)
    }

    /// `session.shutdown`: ends a loaded session here (its state stays on disk for a resume).
    pub async fn shutdown_session(&self, id: &str, shutdown_type: t::ShutdownType) -> Result<(), EngineError> {
        let handle = self.require(id)?;
        let input = protocol::hooks::SessionEndInput { reason: "user_exit".into() };
        hooks::invoke(&handle, t::HookType::SessionEnd, input).await;
        handle.end(shutdown_type).await?;
        self.forget(&handle);
        Ok(())
    }

    /// Removes an unloaded session from the registry (unless a new one took its id).
    fn forget(&self, handle: &SessionHandle) {
        let mut sessions = lock(&self.sessions);
        if sessions.get(handle.id()).is_some_and(|h| h.same_session(handle)) {
            sessions.remove(handle.id());
        }
    }

    /// A connection went away: drop its subscriptions; sessions keep running.
    pub fn drop_subscriber(&self, subscriber_id: u64) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for s in sessions {
            if s.emitter().unsubscribe(subscriber_id) == 0 {
                // A client may reconnect and resume (the SDKs' pending-work flow): keep what is
                // pending answerable for a while, then stop waiting so the run cannot hang.
                let grace = self.pending_grace;
                tokio::spawn(async move {
                    tokio::time::sleep(grace).await;
                    if s.subscriber_count() == 0 {
                        let _ = s.fail_all_pending().await;
                    }
                });
            }
        }
    }

    pub async fn delete(&self, id: &str) -> Result<(), EngineError> {
        let removed = lock(&self.sessions).remove(id);
        if let Some(handle) = removed {
            handle.shutdown();
        }
        let existed = self.deps.layout.session_dir(id).exists() || self.deps.index.get(id).await?.is_some();
        if !existed {
            return Err(EngineError::SessionNotFound(id.to_string()));
        }
        self.deps.layout.delete_session_dir(id)?;
        self.deps.index.delete(id).await?;
        self.broadcast_lifecycle(LifecycleNotification {
            kind: "session.deleted".into(),
            session_id: id.to_string(),
            metadata: None,
        });
        Ok(())
    }

    /// All persisted events of a loaded session.
    pub async fn messages(&self, id: &str) -> Result<Vec<protocol::event::Event>, EngineError> {
        self.require(id)?;
        // A long log is a blocking read: keep it off the async workers.
        let path = self.deps.layout.events_path(id);
        let loaded = tokio::task::spawn_blocking(move || EventLog::load(&path)).await.map_err(|e| {
            EngineError::Store(store::StoreError::Io { path: id.to_string(), source: std::io::Error::other(e) })
        })?;
        match loaded {
            // Usage records are the log's own bookkeeping; clients never see them.
            Ok(l) => {
                Ok(l.events.into_iter().filter(|e| !matches!(e.payload, SessionEvent::SessionUsageRecord(_))).collect())
            }
            Err(store::StoreError::NotFound(_)) => Err(EngineError::SessionNotFound(id.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list(&self, filter: &store::ListFilter) -> Result<Vec<SessionListEntry>, EngineError> {
        let rows = self.deps.index.list(filter).await?;
        Ok(rows.iter().map(|r| self.list_entry(r)).collect())
    }

    pub async fn metadata(&self, id: &str) -> Result<Option<SessionListEntry>, EngineError> {
        Ok(self.deps.index.get(id).await?.filter(|r| r.has_user_message).map(|r| self.list_entry(&r)))
    }

    pub async fn last_id(&self) -> Result<Option<String>, EngineError> {
        Ok(self.deps.index.last_id().await?)
    }

    fn list_entry(&self, r: &SessionRow) -> SessionListEntry {
        let title = r.title.clone().or_else(|| r.summary.clone()).unwrap_or_default();
        SessionListEntry {
            session_id: r.id.clone(),
            start_time: r.created_at.clone(),
            modified_time: r.updated_at.clone(),
            is_remote: false,
            is_detached: self.get(&r.id).is_none(),
            summary: r.summary.clone().unwrap_or_else(|| title.clone()),
            name: title,
            client_name: r.client_name.clone().unwrap_or_else(|| "sdk".into()),
            context: SessionContext {
                cwd: r.cwd.clone(),
                git_root: r.git_root.clone(),
                repository: r.repository.clone(),
                branch: r.branch.clone(),
            },
        }
    }

    /// Stops every session (process shutdown).
    pub fn shutdown_all(&self) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for s in sessions {
            s.shutdown();
        }
    }
}
