//! Methods Skipper serves that the upstream schema does not describe (the session lifecycle the
//! SDKs drive, as `spec/methods.md` documents it), with hand-written params and results.
//! Unknown fields are accepted and ignored (SDKs send many optional settings); wrong types are
//! errors naming the field. The schema's methods are in [`crate::generated::methods`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;
use crate::rpc::{NoParams, RpcMethod, Scope, SessionScoped};

/// Parses params, producing an error message that names the offending field
/// (e.g. `model: invalid type: integer `123`, expected a string`).
pub fn parse_params<T: DeserializeOwned>(params: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(params).map_err(name_the_field)
}

/// Like [`parse_params`], straight from the JSON text of the params (decoded once).
pub fn parse_params_text<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(name_the_field)?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

fn name_the_field<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    let inner = e.into_inner();
    if path == "." || path.is_empty() {
        inner.to_string()
    } else {
        format!("{path}: {inner}")
    }
}

/// An SDK-implemented tool (`session.create.tools[]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalToolDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Shared: offered again on every model call.
    #[serde(default)]
    pub parameters: Option<std::sync::Arc<Value>>,
    #[serde(default)]
    pub overrides_built_in_tool: bool,
    #[serde(default)]
    pub skip_permission: bool,
}

/// `session.create` and `session.resume` configuration (the fields Skipper acts on).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigParams {
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub client_name: Option<String>,
    pub working_directory: Option<String>,
    pub streaming: Option<bool>,
    pub tools: Option<Vec<ExternalToolDef>>,
    pub available_tools: Option<Vec<String>>,
    pub excluded_tools: Option<Vec<String>>,
    /// `{excludedTools?: [..], ...}`: settings of the default agent.
    pub default_agent: Option<Value>,
    pub system_message: Option<SystemMessageConfig>,
    pub request_permission: Option<bool>,
    pub request_user_input: Option<bool>,
    /// The client answers `exitPlanMode.request`: `exit_plan_mode` is offered in plan mode.
    pub request_exit_plan_mode: Option<bool>,
    /// The client answers `autoModeSwitch.request`: on a rate limit the session offers to go on
    /// with the `auto` model.
    pub request_auto_mode_switch: Option<bool>,
    pub hooks: Option<bool>,
    /// resume only: do not emit `session.resume`.
    pub disable_resume: Option<bool>,
    pub continue_pending_work: Option<bool>,
    /// One bring-your-own-key provider for the whole session (not persisted: re-sent on resume).
    pub provider: Option<crate::generated::types::ProviderConfig>,
    /// Named providers; `models` route `provider/id` selections to them.
    pub providers: Option<Vec<crate::generated::types::NamedProviderConfig>>,
    pub models: Option<Vec<crate::generated::types::ProviderModelConfig>>,
    /// Automatic compaction of the model's context.
    pub infinite_sessions: Option<InfiniteSessionsConfig>,
    /// Attached documents ask the model to cite them.
    pub enable_citations: Option<bool>,
    /// Agents the model may delegate to (`task`) or a client may select.
    pub custom_agents: Option<Vec<CustomAgentConfig>>,
    /// Extra directories holding `<name>/SKILL.md` skills.
    pub skill_directories: Option<Vec<String>>,
    /// Skills by name that are not offered.
    pub disabled_skills: Option<Vec<String>>,
    /// The custom agent to start with (by name).
    pub agent: Option<String>,
    /// Read agent and skill files from the project (the working directory up to the
    /// repository root); off unless `true`, as the original does for SDK sessions.
    pub enable_config_discovery: Option<bool>,
    /// MCP servers by name (`{command,args,env,cwd}` or `{type:"http"|"sse",url,headers}`).
    pub mcp_servers: Option<serde_json::Map<String, Value>>,
    /// Configured MCP servers not to start.
    pub disabled_mcp_servers: Option<Vec<String>>,
    /// More directories whose `.github/instructions/*.instructions.md` files steer the agent.
    pub instruction_directories: Option<Vec<String>>,
    /// Built-in agent types the `task` tool does not offer (`explore`, `task`, ...).
    pub excluded_builtin_agents: Option<Vec<String>>,
    /// Limits on the session's spending (`maxAiCredits`), told to the model every turn.
    pub session_limits: Option<crate::generated::types::SessionLimitsConfig>,
    /// The session's own GitHub identity: resolved at create/resume, never stored.
    pub git_hub_token: Option<crate::secret::SecretString>,
    /// Plugin directories whose MCP servers (`.mcp.json`) the session starts too.
    pub plugin_directories: Option<Vec<String>>,
    /// Slash commands this client handles (`command.execute` is routed to it).
    pub commands: Option<Vec<ClientCommandDef>>,
    /// This client answers `elicitation.requested`.
    pub request_elicitation: Option<bool>,
    /// Canvases this client provides (`canvas.open` / `close` / `action.invoke` are routed to it).
    pub canvases: Option<Vec<CanvasDeclaration>>,
    /// Who provides this client's canvases (`{id, name?}`); default `connection:<id>`.
    pub canvas_provider: Option<CanvasProviderIdentity>,
    /// This client renders canvases.
    pub request_canvas_renderer: Option<bool>,
    /// Workflows this client (an extension) runs: `workflow.execute` is routed to it.
    pub workflows: Option<Vec<WorkflowMeta>>,
    /// The same under the SDKs' name (`factory.execute` is routed to it).
    pub factories: Option<Vec<WorkflowMeta>>,
    /// Keep what file tools overwrite, so `session.history.rewind` can put it back.
    pub enable_file_change_tracking: Option<bool>,
    /// This client receives `gitHubTelemetry.event` notifications.
    #[serde(rename = "enableGitHubTelemetryForwarding")]
    pub enable_github_telemetry_forwarding: Option<bool>,
    /// Start the repository's `.github/extensions/*` programs for the session.
    pub request_extensions: Option<bool>,
    /// The SDK build extensions import (`@github/copilot-sdk/extension`).
    pub extension_sdk_path: Option<String>,
    /// What the built-in GitHub MCP server offers (`enableAllTools`, toolsets, insiders).
    #[serde(rename = "githubMcpToolConfig")]
    pub github_mcp_tool_config: Option<crate::generated::types::GitHubMcpToolConfig>,
    /// Overrides of what the model supports (vision, ...).
    pub model_capabilities: Option<crate::generated::types::ModelCapabilitiesOverride>,
    /// The command sandbox (the original reads it on `session.create` though the SDKs' schema
    /// has it only on `session.options.update`).
    pub sandbox_config: Option<crate::generated::types::SandboxConfig>,
}

