//! A sub-agent: its prompt as the first user message, then turns of the one loop
//! ([`crate::turns`]) — compaction and the context-overflow retry included — until a reply
//! asks for no tools. What belongs to the session stays there (titles, hooks on prompts,
//! autopilot, the switch to `auto`).

use std::sync::Arc;

use llm_providers::{AssistantReply, Initiator, Message, UserContent};
use protocol::generated::types::SessionMode;
use serde_json::Value;

use super::Resolved;
use crate::autopilot::StopReason;
use crate::conversation::Conversation;
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;
use crate::turns::{Driver, Flow, TurnSettings};

/// The settings a sub-agent runs with: its tools (never `task` again), its model, no selected
/// agent, no questions to the user. A background agent keeps `write_agent` and `list_agents`
/// to reach its siblings; a synchronous one has none.
fn settings_for(parent: &SessionSettings, agent: &Resolved, model: &str, background: bool) -> SessionSettings {
    let mut s = parent.clone();
    s.model = model.to_string();
    s.selected_agent = None;
    s.mode = SessionMode::Interactive;
    s.request_user_input = false;
    s.excluded_tools.push(super::TASK.to_string());
    s.excluded_tools.push(super::agent_tools::READ_AGENT.to_string());
    if !background {
        s.excluded_tools.extend([super::agent_tools::WRITE_AGENT, super::agent_tools::LIST_AGENTS].map(String::from));
    }
    if let Some(tools) = &agent.tools {
        if !tools.iter().any(|t| t == "*") {
            let allowed: Vec<String> = match &parent.available_tools {
                Some(outer) => tools
                    .iter()
                    .filter(|t| outer.iter().any(|p| crate::tool_filter::matches_any_source(p, t)))
                    .cloned()
                    .collect(),
                None => tools.clone(),
            };
            s.available_tools = Some(allowed);
        }
    }
    s
}

fn system_prompt(settings: &SessionSettings, agent: &Resolved) -> String {
    let cwd = settings.cwd.to_string_lossy();
    let base = crate::system_prompt::build_with(None, settings.prompt_vars(&cwd), &Default::default());
    format!("{base}\n\n<agent_role name=\"{}\">\n{}\n</agent_role>", agent.name, agent.prompt.trim())
}

/// Runs the agent to its final answer. `Err` carries what went wrong (a model error, or the
/// parent's cancellation).
pub(super) async fn run_agent(
    ctx: &RunCtx,
    agent: &Resolved,
    prompt: &str,
    model: &str,
    parent: &SessionSettings,
) -> Result<String, String> {
    AgentLoop::new(agent, prompt, model, parent, false).run(ctx).await
}

/// A sub-agent's conversation, kept between its runs: a background agent that gave its answer
/// goes on from here when a message reaches it.
pub(super) struct AgentLoop {
    driver: AgentTurns,
    conv: Conversation,
    turn: u32,
    /// The agent's own MCP servers: configured, and started with its first run.
    mcp_servers: Option<serde_json::Map<String, Value>>,
    servers: Option<super::servers::AgentServers>,
}

impl AgentLoop {
    /// The agent's prompt as its first user message.
    pub(super) fn new(agent: &Resolved, prompt: &str, model: &str, parent: &SessionSettings, background: bool) -> Self {
        let settings = settings_for(parent, agent, model, background);
        let system = system_prompt(&settings, agent);
        let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
        let mut conv = Conversation::new(Vec::new(), Some(prompt.to_string()));
        // A summary of the agent's conversation lists its prompt, as a session's lists the user's.
        conv.prompts.push(prompt.to_string());
        conv.push(Message::User {
            content: UserContent::Text(format!("<current_datetime>{now}</current_datetime>\n\n{prompt}")),
        });
        Self {
            driver: AgentTurns { settings: Arc::new(settings), system },
            conv,
            turn: 0,
            mcp_servers: agent.mcp_servers.clone(),
            servers: None,
        }
    }

    /// A message for the agent's next run, as a user turn of its conversation.
    pub(super) fn push_message(&mut self, message: String) {
        self.conv.push(Message::User { content: UserContent::Text(message) });
    }

