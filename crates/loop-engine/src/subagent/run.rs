//! A sub-agent's loop: its prompt as the first user message, then turns until a reply asks for
//! no tools. The model calls and tool dispatch are the main loop's; what it does not do is
//! what belongs to the session (titles, hooks on prompts, compaction, autopilot).

use llm_providers::{ChatRequest, Initiator, Message, ProviderError, SubAgent, ToolContent, UserContent};
use protocol::generated::types::{self as t, SessionMode};
use serde_json::Value;
use tools::INTERRUPTED_TEXT;

use super::Resolved;
use crate::conversation::Conversation;
use crate::dispatch::{self, CallOutcome};
use crate::run::RunCtx;
use crate::settings::SessionSettings;

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
    settings: SessionSettings,
    system: llm_providers::SystemText,
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
        let system = system_prompt(&settings, agent).into();
        let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
        let mut conv = Conversation::new(Vec::new(), Some(prompt.to_string()));
        conv.push(Message::User {
            content: UserContent::Text(format!("<current_datetime>{now}</current_datetime>\n\n{prompt}")),
        });
        Self { settings, system, conv, turn: 0, mcp_servers: agent.mcp_servers.clone(), servers: None }
    }

    /// A message for the agent's next run, as a user turn of its conversation.
    pub(super) fn push_message(&mut self, message: String) {
        self.conv.push(Message::User { content: UserContent::Text(message) });
    }

    /// Turns until a reply asks for no tools and no message waits.
    pub(super) async fn run(&mut self, ctx: &RunCtx) -> Result<String, String> {
        if let (None, Some(servers)) = (&self.servers, &self.mcp_servers) {
            self.servers = Some(super::servers::AgentServers::start(ctx, servers, self.settings.cwd.clone()));
        }
        let with_servers = self.servers.as_ref().map(|s| ctx.with_agent_mcp(s.host().clone()));
        let ctx = with_servers.as_ref().unwrap_or(ctx);
        if let Some(host) = &ctx.agent_mcp {
            // As for the session's servers: their tools are there before the first call.
            let _ = tokio::time::timeout(crate::run::MCP_WAIT, host.wait_settled(&ctx.cancel)).await;
        }
        let settings = &self.settings;
        let conv = &mut self.conv;
        let interaction_id = uuid::Uuid::new_v4().to_string();
        loop {
            if ctx.cancel.is_cancelled() {
                return Err("cancelled".into());
            }
            for message in inbox(ctx) {
                conv.push(Message::User { content: UserContent::Text(message) });
            }
            let turn_id = self.turn.to_string();
            ctx.emitter().emit(t::AssistantTurnStartData {
                turn_id: turn_id.clone(),
                model: Some(settings.model.clone()),
                interaction_id: Some(interaction_id.clone()),
            });
            let tools = conv.offer(dispatch::run_tool_specs(ctx, settings));
            let offered: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            let route = crate::byok::route(
                &settings.providers,
                &settings.model,
                &crate::byok::RouteCtx {
                    default_client: &ctx.deps.model,
                    http: &ctx.deps.http,
                    emitter: ctx.handle.emitter_arc(),
                    session_id: ctx.handle.id(),
                },
            );
            let req = ChatRequest {
                model: route.model.clone(),
                system: self.system.clone(),
                history: settings.history_for_model(&conv.history),
                tools,
                stream: settings.streaming,
                initiator: Initiator::Agent,
                interaction_id: interaction_id.clone(),
                session_id: ctx.handle.id().to_string(),
                extra_headers: Default::default(),
                client_name: Some(settings.client_name.clone()),
                purpose: Default::default(),
                reasoning_effort: settings.reasoning_effort.clone(),
                sub_agent: ctx
                    .scope
                    .as_deref()
                    .map(|scope| SubAgent { id: scope.agent_id.clone(), parent_id: ctx.handle.id().to_string() }),
                sampling: Default::default(),
            };
            let message_id = uuid::Uuid::new_v4().to_string();
            let result = crate::model_call::call_model(
                ctx,
                route.client.as_ref(),
                req,
                &settings.model,
                &turn_id,
                &message_id,
                settings.streaming,
            )
            .await;
            let resp = match result {
                Ok(resp) => resp,
                Err(ProviderError::Cancelled) => {
                    end_turn(ctx, &turn_id);
                    return Err("cancelled".into());
                }
                Err(e) => {
                    end_turn(ctx, &turn_id);
                    return Err(e.to_string());
                }
            };
            let reply = crate::run::merge_replies(&resp);
            ctx.emitter().emit(t::AssistantUsageData {
                model: resp.model.clone().unwrap_or_else(|| settings.model.clone()),
                input_tokens: Some(resp.usage.input_tokens),
                output_tokens: Some(resp.usage.output_tokens),
                duration: Some(resp.duration_ms),
                initiator: Some("agent".into()),
                api_call_id: resp.api_call_id.clone(),
                ..Default::default()
            });
            let tool_requests = reply
                .tool_calls
                .iter()
                .map(|c| t::AssistantMessageToolRequest {
                    tool_call_id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: serde_json::from_str::<Value>(&c.arguments).ok(),
                    r#type: Some(t::AssistantMessageToolRequestType::Function),
                    ..Default::default()
                })
                .collect();
            ctx.emitter().emit(t::AssistantMessageData {
                message_id,
                content: reply.content.clone(),
                tool_requests: Some(tool_requests),
                model: Some(settings.model.clone()),
                interaction_id: Some(interaction_id.clone()),
                turn_id: Some(turn_id.clone()),
                output_tokens: Some(resp.usage.output_tokens),
                ..Default::default()
            });
            conv.push(crate::history::assistant_message(
                reply.content.clone(),
                reply.tool_calls.clone(),
                reply.reasoning_blocks.clone(),
            ));
            self.turn += 1;
            if reply.tool_calls.is_empty() {
                end_turn(ctx, &turn_id);
                let late = inbox(ctx);
                if late.is_empty() {
                    return Ok(reply.content);
                }
                for message in late {
                    conv.push(Message::User { content: UserContent::Text(message) });
                }
                continue;
            }
            let outcomes = dispatch::run_calls(ctx, &reply.tool_calls, &turn_id, settings, &offered).await;
            let mut after = Vec::new();
            for (call, outcome) in reply.tool_calls.iter().zip(outcomes) {
                let text = match outcome {
                    CallOutcome::Done { text, guidance, .. } => {
                        after.extend(guidance.map(|g| Message::User { content: UserContent::Text(g) }));
                        text
                    }
                    CallOutcome::Interrupted => INTERRUPTED_TEXT.to_string(),
                };
                conv.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text(text) });
            }
            for m in after {
                conv.push(m);
            }
            end_turn(ctx, &turn_id);
        }
    }
}

/// Messages sent to this agent (`write_agent`, `session.tasks.sendMessage`) since it last
/// looked. One that arrives after its final answer is taken when the registry records that
/// answer (`background`), and starts its next run.
fn inbox(ctx: &RunCtx) -> Vec<String> {
    let Some(scope) = ctx.scope.as_deref() else { return Vec::new() };
    ctx.handle.tasks().take_messages(&scope.agent_id)
}

fn end_turn(ctx: &RunCtx, turn_id: &str) {
    ctx.emitter().emit(t::AssistantTurnEndData { turn_id: turn_id.to_string(), model: None });
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
