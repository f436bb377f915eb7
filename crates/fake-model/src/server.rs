//! The HTTP side: model endpoints, account/catalogue stubs and the `/_fake/` control API.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, Notify};

mod responses;

use crate::normalize::{expand_tool_name, expand_workdir, merge_assistant_runs, normalize_messages, NormMessage, Side};
use crate::reply::{reply_to_json, Reply};
use crate::snapshot::{Match, Snapshot, StoredError};

mod anthropic;
mod capture;

pub(crate) use capture::{CapturedRequest, Exchange, Head, RequestBody};
pub(crate) mod github_mcp;

/// Models listed by `/models` when no snapshot (or override) provides a list.
pub const DEFAULT_MODELS: &[&str] = &["claude-sonnet-4.5", "gpt-4.1"];
const DEFAULT_MODEL: &str = "claude-sonnet-4.5";
/// Streaming splits tool-call arguments (and long text) into pieces of this many characters,
/// as the official harness does.
const STREAM_CHUNK_CHARS: usize = 200;

pub(crate) struct Shared {
    pub base_url: String,
    pub state: Mutex<FakeState>,
    /// Source of `call_<n>` ids for tool calls in replies.
    tool_call_counter: AtomicU64,
    /// Source of `fake-req-<n>` response header values.
    response_counter: AtomicU64,
    /// Source of `chatcmpl-<n>` completion ids.
    completion_counter: AtomicU64,
    /// Woken whenever a model request is captured (for `wait_for_requests`).
    pub captured: Notify,
    /// Set to `true` on `POST /stop` or when the library handle is dropped: ends hanging
    /// responses, and the binary exits.
    pub shutdown: watch::Sender<bool>,
}

#[derive(Default)]
pub(crate) struct FakeState {
    pub snapshot: Option<Arc<Snapshot>>,
    /// The configured working directory (used to expand `${workdir}` in replies).
    pub workdir: Option<String>,
    /// Paths that normalise to `${workdir}`: the configured one and its canonical form.
    pub workdir_variants: Vec<String>,
    pub replies: VecDeque<Reply>,
    /// Replies for compaction summary calls (`X-Interaction-Type: conversation-compaction`),
    /// taken before `replies`: a summary made beside a turn then gets its own answer, whichever
    /// of the two requests arrives first.
    pub summary_replies: VecDeque<Reply>,
    pub requests: Vec<CapturedRequest>,
    pub exchanges: Vec<Exchange>,
    pub models: Option<Vec<String>>,
    /// `supported_endpoints` of listed models, by id (absent: the catalogue omits the field).
    pub model_endpoints: HashMap<String, Vec<String>>,
    pub users_by_token: HashMap<String, Value>,
    /// Requests to the GitHub MCP endpoint (`/mcp`, `/mcp/readonly`), oldest first.
    pub mcp_requests: Vec<Value>,
}

impl FakeState {
    pub fn set_workdir(&mut self, dir: Option<&Path>) {
        self.workdir = dir.map(|d| d.to_string_lossy().into_owned());
        self.workdir_variants = match dir {
            None => Vec::new(),
            Some(d) => {
                let mut v = vec![d.to_string_lossy().into_owned()];
                // The server under test may report the canonical path (symlinks resolved).
                if let Ok(c) = std::fs::canonicalize(d) {
                    let c = c.to_string_lossy().into_owned();
                    if !v.contains(&c) {
                        v.push(c);
                    }
                }
                v
            }
        };
    }

    pub fn load_snapshot(&mut self, path: &Path, workdir: Option<&Path>) -> anyhow::Result<()> {
        let snap = Snapshot::load(path)?;
        self.snapshot = Some(Arc::new(snap));
        if workdir.is_some() {
            self.set_workdir(workdir);
        }
        Ok(())
    }

    pub fn reset(&mut self) {
        *self = FakeState::default();
    }
}

impl Shared {
    pub fn new(base_url: String) -> Self {
        Self {
            base_url,
            state: Mutex::new(FakeState::default()),
            completion_counter: AtomicU64::new(1),
            tool_call_counter: AtomicU64::new(1),
            response_counter: AtomicU64::new(1),
            captured: Notify::new(),
            shutdown: watch::channel(false).0,
        }
    }

