//! Turning a Messages API answer into [`ChatResponse`]: the SSE event stream (emitting
//! [`ModelEvent`]s as it arrives) or, from servers that ignore `stream`, one `message` object.
//!
//! A message is a list of content blocks, each opened by `content_block_start`, grown by
//! `content_block_delta`s and closed by `content_block_stop`; blocks are addressed by their
//! `index`. The reply is complete at `message_stop`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;

use super::request::PROVIDER;
use crate::exchange::{Assembler, StreamStep};
use crate::sse::SseEvent;
use crate::types::{AssistantReply, ChatResponse, ModelEvent, ProviderError, ReasoningBlocks, ToolCall, Usage};

/// One SSE payload. Every Anthropic event carries its name in `type` as well; the fields used
/// depend on it.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<MessageHead>,
    index: Option<usize>,
    content_block: Option<Value>,
    delta: Option<Value>,
    usage: Option<Value>,
    error: Option<Value>,
}

/// `message_start.message`, or a whole non-streamed message.
#[derive(Debug, Deserialize)]
struct MessageHead {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Value>,
    content: Option<Vec<Value>>,
    stop_reason: Option<String>,
}

#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        /// Position among this message's tool_use blocks: the `index` of its deltas.
        ordinal: usize,
        id: String,
        name: String,
        /// The concatenated `partial_json`.
        input_json: String,
        /// `input` as `content_block_start` gave it (normally `{}`, filled by deltas).
        start_input: Option<Value>,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Kept verbatim: the encrypted `data` is only meaningful to the API.
    RedactedThinking(Value),
    /// A block type this client doesn't know (server tools, citations…): ignored.
    Other,
}

/// Accumulates a streamed message and forwards deltas as they arrive.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    id: Option<String>,
    model: Option<String>,
    usage: Usage,
    text: String,
    blocks: BTreeMap<usize, Block>,
    tool_uses: usize,
    /// The index of the block opened last, for deltas that omit `index`.
    current: Option<usize>,
    stop_reason: Option<String>,
    emitted_output: bool,
    done: bool,
}

