//! Assembling a streamed Responses answer: one SSE event at a time, forwarding text,
//! reasoning and function-call fragments as [`ModelEvent`]s while they arrive.
//!
//! Deltas are the fast path; the `done` events repeat the whole item, so anything the deltas
//! missed (a server that sends none, or sends fewer) is taken from there and forwarded as the
//! missing remainder, and reasoning items are kept from there verbatim.

use std::collections::HashSet;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::response::{
    excerpt, failure, finish_call, function_call, incomplete_reason, message_text, non_empty, parse_usage,
    reasoning_text, ReplyParts, PARAGRAPH,
};
use crate::exchange::Assembler;
pub(crate) use crate::exchange::StreamStep;
use crate::sse::SseEvent;
use crate::types::{ChatResponse, ModelEvent, ProviderError, Usage};

/// A function call being streamed. Its position among the reply's function calls is the
/// `index` of its [`ModelEvent::ToolCallDelta`]s.
#[derive(Debug, Default)]
struct PartialCall {
    /// The output item's id (`fc_…`), or `#<output_index>` when the server gives none.
    key: String,
    call_id: String,
    name: String,
    arguments: String,
    /// Whether a fragment carrying `call_id` and `name` was forwarded.
    announced: bool,
}

#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    parts: ReplyParts,
    calls: Vec<PartialCall>,
    /// Message / reasoning items whose text arrived as deltas, so their `done` adds nothing.
    streamed: HashSet<String>,
    /// The item whose text the last text delta belonged to; a new one starts a paragraph.
    text_key: Option<String>,
    /// The (item, summary part) of the last reasoning delta; a new one starts a paragraph.
    reasoning_key: Option<String>,
    /// Whether any item or delta arrived; if none did, `response.completed` carries the reply.
    saw_output: bool,
    id: Option<String>,
    model: Option<String>,
    usage: Usage,
    complete: bool,
    emitted_output: bool,
}

