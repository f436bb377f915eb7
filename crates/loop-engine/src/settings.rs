//! A session's configuration, from `session.create` / `session.resume` params.

use std::path::PathBuf;

use agent_config::agents::{AgentDef, Catalog};
use agent_config::skills::SkillSet;
use protocol::generated::types::SessionMode;
use protocol::methods::{ExternalToolDef, SessionConfigParams, SystemMessageConfig};

use crate::byok::SessionProviders;
use crate::tool_filter::{self, ToolSource};

#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub model: String,
    pub reasoning_effort: Option<String>,
    pub cwd: PathBuf,
    /// Where the session reads its configuration: the engine's home, or on a team server its
    /// tenant's, with project files read only inside its tenant's files
    /// ([`crate::EngineConfig::tenants`]).
    pub config: crate::deps::ConfigScope,
    pub client_name: String,
    pub streaming: bool,
    pub external_tools: Vec<ExternalToolDef>,
    pub available_tools: Option<Vec<String>>,
    pub excluded_tools: Vec<String>,
    pub system_message: Option<SystemMessageConfig>,
    /// The client answers `permission.requested`; when false, tools needing approval are denied.
    pub request_permission: bool,
    /// `session.permissions.setApproveAll` or `--allow-all-tools`.
    pub approve_all: bool,
    pub mode: SessionMode,
    /// The client registered hooks: the loop sends `hooks.invoke`.
    pub hooks: bool,
    /// The client answers `userInput.request`: the `ask_user` tool is offered.
    pub request_user_input: bool,
    /// Autopilot's continuations per message before it stops (`--max-autopilot-continues`,
    /// the original's `autopilot.maxContinues`; 5 unless set).
    pub autopilot_max_continues: u32,
    /// The client answers `exitPlanMode.request`: `exit_plan_mode` is offered in plan mode.
    pub request_exit_plan_mode: bool,
    /// The client answers `autoModeSwitch.request` (see `auto_mode`).
    pub request_auto_mode_switch: bool,
    /// This session was resumed (for the `sessionStart` hook's `source`).
    pub resumed: bool,
    /// Bring-your-own-key providers (re-sent on every resume; never persisted).
    pub providers: SessionProviders,
    /// The session's own GitHub token (`gitHubToken`): its Copilot model calls authenticate
    /// with it. Kept in memory only, as the providers' keys are.
    pub github_token: Option<protocol::secret::SecretString>,
    /// Automatic compaction (`infiniteSessions`).
    pub infinite: InfiniteSessions,
    /// Attached documents ask the model for citations (`enableCitations`).
    pub enable_citations: bool,
    /// The live sub-agent override (`session.tools.updateSubagentSettings`); not persisted.
    pub subagent_settings: Option<protocol::generated::types::SubagentSettings>,
    /// Custom agents (the client's and agent files).
    pub agents: Catalog,
    /// The agent a client selected for the main conversation (`session.agent.select`).
    pub selected_agent: Option<AgentDef>,
    /// Skills (`SKILL.md`) the session offers, and which are off.
    pub skills: SkillSet,
    /// Agent and skill files are read from the project too (`enableConfigDiscovery`).
    pub config_discovery: bool,
    /// `instructionDirectories`: more places for `*.instructions.md` files.
    pub instruction_directories: Vec<PathBuf>,
    /// The rendered custom instructions (see [`crate::instructions`]); read by `load_files`.
    pub custom_instructions: String,
    /// `sessionLimits.maxAiCredits`: the model hears what remains of it every turn.
    pub max_ai_credits: Option<f64>,
    /// `skipCustomInstructions` (`session.options.update`): the prompt leaves them out.
    pub skip_custom_instructions: bool,
    /// `excludedBuiltinAgents`: built-in agent types `task` leaves out.
    pub excluded_builtin_agents: Vec<String>,
    /// `modelCapabilities.supports.vision` of create/resume or of the last model switch that
    /// gave one; `None` keeps the model's own (images are sent).
    pub vision: Option<bool>,
}

/// `supports.vision` of a capability override.
pub fn vision_override(c: Option<&protocol::generated::types::ModelCapabilitiesOverride>) -> Option<bool> {
    c.and_then(|c| c.supports.as_ref()).and_then(|s| s.vision)
}

/// The providers `p` configures, checked.
pub fn providers_from_params(p: &SessionConfigParams) -> Result<SessionProviders, String> {
    SessionProviders::new(
        p.provider.clone(),
        p.providers.clone().unwrap_or_default(),
        p.models.clone().unwrap_or_default(),
    )
}

