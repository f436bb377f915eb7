//! `read_agent`, `write_agent` and `list_agents`: the model's view of its background agents
//! (see `background`). A background agent gets `write_agent` and `list_agents` too, on the
//! same registry: the session's other agents are its siblings (peers it can message).

use std::sync::Arc;
use std::time::Duration;

use llm_providers::ToolSpec;
use protocol::generated::types as t;
use serde_json::{json, Value};
use tools::ToolOutput;

use super::registry::{status_name, Registry, Snapshot};

pub const READ_AGENT: &str = "read_agent";
pub const WRITE_AGENT: &str = "write_agent";
pub const LIST_AGENTS: &str = "list_agents";

/// How long `read_agent {wait: true}` waits when no timeout is given, and at most.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
const MAX_WAIT: Duration = Duration::from_secs(180);

/// At most this many `agent_ids` in one `write_agent`.
const MAX_RECIPIENTS: usize = 16;

// The original's schemas and descriptions (1.0.102).
pub fn read_agent_spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "Background agent ID from a task result or notification."},
            "wait": {"type": "boolean", "description": "Wait for completion; default false returns current status."},
            "timeout": {"type": "number", "description": "Wait timeout in seconds (default 30, max 180)."},
            "since_turn": {
                "type": "integer",
                "minimum": 0,
                "description": "Inclusive 0-based start index. For example, since_turn: 0 returns turns 0, 1, ...",
            },
        },
        "required": ["agent_id"],
    });
    ToolSpec {
        name: READ_AGENT.into(),
        description: [
            "Reads a background agent's status and results by agent_id.",
            "* Call directly with each known ID from task results or notifications. Statuses: running, idle, \
             completed, failed, cancelled.",
            "* If a known agent is still running or output is incomplete, keep using that ID or wait; never call \
             list_agents to rediscover it.",
            "* Call repeatedly to poll status or read intermediate output while running.",
            "* Agent-turn completion notifications are automatic; wait for one before reading. Then use read_agent \
             once with wait: true for the full output; if still running, stop for this response.",
            "* Multi-turn reads return full history; since_turn sets an inclusive 0-based start.",
            "* wait: true blocks (optional timeout). Idle (waiting for messages) returns full history and its latest \
             response; running with wait: false returns current status.",
        ]
        .join("\n"),
        parameters: Arc::new(parameters),
    }
}

pub fn write_agent_spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "The ID of one background agent to send a message to."},
            "agent_ids": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": MAX_RECIPIENTS,
                "uniqueItems": true,
                "description": "A small explicit set of background agent IDs to send the same message to.",
            },
            "scope": {
                "type": "string",
                "enum": ["siblings", "children"],
                "description": "Visible agent group to send the same message to. Use only for same-message \
                                coordination with all current sibling agents or child/descendant agents.",
            },
            "message": {
                "type": "string",
                "description": "The message to send to the selected agent or agents. Steers a running turn or \
                                starts the idle agent's next turn.",
            },
        },
        "required": ["message"],
        "oneOf": [
            {"required": ["agent_id"], "not": {"anyOf": [{"required": ["agent_ids"]}, {"required": ["scope"]}]}},
            {"required": ["agent_ids"], "not": {"anyOf": [{"required": ["agent_id"]}, {"required": ["scope"]}]}},
            {"required": ["scope"], "not": {"anyOf": [{"required": ["agent_id"]}, {"required": ["agent_ids"]}]}},
        ],
    });
    ToolSpec {
        name: WRITE_AGENT.into(),
        description: "Sends a message to one or more running or idle background agents, delivered as a new user \
                      turn in each agent's conversation.
* Use write_agent only for same-task follow-ups where retained context is useful. For unrelated work or the next \
independent batch item, use a fresh task when available rather than repurposing an existing agent.
* Messages are delivered directly into the agent's conversation.
* If the agent is idle (finished its last turn), it will wake up and process the message as its next turn.
* If the agent is running, the message steers its current turn at the next processing opportunity.
* Use agent_id for one recipient; use agent_ids for a small explicit set of known recipients; use scope only when \
the same message applies to every currently visible sibling or child agent.
* For peer-to-peer conversations: send your message with write_agent, then end your turn. The other agent's reply \
will arrive as your next turn automatically."
            .into(),
        parameters: Arc::new(parameters),
    }
}

