//! The lines after the header: messages, tool calls and tool results, each with an `id`, a
//! `timestamp` and an optional `turnId`; then the checks across records (ids unique, a call
//! inside its assistant turn, a result after its call and before the next message).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{non_empty, time, Diagnostic};

#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Message {
        id: String,
        line: usize,
        turn_id: Option<String>,
        assistant: bool,
        model: Option<String>,
        content: Vec<Content>,
    },
    ToolCall {
        id: String,
        line: usize,
        turn_id: Option<String>,
        name: String,
        arguments: Option<Value>,
    },
    ToolResult {
        id: String,
        line: usize,
        turn_id: Option<String>,
        call_id: String,
        result: ToolResult,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Text(String),
    /// A file beside the transcript (`path` relative to its directory).
    Attachment {
        path: String,
        media_type: String,
        name: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolResult {
    Success { content: Option<String> },
    Failure { content: Option<String>, message: String, code: Option<String> },
}

pub(super) fn parse_all(lines: &[(usize, Value)], out: &mut Vec<Diagnostic>) -> Vec<Record> {
    let mut records = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    // The open assistant turn: whether the last message was the assistant's, and its turn.
    let (mut assistant_open, mut open_turn) = (false, None::<String>);
    // Messages so far: a result must come before the next one.
    let mut segment = 0usize;
    let mut calls: HashMap<String, (Option<String>, usize)> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (line, value) in lines {
        let Some(record) = parse(value, *line, out) else { continue };
        let (id, line) = record.id_line();
        if let Some(first) = seen.get(id) {
            out.push(Diagnostic::of(line, "duplicate_id", format!("Record id duplicates line {first}."), id));
            continue;
        }
        seen.insert(id.to_string(), line);
        match &record {
            Record::Message { assistant, turn_id, .. } => {
                segment += 1;
                assistant_open = *assistant;
                open_turn = if *assistant { turn_id.clone() } else { None };
            }
            Record::ToolCall { id, turn_id, .. } => {
                if !assistant_open || turn_id.as_ref().is_some_and(|t| Some(t) != open_turn.as_ref()) {
                    let m = "Tool calls require a preceding assistant message in the same turn.";
                    out.push(Diagnostic::of(line, "orphan_tool_call", m, id));
                }
                calls.insert(id.clone(), (turn_id.clone(), segment));
            }
            Record::ToolResult { id, turn_id, call_id, .. } => {
                match calls.get(call_id) {
                    Some(_) if answered.contains(call_id) => out.push(Diagnostic::of(
                        line,
                        "duplicate_tool_result",
                        format!("Tool call '{call_id}' already has a result."),
                        id,
                    )),
                    Some((_, s)) if *s != segment => out.push(Diagnostic::of(
                        line,
                        "late_tool_result",
                        "Tool results must appear before the next message record.",
                        id,
                    )),
                    Some((t, _)) if t != turn_id => out.push(Diagnostic::of(
                        line,
                        "tool_turn_mismatch",
                        "Tool result turnId must match its tool call.",
                        id,
                    )),
                    Some(_) => {}
                    None => out.push(Diagnostic::of(
                        line,
                        "dangling_tool_result",
                        format!("Tool result references unknown or later tool call '{call_id}'."),
                        id,
                    )),
                }
                answered.insert(call_id.clone());
            }
        }
        records.push(record);
    }
    records
}

impl Record {
    fn id_line(&self) -> (&str, usize) {
        match self {
            Record::Message { id, line, .. }
            | Record::ToolCall { id, line, .. }
            | Record::ToolResult { id, line, .. } => (id, *line),
        }
    }
}

/// One record on its own; `None` (with the reasons in `out`) if it cannot be taken.
fn parse(v: &Value, line: usize, out: &mut Vec<Diagnostic>) -> Option<Record> {
    let Some(kind) = non_empty(v.get("type")).filter(|_| v.is_object()) else {
        out.push(Diagnostic::new(line, "invalid_record", "Session records must be typed objects."));
        return None;
    };
    let id = non_empty(v.get("id"));
    if id.is_none() {
        out.push(Diagnostic::new(line, "invalid_record_id", "Session record id must be a non-empty string."));
    }
    let stamped = time::is_valid(v.get("timestamp"));
    if !stamped {
        out.push(Diagnostic::new(line, "invalid_timestamp", "Session record timestamp must be ISO 8601."));
    }
    if v.get("turnId").is_some() && non_empty(v.get("turnId")).is_none() {
        out.push(Diagnostic::new(line, "invalid_turn_id", "turnId must be a non-empty string when present."));
    }
    let id = id.filter(|_| stamped)?.to_string();
    let turn_id = non_empty(v.get("turnId")).map(str::to_string);
    let mut fail = |code, message: &str| {
        out.push(Diagnostic::of(line, code, message, &id));
        None
    };
    match kind {
        "message" => {
            let assistant = match v.get("role").and_then(Value::as_str) {
                Some("user") => false,
                Some("assistant") => true,
                _ => return fail("invalid_role", "Message role must be user or assistant."),
            };
            if v.get("model").is_some() && non_empty(v.get("model")).is_none() {
                return fail("invalid_model", "Message model must be a non-empty string.");
            }
            let content = content(v.get("content"), line, out)?;
            let model = non_empty(v.get("model")).map(str::to_string);
            Some(Record::Message { id, line, turn_id, assistant, model, content })
        }
        "tool-call" => {
            let Some(name) = non_empty(v.get("name")) else {
                return fail("invalid_tool_name", "Tool call name must be a non-empty string.");
            };
            Some(Record::ToolCall { id, line, turn_id, name: name.to_string(), arguments: v.get("arguments").cloned() })
        }
        "tool-result" => {
            let (Some(call_id), Some(success)) =
                (non_empty(v.get("toolCallId")), v.get("success").and_then(Value::as_bool))
            else {
                return fail("invalid_tool_result", "Tool result requires a non-empty toolCallId and boolean success.");
            };
            let content = match v.get("content") {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return fail("invalid_tool_result", "Tool result content must be a string."),
            };
            let error = match v.get("error") {
                None => None,
                Some(e) => {
                    let code_ok = e.get("code").is_none() || non_empty(e.get("code")).is_some();
                    match non_empty(e.get("message")).filter(|_| e.is_object() && code_ok) {
                        Some(m) => Some((m.to_string(), non_empty(e.get("code")).map(str::to_string))),
                        None => return fail("invalid_tool_result", "Tool result error requires a non-empty message."),
                    }
                }
            };
            let result = match (success, error) {
                (false, None) => return fail("invalid_tool_result", "Failed tool results require an error object."),
                (true, Some(_)) => {
                    return fail("invalid_tool_result", "Successful tool results cannot include an error.")
                }
                (true, None) => ToolResult::Success { content },
                (false, Some((message, code))) => ToolResult::Failure { content, message, code },
            };
            Some(Record::ToolResult { id, line, turn_id, call_id: call_id.to_string(), result })
        }
        other => fail("unsupported_record_type", &format!("Unsupported session record type '{other}'.")),
    }
}

fn content(v: Option<&Value>, line: usize, out: &mut Vec<Diagnostic>) -> Option<Vec<Content>> {
    let parts = match v.and_then(Value::as_array) {
        Some(parts) if !parts.is_empty() => parts,
        _ => {
            out.push(Diagnostic::new(line, "invalid_content", "Message content must be a non-empty array."));
            return None;
        }
    };
    let mut content = Vec::new();
    for part in parts {
        if !part.is_object() {
            out.push(Diagnostic::new(line, "invalid_content", "Message content entries must be objects."));
            continue;
        }
        let kind = part.get("type").and_then(Value::as_str);
        if let (Some("text"), Some(text)) = (kind, part.get("text").and_then(Value::as_str)) {
            content.push(Content::Text(text.to_string()));
            continue;
        }
        let name_ok = part.get("name").is_none() || non_empty(part.get("name")).is_some();
        if let (Some("attachment"), Some(path), Some(media_type), true) =
            (kind, non_empty(part.get("path")), non_empty(part.get("mediaType")), name_ok)
        {
            let name = non_empty(part.get("name")).map(str::to_string);
            content.push(Content::Attachment { path: path.to_string(), media_type: media_type.to_string(), name });
            continue;
        }
        out.push(Diagnostic::new(
            line,
            "invalid_content",
            "Content must be text {type,text} or attachment {type,path,mediaType,name?}.",
        ));
    }
    (content.len() == parts.len()).then_some(content)
}
