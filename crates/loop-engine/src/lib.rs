//! The agent loop. An [`Engine`] owns the loaded sessions; each session is one actor task
//! (`actor::Actor::run`) that owns its conversation and runs its messages through the one turn
//! loop (`turns`): one model call per turn, the reply's tools dispatched, `session.idle` after
//! every run on every path. Sub-agents run the same loop.
//!
//! Callers subscribe with an [`EventSubscriber`] (this crate speaks no JSON-RPC); the event log
//! and the session index go through the `store` crate.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod actor;
pub mod agent_control;
pub mod attachments;
mod auto_mode;
pub mod autopilot;
pub mod byok;
pub mod canvases;
mod client;
pub mod clients;
pub mod compaction;
mod conversation;
mod deps;
pub use deps::TenantScope;
mod dispatch;
mod emitter;
mod ephemeral_query;
mod error;
pub mod event_reader;
mod exit_plan_mode;
mod external;
pub mod file_tracking;
mod github_mcp;
mod handle;
pub mod history;
mod hooks;
mod mcp;
mod mcp_oauth;
mod mcp_sampling;
pub mod meter;
mod model_call;
mod mutex;
mod parking;
mod pending;
mod permission;
pub mod permission_rules;
pub mod permission_settings;
pub mod placement;
mod queue_edit;
mod resume;
mod run;
mod run_ctx;
mod sandbox_bypass;
pub mod sandbox_picker;
pub mod session_fs;
mod session_sandbox;
mod session_token;
pub mod settings;
mod skill_tool;
mod spans;
pub mod sql;
pub mod subagent;
pub mod system_prompt;
pub mod telemetry;
pub mod tool_filter;
mod tool_handlers;
mod turn_control;
mod turns;
pub mod ui_requests;
mod usage_metrics;
mod user_input;
pub mod user_shell;
pub mod workflows;
mod workspace;
mod workspace_yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use llm_providers::{ModelClient, ModelInfo};
use protocol::generated::types as t;
use protocol::methods::{
    LifecycleMetadata, LifecycleNotification, SessionConfigParams, SessionContext, SessionListEntry,
};
use store::{EventStore, Layout, SessionIndex, SessionRow};

use deps::Deps;
pub use emitter::{ClientRequester, Emitter, EventSubscriber};
pub use error::EngineError;
pub use handle::{
    message_mode, Activity, LogLevel, NameOp, NameResult, OptionsPatch, PlanOp, PlanResult, QueueOp, QueueState,
    QueuedMessage, SessionHandle, SessionView, SteeringAppend, Withdrawn,
};
pub use mcp::wire_source as mcp_server_source;
use mutex::lock;
pub use pending::PendingAnswer;
pub use placement::{Placed, Placement};
pub use queue_edit::QueueError;
use resume::{cwd_context, resume_data};
pub use sandbox_bypass::{OfferRefusal, Take as SandboxTake};
pub use settings::SessionSettings;
pub use turn_control::ClearRefused;
use workspace_yaml::write_workspace_yaml;

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
    /// Spans to a file, as the SDKs' `telemetry` option asks (`None`: off).
    pub telemetry: Option<telemetry::TelemetryConfig>,
    /// The command sandbox every session's processes run under (the team server's floor;
    /// `None`: unconfined). Each session adds its own directory and `/tmp` to it.
    pub sandbox: Option<sandbox::Policy>,
    /// The team server's tenants: a session whose working directory is in a tenant's workspace
    /// reads its configuration in the tenant's home (not `home`), and its processes run in
    /// that workspace and the tenant's resource group.
    pub tenants: Vec<TenantScope>,
    /// Folders trusted by this process beside the user's `trustedFolders` (`-p --trust-folder`:
    /// the run's working directory, for its one session; nothing is saved).
    pub trusted_folders: Vec<PathBuf>,
}

