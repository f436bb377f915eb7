//! `POST /v1/messages`: the Anthropic Messages API over the same scripted replies and
//! snapshots as `/chat/completions`.
//!
//! The request is translated into the OpenAI chat shape the rest of the fake speaks (so
//! [`decide`] and snapshot matching work unchanged), and the answer is rendered in Anthropic's
//! shape: an SSE event stream, or one `message` object for `stream: false`. Requests and
//! exchanges are recorded as they arrived.
//!
//! One shape is lost in translation: Anthropic turns hold several messages' worth of blocks, so
//! user texts a client merged into one turn compare as one user message (parts joined by a
//! newline), not as the separate messages a chat-completions client would have sent.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use futures::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::{
    channel_body, decide, json_object, json_response, record_request, split_chars, split_text, sse_response, Answer,
    Call, Exchange, Shared, DEFAULT_MODEL, STREAM_CHUNK_CHARS,
};

pub(crate) async fn messages(State(s): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let received = tokio::time::Instant::now();
    let (captured_body, header_json) = record_request(&s, &uri, &headers, body);

    let req = match json_object(&captured_body) {
        Ok(v) => v,
        Err(e) => return error_response(400, &e, None),
    };
    let answer = match to_chat_request(req) {
        Ok(chat) => decide(&s, &headers, || Ok(&chat)),
        Err(e) => Answer::BadRequest(format!("fake-model: malformed Anthropic request: {e}")),
    };
    let n = s.completion_counter.fetch_add(1, Ordering::SeqCst);
    let ctx = Ctx {
        shared: s.clone(),
        id: format!("msg_fake_{n}"),
        streaming: req.get("stream") == Some(&Value::Bool(true)),
        model: req.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_string(),
        input_tokens: (captured_body.len() / 4).max(1) as u64,
        received,
    };
    let response_json = answer.final_message().map(|(content, calls)| ctx.message(&content, &calls));
    s.lock().exchanges.push(Exchange { request: captured_body, response: response_json, request_headers: header_json });
    let request_id = format!("req_fake_{n}");
    let mut res = respond(ctx, answer).await;
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        res.headers_mut().insert("request-id", v);
    }
    res
}

// ---- request translation -----------------------------------------------------------------

/// An Anthropic request as `{"model", "messages"}` in OpenAI chat shape: `system` → a system
/// message; per turn, text/image blocks → a user message (a string when it is one text),
/// `tool_result` blocks → `role: "tool"` messages in block order; an assistant turn's text
/// blocks → `content` and `tool_use` blocks → `tool_calls` (arguments = the input as JSON
/// text). Thinking blocks have no chat equivalent and are dropped.
pub(crate) fn to_chat_request(req: &Value) -> Result<Value, String> {
    let mut out = Vec::new();
    // Snapshots always start with the (never compared) system prompt.
    let system = match req.get("system") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect(),
        Some(_) => return Err("`system` must be a string or a list of text blocks".into()),
    };
    out.push(json!({"role": "system", "content": system}));
    let messages = req.get("messages").and_then(Value::as_array).ok_or("no `messages` array")?;
    for (i, message) in messages.iter().enumerate() {
        translate_message(message, &mut out).map_err(|e| format!("messages[{i}]: {e}"))?;
    }
    let mut chat = Map::new();
    if let Some(model) = req.get("model") {
        chat.insert("model".into(), model.clone());
    }
    chat.insert("messages".into(), Value::Array(out));
    Ok(Value::Object(chat))
}