    /// Poisoning only means a panic elsewhere; the state itself stays usable for a fake.
    pub fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_call_id(&self) -> String {
        format!("call_{}", self.tool_call_counter.fetch_add(1, Ordering::SeqCst))
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/copilot_internal/user", get(user))
        .route("/models", get(models))
        // The Anthropic Messages API (BYOK `type: "anthropic"`).
        .route("/v1/messages", post(anthropic::messages))
        // Every path a BYOK OpenAI/Azure provider may use ends in the same handler.
        .route("/chat/completions", post(chat))
        .route("/v1/chat/completions", post(chat))
        .route("/openai/v1/chat/completions", post(chat))
        .route("/openai/deployments/{deployment}/chat/completions", post(chat))
        // The OpenAI Responses API (`wireApi: "responses"`), OpenAI and Azure routes.
        .route("/responses", post(responses::responses))
        .route("/v1/responses", post(responses::responses))
        .route("/openai/v1/responses", post(responses::responses))
        .route("/openai/responses", post(responses::responses))
        .route("/agents/{*rest}", get(memory).post(memory))
        .route("/mcp", post(github_mcp::post).get(github_mcp::other).delete(github_mcp::other))
        .route("/mcp/readonly", post(github_mcp::post).get(github_mcp::other).delete(github_mcp::other))
        .route("/_fake/mcp_requests", get(github_mcp::requests))
        .route("/_fake/load", post(ctl_load))
        .route("/_fake/workdir", post(ctl_workdir))
        .route("/_fake/replies", post(ctl_replies))
        .route("/_fake/requests", get(ctl_requests).delete(ctl_clear_requests))
        .route("/_fake/exchanges", get(ctl_exchanges))
        .route("/_fake/reset", post(ctl_reset))
        .route("/_fake/models", post(ctl_models))
        .route("/_fake/user", post(ctl_user))
        // Aliases of the official harness' control endpoints, so its test helpers work
        // against this server unchanged.
        .route("/config", post(compat_config))
        .route("/exchanges", get(ctl_exchanges))
        .route("/copilot-user-config", post(ctl_user))
        .route("/stop", post(ctl_stop))
        .fallback(not_found)
        // Requests carry full histories, possibly with base64 images: no body size limit.
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::map_response_with_state(shared.clone(), add_request_id))
        .with_state(shared)
}

type S = State<Arc<Shared>>;

async fn add_request_id(State(s): S, mut res: Response) -> Response {
    if !res.headers().contains_key("x-github-request-id") {
        let n = s.response_counter.fetch_add(1, Ordering::SeqCst);
        if let Ok(v) = HeaderValue::from_str(&format!("fake-req-{n}")) {
            res.headers_mut().insert("x-github-request-id", v);
        }
    }
    res
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn error_body(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": kind}})
}

fn bad_request(message: &str) -> Response {
    json_response(StatusCode::BAD_REQUEST, error_body(message, "invalid_request_error"))
}

async fn not_found(uri: Uri) -> Response {
    tracing::debug!(%uri, "404");
    json_response(StatusCode::NOT_FOUND, json!({"error": format!("Not found by fake model: {}", uri.path())}))
}

async fn user(State(s): S, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start_matches("Bearer ").trim_start_matches("token ").to_string());
    let registered = token.and_then(|t| s.lock().users_by_token.get(&t).cloned());
    // A token registered with `{"status": 401}` (any 4xx/5xx) is refused the way GitHub refuses
    // a bad token.
    let refused = registered.as_ref().and_then(|r| r.get("status")).and_then(Value::as_u64);
    if let Some(code) = refused.and_then(|c| StatusCode::from_u16(u16::try_from(c).ok()?).ok()) {
        if code.is_client_error() || code.is_server_error() {
            return json_response(code, json!({"message": "Bad credentials"}));
        }
    }
    let body = match registered {
        Some(Value::Object(mut obj)) => {
            // Third-party MCP servers are gated on this flag; default it on like the harness.
            obj.entry("is_mcp_enabled").or_insert(Value::Bool(true));
            Value::Object(obj)
        }
        Some(other) => other,
        None => json!({
            "login": "fake-user",
            "copilot_plan": "individual_pro",
            "is_mcp_enabled": true,
            "endpoints": {"api": s.base_url, "telemetry": format!("{}/telemetry", s.base_url)},
            "analytics_tracking_id": "fake-analytics-id",
        }),
    };
    json_response(StatusCode::OK, body)
}

