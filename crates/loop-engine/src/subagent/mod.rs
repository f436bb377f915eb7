//! Sub-agents: the `task` tool starts one (a built-in agent type or a custom agent); it runs its
//! own loop — its own context, its own tools, the same model-call and dispatch machinery — and
//! its final answer is the `task` call's result. Sibling calls run concurrently; aborting the
//! parent cancels them.

pub mod agent_tools;
pub mod background;
pub mod registry;
mod run;
pub(crate) mod scope;
pub(crate) mod servers;
pub mod workflow_agent;

use std::sync::Arc;

use futures::future::BoxFuture;
use llm_providers::{ToolCall, ToolSpec};
use protocol::generated::types as t;
use serde_json::{json, Value};
use tools::ToolOutput;

pub use registry::Registry;
pub use scope::{AgentScope, ScopedEmitter};

use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;
use agent_config::agents::builtin::{self, BUILTIN_AGENTS};

pub const TASK: &str = "task";

/// The agent a `task` call asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub prompt: String,
    /// `None`: every tool the session offers (but `task`).
    pub tools: Option<Vec<String>>,
    pub model: Option<String>,
    /// The agent's own MCP servers (a custom agent's `mcpServers`).
    pub mcp_servers: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A built-in agent type or a custom agent, by name.
pub(crate) fn resolve(settings: &SessionSettings, agent_type: &str) -> Option<Resolved> {
    if let Some(custom) = settings.agents.get(agent_type) {
        return Some(Resolved {
            name: custom.name.clone(),
            display_name: custom.display_name.clone(),
            description: custom.description.clone(),
            prompt: custom.prompt.clone(),
            tools: custom.tools.clone(),
            model: custom.model.clone(),
            mcp_servers: custom.mcp_servers.clone().filter(|m| !m.is_empty()),
        });
    }
    builtin::get(agent_type).filter(|b| offered(settings, b)).map(|b| Resolved {
        name: b.name.into(),
        display_name: b.display_name.into(),
        description: b.description.into(),
        prompt: b.prompt.into(),
        tools: b.tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        model: None,
        mcp_servers: None,
    })
}

/// Whether the session offers a built-in agent type (`excludedBuiltinAgents` leaves some out).
fn offered(settings: &SessionSettings, agent: &builtin::BuiltinAgent) -> bool {
    !settings.excluded_builtin_agents.iter().any(|n| n == agent.name)
}

/// The built-in agent types the session offers.
fn builtins(settings: &SessionSettings) -> impl Iterator<Item = &'static builtin::BuiltinAgent> + '_ {
    BUILTIN_AGENTS.iter().filter(move |a| offered(settings, a))
}

/// The `task` tool as offered: built-in agent types, then the custom agents the model may pick.
pub fn spec(settings: &SessionSettings) -> ToolSpec {
    let custom: Vec<_> = settings.agents.all().iter().filter(|a| a.infer).collect();
    let mut types: Vec<String> = builtins(settings).map(|a| a.name.to_string()).collect();
    types.extend(custom.iter().map(|a| a.name.clone()));
    let mut description = String::from(
        "Start a sub-agent for a self-contained piece of work. It has its own context and tools, works on the \
         prompt you give it (include everything it needs to know) and returns its final answer as this tool's \
         result. Independent tasks can run in parallel: call this tool several times in one reply.\n\nAgent types:",
    );
    for a in builtins(settings) {
        description.push_str(&format!("\n- {}: {}", a.name, a.description));
    }
    for a in &custom {
        description.push_str(&format!("\n- {}: {}", a.name, a.description));
    }
    // Offered on every model call, and the same while the agents are: the last schema is kept.
    static LAST: std::sync::Mutex<Option<(Vec<String>, Arc<serde_json::Value>)>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, parameters)) = last.as_ref().filter(|(cached, _)| *cached == types) {
        return ToolSpec { name: TASK.into(), description, parameters: parameters.clone() };
    }
    let parameters = json!({
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
            "prompt": {"type": "string", "description": "The task for the agent to perform."},
            "agent_type": {"type": "string", "enum": types, "description": "The type of agent to start."},
            "name": {"type": "string", "description": "A short name for this agent instance (its agent_id)."},
            "model": {"type": "string", "description": "The model the agent should use (default: the session's)."},
            "mode": {"type": "string", "enum": ["sync", "background"], "description": "sync (default): wait for the answer."},
        },
        "required": ["name", "prompt", "agent_type", "description"],
    });
    let parameters = Arc::new(parameters);
    *last = Some((types, parameters.clone()));
    ToolSpec { name: TASK.into(), description, parameters }
}

