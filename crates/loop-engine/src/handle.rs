//! [`SessionHandle`]: how everything outside a session's task talks to it. Cloning is cheap.
//! Changes go to the actor as a [`SessionInput`] (and wait for its answer); reads use the
//! [`SessionView`] the actor publishes after every change, so they never queue behind a run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::generated::types::{
    AbortReason, Attachment, PermissionPromptRequest, SessionMode, UserMessageAgentMode, UserMessageDelivery,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::emitter::{Emitter, EventSubscriber};
use crate::error::EngineError;
use crate::pending::{PendingAnswer, PendingKind};
use crate::queue_edit::QueueError;
use crate::settings::SessionSettings;

/// A user message waiting to be processed.
#[derive(Debug, Clone)]
pub struct QueuedMessage {
    pub message_id: String,
    pub prompt: String,
    /// What the timeline shows instead of `prompt` (`user.message`'s `content`), when given.
    pub display_prompt: Option<String>,
    pub attachments: Vec<Attachment>,
    pub agent_mode: Option<UserMessageAgentMode>,
    pub request_headers: Vec<(String, String)>,
    /// Set when the message is queued.
    pub delivery: UserMessageDelivery,
    /// `session.sendMessages`: the batch's messages before this one, which go into the
    /// conversation first, in one turn with it.
    pub earlier: Vec<QueuedMessage>,
    /// `session.sendMessages` with no message: one turn over the history as it is (this
    /// message's text is not sent).
    pub no_message: bool,
}

impl Default for QueuedMessage {
    fn default() -> Self {
        Self {
            message_id: uuid::Uuid::new_v4().to_string(),
            prompt: String::new(),
            display_prompt: None,
            attachments: Vec::new(),
            agent_mode: None,
            request_headers: Vec::new(),
            delivery: UserMessageDelivery::Idle,
            earlier: Vec::new(),
            no_message: false,
        }
    }
}

impl QueuedMessage {
    /// The text the timeline shows for it.
    pub fn shown(&self) -> &str {
        self.display_prompt.as_deref().unwrap_or(&self.prompt)
    }
}

/// The mode a queued message (or command) runs in: its own, else the session's.
pub fn message_mode(own: Option<UserMessageAgentMode>, session: SessionMode) -> UserMessageAgentMode {
    own.unwrap_or(match session {
        SessionMode::Plan => UserMessageAgentMode::Plan,
        SessionMode::Autopilot => UserMessageAgentMode::Autopilot,
        _ => UserMessageAgentMode::Interactive,
    })
}

/// What the actor publishes: the session's settings and state, as of its last change.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub settings: SessionSettings,
    /// Keys approved "for the session" (see `permission::approval_keys`).
    pub approvals: Vec<String>,
    /// A message is being processed (the session is not idle).
    pub running: bool,
    /// The name a client gave the session (`session.name.set`), or an automatic one
    /// (`setAuto`); `None` until then (the first prompt names it meanwhile).
    pub name: Option<String>,
    /// `name` was set by a user: automatic names no longer replace it.
    pub user_named: bool,
}

/// `session.name.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameOp {
    Get,
    Set(String),
    /// An automatic summary: applied unless a user named the session.
    SetAuto(String),
}

/// What a [`NameOp`] gives back: the name (`Get`), or whether it was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameResult {
    Name(Option<String>),
    Applied(bool),
}

/// The options a client may change on a live session (`session.options.update`); `None`
/// leaves a setting as it is.
#[derive(Debug, Clone, Default)]
pub struct OptionsPatch {
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub client_name: Option<String>,
    pub working_directory: Option<PathBuf>,
    pub streaming: Option<bool>,
    pub available_tools: Option<Vec<String>>,
    pub excluded_tools: Option<Vec<String>>,
    pub ask_user_disabled: Option<bool>,
    pub skip_custom_instructions: Option<bool>,
    /// `sessionLimits.maxAiCredits` (set when the patch carries limits).
    pub max_ai_credits: Option<f64>,
    /// Autopilot's continuations per message (`autopilot.maxContinues`).
    pub autopilot_max_continues: Option<u32>,
}

/// `session.log` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Info,
    Warning,
    Error,
}

/// What happened to `plan.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanOp {
    Read,
    Update(String),
    Delete,
}

/// `plan.md` as read, or the outcome of a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanResult {
    Read { content: Option<String>, path: PathBuf },
    Changed,
}