/// `excludedTools` plus the default agent's `excludedTools`.
fn excluded_tools(p: &SessionConfigParams) -> Vec<String> {
    let mut out = p.excluded_tools.clone().unwrap_or_default();
    let agent = p.default_agent.as_ref().and_then(|a| a.get("excludedTools")).and_then(|v| v.as_array());
    out.extend(agent.into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)));
    out
}

fn instruction_directories(p: &SessionConfigParams) -> Vec<PathBuf> {
    p.instruction_directories.iter().flatten().map(PathBuf::from).collect()
}

impl SessionSettings {
    /// The system prompt with the skills a selected agent preloads (`skills` on the agent).
    pub fn with_agent_skills(&self, system: String) -> String {
        let Some(names) = self.selected_agent.as_ref().and_then(|a| a.skills.as_ref()) else { return system };
        let mut out = system;
        for skill in names.iter().filter_map(|n| self.skills.enabled(n)) {
            out.push_str("\n\n");
            out.push_str(&agent_config::skills::context_message(skill));
        }
        out
    }

    pub fn from_params(
        p: &SessionConfigParams,
        default_model: &str,
        default_cwd: &std::path::Path,
        allow_all: bool,
    ) -> Self {
        // Checked by the engine before a session is made; a bad config never gets here.
        let providers = providers_from_params(p).unwrap_or_default();
        Self {
            model: p.model.clone().or_else(|| providers.default_model()).unwrap_or_else(|| default_model.to_string()),
            reasoning_effort: p.reasoning_effort.clone(),
            cwd: p.working_directory.as_ref().map(PathBuf::from).unwrap_or_else(|| default_cwd.to_path_buf()),
            // Set by the engine, which knows whose session it is.
            config: Default::default(),
            client_name: p.client_name.clone().unwrap_or_else(|| "sdk".to_string()),
            streaming: p.streaming.unwrap_or(false),
            external_tools: p.tools.clone().unwrap_or_default(),
            available_tools: p.available_tools.clone(),
            excluded_tools: excluded_tools(p),
            system_message: p.system_message.clone(),
            request_permission: p.request_permission.unwrap_or(true),
            approve_all: allow_all,
            mode: SessionMode::Interactive,
            hooks: p.hooks.unwrap_or(false),
            request_user_input: p.request_user_input.unwrap_or(false),
            autopilot_max_continues: crate::autopilot::MAX_NUDGES,
            request_exit_plan_mode: p.request_exit_plan_mode.unwrap_or(false),
            request_auto_mode_switch: p.request_auto_mode_switch.unwrap_or(false),
            resumed: false,
            providers,
            infinite: InfiniteSessions::from_params(p.infinite_sessions.as_ref()),
            enable_citations: p.enable_citations.unwrap_or(false),
            subagent_settings: None,
            agents: Catalog::from_configs(p.custom_agents.clone().unwrap_or_default()),
            // Resolved against the files too by `load_files`.
            selected_agent: p.agent.as_ref().map(|name| AgentDef { name: name.clone(), ..AgentDef::placeholder() }),
            skills: SkillSet::from_params(p),
            config_discovery: p.enable_config_discovery.unwrap_or(false),
            instruction_directories: instruction_directories(p),
            custom_instructions: String::new(),
            max_ai_credits: p.session_limits.as_ref().and_then(|l| l.max_ai_credits),
            skip_custom_instructions: false,
            excluded_builtin_agents: p.excluded_builtin_agents.clone().unwrap_or_default(),
            vision: vision_override(p.model_capabilities.as_ref()),
            github_token: p.git_hub_token.clone().filter(|t| !t.expose().is_empty()),
        }
    }

    /// Reads agent and skill files for the working directory and the session's configuration
    /// home; a selected agent that is gone is deselected.
    pub fn load_files(&mut self) {
        let project = self.config_discovery.then_some(self.cwd.as_path());
        let home = self.config.home.as_path();
        let (agents, skills, instructions) = self.config.reading(|| {
            let agents = self.agents.reload(project, home);
            let skills = self.skills.reload(project, home);
            (agents, skills, agent_config::instructions::load(&self.cwd, home, &self.instruction_directories))
        });
        self.agents = agents;
        self.skills = skills;
        self.custom_instructions = instructions;
        if let Some(sel) = &self.selected_agent {
            self.selected_agent = self.agents.get(&sel.name).cloned();
        }
    }