pub(crate) fn model_ids(st: &FakeState) -> Vec<String> {
    if let Some(m) = &st.models {
        return m.clone();
    }
    match &st.snapshot {
        Some(snap) if !snap.models.is_empty() => snap.models.clone(),
        _ => DEFAULT_MODELS.iter().map(|m| (*m).to_string()).collect(),
    }
}

async fn models(State(s): S) -> Response {
    let st = s.lock();
    let ids = model_ids(&st);
    let data: Vec<Value> = ids
        .iter()
        .map(|id| {
            let mut entry = json!({
                "id": id,
                "name": id,
                "capabilities": {
                    "supports": {"vision": true, "tool_calls": true, "streaming": true},
                    "limits": {
                        "max_context_window_tokens": 128000,
                        "max_prompt_tokens": 128000,
                        "max_output_tokens": 16000
                    }
                },
                "policy": {"state": "enabled", "terms": ""},
                "billing": {"multiplier": 1}
            });
            if let Some(endpoints) = st.model_endpoints.get(id) {
                entry["supported_endpoints"] = json!(endpoints);
            }
            entry
        })
        .collect();
    drop(st);
    json_response(StatusCode::OK, json!({"data": data}))
}

/// Memory feature stubs (the harness answers these so the runtime treats memory as off).
async fn memory(uri: Uri) -> Response {
    let path = uri.path();
    if !path.contains("/memory/") {
        return not_found(uri).await;
    }
    let body = if path.contains("/enabled") {
        json!({"enabled": false})
    } else if path.contains("/recent") {
        json!({"memories": []})
    } else {
        json!({})
    };
    json_response(StatusCode::OK, body)
}

fn headers_to_json(headers: &HeaderMap) -> Value {
    let mut map = serde_json::Map::new();
    for (name, value) in headers {
        let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match map.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&v);
            }
            _ => {
                map.insert(name.as_str().to_string(), Value::String(v));
            }
        }
    }
    Value::Object(map)
}

/// A tool call in a reply: `(id, name, arguments)`.
type Call = (String, String, String);

/// What one model request is answered with, after ids and placeholders are resolved.
#[derive(Debug, Clone)]
enum Answer {
    Message {
        content: Option<String>,
        tool_calls: Vec<Call>,
    },
    Error {
        status: u16,
        retry_after: Option<u64>,
        message: String,
        code: String,
    },
    Drop(String),
    Hang,
    Delay(u64, Box<Answer>),
    /// Answer no earlier than this long after the request arrived.
    Latency(u64, Box<Answer>),
    Slow(Vec<String>, u64),
    BadRequest(String),
}

impl Answer {
    fn from_reply(s: &Shared, reply: Reply, workdir: Option<&str>) -> Answer {
        let calls = |tc: Vec<(String, String)>| -> Vec<Call> {
            tc.into_iter()
                .map(|(name, args)| (s.next_call_id(), expand_tool_name(&name), expand_workdir(&args, workdir, true)))
                .collect()
        };
        match reply {
            Reply::Text(t) => Answer::Message { content: Some(t), tool_calls: Vec::new() },
            Reply::ToolCalls(tc) => Answer::Message { content: None, tool_calls: calls(tc) },
            Reply::Message { content, tool_calls } => {
                Answer::Message { content: (!content.is_empty()).then_some(content), tool_calls: calls(tool_calls) }
            }
            Reply::Error { status, retry_after, message } => {
                Answer::Error { status, retry_after, message, code: error_kind(status).to_string() }
            }
            Reply::DropMidStream { partial_text } => Answer::Drop(partial_text),
            Reply::Hang => Answer::Hang,
            Reply::Delay { ms, then } => Answer::Delay(ms, Box::new(Answer::from_reply(s, *then, workdir))),
            Reply::Latency { ms, then } => Answer::Latency(ms, Box::new(Answer::from_reply(s, *then, workdir))),
            Reply::SlowText { chunks, delay_ms } => Answer::Slow(chunks, delay_ms),
        }
    }

    /// A stored (normalised) assistant message → a reply with fresh ids and real
    /// tool names / paths.
    fn from_stored(s: &Shared, msg: NormMessage, workdir: Option<&str>) -> Answer {
        Answer::Message {
            content: msg.content.map(|c| expand_workdir(&c, workdir, false)).filter(|c| !c.is_empty()),
            tool_calls: msg
                .tool_calls
                .into_iter()
                .map(|tc| {
                    (
                        s.next_call_id(),
                        expand_tool_name(&tc.function.name),
                        expand_workdir(&tc.function.arguments, workdir, true),
                    )
                })
                .collect(),
        }
    }