/// Everything that can make a session do work. Client-facing inputs come through
/// [`SessionHandle`]'s methods; the `Run*` inputs come from the session's own run.
/// `session.queue.*`: what the queue holds, or a change to it.
#[derive(Debug, Clone)]
pub enum QueueOp {
    Snapshot,
    RemoveMostRecent,
    Clear,
    /// The item (a queued message's id) to a position in the queue (clamped).
    Move {
        id: String,
        to: i64,
    },
    Remove {
        id: String,
    },
    /// New text, and what the timeline shows for it (the text itself when `None`).
    UpdateText {
        id: String,
        prompt: String,
        display_prompt: Option<String>,
    },
    /// A copy under a fresh id, right after it.
    Duplicate {
        id: String,
    },
    /// A new message at a position (clamped); its id is the message's.
    Insert {
        at: i64,
        msg: QueuedMessage,
    },
    /// The item into the running turn's steering lane, if a turn is running.
    SendNow {
        id: String,
    },
    /// Holds the queue (nothing queued starts) until released; one holder at a time.
    SetDrainPaused(bool),
    /// Adds to a steering message not yet taken into the turn, if it still reads `expected`
    /// and was sent in `agent_mode`.
    AppendSteering(SteeringAppend),
}

/// `session.queue.appendSteering`.
#[derive(Debug, Clone)]
pub struct SteeringAppend {
    pub message_id: String,
    pub expected: String,
    pub agent_mode: UserMessageAgentMode,
    pub prompt: String,
    pub display_prompt: String,
    pub attachments: Vec<Attachment>,
}

/// What `session.queue.withdrawMessage` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Withdrawn {
    /// The message left its queue, or the running turn and the log.
    pub removed: bool,
    /// The running turn was interrupted to take it out.
    pub interrupted: bool,
}

/// The queue after a [`QueueOp`].
#[derive(Debug, Clone, Default)]
pub struct QueueState {
    /// Messages waiting for the current run to end, oldest first.
    pub items: Vec<QueuedMessage>,
    /// Messages waiting to be steered into the running turn (the text the timeline shows).
    pub steering: Vec<String>,
    /// The operation changed the queue (`RemoveMostRecent`: took a message out; `SendNow`:
    /// steered it into the running turn).
    pub changed: bool,
    /// The id of the item the operation added (`Insert`, `Duplicate`).
    pub id: Option<String>,
}

/// `session.metadata.activity`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Anything in progress or waiting: a run, queued messages, client work, background shells.
    pub has_active_work: bool,
    /// A run is going on that `session.abort` would stop.
    pub abortable: bool,
}