fn translate_message(message: &Value, out: &mut Vec<Value>) -> Result<(), String> {
    let role = message.get("role").and_then(Value::as_str).ok_or("missing `role`")?;
    let blocks = match message.get("content") {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => return Err("`content` must be a string or a list of blocks".into()),
    };
    match role {
        "assistant" => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for block in &blocks {
                match block_type(block) {
                    "text" => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
                    "tool_use" => calls.push(json!({
                        "id": block.get("id").cloned().unwrap_or(Value::Null),
                        "type": "function",
                        "function": {
                            "name": block.get("name").cloned().unwrap_or(Value::Null),
                            "arguments": block.get("input").unwrap_or(&json!({})).to_string(),
                        },
                    })),
                    _ => {}
                }
            }
            let mut m = json!({"role": "assistant", "content": (!text.is_empty()).then_some(text)});
            if !calls.is_empty() {
                m["tool_calls"] = Value::Array(calls);
            }
            out.push(m);
        }
        "user" => {
            let mut parts = Vec::new();
            for block in &blocks {
                match block_type(block) {
                    "tool_result" => {
                        flush_user(&mut parts, out);
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": block.get("tool_use_id").cloned().unwrap_or(Value::Null),
                            "content": tool_result_content(block.get("content")),
                        }));
                    }
                    "text" => {
                        parts.push(json!({"type": "text", "text": block.get("text").cloned().unwrap_or_default()}))
                    }
                    "image" => parts.push(json!({"type": "image_url", "image_url": {"url": image_url(block)}})),
                    _ => {}
                }
            }
            flush_user(&mut parts, out);
        }
        other => return Err(format!("unknown role {other:?}")),
    }
    Ok(())
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// Pending text/image parts as one user message: a plain string when it is a single text.
fn flush_user(parts: &mut Vec<Value>, out: &mut Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    let parts = std::mem::take(parts);
    let content = match parts.as_slice() {
        [only] if block_type(only) == "text" => only["text"].clone(),
        _ => Value::Array(parts),
    };
    out.push(json!({"role": "user", "content": content}));
}

/// A string stays a string (what the normaliser compares); blocks become chat parts.
fn tool_result_content(content: Option<&Value>) -> Value {
    match content {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::Array(blocks)) => Value::Array(
            blocks
                .iter()
                .filter_map(|b| match block_type(b) {
                    "text" => Some(json!({"type": "text", "text": b.get("text").cloned().unwrap_or_default()})),
                    "image" => Some(json!({"type": "image_url", "image_url": {"url": image_url(b)}})),
                    _ => None,
                })
                .collect(),
        ),
        Some(other) => other.clone(),
    }
}

fn image_url(block: &Value) -> String {
    let source = block.get("source").unwrap_or(&Value::Null);
    let field = |name: &str| source.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "base64" => format!("data:{};base64,{}", field("media_type"), field("data")),
        _ => field("url").to_string(),
    }
}

// ---- answers -----------------------------------------------------------------------------

struct Ctx {
    shared: Arc<Shared>,
    id: String,
    streaming: bool,
    model: String,
    input_tokens: u64,
    received: tokio::time::Instant,
}

fn event(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn stop_reason(calls: &[Call]) -> &'static str {
    if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn output_tokens(content: &Option<String>, calls: &[Call]) -> u64 {
    // Rough chars/4 estimate, like the chat endpoint: deterministic and non-zero.
    let chars = content.as_deref().map_or(0, str::len) + calls.iter().map(|(_, n, a)| n.len() + a.len()).sum::<usize>();
    (chars / 4).max(1) as u64
}

/// Tool input as an object; scripted arguments that aren't one are sent as `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v) if v.is_object() => v,
        _ => json!({}),
    }
}