impl StreamAssembler {
    /// Feed one SSE event: its `event:` name (if any) and `data`.
    pub(crate) fn apply(
        &mut self,
        name: Option<&str>,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<StreamStep, ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(StreamStep::Continue);
        }
        let event: Event = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("malformed stream event ({e}): {}", excerpt(data))))?;
        // `type` is authoritative; the `event:` line is a copy a proxy might strip.
        let kind = event.kind.clone().or_else(|| name.map(str::to_string)).unwrap_or_default();
        match kind.as_str() {
            "message_start" => {
                if let Some(head) = event.message {
                    self.id = head.id.filter(|s| !s.is_empty());
                    self.model = head.model.filter(|s| !s.is_empty());
                    if let Some(usage) = &head.usage {
                        self.apply_usage(usage);
                    }
                }
            }
            "content_block_start" => {
                let index = event.index.unwrap_or_else(|| self.blocks.keys().next_back().map_or(0, |i| i + 1));
                let block = event.content_block.unwrap_or(Value::Null);
                self.start_block(index, block, events);
            }
            "content_block_delta" => {
                let Some(index) = event.index.or(self.current) else {
                    return Err(ProviderError::Protocol("content_block_delta before any content block".into()));
                };
                self.apply_delta(index, event.delta.unwrap_or(Value::Null), events)?;
            }
            "message_delta" => {
                if let Some(reason) = event.delta.as_ref().and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = &event.usage {
                    self.apply_usage(usage);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(StreamStep::Done);
            }
            "error" => return Err(stream_error(event.error.as_ref().unwrap_or(&Value::Null))),
            // `ping`, `content_block_stop` and event types added later carry nothing needed.
            _ => {}
        }
        Ok(StreamStep::Continue)
    }

    fn start_block(&mut self, index: usize, block: Value, events: &UnboundedSender<ModelEvent>) {
        self.current = Some(index);
        let text_field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
        let state = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                // The start normally carries `text: ""`; anything already there counts.
                let text = text_field("text");
                self.push_text(text, events);
                Block::Text
            }
            Some("tool_use") => {
                let ordinal = self.tool_uses;
                self.tool_uses += 1;
                let id = text_field("id");
                let name = text_field("name");
                self.emitted_output = true;
                // The first fragment names the call, as chat-completions streams do.
                let _ = events.send(ModelEvent::ToolCallDelta {
                    choice: 0,
                    index: ordinal,
                    id: Some(id.clone()).filter(|s| !s.is_empty()),
                    name: Some(name.clone()).filter(|s| !s.is_empty()),
                    arguments: String::new(),
                });
                let start_input = block.get("input").cloned();
                Block::ToolUse { ordinal, id, name, input_json: String::new(), start_input }
            }
            Some("thinking") => {
                let thinking = text_field("thinking");
                self.push_reasoning(&thinking, events);
                Block::Thinking { thinking, signature: text_field("signature") }
            }
            Some("redacted_thinking") => Block::RedactedThinking(block),
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn apply_delta(
        &mut self,
        index: usize,
        delta: Value,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ProviderError> {
        let field = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        match (kind, self.blocks.get_mut(&index)) {
            ("text_delta", Some(Block::Text)) => self.push_text(field("text"), events),
            ("input_json_delta", Some(Block::ToolUse { ordinal, input_json, .. })) => {
                let piece = field("partial_json");
                if !piece.is_empty() {
                    input_json.push_str(&piece);
                    self.emitted_output = true;
                    let _ = events.send(ModelEvent::ToolCallDelta {
                        choice: 0,
                        index: *ordinal,
                        id: None,
                        name: None,
                        arguments: piece,
                    });
                }
            }
            ("thinking_delta", Some(Block::Thinking { thinking, .. })) => {
                let piece = field("thinking");
                thinking.push_str(&piece);
                self.push_reasoning(&piece, events);
            }
            ("signature_delta", Some(Block::Thinking { signature, .. })) => signature.push_str(&field("signature")),
            (_, Some(Block::Other)) => {}
            (_, None) => {
                return Err(ProviderError::Protocol(format!("content_block_delta for unknown block {index}")));
            }
            // A delta kind this client doesn't know (e.g. citations): nothing to show.
            _ => {}
        }
        Ok(())
    }

    fn push_text(&mut self, text: String, events: &UnboundedSender<ModelEvent>) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(&text);
        self.emitted_output = true;
        let _ = events.send(ModelEvent::TextDelta { choice: 0, text });
    }

    fn push_reasoning(&mut self, text: &str, events: &UnboundedSender<ModelEvent>) {
        if text.is_empty() {
            return;
        }
        self.emitted_output = true;
        let _ = events.send(ModelEvent::ReasoningDelta { text: text.to_string() });
    }

    /// `message_start` gives the input side, `message_delta` the (cumulative) output count;
    /// whichever fields an event carries replace what was known.
    fn apply_usage(&mut self, usage: &Value) {
        let n = |name: &str| usage.get(name).and_then(Value::as_u64);
        if let Some(v) = n("input_tokens") {
            self.usage.input_tokens = v;
        }
        if let Some(v) = n("output_tokens") {
            self.usage.output_tokens = v;
        }
        if let Some(v) = n("cache_read_input_tokens") {
            self.usage.cache_read_tokens = v;
        }
        if let Some(v) = n("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = v;
        }
    }
}

impl Assembler for StreamAssembler {
    /// An error event after deltas were shown can't be retried without showing them twice:
    /// the reply was cut short.
    fn on_event(
        &mut self,
        event: &SseEvent,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<StreamStep, ProviderError> {
        self.apply(event.event.as_deref(), &event.data, events).map_err(|error| match error {
            ProviderError::Http { message, .. } if self.emitted_output => ProviderError::Truncated(message),
            other => other,
        })
    }

    /// Whether any text/reasoning/tool-call delta reached the caller.
    fn emitted_output(&self) -> bool {
        self.emitted_output
    }

    /// Whether `message_stop` arrived.
    fn is_complete(&self) -> bool {
        self.done
    }

    /// The assembled reply. `provider_call_id`, `duration_ms` and `request_bytes` are the
    /// caller's to fill.
    fn into_response(self) -> ChatResponse {
        let mut reasoning = String::new();
        let mut reasoning_blocks = Vec::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::ToolUse { id, name, input_json, start_input, .. } => {
                    let arguments = if !input_json.is_empty() {
                        input_json
                    } else {
                        match start_input {
                            Some(Value::Object(o)) if !o.is_empty() => Value::Object(o).to_string(),
                            _ => "{}".to_string(),
                        }
                    };
                    // A tool result must name the call it answers.
                    let id = if id.is_empty() { format!("toolu_{}", uuid::Uuid::new_v4().simple()) } else { id };
                    tool_calls.push(ToolCall { id, name, arguments });
                }
                Block::Thinking { thinking, signature } => {
                    reasoning.push_str(&thinking);
                    reasoning_blocks.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
                }
                Block::RedactedThinking(block) => reasoning_blocks.push(block),
                Block::Text | Block::Other => {}
            }
        }
        let reply = AssistantReply {
            content: self.text,
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
            reasoning_blocks: (!reasoning_blocks.is_empty())
                .then(|| ReasoningBlocks { provider: PROVIDER.to_string(), blocks: reasoning_blocks }),
            tool_calls,
            finish_reason: self.stop_reason.map(finish_reason),
        };
        ChatResponse {
            replies: vec![reply],
            usage: self.usage,
            api_call_id: self.id,
            provider_call_id: None,
            model: self.model,
            duration_ms: 0,
            request_bytes: 0,
        }
    }
}