/// One entry of `workflows` (or `factories`): what an extension declares of a workflow it runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowMeta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The progress phases it may report, in order.
    #[serde(default)]
    pub phases: Vec<WorkflowPhaseMeta>,
    /// The declared shape of its arguments (a subset of JSON Schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<Value>,
    /// Resource ceilings it declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::generated::types::WorkflowDeclaredLimits>,
}

/// A declared phase of a workflow.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkflowPhaseMeta {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One entry of `canvases`: a canvas an SDK client provides.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CanvasDeclaration {
    pub id: String,
    pub display_name: String,
    pub description: String,
    pub icon: Option<String>,
    pub input_schema: Option<Value>,
    pub actions: Option<Vec<crate::generated::types::CanvasAction>>,
}

/// `canvasProvider`: the identity a client's canvases are listed under.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CanvasProviderIdentity {
    pub id: String,
    pub name: Option<String>,
}

/// One entry of `commands`: a slash command an SDK client registers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClientCommandDef {
    pub name: String,
    pub description: Option<String>,
}

/// One entry of `customAgents`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CustomAgentConfig {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// Tool names the agent may use; absent or `null`: all.
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub prompt: String,
    /// Kept as given, for the MCP client to start with the agent.
    pub mcp_servers: Option<serde_json::Map<String, Value>>,
    /// Whether the model may pick this agent by itself (default true).
    pub infer: Option<bool>,
    pub skills: Option<Vec<String>>,
    pub model: Option<String>,
}