impl StreamAssembler {
    /// Feed one SSE event: its `event:` name (if any) and its `data`. The event's type is
    /// read from `data.type` first; the `event:` line is only a fallback.
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
        if data == "[DONE]" {
            return Ok(StreamStep::Done);
        }
        let event: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("malformed stream event ({e}): {}", excerpt(data))))?;
        let kind = event.get("type").and_then(Value::as_str).or(name).unwrap_or_default();
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(response) = event.get("response") {
                    self.take_meta(response);
                }
            }
            "response.output_item.added" => {
                self.saw_output = true;
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    self.open_call(item, &event, events);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let key = item_key(&event);
                self.text_delta(key, text("delta"), events);
            }
            "response.function_call_arguments.delta" => {
                let index = self.call_for(&event);
                self.calls[index].arguments.push_str(text("delta"));
                self.forward_call(index, text("delta").to_string(), events);
            }
            "response.function_call_arguments.done" => {
                let index = self.call_for(&event);
                self.settle_arguments(index, text("arguments"), events);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let part = event.get("summary_index").or_else(|| event.get("content_index"));
                let key = format!("{}/{}", item_key(&event), part.map(Value::to_string).unwrap_or_default());
                self.reasoning_delta(key, item_key(&event), text("delta"), events);
            }
            "response.output_item.done" => {
                self.saw_output = true;
                let item = event.get("item").unwrap_or(&Value::Null);
                self.item_done(item, &event, events);
            }
            "response.completed" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                self.finish(response, events);
                return Ok(StreamStep::Done);
            }
            "response.incomplete" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                self.finish(response, events);
                self.parts.incomplete = Some(incomplete_reason(response));
                return Ok(StreamStep::Done);
            }
            "response.failed" => {
                let error = event.get("response").and_then(|r| r.get("error")).unwrap_or(&Value::Null);
                return Err(failure(error, self.emitted_output));
            }
            "error" => return Err(failure(&event, self.emitted_output)),
            // content_part.added/done, output_text.done, summary_part.*, annotations, ...:
            // nothing the deltas and items don't already carry.
            _ => {}
        }
        Ok(StreamStep::Continue)
    }

    fn take_meta(&mut self, response: &Value) {
        if let Some(id) = non_empty(response, "id") {
            self.id = Some(id);
        }
        if let Some(model) = non_empty(response, "model") {
            self.model = Some(model);
        }
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = parse_usage(usage);
        }
    }

    fn text_delta(&mut self, key: String, delta: &str, events: &UnboundedSender<ModelEvent>) {
        self.saw_output = true;
        if delta.is_empty() {
            return;
        }
        let mut text = String::new();
        if self.text_key.as_deref() != Some(key.as_str()) && !self.parts.text.is_empty() {
            text.push_str(PARAGRAPH);
        }
        text.push_str(delta);
        self.parts.text.push_str(&text);
        self.streamed.insert(key.clone());
        self.text_key = Some(key);
        self.emitted_output = true;
        let _ = events.send(ModelEvent::TextDelta { choice: 0, text });
    }

    fn reasoning_delta(&mut self, key: String, item: String, delta: &str, events: &UnboundedSender<ModelEvent>) {
        self.saw_output = true;
        if delta.is_empty() {
            return;
        }
        let mut text = String::new();
        if self.reasoning_key.as_deref() != Some(key.as_str()) && !self.parts.reasoning.is_empty() {
            text.push_str(PARAGRAPH);
        }
        text.push_str(delta);
        self.parts.reasoning.push_str(&text);
        self.streamed.insert(item);
        self.reasoning_key = Some(key);
        self.emitted_output = true;
        let _ = events.send(ModelEvent::ReasoningDelta { text });
    }

    /// A `function_call` item starts: announce its id and name.
    fn open_call(&mut self, item: &Value, event: &Value, events: &UnboundedSender<ModelEvent>) {
        let key = non_empty(item, "id").unwrap_or_else(|| item_key(event));
        let index = self.call_index(&key);
        let call = &mut self.calls[index];
        if let Some(call_id) = non_empty(item, "call_id") {
            call.call_id = call_id;
        }
        if let Some(name) = non_empty(item, "name") {
            call.name = name;
        }
        let arguments = item.get("arguments").and_then(Value::as_str).unwrap_or_default().to_string();
        call.arguments.push_str(&arguments);
        self.forward_call(index, arguments, events);
    }

    /// The call an arguments event belongs to: by item id, else output index; one never
    /// announced (a server that skips `output_item.added`) is opened on the spot.
    fn call_for(&mut self, event: &Value) -> usize {
        let key = item_key(event);
        self.call_index(&key)
    }

    fn call_index(&mut self, key: &str) -> usize {
        if let Some(index) = self.calls.iter().position(|c| c.key == key) {
            return index;
        }
        self.saw_output = true;
        self.calls.push(PartialCall { key: key.to_string(), ..PartialCall::default() });
        self.calls.len() - 1
    }

    /// Forward a fragment of call `index`; the first one that can carries its id and name.
    fn forward_call(&mut self, index: usize, arguments: String, events: &UnboundedSender<ModelEvent>) {
        let call = &mut self.calls[index];
        let (id, name) = if !call.announced && !call.call_id.is_empty() {
            call.announced = true;
            (Some(call.call_id.clone()), Some(call.name.clone()).filter(|n| !n.is_empty()))
        } else {
            (None, None)
        };
        if id.is_none() && arguments.is_empty() {
            return;
        }
        self.emitted_output = true;
        let _ = events.send(ModelEvent::ToolCallDelta { choice: 0, index, id, name, arguments });
    }

    /// The call's final arguments: forward what the deltas missed. Should the two disagree,
    /// the final text is what the model produced (a caller showing deltas may have shown
    /// something else; nothing can take that back).
    fn settle_arguments(&mut self, index: usize, arguments: &str, events: &UnboundedSender<ModelEvent>) {
        let call = &mut self.calls[index];
        let missing = if arguments.is_empty() || call.arguments == arguments {
            String::new()
        } else if let Some(rest) = arguments.strip_prefix(call.arguments.as_str()) {
            rest.to_string()
        } else {
            tracing::debug!("function call arguments differ from their deltas; keeping the final text");
            String::new()
        };
        if !arguments.is_empty() {
            call.arguments = arguments.to_string();
        }
        self.forward_call(index, missing, events);
    }

    fn item_done(&mut self, item: &Value, event: &Value, events: &UnboundedSender<ModelEvent>) {
        let key = non_empty(item, "id").unwrap_or_else(|| item_key(event));
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let index = self.call_index(&key);
                let done = function_call(item);
                let call = &mut self.calls[index];
                if call.call_id.is_empty() {
                    call.call_id = done.id;
                }
                if call.name.is_empty() {
                    call.name = done.name;
                }
                self.settle_arguments(index, &done.arguments, events);
            }
            Some("message") if !self.streamed.contains(&key) => {
                self.text_delta(key, &message_text(item), events);
            }
            Some("reasoning") => {
                if !self.streamed.contains(&key) {
                    self.reasoning_delta(key.clone(), key, &reasoning_text(item), events);
                }
                self.parts.reasoning_items.push(item.clone());
            }
            _ => {}
        }
    }

    /// `response.completed` / `.incomplete`: the final id, model and usage. A server that
    /// streamed no items at all (some proxies send only the final object) gets its output
    /// taken from here, forwarded as if it had streamed.
    fn finish(&mut self, response: &Value, events: &UnboundedSender<ModelEvent>) {
        self.take_meta(response);
        self.complete = true;
        if self.saw_output {
            return;
        }
        let output = response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for (position, item) in output.iter().enumerate() {
            let event = serde_json::json!({ "output_index": position });
            if item.get("type").and_then(Value::as_str) == Some("function_call") {
                self.open_call(item, &event, events);
            }
            self.item_done(item, &event, events);
        }
    }
}

