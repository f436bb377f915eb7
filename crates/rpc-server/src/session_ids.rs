//! Each tenant of a shared server names its sessions in a namespace of its own. Inside the
//! server a tenant's session id is `<tenant>.<id>` (tenant names have no `.`), and its clients
//! only ever see `<id>`: requests are translated on the way in, answers, notifications and our
//! requests to the client on the way out. So a tenant may create a session with an id another
//! tenant uses, exactly as with a free id, and no answer tells it whether the other one exists.
//!
//! The translation knows where protocol messages carry session ids: fields named as in the
//! schemas (`sessionId`, `sessionIds`, `toSessionId`, …) anywhere in a message, and a few
//! method-specific places (`sessions.findByPrefix`'s `prefix`, the maps and lists of
//! `sessions.getSizes`, `sessions.bulkDelete`, `sessions.pruneOld`, `sessions.checkInUse`, a
//! workspace's `id`). Events carry them only in `session.start` and `external_tool.requested`.
//!
//! Sessions a shared server made before ids were namespaced keep their ids: a tenant names
//! one of its own by that id, and sees it as it is.

use std::borrow::Cow;

use protocol::event::Event;
use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::tenancy::{Tenancy, Tenant};

/// Fields that hold one session id, or a list of them, wherever they appear.
const ID_FIELDS: &[&str] = &[
    "sessionId",
    "sessionIds",
    "nativeSessionId",
    "ownerSessionId",
    "policySessionId",
    "sourceSessionId",
    "excludeSessionIds",
    "parentSessionId",
    "toSessionId",
    "expectedSessionId",
    "expectedFromSessionId",
    "attachedSessionId",
    "inheritPlanBaseFromSessionId",
    "detachedFromSpawningParentSessionId",
];

/// Where a method's own answer names sessions beyond [`ID_FIELDS`].
enum Extra {
    /// A top-level list of ids.
    List(&'static str),
    /// A top-level map keyed by id.
    Keys(&'static str),
    /// `workspace.id`.
    WorkspaceId,
}

fn result_extras(method: &str) -> &'static [Extra] {
    match method {
        "sessions.checkInUse" => &[Extra::List("inUse")],
        "sessions.pruneOld" => &[Extra::List("deleted"), Extra::List("candidates"), Extra::List("skipped")],
        "sessions.bulkDelete" => &[Extra::Keys("freedBytes")],
        "sessions.getSizes" => &[Extra::Keys("sizes")],
        "session.workspaces.getWorkspace" | "session.workspaces.ensure" => &[Extra::WorkspaceId],
        _ => &[],
    }
}

/// A connection's view of session ids: its tenant's namespace.
pub struct Namespace<'a> {
    tenancy: &'a Tenancy,
    tenant: &'a Tenant,
}

/// Ids a request named, as translated: to say an error's ids back as the client gave them.
#[derive(Default)]
pub struct Renamed(Vec<(String, String)>);

impl<'a> Namespace<'a> {
    pub fn new(tenancy: &'a Tenancy, tenant: &'a Tenant) -> Self {
        Self { tenancy, tenant }
    }

    /// The server's id for the session the client names `outer`.
    pub fn inner(&self, outer: &str) -> String {
        let prefix = self.tenant.id_prefix();
        // A session of its own from before namespacing (an id with the prefix is always a new one).
        if !outer.starts_with(prefix) && self.tenancy.owns(self.tenant, outer) {
            return outer.to_string();
        }
        format!("{prefix}{outer}")
    }

