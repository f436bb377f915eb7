//! Turning chat-completions responses into [`ChatResponse`]: streamed chunks (emitting
//! [`ModelEvent`]s as they arrive) or one non-streaming `chat.completion` object.
//!
//! CAPI may answer with several choices, each one assistant message of the same turn (text in
//! choice 0, tool calls in choice 1, …); every choice becomes one [`AssistantReply`], in index
//! order.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::exchange::Assembler;
pub(crate) use crate::exchange::StreamStep;
use crate::http::error_message;
use crate::sse::SseEvent;
use crate::types::{AssistantReply, ChatResponse, ModelEvent, ProviderError, ToolCall, Usage};

#[derive(Debug, Deserialize)]
struct Chunk {
    id: Option<String>,
    model: Option<String>,
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<Value>,
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    index: Option<usize>,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_text: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Debug, Deserialize)]
struct DeltaToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Debug, Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
struct ChoiceState {
    content: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
}

/// Accumulates a streamed reply and forwards deltas as they arrive.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    choices: BTreeMap<usize, ChoiceState>,
    usage: Usage,
    id: Option<String>,
    model: Option<String>,
    emitted_output: bool,
    saw_finish: bool,
    done: bool,
}

impl StreamAssembler {
    /// Feed one SSE `data` payload.
    pub(crate) fn apply(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<StreamStep, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(StreamStep::Done);
        }
        if data.is_empty() {
            return Ok(StreamStep::Continue);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("malformed stream chunk ({e}): {}", excerpt(data))))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(ProviderError::Protocol(format!(
                "model reported an error mid-stream: {}",
                error_message(&error)
            )));
        }
        if self.id.is_none() {
            self.id = chunk.id.filter(|s| !s.is_empty());
        }
        if self.model.is_none() {
            self.model = chunk.model.filter(|s| !s.is_empty());
        }
        if let Some(usage) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            self.usage = parse_usage(usage);
        }
        for (position, choice) in chunk.choices.unwrap_or_default().into_iter().enumerate() {
            let index = choice.index.unwrap_or(position);
            self.apply_choice(index, choice, events);
        }
        Ok(StreamStep::Continue)
    }

    fn apply_choice(&mut self, index: usize, choice: ChunkChoice, events: &UnboundedSender<ModelEvent>) {
        let state = self.choices.entry(index).or_default();
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                state.content.push_str(&text);
                self.emitted_output = true;
                let _ = events.send(ModelEvent::TextDelta { choice: index, text });
            }
            let reasoning = delta.reasoning_text.or(delta.reasoning_content);
            if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
                state.reasoning.push_str(&text);
                self.emitted_output = true;
                let _ = events.send(ModelEvent::ReasoningDelta { text });
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let function = call.function.unwrap_or(DeltaFunction { name: None, arguments: None });
                // Without an index, a fragment carrying an id opens a new call and one without
                // continues the latest; that is how index-less providers stream them.
                let call_index = match call.index {
                    Some(i) => i,
                    None => match (call.id.is_some(), state.calls.keys().next_back()) {
                        (false, Some(&last)) => last,
                        (_, Some(&last)) => last + 1,
                        (_, None) => 0,
                    },
                };
                let partial = state.calls.entry(call_index).or_default();
                let id = call.id.filter(|s| !s.is_empty());
                let name = function.name.filter(|s| !s.is_empty());
                if let (Some(id), true) = (&id, partial.id.is_empty()) {
                    partial.id = id.clone();
                }
                if let (Some(name), true) = (&name, partial.name.is_empty()) {
                    partial.name = name.clone();
                }
                let arguments = function.arguments.unwrap_or_default();
                partial.arguments.push_str(&arguments);
                if id.is_some() || name.is_some() || !arguments.is_empty() {
                    self.emitted_output = true;
                    let _ = events.send(ModelEvent::ToolCallDelta {
                        choice: index,
                        index: call_index,
                        id,
                        name,
                        arguments,
                    });
                }
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            state.finish_reason = Some(reason);
            self.saw_finish = true;
        }
    }
}