pub fn list_agents_spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "include_completed": {
                "type": "boolean",
                "description": "Include completed/failed agents (default true); false returns only running/idle.",
            },
            "scope": {
                "type": "string",
                "enum": ["siblings", "children", "all"],
                "description": "Visibility: omit for nearby; siblings=peers, children=descendants, all=read-only \
                                visible-tree inspection.",
            },
        },
    });
    ToolSpec {
        name: LIST_AGENTS.into(),
        description: "Lists visible background agents by status: running, idle, completed, failed, or cancelled.
* Use only for requested overviews or when no usable agent_id is in recent context. For status or a same-task \
follow-up, use IDs from task, read_agent, or notifications directly with read_agent/write_agent, even while running \
or incomplete, or wait for notifications; do not call list_agents merely to rediscover IDs. For unrelated work or \
the next independent batch item, use a fresh task when available rather than repurposing an existing agent.
* Idle agents accept write_agent only for same-task follow-ups. '(one-shot)' MCP tasks support read_agent only; \
start a new task to send more input.
* Set include_completed: false for running/idle only. Omit scope for nearby agents; set it to siblings, children, \
or all for read-only inspection of the visible tree."
            .into(),
        parameters: Arc::new(parameters),
    }
}

/// `agent_id: …, agent_type: …, status: …, description: …, elapsed: 1.25s`.
fn summary(snap: &Snapshot) -> String {
    let i = &snap.info;
    let elapsed = (snap.elapsed.as_secs_f64() * 100.0).round() / 100.0;
    format!(
        "agent_id: {}, agent_type: {}, status: {}, description: {}, elapsed: {elapsed}s",
        i.id,
        i.agent_type,
        status_name(i.status),
        i.description,
    )
}

/// An idle agent's answers from `since` on, as the original lists them: `[Turn n]` and the
/// answer, a blank line between.
fn turns(responses: &[String], since: usize) -> String {
    responses.iter().enumerate().skip(since).map(|(n, r)| format!("[Turn {n}]\n{r}")).collect::<Vec<_>>().join("\n\n")
}

pub async fn read_agent(registry: &Registry, args: &Value) -> ToolOutput {
    let Some(id) = args.get("agent_id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        return ToolOutput::fail(
            "No agent_id provided. Please supply a valid agent_id from a background task invocation.",
        );
    };
    let wait = args.get("wait").and_then(Value::as_bool).unwrap_or(false);
    let limit = args
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s).min(MAX_WAIT))
        .unwrap_or(DEFAULT_WAIT);
    let since = args.get("since_turn").and_then(Value::as_u64).unwrap_or(0) as usize;
    let snap = if wait { registry.wait(id, limit).await } else { registry.get(id) };
    let Some(snap) = snap else {
        return ToolOutput::fail(format!("No agent found with agent_id \"{id}\". Use list_agents to see the agents."));
    };
    let i = &snap.info;
    let text = match i.status {
        t::TaskStatus::Idle => format!(
            "Agent is idle (waiting for messages). {}, total_turns: {}\n\n{}",
            summary(&snap),
            snap.responses.len(),
            turns(&snap.responses, since)
        ),
        t::TaskStatus::Completed => format!(
            "Agent completed. {}, total_turns: {}, duration: {}s\n\n{}",
            summary(&snap),
            snap.responses.len(),
            snap.elapsed.as_secs(),
            i.result.as_deref().unwrap_or_default()
        ),
        t::TaskStatus::Failed => {
            format!("Agent failed. {}\n\nError: {}", summary(&snap), i.error.as_deref().unwrap_or("unknown error"))
        }
        t::TaskStatus::Cancelled => format!("Agent was cancelled. {}", summary(&snap)),
        t::TaskStatus::Running => format!(
            "Agent is still running. {}. You'll be notified when it completes; read it again then.",
            summary(&snap)
        ),
    };
    ToolOutput::ok(text)
}

/// Who calls the tools: the session itself (its background agents are its children), or one
/// of those agents (the others are its siblings, and it starts no agents of its own).
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    Session,
    Agent(&'a str),
}

impl Caller<'_> {
    /// The agents a scope names, of those that take messages now.
    fn scope(&self, registry: &Registry, scope: &str) -> Vec<String> {
        match (self, scope) {
            (Caller::Session, "children") => registry.reachable(),
            (Caller::Agent(me), "siblings") => registry.reachable().into_iter().filter(|id| id != me).collect(),
            _ => Vec::new(),
        }
    }

    fn is(&self, id: &str) -> bool {
        matches!(self, Caller::Agent(me) if *me == id)
    }
}

fn to_self(id: &str) -> String {
    format!("Agent \"{id}\" cannot send a message to itself. Use the agent_id of another agent.")
}