impl Ctx {
    /// The complete `message` object (non-streaming answers and `/exchanges`).
    fn message(&self, content: &Option<String>, calls: &[Call]) -> Value {
        let mut blocks = Vec::new();
        if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
            blocks.push(json!({"type": "text", "text": text}));
        }
        for (id, name, args) in calls {
            blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": tool_input(args)}));
        }
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": blocks,
            "stop_reason": stop_reason(calls), "stop_sequence": null,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": output_tokens(content, calls)},
        })
    }

    fn message_start(&self) -> [Bytes; 2] {
        [
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": self.id, "type": "message", "role": "assistant", "content": [], "model": self.model,
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": self.input_tokens, "output_tokens": 1},
                }}),
            ),
            event("ping", json!({"type": "ping"})),
        ]
    }

    fn text_block(&self, index: usize, pieces: &[String]) -> Vec<Bytes> {
        let mut frames = vec![self.block_start(index, json!({"type": "text", "text": ""}))];
        frames.extend(pieces.iter().map(|p| self.text_delta(index, p)));
        frames.push(self.block_stop(index));
        frames
    }

    fn block_start(&self, index: usize, block: Value) -> Bytes {
        event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": block}))
    }

    fn text_delta(&self, index: usize, text: &str) -> Bytes {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        )
    }

    fn block_stop(&self, index: usize) -> Bytes {
        event("content_block_stop", json!({"type": "content_block_stop", "index": index}))
    }

    fn message_end(&self, content: &Option<String>, calls: &[Call]) -> [Bytes; 2] {
        [
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(calls), "stop_sequence": null},
                       "usage": {"output_tokens": output_tokens(content, calls)}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
    }

    /// Every event of a complete message: text in ~200-char deltas, then each tool call's
    /// input as `input_json_delta` pieces.
    fn message_frames(&self, content: &Option<String>, calls: &[Call]) -> Vec<Bytes> {
        let mut frames = Vec::from(self.message_start());
        let mut index = 0;
        let text = content.as_deref().filter(|t| !t.is_empty());
        // An empty answer is still one (empty) text block, as the API sends it.
        if text.is_some() || calls.is_empty() {
            frames.extend(self.text_block(index, &text.map(split_text).unwrap_or_default()));
            index += 1;
        }
        for (id, name, args) in calls {
            frames.push(self.block_start(index, json!({"type": "tool_use", "id": id, "name": name, "input": {}})));
            for piece in split_chars(args, STREAM_CHUNK_CHARS).into_iter().filter(|p| !p.is_empty()) {
                frames.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            frames.push(self.block_stop(index));
            index += 1;
        }
        frames.extend(self.message_end(content, calls));
        frames
    }
}