impl Assembler for StreamAssembler {
    fn on_event(
        &mut self,
        event: &SseEvent,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<StreamStep, ProviderError> {
        self.apply(event.event.as_deref(), &event.data, events)
    }

    /// Whether any text/reasoning/tool-call delta reached the caller.
    fn emitted_output(&self) -> bool {
        self.emitted_output
    }

    /// Whether `response.completed` (or `response.incomplete`) arrived.
    fn is_complete(&self) -> bool {
        self.complete
    }

    /// The assembled reply. `provider_call_id` and `duration_ms` are the transport's to fill.
    fn into_response(self) -> ChatResponse {
        let mut parts = self.parts;
        parts.calls = self.calls.into_iter().map(|c| finish_call(c.call_id, c.name, c.arguments)).collect();
        ChatResponse {
            replies: vec![parts.into_reply()],
            usage: self.usage,
            api_call_id: self.id,
            provider_call_id: None,
            model: self.model,
            duration_ms: 0,
            request_bytes: 0,
        }
    }
}

/// Which output item an event is about: its `item_id`, else its `output_index`.
fn item_key(event: &Value) -> String {
    match event.get("item_id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(id) => id.to_string(),
        None => format!("#{}", event.get("output_index").map(Value::to_string).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;
    use crate::types::ToolCall;
    use serde_json::json;
    use tokio::sync::mpsc::unbounded_channel;

    /// `event: <type>\ndata: <json>\n\n`, as OpenAI sends them.
    fn sse(events: &[Value]) -> String {
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default())).collect()
    }

    /// Feeds `body` cut into `piece`-byte chunks through the SSE parser and the assembler.
    fn run(body: &str, piece: usize) -> (Result<ChatResponse, ProviderError>, Vec<ModelEvent>) {
        let (tx, mut rx) = unbounded_channel();
        let mut parser = SseParser::new();
        let mut asm = StreamAssembler::default();
        let mut outcome = Ok(());
        'feed: for chunk in body.as_bytes().chunks(piece.max(1)) {
            parser.push(chunk);
            while let Some(ev) = parser.next_event() {
                match asm.apply(ev.event.as_deref(), &ev.data, &tx) {
                    Ok(StreamStep::Continue) => {}
                    Ok(StreamStep::Done) => break 'feed,
                    Err(e) => {
                        outcome = Err(e);
                        break 'feed;
                    }
                }
            }
        }
        drop(tx);
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        (outcome.map(|()| asm.into_response()), events)
    }

