//! What a Responses answer is made of, whether it arrived as one `response` object or as a
//! stream: output items (messages, function calls, reasoning) become one [`AssistantReply`].

use serde_json::Value;

use super::request::REASONING_PROVIDER;
use crate::types::{AssistantReply, ChatResponse, ProviderError, ReasoningBlocks, ToolCall, Usage};

/// Separates the text of consecutive message items, and consecutive reasoning summaries, in
/// the one reply they are shown as.
pub(crate) const PARAGRAPH: &str = "\n\n";

/// A reply in the making: what the output items said so far.
#[derive(Debug, Default)]
pub(crate) struct ReplyParts {
    pub text: String,
    pub reasoning: String,
    /// `reasoning` output items, verbatim and in order (ids and encrypted content included).
    pub reasoning_items: Vec<Value>,
    pub calls: Vec<ToolCall>,
    /// Why the response stopped early (`response.incomplete`), as a finish reason.
    pub incomplete: Option<String>,
}

impl ReplyParts {
    pub(crate) fn push_text(&mut self, text: &str) {
        push_paragraph(&mut self.text, text);
    }

    pub(crate) fn push_reasoning(&mut self, text: &str) {
        push_paragraph(&mut self.reasoning, text);
    }

    /// Adds one output item of a complete response.
    pub(crate) fn push_item(&mut self, item: &Value) {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => self.push_text(&message_text(item)),
            Some("function_call") => self.calls.push(function_call(item)),
            Some("reasoning") => {
                self.push_reasoning(&reasoning_text(item));
                self.reasoning_items.push(item.clone());
            }
            // Hosted tools (web search, ...) are never offered, so never called; nothing to keep.
            other => tracing::debug!(item_type = other.unwrap_or(""), "ignoring a Responses output item"),
        }
    }

    pub(crate) fn into_reply(self) -> AssistantReply {
        let finish_reason = match (&self.incomplete, self.calls.is_empty()) {
            (Some(reason), _) => reason.clone(),
            (None, false) => "tool_calls".to_string(),
            (None, true) => "stop".to_string(),
        };
        AssistantReply {
            content: self.text,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            reasoning_blocks: (!self.reasoning_items.is_empty())
                .then(|| ReasoningBlocks { provider: REASONING_PROVIDER.to_string(), blocks: self.reasoning_items }),
            tool_calls: self.calls,
            finish_reason: Some(finish_reason),
        }
    }
}

fn push_paragraph(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str(PARAGRAPH);
    }
    out.push_str(text);
}

/// The text of a `message` item: its `output_text` parts (and any refusal, which is what the
/// model said instead).
pub(crate) fn message_text(item: &Value) -> String {
    let parts = item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts
        .iter()
        .filter_map(|part| match part.get("type").and_then(Value::as_str) {
            Some("output_text") => part.get("text").and_then(Value::as_str),
            Some("refusal") => part.get("refusal").and_then(Value::as_str),
            _ => None,
        })
        .collect()
}

/// The readable part of a `reasoning` item: its summary, or the raw reasoning text that
/// open-weight models served through the same API return instead.
pub(crate) fn reasoning_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<&str> {
        item.get(key)
            .and_then(Value::as_array)
            .map(|parts| parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect())
            .unwrap_or_default()
    };
    let summary = texts("summary");
    if summary.is_empty() {
        texts("content").join(PARAGRAPH)
    } else {
        summary.join(PARAGRAPH)
    }
}

/// A `function_call` item as a tool call. `call_id` is what the result must name; `id` (the
/// item's own `fc_…`) stands in only for servers that send no `call_id`.
pub(crate) fn function_call(item: &Value) -> ToolCall {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let id = match item.get("call_id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => text("id"),
    };
    let arguments = match item.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // Some compatible servers send the object itself.
        Some(other) => other.to_string(),
    };
    finish_call(id, text("name"), arguments)
}