pub(crate) enum SessionInput {
    Queue {
        op: QueueOp,
        reply: oneshot::Sender<Result<QueueState, crate::queue_edit::QueueError>>,
    },
    Activity {
        reply: oneshot::Sender<Activity>,
    },
    SetSubagentSettings {
        settings: Option<protocol::generated::types::SubagentSettings>,
        reply: oneshot::Sender<()>,
    },
    Send {
        msg: QueuedMessage,
        immediate: bool,
        reply: oneshot::Sender<()>,
    },
    Abort {
        reason: AbortReason,
        reply: oneshot::Sender<bool>,
    },
    /// `session.interruptMainTurn`: stops the running turn; `flush` keeps what is queued and
    /// steering for the next turn (else they go, as on an abort).
    Interrupt {
        flush: bool,
        reply: oneshot::Sender<bool>,
    },
    /// `session.queue.withdrawMessage`: answered once the message is out (a running turn's
    /// only after the turn unwound).
    Withdraw {
        message_id: String,
        expected: String,
        reply: oneshot::Sender<Withdrawn>,
    },
    SetMode {
        mode: SessionMode,
        reply: oneshot::Sender<Option<SessionMode>>,
    },
    SwitchModel {
        model: String,
        reasoning_effort: Option<String>,
        /// `modelCapabilities.supports.vision` given with the switch.
        vision: Option<bool>,
        /// Why the runtime switched on its own (`session.model_change.cause`); `None` for a
        /// client's switch.
        cause: Option<&'static str>,
        reply: oneshot::Sender<String>,
    },
    SetApproveAll {
        enabled: bool,
        reply: oneshot::Sender<()>,
    },
    /// Forgets what was approved "for the session" (`session.permissions.resetSessionApprovals`).
    ResetApprovals {
        reply: oneshot::Sender<()>,
    },
    SetTools {
        tools: Vec<protocol::methods::ExternalToolDef>,
        reply: oneshot::Sender<()>,
    },
    AddProviders {
        providers: Vec<protocol::generated::types::NamedProviderConfig>,
        models: Vec<protocol::generated::types::ProviderModelConfig>,
        reply: oneshot::Sender<Result<Vec<llm_providers::ModelInfo>, String>>,
    },
    Answer {
        request_id: String,
        answer: PendingAnswer,
        reply: oneshot::Sender<bool>,
    },
    /// Takes what a waiting permission request offers past the sandbox, and approves it.
    TakeSandboxOffer {
        request_id: String,
        take: crate::sandbox_bypass::Take,
        reply: oneshot::Sender<Result<(), crate::sandbox_bypass::OfferRefusal>>,
    },
    /// What clients have yet to answer: permission prompts and SDK tool calls.
    Waiting {
        reply: oneshot::Sender<crate::pending::Waiting>,
    },
    /// The last client left and did not come back in time: answer what is pending ourselves.
    FailAllPending,
    Log {
        level: LogLevel,
        kind: String,
        message: String,
        ephemeral: bool,
        reply: oneshot::Sender<String>,
    },
    Plan {
        op: PlanOp,
        reply: oneshot::Sender<Result<PlanResult, store::StoreError>>,
    },
    /// `session.workspaces.createFile`: the write and its `session.workspace_file_changed`
    /// event happen together, in the session's order.
    WriteWorkspaceFile {
        path: String,
        content: String,
        reply: oneshot::Sender<Result<(), store::StoreError>>,
    },
    /// A warm `session.resume`: new settings, another subscriber, the `session.resume` event.
    Resume {
        params: Box<protocol::methods::SessionConfigParams>,
        subscriber: Option<Arc<dyn EventSubscriber>>,
        reply: oneshot::Sender<()>,
    },
    /// The idle unloader asks: with no client, nothing running, queued or pending, and no
    /// input for `idle_for`, the task ends silently (reply: unloaded); the state is on disk.
    Unload {
        idle_for: std::time::Duration,
        reply: oneshot::Sender<bool>,
    },
    /// A subscriber leaves; the last one out unloads the session (reply: unloaded).
    Detach {
        subscriber_id: u64,
        reply: oneshot::Sender<bool>,
    },
    /// `session.shutdown`: stop what runs, emit `session.shutdown` of this type, unload.
    Shutdown {
        shutdown_type: protocol::generated::types::ShutdownType,
        reply: oneshot::Sender<()>,
    },
    /// `session.suspend`: stop what runs, answer what waits; the session stays resumable.
    Suspend {
        reply: oneshot::Sender<()>,
    },
    Name {
        op: NameOp,
        reply: oneshot::Sender<Result<NameResult, String>>,
    },
    /// `session.agent.select` / `deselect` / `reload`, `session.skills.*` changes.
    Agents {
        op: crate::agent_control::AgentOp,
        reply: oneshot::Sender<Result<crate::agent_control::AgentOpResult, String>>,
    },
    /// `session.options.update`.
    UpdateOptions {
        patch: OptionsPatch,
        reply: oneshot::Sender<()>,
    },
    /// `session.history.compact`: summarize the conversation now (after the running message).
    Compact {
        custom_instructions: Option<String>,
        trigger: Option<protocol::generated::types::CompactionTrigger>,
        reply: crate::compaction::in_flight::ManualReply,
    },
    /// `session.history.truncate`: drop an event and everything after it.
    Truncate {
        event_id: String,
        reply: oneshot::Sender<Result<protocol::generated::types::HistoryTruncateResult, String>>,
    },
    /// `session.history.summarizeForHandoff`: a summary for another agent; changes nothing.
    Handoff {
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// `session.ui.ephemeralQuery`: a question answered from the context; changes nothing.
    EphemeralQuery {
        question: String,
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// `session.mcp.executeSampling`: where its model call goes.
    SamplingRoute {
        model: Option<String>,
        reply: oneshot::Sender<(crate::byok::Route, String)>,
    },
    /// From the run: remember a request it will wait for, before it offers it to clients.
    RunRegisterPending {
        request_id: String,
        kind: PendingKind,
        tx: oneshot::Sender<PendingAnswer>,
    },
    /// From the run: it stopped waiting (abort).
    RunForgetPending {
        request_id: String,
    },
    /// A background agent ended and no notice of it will start a batch.
    BackgroundSettled,
    /// From the run: approvals "for the session" to remember.
    RunApproveForSession {
        keys: Vec<String>,
    },
    /// From the run, before each model call: the messages sent with `mode: "immediate"`.
    RunTakeSteering {
        reply: oneshot::Sender<Vec<QueuedMessage>>,
    },
}

#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<SessionParts>,
}

/// What a handle is made of; built once per loaded session by the engine.
pub(crate) struct SessionParts {
    pub id: String,
    pub workspace_path: PathBuf,
    pub start_time: String,
    pub emitter: Arc<Emitter>,
    pub shells: Arc<tools::ShellManager>,
    /// The session's MCP servers.
    pub mcp: mcp_client::McpHost,
    /// Boxed: inputs differ a lot in size, and the channel's slots are allocated up front.
    pub inputs: mpsc::Sender<Box<SessionInput>>,
    pub view: watch::Receiver<Arc<SessionView>>,
    /// Cancelled to stop the task: synchronous, so it also works where nobody can wait.
    pub stop: CancellationToken,
    /// The compaction under way, for cancelling it from outside.
    pub compaction: crate::compaction::control::Control,
    /// `session.eventLog.registerInterest` registrations: handle → event type.
    pub interests: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Where the session's log is read back from (files or the shared database).
    pub events: store::EventStore,
    /// The session's state kept by the client (a sessionFs provider), when it is.
    pub remote: Option<store::session_fs::RemoteState>,
    /// The `sql` tool's database: the client's, or a local file opened on first use.
    pub sql: Arc<dyn store::session_db::SqlBackend>,
    /// The client's database needs its todo tables made once.
    pub sql_ready: tokio::sync::OnceCell<()>,
    /// What the running turn marked for clients to act on (`turn_control`).
    pub turn: std::sync::Mutex<crate::turn_control::TurnState>,
    /// What each attached client brings (tools, commands, elicitation).
    pub clients: crate::clients::contributions::Clients,
    /// Canvases clients provide and the instances open.
    pub canvases: crate::canvases::Canvases,
    /// Workflows extensions declare, and the session's runs of them.
    pub workflows: crate::workflows::Workflows,
    /// What file tools changed since each user message, for rewinds.
    pub files: crate::file_tracking::FileTracker,
    /// Requests to clients that are not a run's (elicitations, commands), by request id.
    pub ui: crate::ui_requests::UiRequests,
    /// Commands clients run in the session's shell.
    pub user_shell: crate::user_shell::UserShell,
    /// MCP OAuth token requests waiting for a client.
    pub mcp_oauth: crate::mcp_oauth::requests::OAuthRequests,
    /// MCP sampling requests waiting for a client, and inferences running for clients.
    pub mcp_sampling: crate::mcp_sampling::requests::SamplingRequests,
    /// Background sub-agents.
    pub tasks: crate::subagent::registry::Registry,
    /// What hosts set with `session.permissions.*`; made from the cwd on first use.
    pub permissions: std::sync::Mutex<Option<crate::permission_settings::SessionPermissions>>,
    /// What every session of the engine shares (the model client, the catalogue).
    pub deps: Arc<crate::deps::Deps>,
}

// Methods that need a component's logic are `impl SessionHandle` blocks in that component's file
// (`sql.rs`, `mcp_sampling/`, `mcp_oauth/`): the handle sits below the logic, not above it.
impl SessionHandle {
    pub(crate) fn new(parts: SessionParts) -> Self {
        Self { inner: Arc::new(parts) }
    }

