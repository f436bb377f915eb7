//! `POST /responses` (also `/v1/…`, `/openai/v1/…`, `/openai/…`): the OpenAI Responses API
//! over the same scripted replies and snapshots as `/chat/completions`.
//!
//! A request is translated into the chat-completions message shape, as the official harness'
//! `responsesApiAdapter` does, so [`decide`] and the snapshot normalisation work unchanged;
//! the requests log and `/exchanges` keep the request as it arrived. The answer goes out as
//! Responses SSE events (`stream: true`) or one `response` object; errors and hangs are the
//! chat endpoint's.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use serde_json::{json, Map, Value};

use super::{
    bad_request, channel_body, decide, json_object, json_response, now_secs, record_request, respond, split_chars,
    split_text, sse_response, usage, Answer, Call, Exchange, RespondCtx, DEFAULT_MODEL, S, STREAM_CHUNK_CHARS,
};

pub(super) async fn responses(State(s): S, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let received = tokio::time::Instant::now();
    let (captured_body, header_json) = record_request(&s, &uri, &headers, body);
    let req = match json_object(&captured_body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let streaming = req.get("stream") == Some(&Value::Bool(true));
    let model = req.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_string();

    let chat_shaped = json!({"model": req.get("model"), "messages": chat_messages(req)});
    let answer = decide(&s, &headers, || Ok(&chat_shaped));
    let response_id = format!("resp_{}", s.completion_counter.fetch_add(1, Ordering::SeqCst));
    let response_json = answer
        .final_message()
        .map(|(content, calls)| response_object(&response_id, &model, &content, &calls, captured_body.len()));
    let prompt_bytes = captured_body.len();
    s.lock().exchanges.push(Exchange { request: captured_body, response: response_json, request_headers: header_json });

    let ctx = RespondCtx { shared: s.clone(), completion_id: response_id, streaming, model, prompt_bytes, received };
    respond_responses(ctx, answer).await
}

// ---- request: Responses input → chat messages ----------------------------------------------

/// The conversation of a Responses request as chat-completions messages: `instructions` is the
/// system message, message items keep their role, `function_call` items become assistant tool
/// calls (merged into the assistant message before them), `function_call_output` items become
/// `tool` messages; reasoning items are the model's own state and are not compared.
pub(crate) fn chat_messages(req: &Value) -> Vec<Value> {
    let mut messages = Vec::new();
    if let Some(instructions) = req.get("instructions").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": instructions}));
    }
    match req.get("input") {
        Some(Value::String(text)) => messages.push(json!({"role": "user", "content": text})),
        Some(Value::Array(items)) => messages.extend(items.iter().filter_map(chat_message)),
        _ => {}
    }
    merge_assistants(messages)
}

fn chat_message(item: &Value) -> Option<Value> {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => {
            let id = item.get("call_id").or_else(|| item.get("id")).and_then(Value::as_str).unwrap_or_default();
            let arguments = item.get("arguments").and_then(Value::as_str).unwrap_or("{}");
            Some(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": text("name"), "arguments": arguments}}
            ]}))
        }
        Some("function_call_output") => {
            let output = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            Some(json!({"role": "tool", "tool_call_id": text("call_id"), "content": output}))
        }
        Some("message") | None if item.get("type").is_some() || item.get("role").is_some() => {
            // As the harness: anything but assistant and system speaks as the user.
            let role = match text("role") {
                "assistant" => "assistant",
                "system" => "system",
                _ => "user",
            };
            Some(json!({"role": role, "content": chat_content(item.get("content"))}))
        }
        // reasoning, item references, hosted tool calls: nothing a snapshot records.
        _ => None,
    }
}

/// Message content: a string when it is all text (parts joined), else chat parts (images).
fn chat_content(content: Option<&Value>) -> Value {
    let parts = match content {
        Some(Value::String(s)) => return Value::String(s.clone()),
        Some(Value::Array(parts)) => parts,
        _ => return Value::String(String::new()),
    };
    let converted: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text") => {
                part.get("text").and_then(Value::as_str).map(|t| json!({"type": "text", "text": t}))
            }
            Some("input_image") => part
                .get("image_url")
                .and_then(Value::as_str)
                .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
            _ => None,
        })
        .collect();
    if converted.iter().all(|p| p["type"] == "text") {
        Value::String(converted.iter().filter_map(|p| p["text"].as_str()).collect())
    } else {
        Value::Array(converted)
    }
}