/// Anthropic's error `type` for an HTTP status.
fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"type": "error", "error": {"type": error_type(code.as_u16()), "message": message}});
    let mut res = json_response(code, body);
    if let Some(secs) = retry_after {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

fn json_body_response(body: Body) -> Response {
    let mut res = Response::new(body);
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

fn respond(ctx: Ctx, answer: Answer) -> BoxFuture<'static, Response> {
    Box::pin(async move {
        match answer {
            Answer::BadRequest(message) => error_response(400, &message, None),
            Answer::Error { status, retry_after, message, .. } => error_response(status, &message, retry_after),
            Answer::Delay(ms, then) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                respond(ctx, *then).await
            }
            Answer::Latency(ms, then) => {
                tokio::time::sleep_until(ctx.received + Duration::from_millis(ms)).await;
                respond(ctx, *then).await
            }
            Answer::Message { content, tool_calls } => {
                if ctx.streaming {
                    let frames = ctx.message_frames(&content, &tool_calls);
                    sse_response(Body::from_stream(futures::stream::iter(
                        frames.into_iter().map(Ok::<_, std::io::Error>),
                    )))
                } else {
                    json_response(StatusCode::OK, ctx.message(&content, &tool_calls))
                }
            }
            Answer::Slow(chunks, delay_ms) => {
                let content = Some(chunks.concat());
                if !ctx.streaming {
                    let total = delay_ms.saturating_mul(chunks.len().saturating_sub(1) as u64);
                    tokio::time::sleep(Duration::from_millis(total)).await;
                    return json_response(StatusCode::OK, ctx.message(&content, &[]));
                }
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    let mut head = Vec::from(ctx.message_start());
                    head.push(ctx.block_start(0, json!({"type": "text", "text": ""})));
                    for frame in head {
                        if tx.send(Ok(frame)).await.is_err() {
                            return;
                        }
                    }
                    for (i, piece) in chunks.iter().enumerate() {
                        if i > 0 {
                            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                        }
                        // A send error means the client went away (aborted): stop.
                        if tx.send(Ok(ctx.text_delta(0, piece))).await.is_err() {
                            return;
                        }
                    }
                    let mut tail = vec![ctx.block_stop(0)];
                    tail.extend(ctx.message_end(&content, &[]));
                    for frame in tail {
                        if tx.send(Ok(frame)).await.is_err() {
                            return;
                        }
                    }
                });
                sse_response(body)
            }
            Answer::Drop(partial) => {
                let (tx, body) = channel_body();
                let frames: Vec<Bytes> = if ctx.streaming {
                    let mut frames = Vec::from(ctx.message_start());
                    frames.push(ctx.block_start(0, json!({"type": "text", "text": ""})));
                    frames.extend(split_text(&partial).iter().map(|p| ctx.text_delta(0, p)));
                    frames
                } else {
                    // A truncated JSON document.
                    let full = ctx.message(&Some(partial), &[]).to_string();
                    vec![Bytes::from(full.chars().take(full.chars().count() / 2).collect::<String>())]
                };
                tokio::spawn(async move {
                    for f in frames {
                        if tx.send(Ok(f)).await.is_err() {
                            return;
                        }
                    }
                    // Give hyper time to flush what was sent before the connection is cut.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = tx.send(Err(std::io::Error::other("fake-model: dropped mid-stream"))).await;
                });
                if ctx.streaming {
                    sse_response(body)
                } else {
                    json_body_response(body)
                }
            }
            Answer::Hang => {
                let mut shutdown = ctx.shared.shutdown.subscribe();
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    // Headers are out; nothing follows until the server stops (then the
                    // connection is cut) or the client goes away.
                    let stopped = tokio::select! {
                        _ = shutdown.wait_for(|stopped| *stopped) => true,
                        _ = tx.closed() => false,
                    };
                    if stopped {
                        let _ = tx.send(Err(std::io::Error::other("fake-model stopped"))).await;
                    }
                });
                if ctx.streaming {
                    sse_response(body)
                } else {
                    json_body_response(body)
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_to_chat_shape() {
        let req = json!({
            "model": "claude-sonnet-4.5",
            "system": [{"type": "text", "text": "You are "}, {"type": "text", "text": "helpful."}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "view", "input": {"path": "/a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "ok"}]},
                    {"type": "text", "text": "Image file at path /a.png"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
                ]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "x", "input": {}}]},
            ],
        });
        let chat = to_chat_request(&req).expect("translates");
        assert_eq!(chat["model"], "claude-sonnet-4.5");
        assert_eq!(
            chat["messages"],
            json!([
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "view", "arguments": "{\"path\":\"/a\"}"}},
                    {"id": "toolu_2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "file"},
                {"role": "tool", "tool_call_id": "toolu_2", "content": [{"type": "text", "text": "ok"}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "Image file at path /a.png"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "t3", "type": "function", "function": {"name": "x", "arguments": "{}"}},
                ]},
            ])
        );
    }

    #[test]
    fn malformed_requests_are_reported() {
        assert!(to_chat_request(&json!({})).is_err());
        assert!(to_chat_request(&json!({"messages": [{"content": "x"}]})).is_err());
        assert!(to_chat_request(&json!({"messages": [{"role": "user", "content": 4}]})).is_err());
        assert!(to_chat_request(&json!({"messages": [{"role": "system", "content": "x"}]})).is_err());
        let chat = to_chat_request(&json!({"messages": []})).expect("no system is an empty one");
        assert_eq!(chat["messages"], json!([{"role": "system", "content": ""}]));
    }

    #[test]
    fn error_types_follow_the_status() {
        assert_eq!(error_type(429), "rate_limit_error");
        assert_eq!(error_type(529), "overloaded_error");
        assert_eq!(error_type(422), "invalid_request_error");
        assert_eq!(error_type(503), "api_error");
    }
}