    /// A reference that does not keep the session alive (for what the session itself holds).
    pub(crate) fn downgrade(&self) -> std::sync::Weak<SessionParts> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn turn_lock(&self) -> &std::sync::Mutex<crate::turn_control::TurnState> {
        &self.inner.turn
    }

    pub(crate) fn from_parts(inner: Arc<SessionParts>) -> Self {
        Self { inner }
    }

    pub(crate) fn mcp_oauth_requests(&self) -> &crate::mcp_oauth::requests::OAuthRequests {
        &self.inner.mcp_oauth
    }

    pub(crate) fn deps(&self) -> &Arc<crate::deps::Deps> {
        &self.inner.deps
    }

    pub(crate) fn mcp_sampling(&self) -> &crate::mcp_sampling::requests::SamplingRequests {
        &self.inner.mcp_sampling
    }

    /// The model client and wire model a sampling call uses, and the model's name: `model`
    /// when given, else the session's current model.
    pub(crate) async fn sampling_route(
        &self,
        model: Option<String>,
    ) -> Result<(crate::byok::Route, String), EngineError> {
        self.ask(|reply| SessionInput::SamplingRoute { model, reply }).await
    }

    /// The store the session's log is read back from.
    pub(crate) fn event_store(&self) -> &store::EventStore {
        &self.inner.events
    }

    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The session's state directory on the client, when a sessionFs provider keeps it.
    pub fn remote_state(&self) -> Option<&store::session_fs::RemoteState> {
        self.inner.remote.as_ref()
    }