    /// Applies resume params on top of restored settings: what the caller sends wins, what it
    /// omits keeps its restored value (model) or resets (tools, handlers: re-sent on resume).
    pub fn apply_resume(&mut self, p: &SessionConfigParams) {
        self.providers = providers_from_params(p).unwrap_or_default();
        if let Some(m) = p.model.clone().or_else(|| self.providers.default_model()) {
            self.model = m;
        }
        if p.reasoning_effort.is_some() {
            self.reasoning_effort = p.reasoning_effort.clone();
        }
        if let Some(cwd) = &p.working_directory {
            self.cwd = PathBuf::from(cwd);
        }
        if let Some(c) = &p.client_name {
            self.client_name = c.clone();
        }
        self.streaming = p.streaming.unwrap_or(false);
        self.external_tools = p.tools.clone().unwrap_or_default();
        self.available_tools = p.available_tools.clone();
        self.excluded_tools = excluded_tools(p);
        if p.system_message.is_some() {
            self.system_message = p.system_message.clone();
        }
        self.request_permission = p.request_permission.unwrap_or(true);
        self.hooks = p.hooks.unwrap_or(false);
        self.request_user_input = p.request_user_input.unwrap_or(false);
        self.request_exit_plan_mode = p.request_exit_plan_mode.unwrap_or(false);
        self.request_auto_mode_switch = p.request_auto_mode_switch.unwrap_or(false);
        if let Some(c) = p.enable_citations {
            self.enable_citations = c;
        }
        if let Some(d) = p.enable_config_discovery {
            self.config_discovery = d;
        }
        if let Some(agents) = &p.custom_agents {
            self.agents = Catalog::from_configs(agents.clone());
        }
        if p.skill_directories.is_some() || p.disabled_skills.is_some() {
            self.skills = SkillSet::from_params(p);
        }
        if p.instruction_directories.is_some() {
            self.instruction_directories = instruction_directories(p);
        }
        if let Some(excluded) = &p.excluded_builtin_agents {
            self.excluded_builtin_agents = excluded.clone();
        }
        if let Some(limits) = &p.session_limits {
            self.max_ai_credits = limits.max_ai_credits;
        }
        if let Some(v) = vision_override(p.model_capabilities.as_ref()) {
            self.vision = Some(v);
        }
        if p.infinite_sessions.is_some() {
            self.infinite = InfiniteSessions::from_params(p.infinite_sessions.as_ref());
        }
        if let Some(token) = p.git_hub_token.as_ref().filter(|t| !t.expose().is_empty()) {
            self.github_token = Some(token.clone());
        }
        self.resumed = true;
    }

    /// Whether the model is sent images.
    pub fn sees_images(&self) -> bool {
        self.vision.unwrap_or(true)
    }

    /// The history as this session's model is sent it.
    pub fn history_for_model(&self, history: &llm_providers::History) -> llm_providers::History {
        if self.sees_images() {
            history.clone()
        } else {
            history.without_images()
        }
    }

    /// What the system prompt's sections are filled with.
    pub fn prompt_vars<'a>(&'a self, cwd: &'a str) -> crate::system_prompt::Vars<'a> {
        let custom_instructions = if self.skip_custom_instructions { "" } else { &self.custom_instructions };
        crate::system_prompt::Vars { cwd, custom_instructions }
    }

    /// Whether a built-in tool passes `availableTools` / `excludedTools`.
    pub fn tool_allowed(&self, name: &str) -> bool {
        self.tool_allowed_from(ToolSource::Builtin, name)
    }

    /// Whether a tool of `source` passes `availableTools` / `excludedTools` (patterns, see
    /// [`crate::tool_filter`]) and the selected agent's tool list.
    pub fn tool_allowed_from(&self, source: ToolSource, name: &str) -> bool {
        let listed =
            self.available_tools.as_ref().is_none_or(|a| a.iter().any(|p| tool_filter::matches(p, source, name)));
        let agent = self.selected_agent.as_ref().is_none_or(|a| a.allows_tool(name));
        listed && agent && !self.excluded_tools.iter().any(|p| tool_filter::matches(p, source, name))
    }
}

/// `infiniteSessions` of a session: automatic compaction and its thresholds (fractions of the
/// model's context window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InfiniteSessions {
    pub enabled: bool,
    /// Compact in the background from this fill level on.
    pub background_threshold: f64,
    /// From this fill level on, a model call waits for a running compaction.
    pub buffer_threshold: f64,
}

impl Default for InfiniteSessions {
    fn default() -> Self {
        Self { enabled: true, background_threshold: 0.80, buffer_threshold: 0.95 }
    }
}

impl InfiniteSessions {
    pub fn from_params(p: Option<&protocol::methods::InfiniteSessionsConfig>) -> Self {
        let d = Self::default();
        let Some(p) = p else { return d };
        let fraction = |v: Option<f64>, default: f64| v.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(default);
        Self {
            enabled: p.enabled.unwrap_or(d.enabled),
            background_threshold: fraction(p.background_compaction_threshold, d.background_threshold),
            buffer_threshold: fraction(p.buffer_exhaustion_threshold, d.buffer_threshold),
        }
    }
}
