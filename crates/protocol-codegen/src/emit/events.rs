//! `events.rs`: `SessionEvent`, one variant per allowlisted event type (allowlist order).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::text::{lit, HEADER};
use crate::docs::render;
use crate::mapper::{EventOut, Model};

const PREFIX: &str = "t::";

pub fn emit(model: &Model) -> String {
    let events = &model.events;
    let mut out = String::from(HEADER);
    out.push_str(
        "//! [`SessionEvent`]: the typed payload (`data`) of every allowlisted session event type,
//! and [`EVENT_TYPES`] with their persistence policy. The envelope (`id`, `timestamp`, ...)
//! is `crate::event`'s.

#![allow(clippy::large_enum_variant)]

use serde::Serialize;

use super::types as t;
use crate::event::EphemeralPolicy;

/// One session event payload, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
",
    );
    for e in events {
        let doc = match &e.doc {
            Some(d) => format!("`{}`: {d}", e.kind),
            None => format!("`{}`.", e.kind),
        };
        out.push_str(&render(&doc, "    "));
        let _ = writeln!(out, "    {}({}),", e.ident, e.data.render(PREFIX));
    }
    out.push_str(
        "    /// A type not in the allowlist (read back from a log written by another version), or a
    /// payload that does not fit its type: kept as is.
    Other { kind: String, data: serde_json::Value },
}

impl SessionEvent {
    /// The event's `type` string.
    pub fn kind(&self) -> &str {
        match self {
",
    );
    for e in events {
        let _ = writeln!(out, "            Self::{}(_) => {},", e.ident, lit(&e.kind));
    }
    out.push_str(
        "            Self::Other { kind, .. } => kind,
        }
    }

    /// Whether this event may be persisted: the policy of its type (see
    /// [`ephemeral_policy_of`]; an `Other` with a known type gets that type's policy).
    pub fn ephemeral_policy(&self) -> EphemeralPolicy {
        ephemeral_policy_of(self.kind())
    }

    /// Serializes just the payload (the envelope's `data`).
    pub fn serialize_data<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
",
    );
    for e in events {
        let _ = writeln!(out, "            Self::{}(d) => d.serialize(s),", e.ident);
    }
    out.push_str(
        "            Self::Other { data, .. } => data.serialize(s),
        }
    }

    /// The typed variant when `kind` is allowlisted and `data` fits its payload type;
    /// [`SessionEvent::Other`] otherwise. Never fails.
    pub fn from_parts(kind: String, data: serde_json::Value) -> Self {
        match kind.as_str() {
",
    );
    for e in events {
        let _ = writeln!(out, "            {} => typed(kind, data, Self::{}),", lit(&e.kind), e.ident);
    }
    out.push_str(
        "            _ => Self::Other { kind, data },
        }
    }
}

/// `wrap(data as T)`, or `Other` when `data` does not fit `T`.
fn typed<T: serde::de::DeserializeOwned>(
    kind: String,
    data: serde_json::Value,
    wrap: fn(T) -> SessionEvent,
) -> SessionEvent {
    match T::deserialize(&data) {
        Ok(payload) => wrap(payload),
        Err(_) => SessionEvent::Other { kind, data },
    }
}

/// The persistence policy of an event type: `Always` for the types the schema marks
/// `ephemeral: {const: true}` (and extensions configured so), `Optional` for every other
/// type, known or not.
pub fn ephemeral_policy_of(kind: &str) -> EphemeralPolicy {
    match kind {
",
    );
    let always: Vec<String> = events.iter().filter(|e| e.always_ephemeral).map(|e| lit(&e.kind)).collect();
    if always.is_empty() {
        out.push_str("        _ => EphemeralPolicy::Optional,\n    }\n}\n");
    } else {
        for (i, k) in always.iter().enumerate() {
            let sep = if i + 1 == always.len() { " => EphemeralPolicy::Always," } else { "" };
            let bar = if i == 0 { "        " } else { "        | " };
            let _ = writeln!(out, "{bar}{k}{sep}");
        }
        out.push_str("        _ => EphemeralPolicy::Optional,\n    }\n}\n");
    }

    out.push_str(
        "\n/// Every allowlisted event type (schema and extensions) with its persistence policy.
pub const EVENT_TYPES: &[(&str, EphemeralPolicy)] = &[\n",
    );
    for e in events {
        let policy = if e.always_ephemeral { "Always" } else { "Optional" };
        let _ = writeln!(out, "    ({}, EphemeralPolicy::{policy}),", lit(&e.kind));
    }
    out.push_str("];\n");

    // `From` only where the payload type identifies the event unambiguously.
    let mut uses: BTreeMap<String, Vec<&EventOut>> = BTreeMap::new();
    for e in events {
        uses.entry(e.data.render(PREFIX)).or_default().push(e);
    }
    for e in events {
        let ty = e.data.render(PREFIX);
        if uses[&ty].len() != 1 {
            continue;
        }
        let _ = write!(
            out,
            "\nimpl From<{ty}> for SessionEvent {{
    fn from(data: {ty}) -> Self {{
        Self::{}(data)
    }}
}}\n",
            e.ident
        );
    }
    out
}