    /// The `sql` tool's database as opened (see `SessionHandle::sql_db` in `sql.rs`).
    pub(crate) fn sql_backend(&self) -> &Arc<dyn store::session_db::SqlBackend> {
        &self.inner.sql
    }

    /// Set once the client's database has its todo tables.
    pub(crate) fn sql_ready(&self) -> &tokio::sync::OnceCell<()> {
        &self.inner.sql_ready
    }

    /// Whether two handles address the same running session (not just the same id).
    pub fn same_session(&self, other: &SessionHandle) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn workspace_path(&self) -> &Path {
        &self.inner.workspace_path
    }

    pub fn start_time(&self) -> &str {
        &self.inner.start_time
    }

    /// The settings and state as of the actor's last change.
    pub fn view(&self) -> Arc<SessionView> {
        self.inner.view.borrow().clone()
    }

    pub(crate) fn emitter(&self) -> &Emitter {
        &self.inner.emitter
    }

    /// Whether the session runs here: it appends to its own log (a follower of a session
    /// another node runs only relays).
    pub fn runs_here(&self) -> bool {
        self.inner.emitter.has_log()
    }

    /// A follower delivers an event the running node persisted ([`Emitter::relay`]).
    pub fn relay(&self, event: &protocol::event::Event, json: &str) {
        self.inner.emitter.relay(event, json);
    }

    /// A follower delivers an ephemeral event of the running node ([`Emitter::relay_ephemeral`]).
    pub fn relay_ephemeral(&self, event: &protocol::event::Event, json: &str) {
        self.inner.emitter.relay_ephemeral(event, json);
    }

    /// The emitter, shareable (a provider's token source keeps it to reach the client).
    pub(crate) fn emitter_arc(&self) -> &Arc<Emitter> {
        &self.inner.emitter
    }

    pub(crate) fn compaction(&self) -> &crate::compaction::control::Control {
        &self.inner.compaction
    }

    pub(crate) fn shells(&self) -> &Arc<tools::ShellManager> {
        &self.inner.shells
    }

    /// The session's MCP servers (`session.mcp.*`; agents may start their own hosts).
    pub fn mcp(&self) -> &mcp_client::McpHost {
        &self.inner.mcp
    }

    /// Emits an event to every client of the session, and to its log.
    pub fn emit(&self, payload: impl Into<protocol::event::SessionEvent>) -> String {
        self.inner.emitter.emit(payload)
    }

    /// Emits an event that is never persisted, to every client of the session.
    pub fn emit_ephemeral(&self, payload: impl Into<protocol::event::SessionEvent>) -> String {
        self.inner.emitter.emit_ephemeral(payload)
    }

    /// The session's shell as clients use it (`session.shell.*`).
    pub fn user_shell(&self) -> &crate::user_shell::UserShell {
        &self.inner.user_shell
    }

    /// Emits an event that is never persisted to one client of the session only.
    pub fn emit_ephemeral_to(&self, subscriber_id: u64, payload: impl Into<protocol::event::SessionEvent>) -> String {
        self.inner.emitter.emit_ephemeral_to(subscriber_id, payload)
    }

    /// What each attached client brings to the session.
    pub fn clients(&self) -> &crate::clients::contributions::Clients {
        &self.inner.clients
    }

    /// Canvases clients provide and the instances open.
    pub fn canvases(&self) -> &crate::canvases::Canvases {
        &self.inner.canvases
    }

    pub fn workflows(&self) -> &crate::workflows::Workflows {
        &self.inner.workflows
    }

    /// File contents kept for rewinds (`enableFileChangeTracking`).
    pub fn file_tracker(&self) -> &crate::file_tracking::FileTracker {
        &self.inner.files
    }

    /// Where the session reaches files in-process (see [`crate::deps::Deps::files`]).
    pub fn files(&self) -> tools::Files {
        self.deps().files(&self.view().settings.cwd)
    }

    /// How to ask one attached client something (`None` when it is not attached).
    pub fn requester_of(&self, subscriber_id: u64) -> Option<Arc<dyn crate::emitter::ClientRequester>> {
        self.inner.emitter.requester_of(subscriber_id)
    }

    /// Elicitations, slash commands and queued commands waiting for a client.
    pub fn ui(&self) -> &crate::ui_requests::UiRequests {
        &self.inner.ui
    }

    pub fn subscribe(&self, sub: Arc<dyn EventSubscriber>) {
        self.inner.emitter.subscribe(sub);
    }

    pub fn subscriber_count(&self) -> usize {
        self.inner.emitter.subscriber_count()
    }

