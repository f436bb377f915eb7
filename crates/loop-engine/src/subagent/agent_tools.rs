//! `read_agent`, `write_agent` and `list_agents`: the model's view of its background agents
//! (see `background`).

use std::sync::Arc;
use std::time::Duration;

use llm_providers::ToolSpec;
use protocol::generated::types as t;
use serde_json::{json, Value};
use tools::ToolOutput;

use super::background::{Registry, Snapshot};

pub const READ_AGENT: &str = "read_agent";
pub const WRITE_AGENT: &str = "write_agent";
pub const LIST_AGENTS: &str = "list_agents";

/// How long `read_agent {wait: true}` waits when no timeout is given.
const DEFAULT_WAIT: Duration = Duration::from_secs(300);

pub fn read_agent_spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "The agent_id a background task returned."},
            "wait": {"type": "boolean", "description": "Wait for the agent to finish before answering (default: false)."},
            "timeout": {"type": "number", "description": "With wait: the most seconds to wait (default: 300)."},
        },
        "required": ["agent_id"],
    });
    ToolSpec {
        name: READ_AGENT.into(),
        description: "Check a background agent's status and read its results. Completion notifications arrive on \
                      their own; read once with wait: true to get the full output."
            .into(),
        parameters: Arc::new(parameters),
    }
}

pub fn write_agent_spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "The agent_id of the running background agent to message."},
            "message": {"type": "string", "description": "The message; the agent reads it before its next step."},
        },
        "required": ["agent_id", "message"],
    });
    ToolSpec {
        name: WRITE_AGENT.into(),
        description: "Send a follow-up message to a running background agent of this session, to steer the work it \
                      was given. It arrives in the agent's own conversation; for unrelated work start a new task."
            .into(),
        parameters: Arc::new(parameters),
    }
}

pub fn list_agents_spec() -> ToolSpec {
    let parameters = json!({"type": "object", "properties": {}});
    ToolSpec {
        name: LIST_AGENTS.into(),
        description: "List the background agents of this session with their status.".into(),
        parameters: Arc::new(parameters),
    }
}

pub(crate) fn status_name(s: t::TaskStatus) -> &'static str {
    match s {
        t::TaskStatus::Running => "running",
        t::TaskStatus::Idle => "idle",
        t::TaskStatus::Completed => "completed",
        t::TaskStatus::Failed => "failed",
        t::TaskStatus::Cancelled => "cancelled",
    }
}

/// `agent_id: …, agent_type: …, status: …, description: …, elapsed: Ns`.
fn summary(snap: &Snapshot) -> String {
    let i = &snap.info;
    format!(
        "agent_id: {}, agent_type: {}, status: {}, description: {}, elapsed: {}s",
        i.id,
        i.agent_type,
        status_name(i.status),
        i.description,
        snap.elapsed.as_secs()
    )
}

pub async fn read_agent(registry: &Registry, args: &Value) -> ToolOutput {
    let Some(id) = args.get("agent_id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        return ToolOutput::fail("The `agent_id` argument is required.");
    };
    let wait = args.get("wait").and_then(Value::as_bool).unwrap_or(false);
    let limit = args.get("timeout").and_then(Value::as_f64).filter(|s| *s > 0.0).map(Duration::from_secs_f64);
    let snap = if wait { registry.wait(id, limit.unwrap_or(DEFAULT_WAIT)).await } else { registry.get(id) };
    let Some(snap) = snap else {
        return ToolOutput::fail(format!("No agent found with agent_id \"{id}\". Use list_agents to see the agents."));
    };
    let i = &snap.info;
    let text = match i.status {
        t::TaskStatus::Completed => format!(
            "Agent completed. {}, total_turns: 0, duration: {}s\n\n{}",
            summary(&snap),
            snap.elapsed.as_secs(),
            i.result.as_deref().unwrap_or_default()
        ),
        t::TaskStatus::Failed => {
            format!("Agent failed. {}\n\nError: {}", summary(&snap), i.error.as_deref().unwrap_or("unknown error"))
        }
        t::TaskStatus::Cancelled => format!("Agent was cancelled. {}", summary(&snap)),
        t::TaskStatus::Running | t::TaskStatus::Idle => format!(
            "Agent is still running. {}. You'll be notified when it completes; read it again then.",
            summary(&snap)
        ),
    };
    ToolOutput::ok(text)
}

pub fn write_agent(registry: &Registry, args: &Value) -> ToolOutput {
    let Some(id) = args.get("agent_id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        return ToolOutput::fail("No agent_id provided. Please supply a valid agent_id.");
    };
    let Some(message) = args.get("message").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
        return ToolOutput::fail("The `message` argument is required.");
    };
    match registry.send_message(id, message) {
        Ok(()) => ToolOutput::ok(format!("Message delivered to agent {id}.")),
        Err(error) => ToolOutput::fail(error),
    }
}

pub fn list_agents(registry: &Registry) -> ToolOutput {
    let agents = registry.list();
    if agents.is_empty() {
        return ToolOutput::ok("<no background agents>");
    }
    let lines: Vec<String> = agents
        .iter()
        .map(|i| format!("- {} ({}): {} [{}]", i.id, i.agent_type, i.description, status_name(i.status)))
        .collect();
    ToolOutput::ok(format!("Background agents:\n{}", lines.join("\n")))
}