/// Consecutive assistant messages (text, then each function call) are one chat message.
fn merge_assistants(messages: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for message in messages {
        match out.last_mut() {
            Some(prev) if prev["role"] == "assistant" && message["role"] == "assistant" => {
                let text = format!(
                    "{}{}",
                    prev["content"].as_str().unwrap_or_default(),
                    message["content"].as_str().unwrap_or_default()
                );
                prev["content"] = if text.is_empty() { Value::Null } else { Value::String(text) };
                let calls = message.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
                if !calls.is_empty() {
                    let mut all = prev.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
                    all.extend(calls);
                    prev["tool_calls"] = Value::Array(all);
                }
            }
            _ => out.push(message),
        }
    }
    out
}

// ---- response: an answer as a `response` object or its events ------------------------------

/// The whole `response` object for an answer.
fn response_object(id: &str, model: &str, content: &Option<String>, calls: &[Call], prompt_bytes: usize) -> Value {
    let text = content.as_deref().unwrap_or_default();
    let mut output = Vec::new();
    if !text.is_empty() {
        output.push(json!({
            "type": "message", "id": format!("msg_{}", id.trim_start_matches("resp_")), "role": "assistant",
            "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    for (call_id, name, arguments) in calls {
        output.push(json!({
            "type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed",
        }));
    }
    let chat_usage = usage(prompt_bytes, content, calls);
    let tokens = |key: &str| chat_usage.get(key).cloned().unwrap_or(json!(0));
    json!({
        "id": id,
        "object": "response",
        "created_at": now_secs(),
        "status": "completed",
        "model": model,
        "output": output,
        "output_text": text,
        "incomplete_details": null,
        "error": null,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "usage": {
            "input_tokens": tokens("prompt_tokens"),
            "output_tokens": tokens("completion_tokens"),
            "total_tokens": tokens("total_tokens"),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    })
}

/// One SSE frame; text deltas are marked so slow and dropped streams can pace or cut there.
struct Frame {
    bytes: Bytes,
    text_delta: bool,
}

/// Every event of a complete response, in the order OpenAI sends them, numbered by
/// `sequence_number`. `pieces` are the text deltas (their concatenation is `content`).
fn stream_frames(ctx: &RespondCtx, content: &Option<String>, pieces: Vec<String>, calls: &[Call]) -> Vec<Frame> {
    let full = response_object(&ctx.completion_id, &ctx.model, content, calls, ctx.prompt_bytes);
    let mut skeleton = full.clone();
    skeleton["status"] = json!("in_progress");
    skeleton["output"] = json!([]);
    skeleton["output_text"] = json!("");
    skeleton["usage"] = Value::Null;

    let mut frames = Vec::new();
    let mut push = |kind: &str, data: Value, text_delta: bool| {
        let mut event = Map::new();
        event.insert("type".into(), json!(kind));
        event.insert("sequence_number".into(), json!(frames.len()));
        if let Value::Object(fields) = data {
            event.extend(fields);
        }
        let bytes = Bytes::from(format!("event: {kind}\ndata: {}\n\n", Value::Object(event)));
        frames.push(Frame { bytes, text_delta });
    };
    push("response.created", json!({"response": skeleton}), false);
    push("response.in_progress", json!({"response": skeleton}), false);
    let output = full["output"].as_array().cloned().unwrap_or_default();
    for (index, item) in output.iter().enumerate() {
        let item_id = item["id"].clone();
        let mut opened = item.clone();
        opened["status"] = json!("in_progress");
        if item["type"] == "message" {
            opened["content"] = json!([]);
            push("response.output_item.added", json!({"output_index": index, "item": opened}), false);
            let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
            let with = |extra: Value| {
                let mut v = at.clone();
                if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
                    v.extend(extra);
                }
                v
            };
            let empty_part = json!({"type": "output_text", "text": "", "annotations": []});
            push("response.content_part.added", with(json!({"part": empty_part})), false);
            for piece in &pieces {
                push("response.output_text.delta", with(json!({"delta": piece, "logprobs": []})), true);
            }
            let text = content.as_deref().unwrap_or_default();
            push("response.output_text.done", with(json!({"text": text, "logprobs": []})), false);
            push("response.content_part.done", with(json!({"part": item["content"][0]})), false);
        } else {
            opened["arguments"] = json!("");
            push("response.output_item.added", json!({"output_index": index, "item": opened}), false);
            let arguments = item["arguments"].as_str().unwrap_or_default();
            for piece in split_chars(arguments, STREAM_CHUNK_CHARS) {
                let delta = json!({"item_id": item_id, "output_index": index, "delta": piece});
                push("response.function_call_arguments.delta", delta, false);
            }
            let done = json!({"item_id": item_id, "output_index": index, "arguments": arguments});
            push("response.function_call_arguments.done", done, false);
        }
        push("response.output_item.done", json!({"output_index": index, "item": item}), false);
    }
    push("response.completed", json!({"response": full}), false);
    frames
}

fn respond_responses(ctx: RespondCtx, answer: Answer) -> futures::future::BoxFuture<'static, Response> {
    Box::pin(async move {
        match answer {
            Answer::Delay(ms, then) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                respond_responses(ctx, *then).await
            }
            Answer::Latency(ms, then) => {
                tokio::time::sleep_until(ctx.received + Duration::from_millis(ms)).await;
                respond_responses(ctx, *then).await
            }
            Answer::Message { content, tool_calls } if ctx.streaming => {
                let pieces = content.as_deref().map(split_text).unwrap_or_default();
                let frames = stream_frames(&ctx, &content, pieces, &tool_calls);
                sse_response(Body::from_stream(futures::stream::iter(
                    frames.into_iter().map(|f| Ok::<_, std::io::Error>(f.bytes)),
                )))
            }
            Answer::Message { content, tool_calls } => json_response(
                StatusCode::OK,
                response_object(&ctx.completion_id, &ctx.model, &content, &tool_calls, ctx.prompt_bytes),
            ),
            Answer::Slow(chunks, delay_ms) if ctx.streaming => {
                let content = Some(chunks.concat());
                let frames = stream_frames(&ctx, &content, chunks, &[]);
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    let mut deltas = 0;
                    for frame in frames {
                        if frame.text_delta {
                            if deltas > 0 {
                                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                            }
                            deltas += 1;
                        }
                        // A send error means the client went away (aborted): stop.
                        if tx.send(Ok(frame.bytes)).await.is_err() {
                            return;
                        }
                    }
                });
                sse_response(body)
            }
            Answer::Slow(chunks, delay_ms) => {
                let total = delay_ms.saturating_mul(chunks.len().saturating_sub(1) as u64);
                tokio::time::sleep(Duration::from_millis(total)).await;
                let content = Some(chunks.concat());
                json_response(
                    StatusCode::OK,
                    response_object(&ctx.completion_id, &ctx.model, &content, &[], ctx.prompt_bytes),
                )
            }
            Answer::Drop(partial) => {
                let streaming = ctx.streaming;
                let content = Some(partial);
                let pieces: Vec<Bytes> = if streaming {
                    let pieces = content.as_deref().map(split_text).unwrap_or_default();
                    let mut frames = stream_frames(&ctx, &content, pieces, &[]);
                    // Up to the last text delta (or the opening events when there is no text):
                    // never `response.completed`.
                    let cut = frames.iter().rposition(|f| f.text_delta).map_or(2, |i| i + 1);
                    frames.truncate(cut);
                    frames.into_iter().map(|f| f.bytes).collect()
                } else {
                    // A truncated JSON document.
                    let full =
                        response_object(&ctx.completion_id, &ctx.model, &content, &[], ctx.prompt_bytes).to_string();
                    let half: String = full.chars().take(full.chars().count() / 2).collect();
                    vec![Bytes::from(half)]
                };
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    for piece in pieces {
                        if tx.send(Ok(piece)).await.is_err() {
                            return;
                        }
                    }
                    // Give hyper time to flush what was sent before the connection is cut.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = tx.send(Err(std::io::Error::other("fake-model: dropped mid-stream"))).await;
                });
                if streaming {
                    sse_response(body)
                } else {
                    let mut res = Response::new(body);
                    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    res
                }
            }
            // Errors, bad requests and hangs look the same on every endpoint.
            other => respond(ctx, other).await,
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn responses_input_becomes_chat_messages() {
        let req = json!({
            "model": "gpt-5",
            "instructions": "be brief",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi "}, {"type": "input_text", "text": "there"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
                {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "view", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a"},
                {"type": "function_call_output", "call_id": "call_2", "output": "b"},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "data:image/png;base64,AA"}
                ]},
                {"role": "developer", "content": "plain"}
            ]
        });
        assert_eq!(
            chat_messages(&req),
            vec![
                json!({"role": "system", "content": "be brief"}),
                json!({"role": "user", "content": "hi there"}),
                json!({"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "view", "arguments": "{}"}}
                ]}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "a"}),
                json!({"role": "tool", "tool_call_id": "call_2", "content": "b"}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
                ]}),
                json!({"role": "user", "content": "plain"}),
            ]
        );
        assert_eq!(
            chat_messages(&json!({"input": "just text"})),
            vec![json!({"role": "user", "content": "just text"})]
        );
    }

    #[test]
    fn a_function_call_alone_is_an_assistant_message_without_text() {
        let req = json!({"input": [{"type": "function_call", "id": "fc_1", "name": "x"}]});
        assert_eq!(
            chat_messages(&req),
            vec![json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "fc_1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ]})]
        );
    }
}
