//! A scripted CAPI stand-in on 127.0.0.1: each path answers from its own queue of replies
//! (404 when empty) and every request is captured for assertions.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use futures::SinkExt;
use llm_providers::copilot::{CopilotClient, CopilotConfig};
use llm_providers::retry::RetryPolicy;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Clean end of body.
    Eof,
    /// Connection torn down mid-body.
    Abort,
    /// Keep sending `keepalive` comment lines every `gap` until the client goes away.
    Trickle,
}

#[derive(Debug, Clone)]
pub enum Reply {
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    Sse {
        events: Vec<String>,
        split: Option<usize>,
        gap: Duration,
        ending: Ending,
    },
    /// Never answer.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Reply::Json { status, headers: vec![], body: body.to_string() }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Json { status, mut headers, body } => {
                headers.push((name.into(), value.into()));
                Reply::Json { status, headers, body }
            }
            other => other,
        }
    }

    /// Each chunk as one `data:` event, then `[DONE]`, sent in one piece per event.
    pub fn sse(chunks: &[Value]) -> Self {
        let mut events: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        events.push("data: [DONE]\n\n".into());
        Reply::Sse { events, split: None, gap: Duration::ZERO, ending: Ending::Eof }
    }

    /// Chunks without `[DONE]`, ended as given.
    pub fn sse_ending(chunks: &[Value], ending: Ending) -> Self {
        let events = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        Reply::Sse { events, split: None, gap: Duration::ZERO, ending }
    }

    pub fn raw_sse(raw: &str, split: usize) -> Self {
        Reply::Sse { events: vec![raw.into()], split: Some(split), gap: Duration::ZERO, ending: Ending::Eof }
    }

    /// Re-cut the body into pieces of `n` bytes, ignoring event boundaries.
    pub fn split_every(self, n: usize) -> Self {
        match self {
            Reply::Sse { events, gap, ending, .. } => Reply::Sse { events, split: Some(n), gap, ending },
            other => other,
        }
    }

    pub fn with_gap(self, gap: Duration) -> Self {
        match self {
            Reply::Sse { events, split, ending, .. } => Reply::Sse { events, split, gap, ending },
            other => other,
        }
    }
}

#[derive(Default)]
struct Inner {
    scripts: Mutex<HashMap<String, VecDeque<Reply>>>,
    requests: Mutex<Vec<Captured>>,
    /// Set once a streamed body is dropped before it finished (the client went away).
    stream_dropped: Arc<AtomicBool>,
}

pub struct Fake {
    pub base: String,
    inner: Arc<Inner>,
}

impl Fake {
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { base: format!("http://{addr}"), inner }
    }

    pub fn script(&self, path: &str, replies: impl IntoIterator<Item = Reply>) -> &Self {
        let mut scripts = self.inner.scripts.lock().expect("lock");
        scripts.entry(path.to_string()).or_default().extend(replies);
        self
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.inner.requests.lock().expect("lock").clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<Captured> {
        self.requests().into_iter().filter(|r| r.path == path).collect()
    }

    pub fn stream_dropped(&self) -> bool {
        self.inner.stream_dropped.load(Ordering::SeqCst)
    }

    /// A client on this fake with near-zero retry delays and no proxy from the environment.
    pub fn client(&self) -> CopilotClient {
        let mut config = CopilotConfig::new(Some("test-token".into()), "9.9.9");
        config.api_url = Some(self.base.clone());
        config.retry = fast_retries(3);
        client_with(config)
    }
}

pub fn fast_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(50),
        auth_retries: 0,
    }
}

pub fn client_with(config: CopilotConfig) -> CopilotClient {
    let http = reqwest::Client::builder().no_proxy().build().expect("http client");
    CopilotClient::with_http_client(config, http)
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    inner.requests.lock().expect("lock").push(Captured {
        method: method.to_string(),
        path: path.clone(),
        query: uri.query().map(str::to_string),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = inner.scripts.lock().expect("lock").get_mut(&path).and_then(VecDeque::pop_front);
    let reply = reply.unwrap_or_else(|| Reply::json(404, json!({"message": "Not Found"})));
    match reply {
        Reply::Json { status, headers, body } => {
            let mut builder = Response::builder()
                .status(StatusCode::from_u16(status).expect("status"))
                .header("content-type", "application/json")
                .header("x-github-request-id", "req-123");
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            builder.body(Body::from(body)).expect("response")
        }
        Reply::Sse { events, split, gap, ending } => {
            let pieces: Vec<Bytes> = match split {
                Some(n) => events.concat().into_bytes().chunks(n.max(1)).map(Bytes::copy_from_slice).collect(),
                None => events.into_iter().map(Bytes::from).collect(),
            };
            let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
            let dropped = inner.stream_dropped.clone();
            tokio::spawn(async move {
                for piece in pieces {
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                    if tx.send(Ok(piece)).await.is_err() {
                        dropped.store(true, Ordering::SeqCst);
                        return;
                    }
                }
                match ending {
                    Ending::Eof => {}
                    Ending::Abort => {
                        // Let hyper flush what was sent; an immediate abort may discard it.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let _ = tx.send(Err(std::io::Error::other("fake abort"))).await;
                    }
                    Ending::Trickle => loop {
                        tokio::time::sleep(gap.max(Duration::from_millis(10))).await;
                        if tx.send(Ok(Bytes::from_static(b": keepalive\n"))).await.is_err() {
                            dropped.store(true, Ordering::SeqCst);
                            return;
                        }
                    },
                }
            });
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("x-github-request-id", "req-stream")
                .body(Body::from_stream(rx))
                .expect("response")
        }
        Reply::Hang => std::future::pending().await,
    }
}

// Chunk builders for the chat-completions stream.

pub fn text(choice: usize, text: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "test-model",
           "choices": [{"index": choice, "delta": {"content": text}, "finish_reason": null}]})
}

pub fn role(choice: usize) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": choice, "delta": {"role": "assistant", "content": ""}}]})
}

pub fn finish(choice: usize, reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": choice, "delta": {}, "finish_reason": reason}]})
}

pub fn tool_start(choice: usize, index: usize, id: &str, name: &str) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": choice, "delta": {"tool_calls": [
        {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
    ]}}]})
}

pub fn tool_args(choice: usize, index: usize, arguments: &str) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": choice, "delta": {"tool_calls": [
        {"index": index, "function": {"arguments": arguments}}
    ]}}]})
}

pub fn usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"id": "chatcmpl-1", "choices": [], "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached}
    }})
}