/// A tool result must name the call it answers, so a call without an id gets a generated one.
pub(crate) fn finish_call(id: String, name: String, arguments: String) -> ToolCall {
    let id = if id.is_empty() { format!("call_{}", uuid::Uuid::new_v4().simple()) } else { id };
    ToolCall { id, name, arguments }
}

/// The finish reason of an incomplete response: `length` unless a content filter stopped it.
pub(crate) fn incomplete_reason(response: &Value) -> String {
    let reason = response.get("incomplete_details").and_then(|d| d.get("reason")).and_then(Value::as_str);
    match reason {
        Some("content_filter") => "content_filter".to_string(),
        _ => "length".to_string(),
    }
}

/// `usage` of a `response` object; absent fields count as 0.
pub(crate) fn parse_usage(usage: &Value) -> Usage {
    let n =
        |v: Option<&Value>| v.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))).unwrap_or(0);
    Usage {
        input_tokens: n(usage.get("input_tokens")),
        output_tokens: n(usage.get("output_tokens")),
        cache_read_tokens: n(usage.get("input_tokens_details").and_then(|d| d.get("cached_tokens"))),
        cache_write_tokens: 0,
    }
}

/// A non-empty string field.
pub(crate) fn non_empty(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A response that failed on the server's side (`response.failed`, an `error` event, or a
/// `status: "failed"` object). The API reports overload and rate limits this way once the
/// HTTP status is already 200; they are retried like the 5xx/429 they stand for, so they get
/// those statuses. That holds only while nothing reached the caller: a retry would show the
/// same text twice, so after output any failure is final.
pub(crate) fn failure(error: &Value, emitted_output: bool) -> ProviderError {
    let error = error.get("error").filter(|e| e.is_object()).unwrap_or(error);
    let code = error.get("code").and_then(Value::as_str).or_else(|| error.get("type").and_then(Value::as_str));
    let message = error.get("message").and_then(Value::as_str).unwrap_or("no details");
    let code_text = code.unwrap_or("error");
    let status = match code {
        _ if emitted_output => None,
        Some("rate_limit_exceeded") => Some(429),
        Some("server_error" | "internal_error") => Some(500),
        Some("server_is_overloaded" | "slow_down") => Some(503),
        _ => None,
    };
    match status {
        // `describe_failure` keeps what follows the first ": " as the detail.
        Some(status) => ProviderError::http(status, format!("Model response failed ({code_text}): {message}")),
        None => ProviderError::Protocol(format!("model reported an error mid-response ({code_text}): {message}")),
    }
}

/// Parse a non-streaming `response` object.
pub(crate) fn parse_response(body: &[u8]) -> Result<ChatResponse, ProviderError> {
    let response: Value = serde_json::from_slice(body).map_err(|e| {
        ProviderError::Protocol(format!("malformed response ({e}): {}", excerpt(&String::from_utf8_lossy(body))))
    })?;
    if !response.is_object() {
        return Err(ProviderError::Protocol(format!("response is not an object: {}", excerpt(&response.to_string()))));
    }
    let status = response.get("status").and_then(Value::as_str);
    if status == Some("failed") || response.get("error").is_some_and(|e| e.is_object()) {
        return Err(failure(response.get("error").unwrap_or(&Value::Null), false));
    }
    let mut parts = ReplyParts::default();
    for item in response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        parts.push_item(item);
    }
    if status == Some("incomplete") {
        parts.incomplete = Some(incomplete_reason(&response));
    }
    Ok(ChatResponse {
        replies: vec![parts.into_reply()],
        usage: response.get("usage").map(parse_usage).unwrap_or_default(),
        api_call_id: non_empty(&response, "id"),
        provider_call_id: None,
        model: non_empty(&response, "model"),
        duration_ms: 0,
        request_bytes: 0,
    })
}

pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_complete_response_object() {
        let body = json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [
                    {"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}
                ], "encrypted_content": "gAAA"},
                {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                    {"type": "output_text", "text": "Hello", "annotations": []},
                    {"type": "output_text", "text": " there"}
                ]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "view", "arguments": "{\"path\":\"x\"}"},
                {"type": "function_call", "id": "fc_2", "name": "bash", "arguments": {"command": "ls"}},
                {"type": "web_search_call", "id": "ws_1"}
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
                      "input_tokens_details": {"cached_tokens": 64}}
        });
        let resp = parse_response(body.to_string().as_bytes()).expect("parses");
        assert_eq!(resp.api_call_id.as_deref(), Some("resp_1"));
        assert_eq!(resp.model.as_deref(), Some("gpt-5"));
        assert_eq!(
            resp.usage,
            Usage { input_tokens: 100, output_tokens: 20, cache_read_tokens: 64, cache_write_tokens: 0 }
        );
        assert_eq!(resp.replies.len(), 1);
        let reply = &resp.replies[0];
        assert_eq!(reply.content, "Hello there");
        assert_eq!(reply.reasoning.as_deref(), Some("First.\n\nSecond."));
        assert_eq!(
            reply.tool_calls,
            vec![
                ToolCall { id: "call_a".into(), name: "view".into(), arguments: "{\"path\":\"x\"}".into() },
                ToolCall { id: "fc_2".into(), name: "bash".into(), arguments: "{\"command\":\"ls\"}".into() },
            ]
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        let blocks = reply.reasoning_blocks.as_ref().expect("reasoning kept");
        assert_eq!(blocks.provider, "openai-responses");
        assert_eq!(blocks.blocks, vec![body["output"][0].clone()]);
    }

    #[test]
    fn plain_text_incomplete_and_empty_answers() {
        let text = json!({"id": "r", "status": "completed", "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}
        ]});
        let reply = &parse_response(text.to_string().as_bytes()).expect("parses").replies[0];
        assert_eq!((reply.content.as_str(), reply.finish_reason.as_deref()), ("hi", Some("stop")));
        assert!(reply.reasoning.is_none() && reply.reasoning_blocks.is_none());

        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "par"}]}
        ]});
        let reply = &parse_response(cut.to_string().as_bytes()).expect("parses").replies[0];
        assert_eq!(reply.finish_reason.as_deref(), Some("length"));

        let empty = parse_response(b"{}").expect("parses");
        assert_eq!(empty.replies.len(), 1);
        assert_eq!(empty.replies[0].content, "");
        assert!(matches!(parse_response(b"<html>"), Err(ProviderError::Protocol(_))));
        assert!(matches!(parse_response(b"[1]"), Err(ProviderError::Protocol(_))));
    }

    #[test]
    fn raw_reasoning_text_when_there_is_no_summary() {
        let item = json!({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "hmm"}]});
        assert_eq!(reasoning_text(&item), "hmm");
    }

    #[test]
    fn failures_retry_as_the_status_they_stand_for_until_output_was_shown() {
        let failed = |code: &str| json!({"status": "failed", "error": {"code": code, "message": "busy"}});
        let status =
            |code: &str| parse_response(failed(code).to_string().as_bytes()).err().and_then(|e| e.status_code());
        assert_eq!(status("server_error"), Some(500));
        assert_eq!(status("rate_limit_exceeded"), Some(429));
        assert_eq!(status("server_is_overloaded"), Some(503));
        assert_eq!(status("invalid_prompt"), None);
        let after_output = failure(&json!({"code": "server_error", "message": "busy"}), true);
        assert!(
            matches!(&after_output, ProviderError::Protocol(m) if m.contains("server_error") && m.contains("busy"))
        );
        let nested =
            failure(&json!({"type": "error", "error": {"code": "rate_limit_exceeded", "message": "slow"}}), false);
        assert_eq!(nested.status_code(), Some(429));
        assert!(nested.to_string().contains("slow"));
    }
}
