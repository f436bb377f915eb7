//! The session event envelope. Payloads (`data`) are JSON objects whose field names follow
//! `schemas/session-events.schema.json`; builders for the events Skipper emits live in
//! `loop-engine`, next to the behaviour that produces them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One session event as it appears on the wire and in `events.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "empty_object")]
    pub data: Value,
    pub id: String,
    pub timestamp: String,
    #[serde(rename = "parentId", default)]
    pub parent_id: Option<String>,
    /// `true` on transient events; absent (never `false`) on persisted ones.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ephemeral: bool,
    #[serde(rename = "agentId", default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Event {
    /// A new event with a fresh id and the current time; `parent_id` is set by the emitter.
    pub fn new(kind: impl Into<String>, data: Value, ephemeral: bool) -> Self {
        Self {
            kind: kind.into(),
            data,
            id: uuid::Uuid::new_v4().to_string(),
            timestamp: crate::now_iso(),
            parent_id: None,
            ephemeral,
            agent_id: None,
        }
    }
}

/// Whether an event type may be persisted, as the schema says (`ephemeral: {const: true}`
/// marks the always-ephemeral ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EphemeralPolicy {
    /// Never written to the log.
    Always,
    /// Persisted unless the emitter marks this one event ephemeral.
    Optional,
}

/// Event types that are never persisted, whatever the emitter says (events.md §7).
pub const ALWAYS_EPHEMERAL: &[&str] = &[
    "session.idle",
    "session.title_changed",
    "session.usage_info",
    "assistant.message_start",
    "assistant.message_delta",
    "assistant.reasoning_delta",
    "assistant.streaming_delta",
    "assistant.tool_call_delta",
    "assistant.usage",
    "assistant.intent",
    "assistant.idle",
    "assistant.turn_retry",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "pending_messages.modified",
    "user_input.requested",
    "user_input.completed",
    "elicitation.requested",
    "elicitation.completed",
    "exit_plan_mode.requested",
    "exit_plan_mode.completed",
    "external_tool.completed",
    "session.tools_updated",
    "session.background_tasks_changed",
    "agent.interrupted",
    "model.call_failure",
    "session.autopilot_stopped",
];

pub fn is_always_ephemeral(kind: &str) -> bool {
    ALWAYS_EPHEMERAL.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persisted_events_omit_ephemeral_key() {
        let e = Event::new("user.message", serde_json::json!({"content":"hi"}), false);
        let s = serde_json::to_string(&e).unwrap();
        assert!(!s.contains("ephemeral"));
        assert!(s.contains("\"parentId\":null"));
        let e = Event::new("session.idle", serde_json::json!({}), true);
        assert!(serde_json::to_string(&e).unwrap().contains("\"ephemeral\":true"));
    }

    #[test]
    fn timestamp_has_millis_and_z() {
        let t = crate::now_iso();
        assert!(t.ends_with('Z'));
        assert_eq!(t.len(), "2026-11-22T11:29:03.301Z".len());
    }
}