    /// The id the client knows the session `inner` by.
    pub fn outer<'s>(&self, inner: &'s str) -> &'s str {
        inner.strip_prefix(self.tenant.id_prefix()).unwrap_or(inner)
    }

    /// [`Namespace::outer`] in place.
    fn to_outer(&self, id: &mut String) {
        if id.starts_with(self.tenant.id_prefix()) {
            id.drain(..self.tenant.id_prefix().len());
        }
    }

    /// A request's params text with the session ids it names translated. Text that is not
    /// JSON goes on unchanged, for the method's parser to refuse.
    pub fn request_in(&self, method: &str, text: &str) -> (String, Renamed) {
        let mut renamed = Renamed::default();
        let Ok(mut value) = serde_json::from_str::<Value>(text) else {
            return (text.to_string(), renamed);
        };
        let mut rename = |id: &mut String| {
            let inner = self.inner(id);
            renamed.0.push((inner.clone(), std::mem::replace(id, inner)));
        };
        walk(&mut value, &mut rename);
        if method == "sessions.findByPrefix" {
            if let Some(Value::String(prefix)) = value.get_mut("prefix") {
                // Only this tenant's sessions can match (old ones are found by their own ids).
                rename(prefix);
            }
        }
        (value.to_string(), renamed)
    }

    /// A method's answer (JSON) with the ids it names as the client knows them.
    pub fn result_out(&self, method: &str, json: Vec<u8>) -> Vec<u8> {
        let extras = result_extras(method);
        if extras.is_empty() && !self.mentions_inner(&json) {
            return json;
        }
        let Ok(mut value) = serde_json::from_slice::<Value>(&json) else { return json };
        self.value_out(&mut value);
        for extra in extras {
            match extra {
                Extra::List(field) => {
                    if let Some(Value::Array(items)) = value.get_mut(*field) {
                        for item in items {
                            self.string_out(item);
                        }
                    }
                }
                Extra::Keys(field) => {
                    if let Some(Value::Object(map)) = value.get_mut(*field) {
                        let taken = std::mem::take(map);
                        *map = taken.into_iter().map(|(k, v)| (self.outer(&k).to_string(), v)).collect();
                    }
                }
                Extra::WorkspaceId => {
                    if let Some(id) = value.get_mut("workspace").and_then(|w| w.get_mut("id")) {
                        self.string_out(id);
                    }
                }
            }
        }
        serde_json::to_vec(&value).unwrap_or(json)
    }

    /// A message to the client (notification or request params) with its ids as it knows them.
    pub fn value_out(&self, value: &mut Value) {
        walk(value, &mut |id: &mut String| self.to_outer(id));
    }

    /// An error with the ids the request named said back as the client gave them.
    pub fn error_out(&self, mut error: RpcError, renamed: &Renamed) -> RpcError {
        for (inner, outer) in &renamed.0 {
            if inner != outer && error.message.contains(inner.as_str()) {
                error.message = error.message.replace(inner.as_str(), outer);
            }
        }
        error
    }

    /// An event for the client: `json` as it is unless the event names sessions.
    pub fn event_out<'j>(&self, event: &Event, json: &'j str) -> Cow<'j, str> {
        if !matches!(event.kind(), "session.start" | "external_tool.requested") || !self.mentions_inner(json.as_bytes())
        {
            return Cow::Borrowed(json);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(json) else { return Cow::Borrowed(json) };
        self.value_out(&mut value);
        Cow::Owned(value.to_string())
    }

    /// Whether a JSON text may hold an inner id (a string that starts with the prefix).
    fn mentions_inner(&self, json: &[u8]) -> bool {
        let prefix = self.tenant.id_prefix().as_bytes();
        json.windows(prefix.len() + 1).any(|w| w[0] == b'"' && &w[1..] == prefix)
    }

    fn string_out(&self, value: &mut Value) {
        if let Value::String(id) = value {
            self.to_outer(id);
        }
    }
}

/// Calls `f` on every string an [`ID_FIELDS`] field holds (itself, or the items of its list).
fn walk(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if ID_FIELDS.contains(&key.as_str()) {
                    match v {
                        Value::String(id) => f(id),
                        Value::Array(items) => items.iter_mut().for_each(|item| {
                            if let Value::String(id) = item {
                                f(id);
                            }
                        }),
                        other => walk(other, f),
                    }
                } else {
                    walk(v, f);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| walk(item, f)),
        _ => {}
    }
}

#[cfg(test)]
#[path = "session_ids_tests.rs"]
mod tests;