/// `session.tasks.startAgent`: a background agent started by a client; its id.
pub fn start_background(
    handle: &crate::handle::SessionHandle,
    agent_type: &str,
    prompt: String,
    name: Option<String>,
    description: Option<String>,
    model: Option<String>,
) -> Result<String, String> {
    let settings = handle.view().settings.clone();
    let agent = resolve(&settings, agent_type).ok_or_else(|| format!("Agent type \"{agent_type}\" not found"))?;
    let model = model.or_else(|| agent.model.clone()).unwrap_or_else(|| settings.model.clone());
    let launch = background::Launch {
        name: name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| agent.name.clone()),
        description: description.unwrap_or_default(),
        tool_call_id: format!("tasks-start-{}", uuid::Uuid::new_v4()),
        agent_type: agent_type.to_string(),
        agent,
        prompt,
        model,
    };
    background::start(handle, &settings, launch)
}

/// Runs one `task` call. Boxed: a sub-agent's loop dispatches tools, which is how it started.
pub(crate) fn run_task<'a>(
    ctx: &'a RunCtx,
    call: &'a ToolCall,
    args: Value,
    settings: &'a SessionSettings,
) -> BoxFuture<'a, ToolOutput> {
    Box::pin(async move {
        let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        let Some(prompt) = text("prompt").filter(|p| !p.trim().is_empty()) else {
            return ToolOutput::fail("The `prompt` argument is required.");
        };
        let Some(agent_type) = text("agent_type") else {
            return ToolOutput::fail("The `agent_type` argument is required.");
        };
        let Some(agent) = resolve(settings, &agent_type) else {
            let mut known: Vec<String> = builtins(settings).map(|a| a.name.to_string()).collect();
            known.extend(settings.agents.all().iter().map(|a| a.name.clone()));
            return ToolOutput::fail(format!(
                "Unknown agent type \"{agent_type}\". Available agent types: {}.",
                known.join(", ")
            ));
        };
        let model = text("model").or_else(|| agent.model.clone()).unwrap_or_else(|| settings.model.clone());
        let agent_id = text("name").unwrap_or_else(|| format!("{}-{}", agent.name, &call.id));
        let mode = text("mode").unwrap_or_else(|| "sync".into());
        if mode == "background" {
            let launch = background::Launch {
                agent,
                agent_type,
                prompt,
                model,
                name: agent_id,
                description: text("description").unwrap_or_default(),
                tool_call_id: call.id.clone(),
            };
            return match background::start(&ctx.handle, settings, launch) {
                Ok(id) => ToolOutput::ok(background::started_text(&id)),
                Err(e) => ToolOutput::fail(e),
            };
        }
        ctx.emitter().emit(t::SubagentStartedData {
            tool_call_id: call.id.clone(),
            agent_name: agent.name.clone(),
            agent_display_name: agent.display_name.clone(),
            agent_description: agent.description.clone(),
            model: Some(model.clone()),
            agent_type: Some(agent_type.clone()),
            execution_mode: Some(mode),
            ..Default::default()
        });
        let sub = ctx.for_subagent(AgentScope { agent_id, parent_tool_call_id: call.id.clone() });
        match run::run_agent(&sub, &agent, &prompt, &model, settings).await {
            Ok(answer) => {
                ctx.emitter().emit(t::SubagentCompletedData {
                    tool_call_id: call.id.clone(),
                    agent_name: agent.name.clone(),
                    agent_display_name: agent.display_name.clone(),
                    model: Some(model),
                    ..Default::default()
                });
                ToolOutput::ok(answer)
            }
            Err(error) => {
                ctx.emitter().emit(t::SubagentFailedData {
                    tool_call_id: call.id.clone(),
                    agent_name: agent.name.clone(),
                    agent_display_name: agent.display_name.clone(),
                    error: error.clone(),
                    model: Some(model),
                    ..Default::default()
                });
                ToolOutput::fail(format!("The {} agent failed: {error}", agent.name))
            }
        }
    })
}