pub struct Engine {
    deps: Arc<Deps>,
    default_model: String,
    default_cwd: PathBuf,
    allow_all: bool,
    pending_grace: std::time::Duration,
    sessions: Mutex<HashMap<String, SessionHandle>>,
    lifecycle: Arc<Mutex<Vec<Arc<dyn LifecycleSubscriber>>>>,
    /// What the deployment adds around a session: nothing on one node; leases, followers
    /// and notifications for the other nodes on several.
    placement: Arc<dyn Placement>,
    /// Location approvals and trusted folders hosts gave; in memory, for the process's life.
    permissions: permission_settings::ServerPermissions,
}

pub(crate) fn now() -> String {
    protocol::now_iso()
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

/// Where a session being created or loaded keeps its state: `remote` when a sessionFs
/// provider keeps it, `sql` when the provider also keeps its database.
#[derive(Default)]
pub(crate) struct Storage {
    remote: Option<store::session_fs::RemoteState>,
    sql: Option<Arc<dyn store::session_db::SqlBackend>>,
}

impl Storage {
    fn new(fs: Option<&session_fs::FsProvider>, subscriber: Option<&Arc<dyn EventSubscriber>>, id: &str) -> Self {
        let (Some(fs), Some(client)) = (fs, subscriber.and_then(|s| s.requester())) else {
            return Self::default();
        };
        let client = Arc::new(session_fs::ClientFs { client, session_id: id.to_string() });
        Self {
            remote: Some(store::session_fs::RemoteState::new(client.clone(), &fs.state_path)),
            sql: fs.sqlite.then_some(client as Arc<dyn store::session_db::SqlBackend>),
        }
    }
}

impl Engine {
    pub async fn open(config: EngineConfig) -> Result<Self, EngineError> {
        let layout = Layout::new(config.home.clone());
        let index = SessionIndex::open(&layout.db_path()).await?;
        Ok(Self::with_store(config, index, EventStore::Files(layout), Arc::new(placement::OneNode)))
    }

    /// An engine on a given index and event store, in the deployment `placement` describes.
    pub fn with_store(
        config: EngineConfig,
        index: SessionIndex,
        events: EventStore,
        placement: Arc<dyn Placement>,
    ) -> Self {
        // Several nodes keep session directories on the volume they share: a node taking a
        // session over finds its files where the last one left them.
        let layout = match placement.session_state_dir() {
            Some(dir) => Layout::with_session_state(config.home.clone(), dir),
            None => Layout::new(config.home.clone()),
        };
        Self {
            deps: Arc::new(Deps {
                layout,
                index,
                events,
                model: config.model,
                http: config.http,
                builtins: config.builtins,
                tool_env: Arc::new(config.tool_env),
                version: config.version,
                models: Mutex::new(None),
                spans: config.telemetry.map(telemetry::SpanFile::new),
                sandbox: config.sandbox,
                tenants: config.tenants,
                trusted_folders: config.trusted_folders,
                meter: std::sync::OnceLock::new(),
            }),
            default_model: config.default_model,
            default_cwd: config.default_cwd,
            allow_all: config.allow_all_tools,
            pending_grace: config.pending_grace,
            sessions: Mutex::new(HashMap::new()),
            lifecycle: Default::default(),
            placement,
            permissions: Default::default(),
        }
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

    /// `$COPILOT_HOME`: the user's configuration (settings, plugins, skills). On a team server
    /// each tenant has its own instead ([`EngineConfig::tenants`]).
    pub fn home(&self) -> &Path {
        &self.deps.layout.home
    }

    /// Where a session's state lives, loaded or not (its id is not checked here).
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.deps.layout.session_dir(id)
    }

    /// Location approvals and trusted folders (`session.permissions.locations.*`, `folderTrust.*`).
    pub fn permissions(&self) -> &permission_settings::ServerPermissions {
        &self.permissions
    }

    /// Sets what counts and limits the sessions' work (once, before the first session; later
    /// calls are ignored).
    pub fn set_meter(&self, meter: Arc<dyn meter::Meter>) {
        let _ = self.deps.meter.set(meter);
    }

    pub fn subscribe_lifecycle(&self, sub: Arc<dyn LifecycleSubscriber>) {
        lock(&self.lifecycle).push(sub);
    }

    pub fn unsubscribe_lifecycle(&self, id: u64) {
        lock(&self.lifecycle).retain(|s| s.subscriber_id() != id);
    }

    fn broadcast_lifecycle(&self, params: LifecycleNotification) {
        broadcast(&self.lifecycle, &params);
    }

    /// Delivers a lifecycle notification from another node to this node's clients.
    pub fn tell_lifecycle(&self, notification: LifecycleNotification) {
        self.broadcast_lifecycle(notification);
    }

    /// Tells this node's clients and the other nodes of a session created or deleted here.
    async fn announce(&self, notification: LifecycleNotification) {
        self.placement.publish(&notification).await;
        self.broadcast_lifecycle(notification);
    }
}

fn broadcast(subscribers: &Mutex<Vec<Arc<dyn LifecycleSubscriber>>>, params: &LifecycleNotification) {
    lock(subscribers).retain(|s| s.notify(params));
}

/// `session.updated` for every client, after each persisted event of a session (its start
/// excepted: `session.created` announces that); the placement tells other nodes.
fn updated_notifier(
    subscribers: Arc<Mutex<Vec<Arc<dyn LifecycleSubscriber>>>>,
    placement: Arc<dyn Placement>,
    session_id: String,
    start_time: String,
) -> emitter::PersistedHook {
    Box::new(move |kind| {
        if kind == "session.start" {
            return;
        }
        placement.persisted(&session_id, &start_time);
        let params = LifecycleNotification {
            kind: "session.updated".into(),
            session_id: session_id.clone(),
            metadata: Some(LifecycleMetadata { start_time: start_time.clone(), modified_time: now() }),
        };
        broadcast(&subscribers, &params);
    })
}

impl Engine {
    /// The model catalogue, cached after the first successful fetch.
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>, EngineError> {
        self.deps.catalogue().await
    }

    /// The models a session can use (see [`Deps::session_models`]).
    pub async fn session_models(&self, session: &SessionHandle) -> Result<Vec<ModelInfo>, EngineError> {
        let providers = session.view().settings.providers.clone();
        self.deps.session_models(&providers).await
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
                github_token: settings.github_token.as_ref(),
            },
        );
        Ok(route.client.endpoint().await?)
    }

    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        lock(&self.sessions).get(id).filter(|h| !h.is_stopped()).cloned()
    }

    /// Unloads sessions that have had no client and done nothing for `idle_for`, checking
    /// every fraction of it, for as long as the engine lives. A later resume loads them again
    /// from disk; a client notices only the latency. Idle sessions that keep a client drop
    /// their history from memory instead (`parking`).
    pub fn start_idle_unloader(self: &Arc<Self>, idle_for: std::time::Duration) {
        let engine = Arc::downgrade(self);
        let every = (idle_for / 4).clamp(std::time::Duration::from_millis(10), std::time::Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(engine) = engine.upgrade() else { return };
                let idle: Vec<SessionHandle> = lock(&engine.sessions).values().cloned().collect();
                for handle in idle {
                    if handle.unload_if_idle(idle_for).await {
                        tracing::debug!(session = handle.id(), "unloaded an idle session");
                        engine.forget(&handle);
                    }
                }
            }
        });
    }

    /// The loaded session, or `SessionNotFound`.
    pub fn require(&self, id: &str) -> Result<SessionHandle, EngineError> {
        self.get(id).ok_or_else(|| EngineError::SessionNotFound(id.to_string()))
    }

    /// Writes what the session index holds back (modification times) before the process exits.
    pub async fn flush_index(&self) {
        if let Err(e) = self.deps.index.flush().await {
            tracing::warn!(error = %e, "session index: writing modification times failed");
        }
    }

    /// Starts what the default model client's first call needs before it can be sent (see
    /// `ModelClient::warm_up`), for a caller about to create a session and send to it at once.
    pub fn warm_up_model(&self) {
        let model = self.deps.model.clone();
        tokio::spawn(async move { model.warm_up().await });
    }

    /// Before the process exits with everything written: the index stays open to the end, so
    /// its WAL is not deleted and made again by the next process (see
    /// `SessionIndex::leave_open_at_exit`).
    pub fn leave_index_open_at_exit(&self) {
        self.deps.index.leave_open_at_exit();
    }

    pub fn loaded_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// The tools the session's next model call would be offered, as it would see them.
    pub fn session_tools(&self, session: &SessionHandle) -> Vec<llm_providers::ToolSpec> {
        dispatch::tool_specs(&self.deps, &session.view().settings, session.mcp())
    }

    /// Loaded sessions in the middle of a run (a shutdown drains them).
    pub fn running_count(&self) -> usize {
        lock(&self.sessions).values().filter(|h| h.view().running).count()
    }

    /// Starts a session's actor task and returns its handle.
    #[allow(clippy::too_many_arguments)] // a session's parts, each made by a different caller
    fn spawn_session(
        &self,
        id: String,
        emitter: Emitter,
        settings: SessionSettings,
        start_time: String,
        conv: conversation::Conversation,
        name: Option<String>,
        storage: Storage,
    ) -> SessionHandle {
        let (tx, rx) = tokio::sync::mpsc::channel(actor::INPUT_CAPACITY);
        emitter.set_on_persisted(updated_notifier(
            self.lifecycle.clone(),
            self.placement.clone(),
            id.clone(),
            start_time.clone(),
        ));
        if let (Some(hook), true) = (self.placement.ephemeral_hook(&id), emitter.has_log()) {
            emitter.set_on_ephemeral(hook);
        }
        // Only where the session runs: a follower's events were counted on their node.
        if let (Some(meter), true) = (self.deps.meter.get(), emitter.has_log()) {
            emitter.set_meter(meter.clone());
        }
        let view =
            Arc::new(SessionView { settings, approvals: Vec::new(), running: false, user_named: name.is_some(), name });
        let (view_tx, view_rx) = tokio::sync::watch::channel(view.clone());
        let mcp = mcp_client::McpHost::new(view.settings.cwd.clone(), self.deps.tool_env.clone());
        let emitter = Arc::new(emitter);
        mcp::attach(&mcp, emitter.clone());
        let id_for_db = id.clone();
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
            events: self.deps.events.clone(),
            sql: match storage.sql {
                Some(db) => db,
                None => Arc::new(store::session_db::LocalSessionDb::new(
                    self.deps.layout.session_dir(&id_for_db).join("session.db"),
                )),
            },
            remote: storage.remote,
            sql_ready: Default::default(),
            clients: Default::default(),
            canvases: Default::default(),
            workflows: Default::default(),
            files: Default::default(),
            ui: Default::default(),
            user_shell: user_shell::UserShell::new(self.deps.tool_env.clone()),
            mcp_oauth: Default::default(),
            mcp_sampling: Default::default(),
            tasks: subagent::Registry::new(self.deps.clone()),
            permissions: Default::default(),
            turn: Default::default(),
            deps: self.deps.clone(),
        });
        mcp_oauth::attach(&handle);
        mcp_sampling::attach(&handle);
        handle.apply_sandbox_floor();
        let actor = actor::Actor::new(handle.clone(), self.deps.clone(), view, view_tx, conv);
        tokio::spawn(actor.run(rx));
        handle
    }

    pub async fn create(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
    ) -> Result<SessionHandle, EngineError> {
        self.create_with(params, subscriber, None).await
    }

    /// [`Engine::create`], the session's state kept by the subscriber's sessionFs provider
    /// when `fs` is given.
    pub async fn create_with(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
        fs: Option<session_fs::FsProvider>,
    ) -> Result<SessionHandle, EngineError> {
        settings::providers_from_params(params).map_err(EngineError::InvalidProviders)?;
        let id = params.session_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let layout = &self.deps.layout;
        Layout::check_id(&id)?;
        if fs.is_none() {
            // A session that could not write its start would be listed with no log.
            self.deps.events.room_for_a_turn(&id)?;
        }
        if self.get(&id).is_some() || self.deps.events.exists(&id).await? {
            return Err(EngineError::SessionExists(id));
        }
        let mut settings = SessionSettings::from_params(params, &self.default_model, &self.default_cwd, self.allow_all);
        settings.config = self.deps.config_scope(&settings.cwd);
        settings.load_files();
        // The directory holds the session's local files (plan, workspace files, spills) on
        // every backend; the log goes where the store keeps logs.
        layout.ensure_session_dir(&id)?;
        self.placement.claim_new(&id).await?;
        let start_time = now();
        let storage = Storage::new(fs.as_ref(), subscriber.as_ref(), &id);
        let prepared = async {
            let log = match &storage.remote {
                Some(remote) => store::EventSink::Remote(remote.open_sink().await?),
                None => self.deps.events.open_sink(&id).await?,
            };
            self.deps.index.upsert(&index_row(&id, &settings, &start_time)).await?;
            Ok::<_, EngineError>(log)
        };
        let log = match prepared.await {
            Ok(log) => log,
            Err(e) => {
                self.placement.unloaded(&id);
                return Err(e);
            }
        };
        let emitter = Emitter::new(id.clone(), Some(log), None, 0);
        if let Some(sub) = subscriber {
            emitter.subscribe(sub);
        }
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
        let conv = conversation::Conversation::new(Vec::new(), None);
        let remote = storage.remote.clone();
        let handle = self.spawn_session(id.clone(), emitter, settings.clone(), start_time.clone(), conv, None, storage);
        let raced = lock(&self.sessions).insert(id.clone(), handle.clone());
        if let Some(resumed) = raced {
            // A resume of this id found the log this create had just opened and loaded it
            // before the create was done: its callers join the created session.
            for sub in resumed.emitter().take_subscribers() {
                handle.subscribe(sub);
            }
            resumed.shutdown();
        }
        let created = LifecycleNotification {
            kind: "session.created".into(),
            session_id: id.clone(),
            metadata: Some(LifecycleMetadata { start_time: start_time.clone(), modified_time: start_time.clone() }),
        };
        self.announce(created).await;
        handle.emitter().emit(start);
        configure_processes(&handle, &self.deps, &settings, params);
        write_workspace_yaml(&self.deps, &handle, &settings, None).await;
        if let Some(remote) = remote {
            if let Err(e) = remote.ensure_checkpoint_index().await {
                tracing::warn!(session = %id, error = %e, "checkpoint index write failed");
            }
        }
        Ok(handle)
    }

    pub async fn resume(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
    ) -> Result<SessionHandle, EngineError> {
        self.resume_with(params, subscriber, None).await
    }

    /// [`Engine::resume`]; a session not loaded here is read from the subscriber's sessionFs
    /// provider when `fs` is given.
    pub async fn resume_with(
        &self,
        params: &SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
        fs: Option<session_fs::FsProvider>,
    ) -> Result<SessionHandle, EngineError> {
        let id = params.session_id.clone().ok_or_else(|| EngineError::SessionNotFound(String::new()))?;
        settings::providers_from_params(params).map_err(EngineError::InvalidProviders)?;
        if let Some(handle) = self.get(&id) {
            if self.placement.followed_owner(&id).is_some() {
                // A follower relays another node's events: joining it adds no event of its own.
                if let Some(sub) = subscriber {
                    handle.subscribe(sub);
                }
                return Ok(handle);
            }
            match handle.resume(params.clone(), subscriber.clone()).await {
                Ok(()) => {
                    configure_processes(&handle, &self.deps, &handle.view().settings, params);
                    return Ok(handle);
                }
                // The idle unloader ended it just now: load it again from disk.
                Err(EngineError::SessionNotFound(_)) if handle.is_stopped() => self.forget(&handle),
                Err(e) => return Err(e),
            }
        }
        Layout::check_id(&id).map_err(|_| EngineError::Load(store::StoreError::NotFound(id.clone())))?;
        let placed = self.placement.claim(&id).await?;
        let storage = Storage::new(fs.as_ref(), subscriber.as_ref(), &id);
        let subscribers = subscriber.into_iter().collect();
        let loaded = self.load(&id, params, subscribers, placed, storage).await;
        if loaded.is_err() {
            self.placement.unloaded(&id);
        }
        loaded
    }

    /// Loads a session from its log. [`Placed::Here`]: it runs here (this node alone appends
    /// to its log); [`Placed::Elsewhere`]: a read-only follower that relays what the owning
    /// node persists (the placement feeds it).
    async fn load(
        &self,
        id: &str,
        params: &SessionConfigParams,
        subscribers: Vec<Arc<dyn EventSubscriber>>,
        placed: Placed,
        storage: Storage,
    ) -> Result<SessionHandle, EngineError> {
        let id = id.to_string();
        let follow = match placed {
            Placed::Here => None,
            Placed::Elsewhere(node) => Some(node),
        };
        let loaded = match &storage.remote {
            Some(remote) => remote.load(&id).await,
            None => self.deps.events.load(&id).await,
        };
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
        settings.config = self.deps.config_scope(&settings.cwd);
        settings.load_files();
        settings.resumed = true;
        if let Some(mode) = restored.mode {
            settings.mode = mode;
        }
        let log = match (&follow, &storage.remote) {
            (None, Some(remote)) => Some(store::EventSink::Remote(remote.open_sink().await?)),
            (None, None) => Some(self.deps.events.open_sink(&id).await?),
            (Some(_), _) => None,
        };
        let start_time = restored.start_time.clone().unwrap_or_else(now);
        let emitter = Emitter::new(id.clone(), log, restored.last_event_id.clone(), loaded.events.len());
        if follow.is_none() && self.deps.index.get(&id).await?.is_none() {
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
        let mut conv = conversation::Conversation::new(restored.messages, restored.title);
        conv.last_system = restored.last_system;
        conv.prompts = restored.prompts;
        let name = self.user_name(&id).await;
        let handle = self.spawn_session(id.clone(), emitter, settings, start_time, conv, name, storage);
        let existing = {
            let mut sessions = lock(&self.sessions);
            match sessions.get(&id) {
                // A resume or create of the same id raced this one: keep the first.
                Some(first) => Some(first.clone()),
                None => {
                    sessions.insert(id.clone(), handle.clone());
                    if let Some(node) = &follow {
                        self.placement.following(&id, node, params, loaded.events.len() as i64);
                    }
                    None
                }
            }
        };
        if let Some(first) = existing {
            // Another connection loaded (or created) it meanwhile: join that one.
            handle.shutdown();
            let mut subscribers = subscribers.into_iter();
            first.resume(params.clone(), subscribers.next()).await?;
            for sub in subscribers {
                first.subscribe(sub);
            }
            configure_processes(&first, &self.deps, &first.view().settings, params);
            return Ok(first);
        }
        for sub in subscribers {
            handle.subscribe(sub);
        }
        if follow.is_none() && !params.disable_resume.unwrap_or(false) {
            handle.emitter().emit(resume_event);
        }
        configure_processes(&handle, &self.deps, &handle.view().settings, params);
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
        clients::leave(&handle, subscriber_id).await;
        if let Ok(true) = handle.detach(subscriber_id).await {
            self.forget(&handle);
        }
        // A client that keeps the log has it all once it hears the detach answered (a resume
        // reads it back from there).
        if let Some(remote) = handle.remote_state() {
            remote.flushed().await;
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
        Layout::check_id(source)?;
        let loaded = self.deps.events.load(source).await;
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
        Layout::check_id(&id)?;
        if self.get(&id).is_some() || self.deps.events.exists(&id).await? {
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
        for e in &mut kept {
            // The copy names its own session; every event keeps its id and parent.
            if let protocol::event::SessionEvent::SessionStart(d) = &mut e.payload {
                d.session_id = id.clone();
            }
        }
        self.deps.layout.ensure_session_dir(&id)?;
        self.deps.events.write_log(&id, kept).await?;
        if let Some(meta) = meta {
            self.deps.events.write_meta(&id, &meta).await?;
        }
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

    /// Runs here a session this node followed (its owner is gone and the placement holds its
    /// lease now): the follower's clients move to the session loaded from the log.
    pub async fn take_over(&self, follower: &SessionHandle, params: &SessionConfigParams) -> Result<(), EngineError> {
        let subscribers = follower.emitter().take_subscribers();
        self.forget(follower);
        follower.shutdown();
        let mut params = params.clone();
        params.disable_resume = Some(false);
        self.load(follower.id(), &params, subscribers, Placed::Here, Default::default()).await?;
        Ok(())
    }

    /// Removes an unloaded session from the registry (unless a new one took its id).
    fn forget(&self, handle: &SessionHandle) {
        let mut sessions = lock(&self.sessions);
        if sessions.get(handle.id()).is_some_and(|h| h.same_session(handle)) {
            sessions.remove(handle.id());
            self.placement.unloaded(handle.id());
        }
    }

    /// A connection went away: drop its subscriptions; sessions keep running.
    pub fn drop_subscriber(&self, subscriber_id: u64) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for s in sessions {
            if s.clients().has(subscriber_id) {
                let s = s.clone();
                tokio::spawn(async move { clients::leave(&s, subscriber_id).await });
            }
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
        // Running on another node: deleting it under that node would lose what it writes.
        if let Some(node) = self.placement.running_elsewhere(id).await? {
            return Err(store::StoreError::LeasedElsewhere { session: id.to_string(), node }.into());
        }
        let removed = lock(&self.sessions).remove(id);
        if let Some(handle) = removed {
            handle.shutdown();
        }
        Layout::check_id(id).map_err(|_| EngineError::SessionNotFound(id.to_string()))?;
        let existed = self.deps.layout.session_dir(id).exists()
            || self.deps.events.exists(id).await?
            || self.deps.index.get(id).await?.is_some();
        if !existed {
            return Err(EngineError::SessionNotFound(id.to_string()));
        }
        self.deps.layout.delete_session_dir(id)?;
        self.deps.events.delete(id).await?;
        self.deps.index.delete(id).await?;
        let deleted =
            LifecycleNotification { kind: "session.deleted".into(), session_id: id.to_string(), metadata: None };
        self.announce(deleted).await;
        Ok(())
    }

    /// All persisted events of a loaded session.
    pub async fn messages(&self, id: &str) -> Result<Vec<protocol::event::Event>, EngineError> {
        let handle = self.require(id)?;
        let events = self.persisted_log(&handle).await?;
        Ok(events.into_iter().filter(|e| !crate::emitter::log_only(e)).collect())
    }

    /// Everything a loaded session's log holds, the records clients never see included; read
    /// from its own store (a client-held log from the client).
    pub(crate) async fn persisted_log(
        &self,
        handle: &SessionHandle,
    ) -> Result<Vec<protocol::event::Event>, EngineError> {
        let id = handle.id();
        let loaded = match handle.remote_state() {
            Some(remote) => remote.load(id).await,
            None => self.deps.events.load(id).await,
        };
        match loaded {
            Ok(l) => Ok(l.events),
            Err(store::StoreError::NotFound(_)) => Err(EngineError::SessionNotFound(id.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    /// The persisted events of a session, loaded here or not (`sessions.readPersistedEvents`);
    /// a loaded session's own store is read, so a client-held log is read from the client.
    pub async fn persisted_events(&self, id: &str) -> Result<Vec<protocol::event::Event>, EngineError> {
        if self.get(id).is_some() {
            return self.messages(id).await;
        }
        Layout::check_id(id).map_err(|_| EngineError::SessionNotFound(id.to_string()))?;
        match self.deps.events.load(id).await {
            Ok(l) => Ok(l.events.into_iter().filter(|e| !crate::emitter::log_only(e)).collect()),
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

    /// The name a client gave the session, from its `workspace.yaml` metadata.
    async fn user_name(&self, id: &str) -> Option<String> {
        self.deps.events.read_meta(id).await.ok().flatten().filter(|m| m.user_named).and_then(|m| m.name)
    }

    /// The session's `workspace.yaml` metadata, wherever the store keeps it.
    pub async fn workspace_meta(&self, id: &str) -> Option<store::WorkspaceMeta> {
        self.deps.events.read_meta(id).await.ok().flatten()
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

/// What a session's processes start under and which MCP servers it runs, from its create or
/// resume params: the sandbox first, so no server starts unconfined.
fn configure_processes(handle: &SessionHandle, deps: &Deps, settings: &SessionSettings, params: &SessionConfigParams) {
    if let Some(config) = &params.sandbox_config {
        handle.set_sandbox_config(config);
    }
    mcp::configure(handle.mcp(), deps, settings, params);
}