    fn from_stored_error(e: StoredError) -> Answer {
        Answer::Error {
            status: e.status,
            retry_after: e.retry_after_seconds,
            message: e.message.unwrap_or_else(|| "Rate limited by test snapshot".to_string()),
            code: e.code.unwrap_or_else(|| "rate_limited".to_string()),
        }
    }

    /// The assistant message this answer eventually delivers, for `/exchanges`.
    fn final_message(&self) -> Option<(Option<String>, Vec<Call>)> {
        match self {
            Answer::Message { content, tool_calls } => Some((content.clone(), tool_calls.clone())),
            Answer::Slow(chunks, _) => Some((Some(chunks.concat()), Vec::new())),
            Answer::Delay(_, then) | Answer::Latency(_, then) => then.final_message(),
            _ => None,
        }
    }
}

fn error_kind(status: u16) -> &'static str {
    match status {
        429 => "rate_limited",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// Captures a model request as it arrived. Returns the body (parsed when first needed) and
/// the headers, for `/exchanges`.
fn record_request(s: &Shared, uri: &Uri, headers: &HeaderMap, body: Bytes) -> (Arc<RequestBody>, Arc<Value>) {
    let body = RequestBody::new(body);
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| uri.path().to_string());
    let header_json = Arc::new(headers_to_json(headers));
    s.lock().requests.push(CapturedRequest { path, headers: header_json.clone(), body: body.clone() });
    s.captured.notify_waiters();
    (body, header_json)
}

/// The body of a `/responses` or Anthropic request, which those handlers read whole.
fn json_object(body: &RequestBody) -> Result<&Value, String> {
    match body.parse() {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("fake-model: request body is not a JSON object".to_string()),
        Err(e) => Err(format!("fake-model: request body is not JSON: {e}")),
    }
}

async fn chat(State(s): S, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let received = tokio::time::Instant::now();
    let (body, header_json) = record_request(&s, &uri, &headers, body);
    let head = match Head::read(body.raw()) {
        Ok(head) => head,
        Err(e) => return bad_request(&e),
    };
    let streaming = head.stream == Some(Value::Bool(true));
    let model = head.model.as_ref().and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_string();

    let answer = decide(&s, &headers, || body.parse().map_err(str::to_string));
    let completion_id = format!("chatcmpl-{}", s.completion_counter.fetch_add(1, Ordering::SeqCst));
    let response_json = answer.final_message().map(|(content, calls)| {
        let u = usage(body.len(), &content, &calls);
        completion(&completion_id, &model, &content, &calls, u)
    });
    let prompt_bytes = body.len();
    s.lock().exchanges.push(Exchange { request: body, response: response_json, request_headers: header_json });

    let ctx = RespondCtx { shared: s.clone(), completion_id, streaming, model, prompt_bytes, received };
    respond(ctx, answer).await
}

/// Picks the answer: the next scripted reply if any, else the loaded snapshot's, matched
/// against the chat-shaped request `req` gives (asked for only then).
fn decide<'a>(s: &Shared, headers: &HeaderMap, req: impl FnOnce() -> Result<&'a Value, String>) -> Answer {
    let summary = headers.get("x-interaction-type").is_some_and(|v| v.as_bytes() == b"conversation-compaction");
    let (snapshot, workdir, variants) = {
        let mut st = s.lock();
        let workdir = st.workdir.clone();
        let queued = match summary {
            true => st.summary_replies.pop_front().or_else(|| st.replies.pop_front()),
            false => st.replies.pop_front(),
        };
        if let Some(reply) = queued {
            drop(st);
            return Answer::from_reply(s, reply, workdir.as_deref());
        }
        (st.snapshot.clone(), workdir, st.workdir_variants.clone())
    };
    let Some(snapshot) = snapshot else {
        return Answer::BadRequest("fake-model: no scripted reply is queued and no snapshot is loaded".to_string());
    };
    let req = match req() {
        Ok(req) => req,
        Err(e) => return Answer::BadRequest(format!("fake-model: request body is not JSON: {e}")),
    };
    let Some(messages) = req.get("messages").and_then(Value::as_array) else {
        return Answer::BadRequest("fake-model: request has no `messages` array".to_string());
    };
    let normalized = match normalize_messages(messages, Side::Request, &variants) {
        Ok(m) => merge_assistant_runs(m),
        Err(e) => return Answer::BadRequest(format!("fake-model: malformed messages: {e}")),
    };
    let model = req.get("model").and_then(Value::as_str);
    match snapshot.find(&normalized, model) {
        Match::Error(e) => Answer::from_stored_error(e),
        Match::Reply(msg) => Answer::from_stored(s, msg, workdir.as_deref()),
        Match::Hang => Answer::Hang,
        Match::NoMatch(diagnostics) => {
            // Test authors debug mismatches from this output: print the whole normalised
            // request in snapshot (YAML) form next to the diagnosis.
            let yaml = serde_yaml::to_string(&json!({"messages": normalized})).unwrap_or_default();
            eprintln!("{diagnostics}\nNormalised request:\n{yaml}");
            Answer::BadRequest(diagnostics)
        }
    }
}

