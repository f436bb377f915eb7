//! A checked transcript as a session's events, as the original writes an import: a
//! `session.start` at the transcript's creation time, then per record a `user.message`, an
//! `assistant.message` (with the tool calls of its turn as `toolRequests`),
//! `tool.execution_start` and `tool.execution_complete`. Ids are new (the transcript's stay in
//! the transcript); turn ids are new too, one per transcript turn.

use std::collections::HashMap;

use base64::Engine as _;
use protocol::event::Event;
use serde_json::{json, Map, Value};

use super::{Parsed, Record, ToolResult};
use crate::interchange::Content;

/// A message's attachment, read: what the session's `user.message` carries inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedAttachment {
    pub mime_type: String,
    pub display_name: String,
    pub data: Vec<u8>,
}

/// `parsed` as the events of session `session_id` working in `cwd`; `attachments` by message
/// record id. `version` is the producer's.
pub fn events(
    session_id: &str,
    parsed: &Parsed,
    cwd: &str,
    attachments: &HashMap<String, Vec<ImportedAttachment>>,
    version: &str,
) -> Vec<Event> {
    let new_id = || uuid::Uuid::new_v4().to_string();
    let mut turns: HashMap<String, String> = HashMap::new();
    let mut turn = |t: &Option<String>| t.as_ref().map(|t| turns.entry(t.clone()).or_insert_with(new_id).clone());
    let call_ids: HashMap<&str, String> = parsed
        .records
        .iter()
        .filter_map(|r| match r {
            Record::ToolCall { id, .. } => Some((id.as_str(), new_id())),
            _ => None,
        })
        .collect();
    let requests = tool_requests(&parsed.records, &call_ids);

    let mut context = Map::new();
    context.insert("cwd".into(), cwd.into());
    let workspace = &parsed.header.workspace;
    if let Some(r) = &workspace.repository {
        context.insert("repository".into(), format!("{}/{}", r.owner, r.name).into());
        context.insert("repositoryHost".into(), r.host.clone().into());
        context.insert("hostType".into(), r.host_type.into());
    }
    if let Some(b) = &workspace.branch {
        context.insert("branch".into(), b.clone().into());
    }
    let mut out = vec![Event::from_parts(
        "session.start",
        json!({
            "sessionId": session_id, "version": 1, "producer": "copilot-agent", "copilotVersion": version,
            "startTime": parsed.header.created_at, "context": context, "alreadyInUse": false,
        }),
        false,
    )];
    for record in &parsed.records {
        let (kind, data) = match record {
            Record::Message { id, assistant: false, content, .. } => {
                let mut data = json!({"content": text(content)});
                if let Some(blobs) = attachments.get(id).filter(|a| !a.is_empty()) {
                    data["attachments"] = blobs.iter().map(blob).collect();
                }
                ("user.message", data)
            }
            Record::Message { id, assistant: true, content, model, turn_id, .. } => {
                let mut data = json!({"messageId": new_id(), "content": text(content)});
                if let Some(m) = model {
                    data["model"] = m.clone().into();
                }
                if let Some(t) = turn(turn_id) {
                    data["turnId"] = t.into();
                }
                if let Some(r) = requests.get(id.as_str()) {
                    data["toolRequests"] = r.clone().into();
                }
                ("assistant.message", data)
            }
            Record::ToolCall { id, name, arguments, turn_id, .. } => {
                let mut data = json!({"toolCallId": call_ids[id.as_str()], "toolName": name});
                if let Some(a) = arguments {
                    data["arguments"] = a.clone();
                }
                if let Some(t) = turn(turn_id) {
                    data["turnId"] = t.into();
                }
                ("tool.execution_start", data)
            }
            Record::ToolResult { call_id, result, turn_id, .. } => {
                let success = matches!(result, ToolResult::Success { .. });
                let mut data = json!({"toolCallId": call_ids.get(call_id.as_str()), "success": success});
                if let Some(t) = turn(turn_id) {
                    data["turnId"] = t.into();
                }
                match result {
                    ToolResult::Success { content } => {
                        data["result"] = json!({"content": content.clone().unwrap_or_default()});
                    }
                    ToolResult::Failure { content, message, code } => {
                        let message = match content {
                            Some(c) => format!("{message}\n\n{c}"),
                            None => message.clone(),
                        };
                        data["error"] = json!({"message": message});
                        if let Some(code) = code {
                            data["error"]["code"] = code.clone().into();
                        }
                    }
                }
                ("tool.execution_complete", data)
            }
        };
        out.push(Event::from_parts(kind, data, false));
    }
    // One chain, as a live session writes it.
    for i in 1..out.len() {
        out[i].parent_id = Some(out[i - 1].id.clone());
    }
    out
}

/// The text parts of a message, one per line.
fn text(content: &[Content]) -> String {
    let parts: Vec<&str> = content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.as_str()),
            Content::Attachment { .. } => None,
        })
        .collect();
    parts.join("\n")
}

fn blob(a: &ImportedAttachment) -> Value {
    json!({
        "type": "blob", "mimeType": a.mime_type, "displayName": a.display_name,
        "data": base64::engine::general_purpose::STANDARD.encode(&a.data),
    })
}

/// Each assistant message's tool calls (by its record id): a call belongs to the last
/// assistant message of its turn, or without a turn to the assistant message just before it.
fn tool_requests(records: &[Record], call_ids: &HashMap<&str, String>) -> HashMap<String, Vec<Value>> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    let mut last: Option<&str> = None;
    let mut by_turn: HashMap<&str, &str> = HashMap::new();
    for r in records {
        match r {
            Record::Message { id, assistant: true, turn_id, .. } => {
                last = Some(id);
                if let Some(t) = turn_id {
                    by_turn.insert(t, id);
                }
            }
            Record::Message { .. } => last = None,
            Record::ToolCall { id, name, arguments, turn_id, .. } => {
                let owner = match turn_id {
                    Some(t) => by_turn.get(t.as_str()).copied(),
                    None => last,
                };
                if let Some(owner) = owner {
                    let mut request = json!({"name": name, "toolCallId": call_ids[id.as_str()]});
                    if let Some(a) = arguments {
                        request["arguments"] = a.clone();
                    }
                    out.entry(owner.to_string()).or_default().push(request);
                }
            }
            Record::ToolResult { .. } => {}
        }
    }
    out
}