/// Anthropic's stop reasons in the chat-completions vocabulary the loop speaks.
fn finish_reason(stop_reason: String) -> String {
    match stop_reason.as_str() {
        "end_turn" => "stop".into(),
        "tool_use" => "tool_calls".into(),
        "max_tokens" => "length".into(),
        _ => stop_reason,
    }
}

/// An `error` event. The API reports failures that happen after the 200 this way, with the
/// same `type`s its HTTP errors use; each becomes the status that HTTP error would have had,
/// so retrying and `errorType` treat both alike (an overload mid-stream is retried like a
/// 529 answer). Unknown types are final.
fn stream_error(error: &Value) -> ProviderError {
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("unknown_error");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("no details");
    let status = match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return ProviderError::Protocol(format!("model reported an error mid-stream: {kind}: {message}")),
    };
    // `describe_failure` keeps what follows the first ": " as the detail.
    ProviderError::http(status, format!("Model stream failed: {kind}: {message}"))
}

/// A non-streaming answer: one `message` object (some compatible servers ignore `stream`).
pub(crate) fn parse_message(body: &[u8]) -> Result<ChatResponse, ProviderError> {
    let head: MessageHead = serde_json::from_slice(body).map_err(|e| {
        ProviderError::Protocol(format!("malformed message ({e}): {}", excerpt(&String::from_utf8_lossy(body))))
    })?;
    // Replaying the blocks through the stream assembler keeps one assembly path; nobody
    // listens to the deltas of a non-streamed answer.
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let mut assembler = StreamAssembler {
        id: head.id.filter(|s| !s.is_empty()),
        model: head.model.filter(|s| !s.is_empty()),
        ..Default::default()
    };
    if let Some(usage) = &head.usage {
        assembler.apply_usage(usage);
    }
    for (index, mut block) in head.content.unwrap_or_default().into_iter().enumerate() {
        // The whole input arrives at once: as the start's input, not a delta.
        assembler.start_block(index, block.take(), &events);
    }
    assembler.stop_reason = head.stop_reason;
    Ok(assembler.into_response())
}