fn usage(prompt_bytes: usize, content: &Option<String>, calls: &[Call]) -> Value {
    // Rough chars/4 estimate: deterministic and non-zero, which is all tests need.
    let out_chars =
        content.as_deref().map_or(0, str::len) + calls.iter().map(|(_, n, a)| n.len() + a.len()).sum::<usize>();
    let prompt = (prompt_bytes / 4).max(1) as u64;
    let completion = (out_chars / 4).max(1) as u64;
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

fn finish_reason(calls: &[Call]) -> &'static str {
    if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn completion(id: &str, model: &str, content: &Option<String>, calls: &[Call], usage: Value) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(
                |(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}),
            )
            .collect();
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(calls), "logprobs": null}],
        "usage": usage,
    })
}

/// Splits text for streaming: 200-char pieces; short text is still split (at spaces, into
/// up to three pieces) so clients exercise delta accumulation.
fn split_text(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() > STREAM_CHUNK_CHARS {
        return chars.chunks(STREAM_CHUNK_CHARS).map(|c| c.iter().collect()).collect();
    }
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    if words.len() < 2 {
        return vec![text.to_string()];
    }
    let per = words.len().div_ceil(3);
    words.chunks(per).map(|w| w.concat()).collect()
}

fn split_chars(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

struct RespondCtx {
    shared: Arc<Shared>,
    completion_id: String,
    streaming: bool,
    model: String,
    prompt_bytes: usize,
    received: tokio::time::Instant,
}

impl RespondCtx {
    fn completion_id(&self) -> String {
        self.completion_id.clone()
    }

    fn chunk(&self, id: &str, delta: Value, finish: Option<&str>) -> Bytes {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": now_secs(),
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        });
        Bytes::from(format!("data: {chunk}\n\n"))
    }

    fn usage_chunk(&self, id: &str, usage: Value) -> Bytes {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": now_secs(),
            "model": self.model,
            "choices": [],
            "usage": usage,
        });
        Bytes::from(format!("data: {chunk}\n\n"))
    }

    /// All SSE frames of a complete message, `[DONE]` included.
    fn message_frames(&self, content: &Option<String>, calls: &[Call]) -> Vec<Bytes> {
        let id = self.completion_id();
        let mut frames = Vec::new();
        let mut first = true;
        let mut delta = |extra: Value| -> Value {
            let mut d = extra;
            if std::mem::take(&mut first) {
                d["role"] = json!("assistant");
            }
            d
        };
        if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
            for piece in split_text(text) {
                frames.push(self.chunk(&id, delta(json!({"content": piece})), None));
            }
        }
        for (index, (call_id, name, args)) in calls.iter().enumerate() {
            for (i, piece) in split_chars(args, STREAM_CHUNK_CHARS).into_iter().enumerate() {
                let tc = if i == 0 {
                    json!({"index": index, "id": call_id, "type": "function",
                           "function": {"name": name, "arguments": piece}})
                } else {
                    json!({"index": index, "function": {"arguments": piece}})
                };
                frames.push(self.chunk(&id, delta(json!({"tool_calls": [tc]})), None));
            }
        }
        if frames.is_empty() {
            frames.push(self.chunk(&id, delta(json!({"content": ""})), None));
        }
        frames.push(self.chunk(&id, json!({}), Some(finish_reason(calls))));
        frames.push(self.usage_chunk(&id, usage(self.prompt_bytes, content, calls)));
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        frames
    }
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

type Frame = Result<Bytes, std::io::Error>;

