//! The session event envelope around a typed payload ([`SessionEvent`], generated from
//! `session-events.schema.json`): `type` and `data` from the payload, plus `id`, `timestamp`,
//! `parentId`, `ephemeral` and `agentId`.
//!
//! Serialized in the key order the original writes (`type, data, id, timestamp, parentId`);
//! `ephemeral` only when true. Reading never fails on an unknown type or a payload that does
//! not fit its type: those are kept as [`SessionEvent::Other`].

use serde::de::Deserializer;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::generated::events::{ephemeral_policy_of, SessionEvent, EVENT_TYPES};

/// Whether an event type may be persisted, as the schema says (`ephemeral: {const: true}`
/// marks the always-ephemeral ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EphemeralPolicy {
    /// Never written to the log.
    Always,
    /// Persisted unless the emitter marks this one event ephemeral.
    Optional,
}

/// One session event as it appears on the wire and in `events.jsonl`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub timestamp: String,
    pub parent_id: Option<String>,
    /// `true` on transient events; absent (never `false`) on persisted ones.
    pub ephemeral: bool,
    pub agent_id: Option<String>,
    pub payload: SessionEvent,
}

impl Event {
    /// A new event with a fresh id and the current time; `parent_id` is set by the emitter.
    /// Always-ephemeral types are ephemeral whatever `ephemeral` says.
    pub fn new(payload: SessionEvent, ephemeral: bool) -> Self {
        let ephemeral = ephemeral || payload.ephemeral_policy() == EphemeralPolicy::Always;
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            timestamp: crate::now_iso(),
            parent_id: None,
            ephemeral,
            agent_id: None,
            payload,
        }
    }

    /// An event from its type string and JSON data: typed when the type is known and the data
    /// fits, [`SessionEvent::Other`] otherwise.
    pub fn from_parts(kind: &str, data: Value, ephemeral: bool) -> Self {
        Self::new(SessionEvent::from_parts(kind.to_string(), data), ephemeral)
    }

    /// The `type` string.
    pub fn kind(&self) -> &str {
        self.payload.kind()
    }
}

/// The payload as `data`, serialized by the payload's own type.
struct Data<'a>(&'a SessionEvent);

impl Serialize for Data<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_data(s)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 5 + usize::from(self.ephemeral) + usize::from(self.agent_id.is_some());
        let mut st = s.serialize_struct("Event", len)?;
        st.serialize_field("type", self.kind())?;
        st.serialize_field("data", &Data(&self.payload))?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("timestamp", &self.timestamp)?;
        st.serialize_field("parentId", &self.parent_id)?;
        if self.ephemeral {
            st.serialize_field("ephemeral", &true)?;
        }
        if let Some(agent) = &self.agent_id {
            st.serialize_field("agentId", agent)?;
        }
        st.end()
    }
}

#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Option<Value>,
    id: String,
    timestamp: String,
    #[serde(rename = "parentId", default)]
    parent_id: Option<String>,
    #[serde(default)]
    ephemeral: bool,
    #[serde(rename = "agentId", default)]
    agent_id: Option<String>,
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Raw::deserialize(d)?;
        let data = raw.data.unwrap_or_else(|| Value::Object(Default::default()));
        Ok(Self {
            id: raw.id,
            timestamp: raw.timestamp,
            parent_id: raw.parent_id,
            ephemeral: raw.ephemeral,
            agent_id: raw.agent_id,
            payload: SessionEvent::from_parts(raw.kind, data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::types as t;

    #[test]
    fn persisted_events_omit_ephemeral_key_and_keep_the_original_key_order() {
        let e = Event::new(t::TitleChangedData { title: "x".into() }.into(), false);
        assert!(e.ephemeral, "session.title_changed is always ephemeral");
        let e = Event::new(t::AbortData { reason: t::AbortReason::UserInitiated }.into(), false);
        let s = serde_json::to_string(&e).unwrap();
        assert!(!s.contains("ephemeral"), "{s}");
        assert!(s.starts_with(r#"{"type":"abort","data":{"reason":"user_initiated"},"id":"#), "{s}");
        assert!(s.contains("\"parentId\":null"));
        let idle = Event::new(t::IdleData::default().into(), false);
        assert!(serde_json::to_string(&idle).unwrap().contains("\"ephemeral\":true"));
    }

    #[test]
    fn round_trips_and_keeps_unknown_types() {
        let e = Event::new(t::TitleChangedData { title: "x".into() }.into(), false);
        let back: Event = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        let text = r#"{"type":"made.up","data":{"a":1},"id":"i","timestamp":"t","parentId":null}"#;
        let e: Event = serde_json::from_str(text).unwrap();
        assert_eq!(e.kind(), "made.up");
        assert_eq!(serde_json::to_string(&e).unwrap(), text);
    }

    #[test]
    fn timestamp_has_millis_and_z() {
        let t = crate::now_iso();
        assert!(t.ends_with('Z'));
        assert_eq!(t.len(), "2026-11-22T11:29:03.301Z".len());
    }
}