    /// Removes an event subscriber; returns how many remain. Unlike a connection going away
    /// (the engine's `drop_subscriber`) this starts no grace period: what is pending stays
    /// answerable (a client that answers later, e.g. a Copilot Extensions confirmation).
    pub fn unsubscribe(&self, subscriber_id: u64) -> usize {
        self.inner.emitter.unsubscribe(subscriber_id)
    }

    /// Sends one input and waits for the actor's answer. A session whose task has ended is
    /// reported as not found: it was unloaded or deleted in the meantime.
    pub(crate) async fn ask<R>(&self, make: impl FnOnce(oneshot::Sender<R>) -> SessionInput) -> Result<R, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.inner.inputs.send(Box::new(make(tx))).await.map_err(|_| self.gone())?;
        rx.await.map_err(|_| self.gone())
    }

    pub(crate) async fn tell(&self, input: SessionInput) -> Result<(), EngineError> {
        self.inner.inputs.send(Box::new(input)).await.map_err(|_| self.gone())
    }

    fn gone(&self) -> EngineError {
        EngineError::SessionNotFound(self.inner.id.clone())
    }

    /// Queues a message. `immediate` while a run is active steers it into the next model call.
    /// Refused when the disk the session's events go to is nearly full (nothing is queued).
    pub async fn send(&self, msg: QueuedMessage, immediate: bool) -> Result<(), EngineError> {
        if self.remote_state().is_none() && self.runs_here() {
            self.event_store().room_for_a_turn(self.id())?;
        }
        self.ask(|reply| SessionInput::Send { msg, immediate, reply }).await
    }

    /// Stops the running turn (`true` if one ran); with `flush` the queued and steering
    /// messages run next instead of being dropped.
    pub async fn interrupt(&self, flush: bool) -> Result<bool, EngineError> {
        self.ask(|reply| SessionInput::Interrupt { flush, reply }).await
    }

    pub async fn withdraw(&self, message_id: String, expected: String) -> Result<Withdrawn, EngineError> {
        self.ask(|reply| SessionInput::Withdraw { message_id, expected, reply }).await
    }

    /// Aborts the running loop. Returns whether anything was running.
    pub async fn abort(&self, reason: AbortReason) -> Result<bool, EngineError> {
        self.ask(|reply| SessionInput::Abort { reason, reply }).await
    }

    /// Sets the mode; returns the previous one when it changed.
    pub async fn set_mode(&self, mode: SessionMode) -> Result<Option<SessionMode>, EngineError> {
        self.ask(|reply| SessionInput::SetMode { mode, reply }).await
    }

    /// Switches the model; returns the previous one.
    pub async fn switch_model(
        &self,
        model: &str,
        reasoning_effort: Option<String>,
        vision: Option<bool>,
    ) -> Result<String, EngineError> {
        self.switch(model, reasoning_effort, vision, None).await
    }

    /// The runtime switches the model on its own, for `cause`; returns the previous one.
    pub(crate) async fn switch_model_for(&self, model: &str, cause: &'static str) -> Result<String, EngineError> {
        self.switch(model, None, None, Some(cause)).await
    }

    async fn switch(
        &self,
        model: &str,
        reasoning_effort: Option<String>,
        vision: Option<bool>,
        cause: Option<&'static str>,
    ) -> Result<String, EngineError> {
        self.ask(|reply| SessionInput::SwitchModel { model: model.to_string(), reasoning_effort, vision, cause, reply })
            .await
    }