/// `infiniteSessions`: thresholds are fractions of the model's context window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InfiniteSessionsConfig {
    pub enabled: Option<bool>,
    pub background_compaction_threshold: Option<f64>,
    pub buffer_exhaustion_threshold: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessageConfig {
    pub mode: Option<String>,
    pub content: Option<String>,
    #[serde(default)]
    pub sections: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdParams {
    pub session_id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    pub filter: Option<ListFilterParams>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListFilterParams {
    pub cwd: Option<String>,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
}

/// Declares a hand-written method descriptor.
macro_rules! method {
    ($(#[$doc:meta])* $name:ident, $wire:literal, $scope:ident, $params:ty => $result:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;
        impl RpcMethod for $name {
            const NAME: &'static str = $wire;
            const SCOPE: Scope = Scope::$scope;
            type Params = $params;
            type Result = $result;
        }
    };
}

method!(
    /// Server version and protocol version.
    StatusGet, "status.get", Server, NoParams => StatusResult);
method!(
    /// How the server authenticated to GitHub.
    AuthGetStatus, "auth.getStatus", Server, NoParams => AuthStatus);
method!(
    /// Creates a session; the caller is subscribed to its events.
    SessionCreate, "session.create", Session, SessionConfigParams => SessionInfo);
method!(
    /// Loads (or re-attaches to) a session; the caller is subscribed to its events.
    SessionResume, "session.resume", Session, SessionConfigParams => SessionInfo);
method!(
    /// Every persisted event of a loaded session.
    SessionGetMessages, "session.getMessages", Session, SessionIdParams => GetMessagesResult);
method!(
    /// The caller stops following a session; the last one out unloads it. `session.destroy`
    /// is the older name.
    SessionDetach, "session.detach", Session, SessionIdParams => SuccessResult);
method!(
    /// Deletes a session's state from disk.
    SessionDelete, "session.delete", Session, SessionIdParams => SuccessResult);
method!(
    /// Sessions that have a user message, newest first.
    SessionList, "session.list", Server, ListParams => SessionListResult);
method!(
    /// The most recently active session.
    SessionGetLastId, "session.getLastId", Server, NoParams => LastIdResult);
method!(
    /// One session's list entry.
    SessionGetMetadata, "session.getMetadata", Session, SessionIdParams => MetadataResult);
method!(
    /// The TUI's foreground session (none in headless mode).
    SessionGetForeground, "session.getForeground", Server, NoParams => ForegroundResult);
method!(
    /// Changing the foreground session needs a TUI; headless answers with the original's error.
    SessionSetForeground, "session.setForeground", Server, ForegroundParams => SuccessResult);
method!(
    /// `sessions.open` as the original takes it: the schema's request, or one without a `kind`.
    SessionsOpen, "sessions.open", Server, SessionsOpenParams => crate::generated::types::SessionOpenResult);

/// `sessions.open` params: the schema's request (`kind` and its fields), or `None` for one that
/// names no `kind`, which opens nothing (the original answers `not_found`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionsOpenParams(pub Option<crate::generated::types::SessionOpenParams>);

impl<'de> Deserialize<'de> for SessionsOpenParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.get("kind").is_none() {
            return Ok(Self(None));
        }
        serde_json::from_value(value).map(|p| Self(Some(p))).map_err(serde::de::Error::custom)
    }
}

impl Serialize for SessionsOpenParams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(p) => p.serialize(s),
            None => serde_json::Map::new().serialize(s),
        }
    }
}

method!(
    /// Server→client: asks the user a question (the `ask_user` tool).
    UserInputRequest, "userInput.request", Client, UserInputParams => UserInputResult);