    fn created() -> Value {
        json!({"type": "response.created", "sequence_number": 0,
               "response": {"id": "resp_1", "status": "in_progress", "model": "gpt-5", "output": []}})
    }

    fn completed(output: Value) -> Value {
        json!({"type": "response.completed", "sequence_number": 99, "response": {
            "id": "resp_1", "status": "completed", "model": "gpt-5-2025", "output": output,
            "usage": {"input_tokens": 50, "output_tokens": 9, "total_tokens": 59,
                      "input_tokens_details": {"cached_tokens": 32}}}})
    }

    fn reasoning_item() -> Value {
        json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan. Then act."}],
               "encrypted_content": "gAAAA-secret-blob"})
    }

    fn call_item(n: usize, args: &str) -> Value {
        json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
               "name": format!("tool{n}"), "arguments": args, "status": "completed"})
    }

    fn added(index: usize, item: Value) -> Value {
        json!({"type": "response.output_item.added", "output_index": index, "item": item})
    }

    fn done(index: usize, item: Value) -> Value {
        json!({"type": "response.output_item.done", "output_index": index, "item": item})
    }

    fn args_delta(n: usize, index: usize, delta: &str) -> Value {
        json!({"type": "response.function_call_arguments.delta", "item_id": format!("fc_{n}"), "output_index": index, "delta": delta})
    }

    /// Reasoning with a summary in two deltas, a text message in two deltas, two function
    /// calls whose argument deltas interleave (parallel calls).
    fn full_stream() -> Vec<Value> {
        let message = json!({"type": "message", "id": "msg_1", "role": "assistant", "content": [
            {"type": "output_text", "text": "Hello world", "annotations": []}]});
        vec![
            created(),
            json!({"type": "response.in_progress", "response": {"id": "resp_1", "status": "in_progress"}}),
            added(0, json!({"type": "reasoning", "id": "rs_1", "summary": []})),
            json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Plan."}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": " Then act."}),
            done(0, reasoning_item()),
            added(1, json!({"type": "message", "id": "msg_1", "role": "assistant", "content": []})),
            json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 1, "content_index": 0, "part": {"type": "output_text", "text": ""}}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Hello"}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": " world"}),
            json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 1, "content_index": 0, "text": "Hello world"}),
            done(1, message.clone()),
            added(2, call_item(1, "")),
            added(3, call_item(2, "")),
            args_delta(1, 2, "{\"pa"),
            args_delta(2, 3, "{\"q\":"),
            args_delta(1, 2, "th\":\"é\"}"),
            args_delta(2, 3, "1}"),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2, "arguments": "{\"path\":\"é\"}"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 3, "arguments": "{\"q\":1}"}),
            done(2, call_item(1, "{\"path\":\"é\"}")),
            done(3, call_item(2, "{\"q\":1}")),
            completed(json!([reasoning_item(), message, call_item(1, "{\"path\":\"é\"}"), call_item(2, "{\"q\":1}")])),
        ]
    }

    #[test]
    fn a_full_stream_is_assembled_and_forwarded() {
        let (result, events) = run(&sse(&full_stream()), usize::MAX);
        let resp = result.expect("complete");
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta { text: "Plan.".into() },
                ModelEvent::ReasoningDelta { text: " Then act.".into() },
                ModelEvent::TextDelta { choice: 0, text: "Hello".into() },
                ModelEvent::TextDelta { choice: 0, text: " world".into() },
                ModelEvent::ToolCallDelta {
                    choice: 0,
                    index: 0,
                    id: Some("call_1".into()),
                    name: Some("tool1".into()),
                    arguments: "".into()
                },
                ModelEvent::ToolCallDelta {
                    choice: 0,
                    index: 1,
                    id: Some("call_2".into()),
                    name: Some("tool2".into()),
                    arguments: "".into()
                },
                ModelEvent::ToolCallDelta { choice: 0, index: 0, id: None, name: None, arguments: "{\"pa".into() },
                ModelEvent::ToolCallDelta { choice: 0, index: 1, id: None, name: None, arguments: "{\"q\":".into() },
                ModelEvent::ToolCallDelta {
                    choice: 0,
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "th\":\"é\"}".into()
                },
                ModelEvent::ToolCallDelta { choice: 0, index: 1, id: None, name: None, arguments: "1}".into() },
            ]
        );
        assert_eq!(resp.api_call_id.as_deref(), Some("resp_1"));
        assert_eq!(resp.model.as_deref(), Some("gpt-5-2025"), "the completed response's model wins");
        assert_eq!(
            resp.usage,
            Usage { input_tokens: 50, output_tokens: 9, cache_read_tokens: 32, cache_write_tokens: 0 }
        );
        let reply = &resp.replies[0];
        assert_eq!(reply.content, "Hello world");
        assert_eq!(reply.reasoning.as_deref(), Some("Plan. Then act."));
        assert_eq!(
            reply.tool_calls,
            vec![
                ToolCall { id: "call_1".into(), name: "tool1".into(), arguments: "{\"path\":\"é\"}".into() },
                ToolCall { id: "call_2".into(), name: "tool2".into(), arguments: "{\"q\":1}".into() },
            ]
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        let blocks = reply.reasoning_blocks.as_ref().expect("reasoning item kept");
        assert_eq!((blocks.provider.as_str(), blocks.blocks.clone()), ("openai-responses", vec![reasoning_item()]));
    }

    #[test]
    fn any_cut_of_the_bytes_gives_the_same_reply() {
        let body = sse(&full_stream()).replace("\n", "\r\n");
        let (whole, whole_events) = run(&body, usize::MAX);
        let whole = whole.expect("complete");
        for piece in [1, 2, 3, 7, 13, 64, 301] {
            let (cut, events) = run(&body, piece);
            assert_eq!(cut.expect("complete"), whole, "pieces of {piece}");
            assert_eq!(events, whole_events, "pieces of {piece}");
        }
    }

    #[test]
    fn a_plain_text_reply() {
        let (result, _) = run(
            &sse(&[
                created(),
                added(0, json!({"type": "message", "id": "m", "content": []})),
                json!({"type": "response.output_text.delta", "item_id": "m", "delta": "hi"}),
                completed(json!([])),
            ]),
            usize::MAX,
        );
        let reply = &result.expect("complete").replies[0];
        assert_eq!((reply.content.as_str(), reply.finish_reason.as_deref()), ("hi", Some("stop")));
        assert!(reply.reasoning.is_none() && reply.reasoning_blocks.is_none() && reply.tool_calls.is_empty());
    }

    #[test]
    fn items_without_deltas_are_taken_from_their_done_events() {
        let message = json!({"type": "message", "id": "m", "content": [{"type": "output_text", "text": "whole"}]});
        let (result, events) = run(
            &sse(&[
                created(),
                added(0, json!({"type": "reasoning", "id": "rs_1", "summary": []})),
                done(0, reasoning_item()),
                added(1, message.clone()),
                done(1, message),
                added(2, call_item(1, "")),
                args_delta(1, 2, "{\"a\""),
                done(2, call_item(1, "{\"a\":1}")),
                completed(json!([])),
            ]),
            usize::MAX,
        );
        let reply = &result.expect("complete").replies[0];
        assert_eq!(reply.content, "whole");
        assert_eq!(reply.reasoning.as_deref(), Some("Plan. Then act."));
        assert_eq!(reply.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(
            events[3..],
            [
                ModelEvent::ToolCallDelta { choice: 0, index: 0, id: None, name: None, arguments: "{\"a\"".into() },
                ModelEvent::ToolCallDelta { choice: 0, index: 0, id: None, name: None, arguments: ":1}".into() },
            ],
            "only the missing remainder is forwarded"
        );
    }

    #[test]
    fn a_completed_event_alone_still_gives_the_reply() {
        let (result, events) = run(
            &sse(&[completed(json!([
                {"type": "message", "content": [{"type": "output_text", "text": "only"}]},
                call_item(4, "{}")
            ]))]),
            usize::MAX,
        );
        let reply = &result.expect("complete").replies[0];
        assert_eq!(reply.content, "only");
        assert_eq!(reply.tool_calls[0].id, "call_4");
        assert_eq!(events.len(), 2, "{events:?}");
    }

    #[test]
    fn deltas_without_item_events_are_not_doubled_by_the_final_output() {
        let (result, _) = run(
            &sse(&[
                json!({"type": "response.output_text.delta", "item_id": "m", "delta": "once"}),
                completed(
                    json!([{"type": "message", "id": "m", "content": [{"type": "output_text", "text": "once"}]}]),
                ),
            ]),
            usize::MAX,
        );
        assert_eq!(result.expect("complete").replies[0].content, "once");
    }

    #[test]
    fn two_messages_and_two_summaries_are_paragraphs() {
        let (result, events) = run(
            &sse(&[
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs", "summary_index": 0, "delta": "A"}),
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs", "summary_index": 1, "delta": "B"}),
                json!({"type": "response.output_text.delta", "item_id": "m1", "delta": "one"}),
                json!({"type": "response.output_text.delta", "item_id": "m2", "delta": "two"}),
                completed(json!([])),
            ]),
            usize::MAX,
        );
        let reply = &result.expect("complete").replies[0];
        assert_eq!(reply.reasoning.as_deref(), Some("A\n\nB"));
        assert_eq!(reply.content, "one\n\ntwo");
        assert_eq!(
            events[3],
            ModelEvent::TextDelta { choice: 0, text: "\n\ntwo".into() },
            "deltas add up to the content"
        );
    }

    #[test]
    fn incomplete_is_complete_with_length() {
        let (result, _) = run(
            &sse(&[
                json!({"type": "response.output_text.delta", "item_id": "m", "delta": "cut sh"}),
                json!({"type": "response.incomplete", "response": {"id": "r", "status": "incomplete",
                       "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 3, "output_tokens": 4}}}),
            ]),
            usize::MAX,
        );
        let resp = result.expect("complete");
        assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("length"));
        assert_eq!(resp.usage.output_tokens, 4);
    }

    #[test]
    fn failed_and_error_events() {
        let failed = json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
            "error": {"code": "server_error", "message": "The server had an error"}}});
        let (result, _) = run(&sse(&[created(), failed.clone()]), usize::MAX);
        let err = result.expect_err("failed");
        assert_eq!(err.status_code(), Some(500), "retried like a 500 while nothing was shown: {err}");

        let limited = json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null});
        let (result, _) = run(&sse(&[limited]), usize::MAX);
        assert_eq!(result.expect_err("error").status_code(), Some(429));

        let text = json!({"type": "response.output_text.delta", "item_id": "m", "delta": "partial"});
        let (result, _) = run(&sse(&[text, failed]), usize::MAX);
        let err = result.expect_err("failed");
        assert!(
            matches!(&err, ProviderError::Protocol(m) if m.contains("The server had an error")),
            "final after output: {err}"
        );

        let (result, _) = run("data: {not json\n\n", usize::MAX);
        assert!(matches!(result, Err(ProviderError::Protocol(_))));
    }

    #[test]
    fn a_stream_without_completed_is_not_complete() {
        let (tx, _rx) = unbounded_channel();
        let mut asm = StreamAssembler::default();
        asm.apply(None, &created().to_string(), &tx).expect("accepted");
        assert!(!asm.is_complete() && !asm.emitted_output());
        let delta = json!({"type": "response.output_text.delta", "item_id": "m", "delta": "x"});
        asm.apply(None, &delta.to_string(), &tx).expect("accepted");
        assert!(!asm.is_complete() && asm.emitted_output());
        assert_eq!(asm.apply(None, "[DONE]", &tx).ok(), Some(StreamStep::Done));
        assert!(!asm.is_complete(), "[DONE] alone does not complete a response");
    }

    #[test]
    fn the_event_line_names_events_without_a_type() {
        let (tx, mut rx) = unbounded_channel();
        let mut asm = StreamAssembler::default();
        asm.apply(Some("response.output_text.delta"), r#"{"item_id":"m","delta":"x"}"#, &tx).expect("accepted");
        assert_eq!(rx.try_recv().ok(), Some(ModelEvent::TextDelta { choice: 0, text: "x".into() }));
    }
}