/// A body fed by a background task; lets us pace chunks and end with an error (which makes
/// hyper abort the connection instead of finishing the response).
fn channel_body() -> (mpsc::Sender<Frame>, Body) {
    let (tx, mut rx) = mpsc::channel::<Frame>(16);
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    (tx, Body::from_stream(stream))
}

fn respond(ctx: RespondCtx, answer: Answer) -> futures::future::BoxFuture<'static, Response> {
    Box::pin(async move {
        match answer {
            Answer::BadRequest(msg) => json_response(StatusCode::BAD_REQUEST, error_body(&msg, "fake_model_no_match")),
            Answer::Error { status, retry_after, message, code } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                let mut res = json_response(status, error_body(&message, &code));
                if let Some(secs) = retry_after {
                    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
                }
                res
            }
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
                    let u = usage(ctx.prompt_bytes, &content, &tool_calls);
                    json_response(
                        StatusCode::OK,
                        completion(&ctx.completion_id(), &ctx.model, &content, &tool_calls, u),
                    )
                }
            }
            Answer::Slow(chunks, delay_ms) => {
                if !ctx.streaming {
                    let total = delay_ms.saturating_mul(chunks.len().saturating_sub(1) as u64);
                    tokio::time::sleep(Duration::from_millis(total)).await;
                    let content = Some(chunks.concat());
                    let u = usage(ctx.prompt_bytes, &content, &[]);
                    return json_response(
                        StatusCode::OK,
                        completion(&ctx.completion_id(), &ctx.model, &content, &[], u),
                    );
                }
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    let id = ctx.completion_id();
                    for (i, piece) in chunks.iter().enumerate() {
                        // A zero delay must not sleep: the timer would round it up to 1 ms.
                        if i > 0 && delay_ms > 0 {
                            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                        }
                        let mut delta = json!({"content": piece});
                        if i == 0 {
                            delta["role"] = json!("assistant");
                        }
                        // A send error means the client went away (aborted): stop.
                        if tx.send(Ok(ctx.chunk(&id, delta, None))).await.is_err() {
                            return;
                        }
                    }
                    let content = Some(chunks.concat());
                    let tail = [
                        ctx.chunk(&id, json!({}), Some("stop")),
                        ctx.usage_chunk(&id, usage(ctx.prompt_bytes, &content, &[])),
                        Bytes::from_static(b"data: [DONE]\n\n"),
                    ];
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
                let streaming = ctx.streaming;
                let frames: Vec<Bytes> = if streaming {
                    let id = ctx.completion_id();
                    split_text(&partial)
                        .into_iter()
                        .enumerate()
                        .map(|(i, piece)| {
                            let mut delta = json!({"content": piece});
                            if i == 0 {
                                delta["role"] = json!("assistant");
                            }
                            ctx.chunk(&id, delta, None)
                        })
                        .collect()
                } else {
                    // A truncated JSON document.
                    let full = completion(&ctx.completion_id(), &ctx.model, &Some(partial), &[], json!({})).to_string();
                    let half: String = full.chars().take(full.chars().count() / 2).collect();
                    vec![Bytes::from(half)]
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
                let mut res = if streaming { sse_response(body) } else { Response::new(body) };
                if !streaming {
                    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                res
            }
            Answer::Hang => {
                let mut shutdown = ctx.shared.shutdown.subscribe();
                let (tx, body) = channel_body();
                tokio::spawn(async move {
                    // Headers are out; send nothing until the server stops, then cut the
                    // connection. Ends early if the client disconnects (the sender notices
                    // the body was dropped).
                    let stopped = tokio::select! {
                        _ = shutdown.wait_for(|stopped| *stopped) => true,
                        _ = tx.closed() => false,
                    };
                    if stopped {
                        let _ = tx.send(Err(std::io::Error::other("fake-model stopped"))).await;
                    }
                });
                let mut res = if ctx.streaming { sse_response(body) } else { Response::new(body) };
                if !ctx.streaming {
                    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                res
            }
        }
    })
}

// ---- control API -------------------------------------------------------------------------

fn ok() -> Response {
    json_response(StatusCode::OK, json!({"ok": true}))
}

fn body_json(body: &Bytes) -> Result<Value, String> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))
}