impl Assembler for StreamAssembler {
    fn on_event(
        &mut self,
        event: &SseEvent,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<StreamStep, ProviderError> {
        self.apply(&event.data, events)
    }

    /// Whether any text/reasoning/tool-call delta reached the caller.
    fn emitted_output(&self) -> bool {
        self.emitted_output
    }

    /// Whether the reply is known to be complete (`[DONE]` or some `finish_reason`), so a
    /// connection closing now loses nothing the caller needs.
    fn is_complete(&self) -> bool {
        self.done || self.saw_finish
    }

    /// The assembled reply. `provider_call_id` and `duration_ms` are the transport's to fill.
    fn into_response(self) -> ChatResponse {
        let replies = self
            .choices
            .into_values()
            .map(|c| AssistantReply {
                reasoning_blocks: None,
                content: c.content,
                reasoning: (!c.reasoning.is_empty()).then_some(c.reasoning),
                tool_calls: c.calls.into_values().map(|p| finish_call(p.id, p.name, p.arguments)).collect(),
                finish_reason: c.finish_reason,
            })
            .collect();
        ChatResponse {
            replies: at_least_one(replies),
            usage: self.usage,
            api_call_id: self.id,
            provider_call_id: None,
            model: self.model,
            duration_ms: 0,
            request_bytes: 0,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Completion {
    id: Option<String>,
    model: Option<String>,
    choices: Option<Vec<CompletionChoice>>,
    usage: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct CompletionChoice {
    index: Option<usize>,
    message: Option<CompletionMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CompletionMessage {
    content: Option<String>,
    reasoning_text: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<CompletionToolCall>>,
}

#[derive(Debug, Deserialize)]
struct CompletionToolCall {
    id: Option<String>,
    function: Option<CompletionFunction>,
}

#[derive(Debug, Deserialize)]
struct CompletionFunction {
    name: Option<String>,
    /// Normally a JSON string; some compatible servers send the object itself.
    arguments: Option<Value>,
}

/// Parse a non-streaming `chat.completion` body.
pub(crate) fn parse_completion(body: &[u8]) -> Result<ChatResponse, ProviderError> {
    let completion: Completion = serde_json::from_slice(body).map_err(|e| {
        ProviderError::Protocol(format!("malformed completion ({e}): {}", excerpt(&String::from_utf8_lossy(body))))
    })?;
    let mut choices: Vec<(usize, CompletionChoice)> = completion
        .choices
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(position, c)| (c.index.unwrap_or(position), c))
        .collect();
    choices.sort_by_key(|(index, _)| *index);
    let replies = choices
        .into_iter()
        .map(|(_, choice)| {
            let message = choice.message.unwrap_or(CompletionMessage {
                content: None,
                reasoning_text: None,
                reasoning_content: None,
                tool_calls: None,
            });
            let tool_calls = message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|call| {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name.unwrap_or_default(), arguments_text(f.arguments)),
                        None => (String::new(), String::new()),
                    };
                    finish_call(call.id.unwrap_or_default(), name, arguments)
                })
                .collect();
            AssistantReply {
                reasoning_blocks: None,
                content: message.content.unwrap_or_default(),
                reasoning: message.reasoning_text.or(message.reasoning_content).filter(|r| !r.is_empty()),
                tool_calls,
                finish_reason: choice.finish_reason,
            }
        })
        .collect();
    Ok(ChatResponse {
        replies: at_least_one(replies),
        usage: completion.usage.as_ref().map(parse_usage).unwrap_or_default(),
        api_call_id: completion.id.filter(|s| !s.is_empty()),
        provider_call_id: None,
        model: completion.model.filter(|s| !s.is_empty()),
        duration_ms: 0,
        request_bytes: 0,
    })
}

fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// A tool result must name the call it answers, so a call the model left without an id gets
/// a generated one.
fn finish_call(id: String, name: String, arguments: String) -> ToolCall {
    let id = if id.is_empty() { format!("call_{}", uuid::Uuid::new_v4().simple()) } else { id };
    ToolCall { id, name, arguments }
}

/// The loop treats a reply as at least one assistant message; an answer without choices is
/// an empty message rather than nothing at all.
fn at_least_one(mut replies: Vec<AssistantReply>) -> Vec<AssistantReply> {
    if replies.is_empty() {
        replies.push(AssistantReply::default());
    }
    replies
}

fn parse_usage(usage: &Value) -> Usage {
    let n =
        |v: Option<&Value>| v.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))).unwrap_or(0);
    Usage {
        input_tokens: n(usage.get("prompt_tokens")),
        output_tokens: n(usage.get("completion_tokens")),
        cache_read_tokens: n(usage.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens"))),
        cache_write_tokens: 0,
    }
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
    use serde_json::json;
    use tokio::sync::mpsc::unbounded_channel;

    fn feed(lines: &[Value]) -> (StreamAssembler, Vec<ModelEvent>) {
        let (tx, mut rx) = unbounded_channel();
        let mut asm = StreamAssembler::default();
        for line in lines {
            asm.apply(&line.to_string(), &tx).expect("chunk accepted");
        }
        drop(tx);
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        (asm, events)
    }

    #[test]
    fn text_and_usage() {
        let (asm, events) = feed(&[
            json!({"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}),
            json!({"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}),
            json!({"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}),
            json!({"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta { choice: 0, text: "Hel".into() },
                ModelEvent::TextDelta { choice: 0, text: "lo".into() }
            ]
        );
        assert!(asm.is_complete());
        let resp = asm.into_response();
        assert_eq!(resp.replies.len(), 1);
        assert_eq!(resp.replies[0].content, "Hello");
        assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("stop"));
        assert_eq!(resp.api_call_id.as_deref(), Some("c1"));
        assert_eq!(resp.model.as_deref(), Some("m"));
        assert_eq!(
            resp.usage,
            Usage { input_tokens: 10, output_tokens: 2, cache_read_tokens: 4, cache_write_tokens: 0 }
        );
    }

    #[test]
    fn tool_calls_assembled_per_choice_and_index() {
        let (asm, events) = feed(&[
            json!({"choices":[{"index":0,"delta":{"content":"Let me look."}}]}),
            json!({"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"view","arguments":""}}]}}]}),
            json!({"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}),
            json!({"choices":[{"index":1,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"grep","arguments":"{}"}}]}}]}),
            json!({"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}]}),
        ]);
        assert_eq!(events.len(), 5);
        assert_eq!(
            events[1],
            ModelEvent::ToolCallDelta {
                choice: 1,
                index: 0,
                id: Some("call_a".into()),
                name: Some("view".into()),
                arguments: "".into()
            }
        );
        let resp = asm.into_response();
        assert_eq!(resp.replies.len(), 2);
        assert_eq!(resp.replies[0].content, "Let me look.");
        assert!(resp.replies[0].tool_calls.is_empty());
        assert_eq!(
            resp.replies[1].tool_calls,
            vec![
                ToolCall { id: "call_a".into(), name: "view".into(), arguments: "{\"path\":1}".into() },
                ToolCall { id: "call_b".into(), name: "grep".into(), arguments: "{}".into() },
            ]
        );
    }

    #[test]
    fn index_less_tool_calls_and_missing_ids() {
        let (asm, _) = feed(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"a","arguments":"{"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"y","function":{"name":"b","arguments":"{}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":5,"function":{"name":"c","arguments":"{}"}}]}}]}),
        ]);
        let calls = &asm.into_response().replies[0].tool_calls;
        assert_eq!(calls.len(), 3);
        assert_eq!((calls[0].id.as_str(), calls[0].arguments.as_str()), ("x", "{}"));
        assert_eq!(calls[1].id, "y");
        assert!(calls[2].id.starts_with("call_"));
    }

    #[test]
    fn reasoning_deltas() {
        let (asm, events) = feed(&[
            json!({"choices":[{"index":0,"delta":{"reasoning_text":"think "}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning_content":"more"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"ok"}}]}),
        ]);
        assert_eq!(events[0], ModelEvent::ReasoningDelta { text: "think ".into() });
        assert!(!asm.is_complete());
        assert_eq!(asm.into_response().replies[0].reasoning.as_deref(), Some("think more"));
    }

    #[test]
    fn tolerates_nulls_and_done() {
        let (tx, _rx) = unbounded_channel();
        let mut asm = StreamAssembler::default();
        let null_chunk = r#"{"id":null,"choices":null,"usage":null}"#;
        assert_eq!(asm.apply(null_chunk, &tx).ok(), Some(StreamStep::Continue));
        let null_fields =
            r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}]}"#;
        assert_eq!(asm.apply(null_fields, &tx).ok(), Some(StreamStep::Continue));
        assert!(!asm.emitted_output());
        assert_eq!(asm.apply("[DONE]", &tx).ok(), Some(StreamStep::Done));
        assert!(asm.is_complete());
        assert!(matches!(asm.apply("{nope", &tx), Err(ProviderError::Protocol(_))));
        assert!(
            matches!(asm.apply(r#"{"error":{"message":"boom"}}"#, &tx), Err(ProviderError::Protocol(m)) if m.contains("boom"))
        );
    }

    #[test]
    fn completion_with_two_choices() {
        let body = json!({
            "id": "chatcmpl-9", "object": "chat.completion", "model": "m",
            "choices": [
                {"index": 1, "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "view", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
                ]}, "finish_reason": "tool_calls"},
                {"index": 0, "message": {"role": "assistant", "content": "first"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7}
        });
        let resp = parse_completion(body.to_string().as_bytes()).expect("parses");
        assert_eq!(resp.api_call_id.as_deref(), Some("chatcmpl-9"));
        assert_eq!(resp.replies.len(), 2);
        assert_eq!(resp.replies[0].content, "first");
        assert_eq!(resp.replies[1].content, "");
        assert_eq!(resp.replies[1].tool_calls[1].arguments, "{\"command\":\"ls\"}");
        assert_eq!(resp.usage.output_tokens, 7);
    }

    #[test]
    fn completion_without_choices_is_one_empty_reply() {
        let resp = parse_completion(b"{}").expect("parses");
        assert_eq!(resp.replies, vec![AssistantReply::default()]);
        assert!(parse_completion(b"<html>").is_err());
    }
}