/// Who a `write_agent` call addresses: exactly one of `agent_id`, `agent_ids`, `scope`.
fn recipients(registry: &Registry, caller: Caller<'_>, args: &Value) -> Result<Vec<String>, String> {
    let id = args.get("agent_id");
    let ids = args.get("agent_ids");
    let scope = args.get("scope");
    if [id, ids, scope].iter().filter(|v| v.is_some_and(|v| !v.is_null())).count() != 1 {
        if id.is_none() && ids.is_none() && scope.is_none() {
            return Err("No agent_id provided. Please supply a valid agent_id.".into());
        }
        return Err("Provide exactly one of \"agent_id\", \"agent_ids\", or \"scope\"".into());
    }
    if let Some(id) = id.filter(|v| !v.is_null()) {
        let id = id.as_str().filter(|s| !s.is_empty());
        let id = id.ok_or("No agent_id provided. Please supply a valid agent_id.")?;
        if caller.is(id) {
            return Err(to_self(id));
        }
        return Ok(vec![id.to_string()]);
    }
    if let Some(ids) = ids.filter(|v| !v.is_null()) {
        let list: Vec<String> = ids
            .as_array()
            .ok_or("\"agent_ids\": Expected array")?
            .iter()
            .map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
            .collect::<Option<_>>()
            .ok_or("\"agent_ids\": Expected string")?;
        if list.is_empty() {
            return Err("\"agent_ids\": Array must contain at least 1 element(s)".into());
        }
        if list.len() > MAX_RECIPIENTS {
            return Err(format!("\"agent_ids\": Array must contain at most {MAX_RECIPIENTS} element(s)"));
        }
        if list.iter().enumerate().any(|(n, a)| list[..n].contains(a)) {
            return Err("\"agent_ids\": Array must not contain duplicate agent IDs".into());
        }
        if let Some(me) = list.iter().find(|id| caller.is(id)) {
            return Err(to_self(me));
        }
        return Ok(list);
    }
    match scope.and_then(Value::as_str) {
        Some(scope @ ("children" | "siblings")) => Ok(caller.scope(registry, scope)),
        _ => Err("\"scope\": Invalid enum value. Expected 'siblings' | 'children'".into()),
    }
}

pub fn write_agent(registry: &Registry, caller: Caller<'_>, args: &Value) -> ToolOutput {
    let to = match recipients(registry, caller, args) {
        Ok(to) => to,
        Err(e) => return ToolOutput::fail(e),
    };
    let Some(message) = args.get("message").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
        return ToolOutput::fail("\"message\": Required");
    };
    if to.is_empty() {
        return ToolOutput::fail("No matching agents to message. Run list_agents to get current agent IDs and scopes.");
    }
    if let [id] = to.as_slice() {
        return match registry.send_message(id, message) {
            Ok(()) => ToolOutput::ok(format!(
                "Message delivered to agent {id}. Use read_agent to check the agent's response."
            )),
            Err(error) => ToolOutput::fail(error),
        };
    }
    // All or none: a set with one agent that cannot take it delivers nothing.
    let refused: Vec<String> = to.iter().filter_map(|id| registry.refusal(id)).collect();
    if !refused.is_empty() {
        return ToolOutput::fail(format!("One or more recipients cannot receive messages: {}", refused.join(" ")));
    }
    for id in &to {
        if let Err(error) = registry.send_message(id, message) {
            return ToolOutput::fail(error);
        }
    }
    ToolOutput::ok(format!(
        "Message delivered to {} agents: {}. Use read_agent to check the agents' responses.",
        to.len(),
        to.join(", ")
    ))
}

pub fn list_agents(registry: &Registry, caller: Caller<'_>, args: &Value) -> ToolOutput {
    let include_completed = args.get("include_completed").and_then(Value::as_bool).unwrap_or(true);
    let scope = args.get("scope").and_then(Value::as_str);
    // Nearby (no scope): the session's children, an agent's siblings; `all`: every agent.
    let visible = |id: &str| match (caller, scope) {
        (_, Some("all")) => true,
        (Caller::Session, Some("siblings")) | (Caller::Agent(_), Some("children")) => false,
        (Caller::Session, _) => true,
        (Caller::Agent(me), _) => me != id,
    };
    let agents: Vec<_> = registry
        .list()
        .into_iter()
        .filter(|i| visible(&i.id))
        .filter(|i| include_completed || matches!(i.status, t::TaskStatus::Running | t::TaskStatus::Idle))
        .collect();
    if agents.is_empty() {
        return ToolOutput::ok("<no background agents>");
    }
    let lines: Vec<String> = agents
        .iter()
        .map(|i| format!("- {} ({}): {} [{}]", i.id, i.agent_type, i.description, status_name(i.status)))
        .collect();
    ToolOutput::ok(format!("Background agents:\n{}", lines.join("\n")))
}