method!(
    /// Server→client: the client rewrites system prompt sections configured with `transform`.
    SystemMessageTransform, "systemMessage.transform", Client, TransformParams => TransformResult);

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UserInputParams {
    pub session_id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    pub allow_freeform: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UserInputResult {
    #[serde(default)]
    pub answer: String,
    #[serde(default)]
    pub was_freeform: bool,
}

/// One system prompt section's text.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SectionText {
    pub content: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TransformParams {
    pub session_id: String,
    /// Section id → its rendered text.
    pub sections: std::collections::BTreeMap<String, SectionText>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TransformResult {
    #[serde(default)]
    pub sections: std::collections::BTreeMap<String, SectionText>,
}

/// `session.lifecycle` (server→client notification, to every connection): a session was
/// created or deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleNotification {
    /// `session.created`, `session.updated` or `session.deleted`.
    #[serde(rename = "type")]
    pub kind: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<LifecycleMetadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleMetadata {
    pub start_time: String,
    pub modified_time: String,
}

impl SessionScoped for SessionIdParams {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub version: String,
    pub protocol_version: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthStatus {
    pub is_authenticated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub status_message: String,
}

/// `session.create` / `session.resume` result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub native_session_id: String,
    pub start_time: String,
    pub is_remote: bool,
    pub mode: String,
    pub workspace_path: String,
    pub capabilities: Capabilities,
    pub model_state: ModelState,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Capabilities {
    pub ui: UiCapabilities,
    pub extensions: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UiCapabilities {
    pub elicitation: bool,
    pub mcp_apps: bool,
    pub canvases: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelState {
    pub model_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GetMessagesResult {
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SuccessResult {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SessionListResult {
    pub sessions: Vec<SessionListEntry>,
}

/// One `session.list` entry.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionListEntry {
    pub session_id: String,
    pub start_time: String,
    pub modified_time: String,
    pub is_remote: bool,
    pub is_detached: bool,
    pub summary: String,
    pub name: String,
    pub client_name: String,
    pub context: SessionContext,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_root: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastIdResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MetadataResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionListEntry>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ForegroundResult {}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ForegroundParams {
    pub session_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_type_names_the_field() {
        let err = parse_params::<SessionConfigParams>(&json!({"model": 123})).unwrap_err();
        assert!(err.starts_with("model: invalid type: integer `123`, expected a string"), "{err}");
    }

    #[test]
    fn missing_required_field_is_reported() {
        let err = parse_params::<SessionIdParams>(&json!({"other": "x"})).unwrap_err();
        assert!(err.contains("sessionId"), "{err}");
    }

    #[test]
    fn an_open_without_a_kind_opens_nothing_and_a_bad_one_names_the_field() {
        assert_eq!(parse_params::<SessionsOpenParams>(&json!({})).unwrap(), SessionsOpenParams(None));
        let resume = parse_params::<SessionsOpenParams>(&json!({"kind": "resume", "sessionId": "s"})).unwrap();
        assert!(matches!(resume.0, Some(crate::generated::types::SessionOpenParams::Resume(_))));
        assert!(parse_params::<SessionsOpenParams>(&json!({"kind": "resume"})).is_err());
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let p: SessionConfigParams =
            parse_params(&json!({"model": "m", "envValueMode": "direct", "infiniteSessions": {}})).unwrap();
        assert_eq!(p.model.as_deref(), Some("m"));
    }
}

method!(
    /// Skipper's team server: what the caller's tenant used (per UTC day and user) and its
    /// limits. A user's connection sees its own rows; the tenant's own token sees every user's.
    TenantGetUsage, "tenant.getUsage", Server, TenantUsageParams => TenantUsageResult);

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantUsageParams {
    /// Days back from today (UTC) to include, today being 1; default 1, at most 366.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantUsageResult {
    pub tenant: String,
    /// Input and output tokens the whole tenant used today, across nodes.
    pub tokens_today: u64,
    pub limits: TenantLimits,
    /// One row per day and user, oldest first; `user` is empty for the tenant's own token.
    pub usage: Vec<TenantUsageRow>,
}

/// How much a tenant may hold and use (`None`, absent on the wire: no limit).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TenantLimits {
    /// Sessions it may own at once, across nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u64>,
    /// Messages of its sessions running at once on one node; more wait, queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u64>,
    /// Model requests its sessions may send per minute, across nodes; more wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_requests_per_minute: Option<u64>,
    /// Tokens (input and output) its sessions may use per UTC day, across nodes; past it model
    /// calls are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_day: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantUsageRow {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub user: String,
    #[serde(flatten)]
    pub usage: TenantUsage,
}

/// What a tenant's user used: model calls, tokens, premium requests, tool calls, sandbox
/// denials.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantUsage {
    pub model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Model calls weighted by their model's premium multiplier.
    pub premium_requests: f64,
    pub tool_calls: u64,
    pub sandbox_denials: u64,
}

impl TenantUsage {
    /// Input and output tokens: what a daily token limit counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add(&mut self, other: &TenantUsage) {
        self.model_calls += other.model_calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.premium_requests += other.premium_requests;
        self.tool_calls += other.tool_calls;
        self.sandbox_denials += other.sandbox_denials;
    }
}