async fn ctl_load(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let Some(path) = v.get("snapshot").and_then(Value::as_str) else {
        return bad_request("`snapshot` (path) is required");
    };
    let workdir = v.get("workdir").and_then(Value::as_str).map(Path::new);
    match s.lock().load_snapshot(Path::new(path), workdir) {
        Ok(()) => ok(),
        Err(e) => bad_request(&format!("{e:#}")),
    }
}

/// The harness' `POST /config {filePath, workDir}`: switch to a new test's snapshot and
/// forget the previous test's traffic.
async fn compat_config(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let (Some(path), Some(workdir)) =
        (v.get("filePath").and_then(Value::as_str), v.get("workDir").and_then(Value::as_str))
    else {
        return bad_request("filePath and workDir must be provided in config");
    };
    let mut st = s.lock();
    st.requests.clear();
    st.exchanges.clear();
    if Path::new(path).exists() {
        match st.load_snapshot(Path::new(path), Some(Path::new(workdir))) {
            Ok(()) => ok(),
            Err(e) => bad_request(&format!("{e:#}")),
        }
    } else {
        // Like the harness: a missing file means "no stored data" (every request mismatches).
        st.snapshot = Some(Arc::new(Snapshot {
            path: path.into(),
            models: Vec::new(),
            conversations: Vec::new(),
            errors: Vec::new(),
        }));
        st.set_workdir(Some(Path::new(workdir)));
        ok()
    }
}

async fn ctl_workdir(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let dir = v.get("workdir").and_then(Value::as_str).map(Path::new);
    s.lock().set_workdir(dir);
    ok()
}

async fn ctl_replies(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let list = match &v {
        Value::Array(items) => items.clone(),
        Value::Object(o) if o.contains_key("replies") => match &o["replies"] {
            Value::Array(items) => items.clone(),
            _ => return bad_request("`replies` must be a list"),
        },
        // A single reply object.
        Value::Object(_) => vec![v.clone()],
        _ => return bad_request("expected {\"replies\": [...]}"),
    };
    let mut parsed = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        match Reply::from_json(item) {
            Ok(r) => parsed.push(r),
            Err(e) => return bad_request(&format!("replies[{i}]: {e:#}")),
        }
    }
    let mut st = s.lock();
    st.replies.extend(parsed);
    let queued = st.replies.len();
    let pending: Vec<Value> = st.replies.iter().map(reply_to_json).collect();
    json_response(StatusCode::OK, json!({"ok": true, "queued": queued, "pending": pending}))
}

async fn ctl_requests(State(s): S) -> Response {
    json_response(StatusCode::OK, Value::Array(s.lock().requests.iter().map(CapturedRequest::to_json).collect()))
}

async fn ctl_clear_requests(State(s): S) -> Response {
    let mut st = s.lock();
    st.requests.clear();
    st.exchanges.clear();
    ok()
}

async fn ctl_exchanges(State(s): S) -> Response {
    json_response(StatusCode::OK, Value::Array(s.lock().exchanges.iter().map(Exchange::to_json).collect()))
}

async fn ctl_reset(State(s): S) -> Response {
    s.lock().reset();
    ok()
}

async fn ctl_models(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let models = match v.get("models") {
        Some(Value::Array(items)) => Some(items.iter().filter_map(|m| m.as_str().map(str::to_string)).collect()),
        Some(Value::Null) | None => None,
        Some(_) => return bad_request("`models` must be a list of ids or null"),
    };
    let endpoints = match v.get("supportedEndpoints") {
        Some(Value::Object(by_id)) => by_id
            .iter()
            .map(|(id, list)| {
                let list = list.as_array().map(|l| l.iter().filter_map(|e| e.as_str().map(str::to_string)).collect());
                (id.clone(), list.unwrap_or_default())
            })
            .collect(),
        Some(Value::Null) | None => HashMap::new(),
        Some(_) => return bad_request("`supportedEndpoints` must map model ids to lists of endpoints"),
    };
    let mut st = s.lock();
    st.models = models;
    st.model_endpoints = endpoints;
    ok()
}

async fn ctl_user(State(s): S, body: Bytes) -> Response {
    let v = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&e),
    };
    let (Some(token), Some(response)) = (v.get("token").and_then(Value::as_str), v.get("response")) else {
        return bad_request("expected {\"token\": \"...\", \"response\": {...}}");
    };
    s.lock().users_by_token.insert(token.to_string(), response.clone());
    ok()
}

async fn ctl_stop(State(s): S) -> Response {
    s.shutdown.send_replace(true);
    ok()
}
