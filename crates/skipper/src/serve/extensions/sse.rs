//! The server-sent events of an agent's answer, byte for byte as the platform's preview SDK
//! writes them (`createTextEvent`, `createReferencesEvent`, `createConfirmationEvent`,
//! `createErrorsEvent`, `createDoneEvent`): compact JSON in the SDK's key order, non-ASCII raw,
//! LF line endings, no `id:` / `retry:` fields, no comments.

use serde::Serialize;
use serde_json::{json, Value};

/// A file (or other item) the answer drew on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub data: Value,
    pub is_implicit: bool,
    pub metadata: ReferenceMetadata,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReferenceMetadata {
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_icon: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_url: Option<String>,
}

/// One entry of `copilot_errors`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentError {
    /// `agent`, `function` or `reference`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub code: String,
    pub message: String,
    pub identifier: String,
}

fn compact(value: &impl Serialize) -> String {
    // Serializing plain data (strings, maps, numbers) cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// A piece of the answer: an unnamed chat-completion chunk.
pub fn text(content: &str) -> String {
    let data = json!({"choices": [{"index": 0, "delta": {"content": content, "role": "assistant"}}]});
    format!("data: {}\n\n", compact(&data))
}

pub fn references(refs: &[Reference]) -> String {
    format!("event: copilot_references\ndata: {}\n\n", compact(&refs))
}

/// Asks the user to confirm; `id` is the first key of `confirmation`, as the SDK writes it.
pub fn confirmation(id: &str, title: &str, message: &str) -> String {
    let data = json!({"type": "action", "title": title, "message": message, "confirmation": {"id": id}});
    format!("event: copilot_confirmation\ndata: {}\n\n", compact(&data))
}

pub fn errors(errors: &[AgentError]) -> String {
    format!("event: copilot_errors\ndata: {}\n\n", compact(&errors))
}

/// The end of the answer.
pub fn done() -> String {
    let data = json!({"choices": [{"index": 0, "finish_reason": "stop", "delta": {"content": null}}]});
    format!("data: {}\n\ndata: [DONE]\n\n", compact(&data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_exactly_the_documented_bytes() {
        assert_eq!(
            text("héllo \"x\"\n"),
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo \\\"x\\\"\\n\",\"role\":\"assistant\"}}]}\n\n"
        );
        assert_eq!(
            done(),
            "data: {\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"delta\":{\"content\":null}}]}\n\ndata: [DONE]\n\n"
        );
        assert_eq!(
            confirmation("r1", "T", "M"),
            "event: copilot_confirmation\ndata: {\"type\":\"action\",\"title\":\"T\",\"message\":\"M\",\"confirmation\":{\"id\":\"r1\"}}\n\n"
        );
    }

    #[test]
    fn references_and_errors_keep_the_sdk_key_order() {
        let r = Reference {
            kind: "file".into(),
            id: "a.txt".into(),
            data: json!({"path": "a.txt"}),
            is_implicit: false,
            metadata: ReferenceMetadata { display_name: "a.txt".into(), display_icon: None, display_url: None },
        };
        assert_eq!(
            references(&[r]),
            "event: copilot_references\ndata: [{\"type\":\"file\",\"id\":\"a.txt\",\"data\":{\"path\":\"a.txt\"},\"is_implicit\":false,\"metadata\":{\"display_name\":\"a.txt\"}}]\n\n"
        );
        let e = AgentError { kind: "agent", code: "c".into(), message: "m".into(), identifier: "i".into() };
        assert_eq!(
            errors(&[e]),
            "event: copilot_errors\ndata: [{\"type\":\"agent\",\"code\":\"c\",\"message\":\"m\",\"identifier\":\"i\"}]\n\n"
        );
    }
}