    /// Turns of the one loop until a reply asks for no tools and no message waits.
    pub(super) async fn run(&mut self, ctx: &RunCtx) -> Result<String, String> {
        if let (None, Some(servers)) = (&self.servers, &self.mcp_servers) {
            let cwd = self.driver.settings.cwd.clone();
            self.servers = Some(super::servers::AgentServers::start(ctx, servers, cwd));
        }
        let with_servers = self.servers.as_ref().map(|s| ctx.with_agent_mcp(s.host().clone()));
        let ctx = with_servers.as_ref().unwrap_or(ctx);
        let interaction_id = uuid::Uuid::new_v4().to_string();
        let ended = crate::turns::run(ctx, &mut self.conv, &mut self.driver, &mut self.turn, &interaction_id).await;
        match ended.reason {
            StopReason::Aborted => Err("cancelled".into()),
            StopReason::Error => Err(ended.error.unwrap_or_else(|| "the model call failed".into())),
            _ => Ok(ended.answer),
        }
    }
}

/// What a sub-agent adds around the loop: its own settings and system prompt, messages from
/// its siblings and the client between turns, and an answer that is final once none waits.
struct AgentTurns {
    settings: Arc<SessionSettings>,
    system: String,
}

#[async_trait::async_trait]
impl Driver for AgentTurns {
    fn settings(&self, _ctx: &RunCtx) -> TurnSettings {
        TurnSettings::Agent(self.settings.clone())
    }

    async fn take_incoming(&mut self, ctx: &RunCtx, conv: &mut Conversation) {
        for message in inbox(ctx) {
            conv.push(Message::User { content: UserContent::Text(message) });
        }
    }

    fn system_prompt(&mut self, _ctx: &RunCtx, _conv: &mut Conversation, _settings: &SessionSettings) -> String {
        self.system.clone()
    }

    fn initiator(&self, _turn: u32) -> Initiator {
        Initiator::Agent
    }

    async fn on_answer(&mut self, ctx: &RunCtx, conv: &mut Conversation, _reply: &AssistantReply) -> Flow {
        let late = inbox(ctx);
        if late.is_empty() {
            return Flow::Stop(StopReason::TaskComplete);
        }
        for message in late {
            conv.push(Message::User { content: UserContent::Text(message) });
        }
        Flow::Continue { new_message: false }
    }
}

/// Messages sent to this agent (`write_agent`, `session.tasks.sendMessage`) since it last
/// looked. One that arrives after its final answer is taken when the registry records that
/// answer (`background`), and starts its next run.
fn inbox(ctx: &RunCtx) -> Vec<String> {
    let Some(scope) = ctx.scope.as_deref() else { return Vec::new() };
    ctx.handle.tasks().take_messages(&scope.agent_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(tools: Option<Vec<&str>>) -> Resolved {
        Resolved {
            name: "explore".into(),
            display_name: "Explore".into(),
            description: String::new(),
            prompt: "Look around.".into(),
            tools: tools.map(|t| t.into_iter().map(String::from).collect()),
            model: None,
            mcp_servers: None,
        }
    }

    fn parent() -> SessionSettings {
        SessionSettings::from_params(&Default::default(), "m", std::path::Path::new("/"), false)
    }

    #[test]
    fn a_sub_agent_gets_its_tools_within_the_session_s_and_never_task() {
        let mut p = parent();
        let s = settings_for(&p, &resolved(Some(vec!["view", "grep"])), "other", false);
        assert!(s.tool_allowed("view") && s.tool_allowed("grep"));
        assert!(!s.tool_allowed("bash") && !s.tool_allowed("task"));
        assert_eq!(s.model, "other");

        p.available_tools = Some(vec!["view".into()]);
        let s = settings_for(&p, &resolved(Some(vec!["view", "grep"])), "m", false);
        assert!(s.tool_allowed("view") && !s.tool_allowed("grep"), "the session's allow-list still applies");

        let s = settings_for(&parent(), &resolved(None), "m", false);
        assert!(s.tool_allowed("bash") && !s.tool_allowed("task"));
        assert!(!s.tool_allowed("write_agent") && !s.tool_allowed("list_agents"), "a synchronous agent has no peers");
        let s = settings_for(&parent(), &resolved(None), "m", true);
        assert!(s.tool_allowed("write_agent") && s.tool_allowed("list_agents"), "a background one messages siblings");
        assert!(!s.tool_allowed("read_agent") && !s.tool_allowed("task"));
    }
}