fn excerpt(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::retry_reason;
    use crate::sse::SseParser;
    use crate::types::RetryReason;
    use tokio::sync::mpsc::unbounded_channel;

    fn sse(events: &[Value]) -> String {
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default())).collect()
    }

    /// Runs `body` through the SSE parser in pieces of `split` bytes.
    fn run(body: &str, split: usize) -> (Result<StreamAssembler, ProviderError>, Vec<ModelEvent>) {
        let (tx, mut rx) = unbounded_channel();
        let mut parser = SseParser::new();
        let mut asm = StreamAssembler::default();
        let mut outcome = Ok(());
        'outer: for piece in body.as_bytes().chunks(split.max(1)) {
            parser.push(piece);
            while let Some(ev) = parser.next_event() {
                match asm.apply(ev.event.as_deref(), &ev.data, &tx) {
                    Ok(StreamStep::Done) => break 'outer,
                    Ok(StreamStep::Continue) => {}
                    Err(e) => {
                        outcome = Err(e);
                        break 'outer;
                    }
                }
            }
        }
        drop(tx);
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        (outcome.map(|()| asm), events)
    }

    fn start(id: &str) -> Value {
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "content": [], "model": "claude-x", "stop_reason": null,
            "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 7,
                      "cache_creation_input_tokens": 3}}})
    }

    fn block_start(index: usize, block: Value) -> Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }

    fn delta(index: usize, delta: Value) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    }

    fn stop(index: usize) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }

    fn message_delta(reason: &str, output: u64) -> Value {
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
               "usage": {"output_tokens": output}})
    }

    fn message_stop() -> Value {
        json!({"type": "message_stop"})
    }

    fn text_stream() -> Vec<Value> {
        vec![
            start("msg_1"),
            json!({"type": "ping"}),
            block_start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Héllo, "})),
            delta(0, json!({"type": "text_delta", "text": "wörld"})),
            stop(0),
            message_delta("end_turn", 12),
            message_stop(),
        ]
    }

    #[test]
    fn text_usage_and_ids() {
        let (asm, events) = run(&sse(&text_stream()), 4096);
        let asm = asm.expect("complete");
        assert!(asm.is_complete());
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta { choice: 0, text: "Héllo, ".into() },
                ModelEvent::TextDelta { choice: 0, text: "wörld".into() },
            ]
        );
        let resp = asm.into_response();
        assert_eq!(resp.replies.len(), 1);
        let reply = &resp.replies[0];
        assert_eq!(reply.content, "Héllo, wörld");
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
        assert_eq!((reply.reasoning.clone(), reply.reasoning_blocks.clone()), (None, None));
        assert_eq!(resp.api_call_id.as_deref(), Some("msg_1"));
        assert_eq!(resp.model.as_deref(), Some("claude-x"));
        assert_eq!(
            resp.usage,
            Usage { input_tokens: 25, output_tokens: 12, cache_read_tokens: 7, cache_write_tokens: 3 }
        );
    }

    #[test]
    fn parallel_tool_uses_after_text() {
        let events = vec![
            start("msg_2"),
            block_start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Checking."})),
            stop(0),
            block_start(1, json!({"type": "tool_use", "id": "toolu_a", "name": "view", "input": {}})),
            delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
            delta(1, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"sr"})),
            delta(1, json!({"type": "input_json_delta", "partial_json": "c/main.rs\"}"})),
            stop(1),
            block_start(2, json!({"type": "tool_use", "id": "toolu_b", "name": "list", "input": {}})),
            stop(2),
            message_delta("tool_use", 40),
            message_stop(),
        ];
        let (asm, events) = run(&sse(&events), 4096);
        let resp = asm.expect("complete").into_response();
        let reply = &resp.replies[0];
        assert_eq!(reply.content, "Checking.");
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            reply.tool_calls,
            vec![
                ToolCall { id: "toolu_a".into(), name: "view".into(), arguments: "{\"path\": \"src/main.rs\"}".into() },
                ToolCall { id: "toolu_b".into(), name: "list".into(), arguments: "{}".into() },
            ]
        );
        let tool_deltas: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta { choice: 0, index, id, name, arguments } => {
                    Some((*index, id.clone(), name.clone(), arguments.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            tool_deltas,
            vec![
                (0, Some("toolu_a".into()), Some("view".into()), String::new()),
                (0, None, None, "{\"path\": \"sr".into()),
                (0, None, None, "c/main.rs\"}".into()),
                (1, Some("toolu_b".into()), Some("list".into()), String::new()),
            ]
        );
    }

    #[test]
    fn thinking_with_signature_and_redacted_thinking() {
        let events = vec![
            start("msg_3"),
            block_start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
            delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
            delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
            delta(0, json!({"type": "signature_delta", "signature": "EqQBCgIYAh"})),
            delta(0, json!({"type": "signature_delta", "signature": "Ipw+/=="})),
            stop(0),
            block_start(1, json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})),
            stop(1),
            block_start(2, json!({"type": "text", "text": ""})),
            delta(2, json!({"type": "text_delta", "text": "42"})),
            stop(2),
            message_delta("end_turn", 9),
            message_stop(),
        ];
        let (asm, events) = run(&sse(&events), 4096);
        let reply = asm.expect("complete").into_response().replies.remove(0);
        assert_eq!(reply.content, "42");
        assert_eq!(reply.reasoning.as_deref(), Some("Let me think."));
        assert_eq!(
            reply.reasoning_blocks,
            Some(ReasoningBlocks {
                provider: "anthropic".into(),
                blocks: vec![
                    json!({"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIpw+/=="}),
                    json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
                ],
            })
        );
        assert_eq!(
            events[..2],
            [
                ModelEvent::ReasoningDelta { text: "Let me ".into() },
                ModelEvent::ReasoningDelta { text: "think.".into() }
            ]
        );
    }

    #[test]
    fn events_cut_at_every_byte_boundary_assemble_the_same() {
        let mut events = text_stream();
        events.insert(5, block_start(1, json!({"type": "tool_use", "id": "t", "name": "bash", "input": {}})));
        events.insert(6, delta(1, json!({"type": "input_json_delta", "partial_json": "{\"command\":\"ls ö\"}"})));
        let body = sse(&events).replace('\n', "\r\n");
        let (whole, whole_events) = run(&body, body.len());
        let whole = whole.expect("complete").into_response();
        for split in [1, 2, 3, 7, 13] {
            let (asm, evs) = run(&body, split);
            assert_eq!(asm.expect("complete").into_response(), whole, "split {split}");
            assert_eq!(evs, whole_events, "split {split}");
        }
        assert_eq!(whole.replies[0].tool_calls[0].arguments, "{\"command\":\"ls ö\"}");
    }

    #[test]
    fn event_name_is_used_when_type_is_missing() {
        let body = "event: message_stop\ndata: {}\n\n";
        let (asm, _) = run(body, 100);
        assert!(asm.expect("ok").is_complete());
    }

    #[test]
    fn error_events_map_to_retryable_or_final_errors() {
        let error = |kind: &str| {
            let events = [start("m"), json!({"type": "error", "error": {"type": kind, "message": "Overloaded"}})];
            run(&sse(&events), 4096).0.expect_err("error event")
        };
        let overloaded = error("overloaded_error");
        assert_eq!(overloaded.status_code(), Some(529));
        assert!(overloaded.to_string().contains("overloaded_error: Overloaded"), "{overloaded}");
        assert_eq!(retry_reason(&overloaded, false), Some(RetryReason::ServerError));
        assert_eq!(retry_reason(&error("api_error"), false), Some(RetryReason::ServerError));
        assert_eq!(retry_reason(&error("rate_limit_error"), false), Some(RetryReason::RateLimit));
        let invalid = error("invalid_request_error");
        assert_eq!((invalid.status_code(), retry_reason(&invalid, false)), (Some(400), None));
        let unknown = error("brand_new_error");
        assert!(matches!(unknown, ProviderError::Protocol(_)), "{unknown:?}");
        assert_eq!(retry_reason(&unknown, false), None);
    }

    #[test]
    fn a_stream_without_message_stop_is_incomplete() {
        let mut events = text_stream();
        events.truncate(5);
        let (asm, deltas) = run(&sse(&events), 4096);
        let asm = asm.expect("no error yet");
        assert!(!asm.is_complete());
        assert!(asm.emitted_output());
        assert_eq!(deltas.len(), 2);

        let (asm, _) = run(&sse(&text_stream()[..2]), 4096);
        let asm = asm.expect("no error yet");
        assert!(!asm.is_complete() && !asm.emitted_output(), "nothing shown yet: safe to retry");
    }

    #[test]
    fn malformed_events_and_orphan_deltas_are_protocol_errors() {
        let (tx, _rx) = unbounded_channel();
        let mut asm = StreamAssembler::default();
        assert!(matches!(asm.apply(Some("message_start"), "{nope", &tx), Err(ProviderError::Protocol(_))));
        let orphan = delta(3, json!({"type": "text_delta", "text": "x"})).to_string();
        assert!(matches!(asm.apply(None, &orphan, &tx), Err(ProviderError::Protocol(_))));
        // Unknown events and block types are skipped.
        let unknown = json!({"type": "brand_new_event", "index": 0}).to_string();
        assert_eq!(asm.apply(None, &unknown, &tx).ok(), Some(StreamStep::Continue));
        let server_tool = block_start(0, json!({"type": "server_tool_use", "id": "s", "name": "web_search"}));
        assert_eq!(asm.apply(None, &server_tool.to_string(), &tx).ok(), Some(StreamStep::Continue));
        let its_delta = delta(0, json!({"type": "input_json_delta", "partial_json": "{}"})).to_string();
        assert_eq!(asm.apply(None, &its_delta, &tx).ok(), Some(StreamStep::Continue));
        assert!(asm.into_response().replies[0].tool_calls.is_empty());
    }

    #[test]
    fn other_stop_reasons_pass_through() {
        for (reason, expected) in [("max_tokens", "length"), ("stop_sequence", "stop_sequence"), ("refusal", "refusal")]
        {
            let mut events = text_stream();
            events[6] = message_delta(reason, 1);
            let reply = run(&sse(&events), 4096).0.expect("complete").into_response().replies.remove(0);
            assert_eq!(reply.finish_reason.as_deref(), Some(expected));
        }
    }

    #[test]
    fn non_streamed_message() {
        let body = json!({
            "id": "msg_9", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_9", "name": "view", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_10", "name": "list", "input": {}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 11, "output_tokens": 4}
        });
        let resp = parse_message(body.to_string().as_bytes()).expect("parses");
        let reply = &resp.replies[0];
        assert_eq!(reply.content, "Reading.");
        assert_eq!(reply.reasoning.as_deref(), Some("hmm"));
        assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(reply.tool_calls[1].arguments, "{}");
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 4));
        assert_eq!(resp.api_call_id.as_deref(), Some("msg_9"));
        assert!(parse_message(b"<html>").is_err());
    }
}