    /// `setApproveAll` / `/allow-all`: the original's allow-all, which approves paths outside
    /// the allowed directories as well as tools (`-p --allow-all-tools` approves tools only).
    pub async fn set_approve_all(&self, enabled: bool) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::SetApproveAll { enabled, reply }).await?;
        self.with_permissions(|p| p.unrestricted_paths = enabled);
        Ok(())
    }

    /// Forgets the session's "approve for the session" answers; later requests ask again.
    pub async fn reset_approvals(&self) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::ResetApprovals { reply }).await
    }

    /// Replaces the session's SDK-implemented tools; the model sees them from its next request.
    pub async fn set_tools(&self, tools: Vec<protocol::methods::ExternalToolDef>) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::SetTools { tools, reply }).await
    }

    /// Registers more bring-your-own-key providers and models; returns the models added.
    pub async fn add_providers(
        &self,
        providers: Vec<protocol::generated::types::NamedProviderConfig>,
        models: Vec<protocol::generated::types::ProviderModelConfig>,
    ) -> Result<Vec<llm_providers::ModelInfo>, EngineError> {
        self.ask(|reply| SessionInput::AddProviders { providers, models, reply })
            .await?
            .map_err(EngineError::InvalidProviders)
    }

    /// Answers a pending request. `false` when no such request is waiting.
    pub async fn answer(&self, request_id: &str, answer: PendingAnswer) -> Result<bool, EngineError> {
        self.ask(|reply| SessionInput::Answer { request_id: request_id.to_string(), answer, reply }).await
    }

    /// Permission prompts still waiting for an answer: `(requestId, prompt)`.
    pub async fn pending_permissions(&self) -> Result<Vec<(String, PermissionPromptRequest)>, EngineError> {
        Ok(self.ask(|reply| SessionInput::Waiting { reply }).await?.permissions)
    }

    /// SDK tool calls of the session and its sub-agents waiting for a client's answer.
    pub async fn pending_tool_calls(
        &self,
    ) -> Result<Vec<protocol::generated::types::PendingExternalToolRequest>, EngineError> {
        Ok(self.ask(|reply| SessionInput::Waiting { reply }).await?.tool_calls)
    }

    pub async fn fail_all_pending(&self) -> Result<(), EngineError> {
        self.tell(SessionInput::FailAllPending).await
    }

    /// Emits a `session.info` / `warning` / `error` event; returns its id.
    pub async fn log(
        &self,
        level: LogLevel,
        kind: String,
        message: String,
        ephemeral: bool,
    ) -> Result<String, EngineError> {
        self.ask(|reply| SessionInput::Log { level, kind, message, ephemeral, reply }).await
    }

    pub async fn plan(&self, op: PlanOp) -> Result<PlanResult, EngineError> {
        self.ask(|reply| SessionInput::Plan { op, reply }).await?.map_err(EngineError::Store)
    }

    /// Ends the session in this process (its state stays on disk): what runs stops, what waits
    /// is answered as unavailable, `session.shutdown` goes out. The engine forgets it.
    pub(crate) async fn end(&self, shutdown_type: protocol::generated::types::ShutdownType) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::Shutdown { shutdown_type, reply }).await
    }

    /// A host reports the session's working-directory context (branch, repository, ...).
    pub fn record_context(&self, context: protocol::generated::types::WorkingDirectoryContext) {
        self.emitter().emit(context);
    }

    /// `session.queue.*`: the queue after `op`; `Ok(Err(_))` when the actor refused the edit.
    pub async fn queue(&self, op: QueueOp) -> Result<Result<QueueState, QueueError>, EngineError> {
        self.ask(|reply| SessionInput::Queue { op, reply }).await
    }

    pub async fn activity(&self) -> Result<Activity, EngineError> {
        self.ask(|reply| SessionInput::Activity { reply }).await
    }

    /// `session.tools.updateSubagentSettings`: the live override sub-agents read (`None` clears).
    pub async fn set_subagent_settings(
        &self,
        settings: Option<protocol::generated::types::SubagentSettings>,
    ) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::SetSubagentSettings { settings, reply }).await
    }

    /// `session.remote.notifySteerableChanged`: recorded in the log as the original does.
    pub fn notify_remote_steerable(&self, remote_steerable: bool) {
        self.emitter().emit(protocol::generated::types::RemoteSteerableChangedData { remote_steerable });
    }

    /// Registers a client's interest in an event type; returns the registration's handle.
    pub fn register_interest(&self, event_type: String) -> String {
        let handle = uuid::Uuid::new_v4().to_string();
        crate::mutex::lock(&self.inner.interests).insert(handle.clone(), event_type);
        handle
    }

    /// Releases a registration (an unknown or released handle is fine).
    pub fn release_interest(&self, handle: &str) {
        crate::mutex::lock(&self.inner.interests).remove(handle);
    }

    /// Whether some client registered interest in `event_type` (features that can hand work
    /// to a client, such as MCP OAuth, ask this).
    pub fn has_interest(&self, event_type: &str) -> bool {
        crate::mutex::lock(&self.inner.interests).values().any(|t| t == event_type)
    }

    /// Stops the running message (pending permission prompts and client tools are answered as
    /// unavailable) and drops queued ones; everything persisted stays for a later resume.
    pub async fn suspend(&self) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::Suspend { reply }).await
    }

    /// Reads or changes the session's name (`session.name.*`).
    pub async fn name(&self, op: NameOp) -> Result<NameResult, EngineError> {
        self.ask(|reply| SessionInput::Name { op, reply }).await?.map_err(EngineError::Compaction)
    }

    /// Changes the session's agent selection, agents or skills (from the next turn).
    pub async fn agents(
        &self,
        op: crate::agent_control::AgentOp,
    ) -> Result<crate::agent_control::AgentOpResult, EngineError> {
        self.ask(|reply| SessionInput::Agents { op, reply }).await?.map_err(EngineError::Failed)
    }

    /// Creates or replaces a file in the session's workspace files directory.
    pub async fn write_workspace_file(&self, path: String, content: String) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::WriteWorkspaceFile { path, content, reply }).await?.map_err(EngineError::Store)
    }

    /// Changes the session's options; the next model call uses them.
    pub async fn update_options(&self, patch: OptionsPatch) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::UpdateOptions { patch, reply }).await
    }

    /// Compacts the conversation: the model summarizes it and the summary replaces it in the
    /// model's context. Waits for a running message to finish first.
    pub async fn compact(
        &self,
        custom_instructions: Option<String>,
        trigger: Option<protocol::generated::types::CompactionTrigger>,
    ) -> Result<protocol::generated::types::HistoryCompactResult, EngineError> {
        let rx = self.ask(|reply| SessionInput::Compact { custom_instructions, trigger, reply }).await;
        rx?.map_err(EngineError::Compaction)
    }

    /// Removes event `event_id` and every later one from the log, and the model's context
    /// with them. Refused while a message is being processed.
    pub async fn truncate(
        &self,
        event_id: String,
    ) -> Result<protocol::generated::types::HistoryTruncateResult, EngineError> {
        self.ask(|reply| SessionInput::Truncate { event_id, reply }).await?.map_err(EngineError::Compaction)
    }

    /// Cancels the background compaction under way; returns whether there was one.
    pub fn cancel_background_compaction(&self) -> bool {
        self.inner.compaction.cancel(false)
    }

    /// Aborts the manual compaction under way; returns whether there was one.
    pub fn abort_manual_compaction(&self) -> bool {
        self.inner.compaction.cancel(true)
    }

    /// A summary of the conversation for a handoff (empty when there is no conversation).
    pub async fn summarize_for_handoff(&self) -> Result<String, EngineError> {
        self.ask(|reply| SessionInput::Handoff { reply }).await?.map_err(EngineError::Compaction)
    }

    /// Answers `question` from the conversation so far without adding to it.
    pub async fn ephemeral_query(&self, question: String) -> Result<String, EngineError> {
        self.ask(|reply| SessionInput::EphemeralQuery { question, reply }).await?.map_err(EngineError::Compaction)
    }

    pub(crate) async fn resume(
        &self,
        params: protocol::methods::SessionConfigParams,
        subscriber: Option<Arc<dyn EventSubscriber>>,
    ) -> Result<(), EngineError> {
        self.ask(|reply| SessionInput::Resume { params: Box::new(params), subscriber, reply }).await
    }

    /// Removes a subscriber. Returns `true` when it was the last one and the session unloaded.
    pub(crate) async fn detach(&self, subscriber_id: u64) -> Result<bool, EngineError> {
        self.ask(|reply| SessionInput::Detach { subscriber_id, reply }).await
    }

    /// Unloads the session if it has been idle, with no client, for `idle_for` (see
    /// [`SessionInput::Unload`]). `true` when its task ended.
    pub(crate) async fn unload_if_idle(&self, idle_for: std::time::Duration) -> bool {
        self.ask(|reply| SessionInput::Unload { idle_for, reply }).await.unwrap_or(true)
    }

    /// Whether the session's task has been told to stop (shut down, deleted, unloaded).
    pub(crate) fn is_stopped(&self) -> bool {
        self.inner.stop.is_cancelled()
    }

    /// Stops the session's task: running work is cancelled, shells are killed, nothing more is
    /// emitted. Returns at once; the task ends on its next poll.
    pub fn shutdown(&self) {
        self.inner.shells.kill_all();
        self.inner.mcp.shutdown();
        self.inner.stop.cancel();
    }

    /// The session's background sub-agents.
    pub fn tasks(&self) -> &crate::subagent::registry::Registry {
        &self.inner.tasks
    }

    /// Runs `f` on what hosts set with `session.permissions.*`, starting from the defaults for
    /// the session's working directory. `f` runs under a lock: keep it short.
    pub fn with_permissions<R>(&self, f: impl FnOnce(&mut crate::permission_settings::SessionPermissions) -> R) -> R {
        let mut permissions = crate::mutex::lock(&self.inner.permissions);
        let current = permissions.get_or_insert_with(|| crate::permission_settings::SessionPermissions {
            own: Some(crate::permission_settings::normalize(self.workspace_path())),
            ..crate::permission_settings::SessionPermissions::for_cwd(&self.view().settings.cwd)
        });
        f(current)
    }

    pub(crate) fn stopped(&self) -> &CancellationToken {
        &self.inner.stop
    }
}
