//! `POST /v1/chat/completions`: an agent as an OpenAI-compatible model (`model` = the agent's
//! name), authenticated with the agent's tenant's token. Each request is a session of its own
//! (earlier messages as context); a tool outside `allow_tools` is refused, since nobody can be
//! asked.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::turn::{Ask, Outcome, Tap, Turn};
use super::{message, request, session_params, Agent, Extensions, Sink, BODY_QUEUE};

#[derive(Deserialize)]
struct CompletionRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: Option<bool>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
}

impl ChatMessage {
    /// A string, or the text parts of a content array.
    fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
            _ => String::new(),
        }
    }
}

/// An error in OpenAI's shape.
fn error(status: StatusCode, kind: &str, code: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

pub async fn completions(State(ext): State<Arc<Extensions>>, headers: HeaderMap, body: Bytes) -> Response {
    let tenant = match crate::serve::http::bearer(&headers) {
        Some(token) => ext.tenancy.authenticate(token).map(|p| p.tenant),
        None => {
            ext.tenancy.record_auth_failure();
            None
        }
    };
    let Some(tenant) = tenant else {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "invalid_api_key",
            "missing or invalid bearer token",
        );
    };
    let request: CompletionRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let message = format!("invalid request body: {e}");
            return error(StatusCode::BAD_REQUEST, "invalid_request_error", "invalid_body", &message);
        }
    };
    // Another tenant's agent is answered as one that does not exist.
    let agent = ext.agents.get(&request.model).filter(|a| a.tenant.name == tenant.name);
    if agent.is_none() {
        let message = format!("The model `{}` does not exist", request.model);
        return error(StatusCode::NOT_FOUND, "invalid_request_error", "model_not_found", &message);
    }
    let Some(last) = request.messages.iter().rposition(|m| m.role == "user") else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_body",
            "messages must contain a user message",
        );
    };
    let earlier: Vec<(String, String)> =
        request.messages[..last].iter().map(|m| (m.role.clone(), m.text())).filter(|(_, t)| !t.is_empty()).collect();
    let earlier: Vec<(&str, &str)> = earlier.iter().map(|(r, t)| (r.as_str(), t.as_str())).collect();
    let prompt = request::prompt_with_history(&earlier, &request.messages[last].text());
    let name = request.model.clone();
    let stream = request.stream.unwrap_or(false);
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = chrono::Utc::now().timestamp();
    let header = Header { id, created, model: name.clone() };
    if stream {
        let (tx, rx) = mpsc::channel(BODY_QUEUE);
        tokio::spawn(async move {
            let Some(agent) = ext.agents.get(&name) else { return };
            let mut sink = ChunkSink { tx, header, first: true };
            match run(&ext, agent, prompt, &mut sink).await {
                Ok(outcome) if outcome.gone => {}
                Ok(outcome) if has_agent_error(&outcome) => {
                    sink.frame(&json!({"error": {"message": error_text(&outcome), "type": "server_error"}})).await;
                    sink.done().await;
                }
                Ok(_) => {
                    let chunk = sink.header.chunk(json!({}), json!("stop"));
                    sink.frame(&chunk).await;
                    sink.done().await;
                }
                Err(message) => {
                    sink.frame(&json!({"error": {"message": message, "type": "server_error"}})).await;
                    sink.done().await;
                }
            }
        });
        return super::stream_response("text/event-stream", rx);
    }
    let Some(agent) = ext.agents.get(&name) else { return StatusCode::NOT_FOUND.into_response() };
    let mut sink = Collect(String::new());
    match run(&ext, agent, prompt, &mut sink).await {
        Ok(outcome) if has_agent_error(&outcome) && sink.0.is_empty() => {
            error(StatusCode::BAD_GATEWAY, "server_error", "agent_failed", &error_text(&outcome))
        }
        Ok(_) => {
            let body = json!({
                "id": header.id,
                "object": "chat.completion",
                "created": header.created,
                "model": header.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": sink.0}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            });
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
        }
        Err(message) => error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "agent_failed", &message),
    }
}

fn has_agent_error(outcome: &Outcome) -> bool {
    outcome.errors.iter().any(|e| e.kind == "agent")
}

fn error_text(outcome: &Outcome) -> String {
    outcome.errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join("; ")
}

/// One session for one request: created, given the prompt, watched to the end, unloaded.
async fn run(
    ext: &Extensions,
    agent: &Agent,
    prompt: String,
    sink: &mut (impl Sink + ?Sized),
) -> Result<Outcome, String> {
    let engine = &ext.server.engine;
    let session_id = agent.tenant.new_session_id();
    let mut params = session_params(&agent.config, &session_id, &agent.tenant.workspace);
    rpc_server::tenant_credentials::apply(&agent.tenant, None, &mut params)?;
    match ext.tenancy.claim(&agent.tenant, None, &session_id).await {
        Ok(rpc_server::tenancy::Claim::Claimed) => {}
        Ok(rpc_server::tenancy::Claim::Taken) => return Err("session id taken".into()),
        Ok(rpc_server::tenancy::Claim::Full) => return Err("the tenant holds as many sessions as it may".into()),
        Err(e) => return Err(format!("recording the session: {e}")),
    }
    let (tap, rx) = Tap::new();
    let session = match engine.create(&params, Some(tap.clone())).await {
        Ok(s) => s,
        Err(e) => {
            let _ = ext.tenancy.release(&session_id).await;
            return Err(format!("starting the session: {e}"));
        }
    };
    let mut turn = Turn {
        session: session.clone(),
        tap: tap.clone(),
        rx,
        allow: agent.config.allow_tools.clone(),
        ask: Ask::Refuse,
        cwd: session.view().settings.cwd.clone(),
        running_tools: 0,
    };
    let sent = session.send(message(prompt), false).await;
    let outcome = match sent {
        Ok(()) => Ok(turn.watch_with(sink).await),
        Err(e) => Err(format!("sending the message: {e}")),
    };
    session.unsubscribe(tap.id());
    let _ = engine.shutdown_session(&session_id, protocol::generated::types::ShutdownType::Routine).await;
    outcome
}

struct Header {
    id: String,
    created: i64,
    model: String,
}

impl Header {
    fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }
}

struct ChunkSink {
    tx: mpsc::Sender<Bytes>,
    header: Header,
    /// The first chunk carries the role.
    first: bool,
}

impl ChunkSink {
    async fn frame(&self, value: &Value) -> bool {
        self.tx.send(Bytes::from(format!("data: {value}\n\n"))).await.is_ok()
    }

    async fn done(&self) {
        let _ = self.tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
    }
}

#[async_trait::async_trait]
impl Sink for ChunkSink {
    async fn text(&mut self, text: &str) -> bool {
        let delta = if self.first { json!({"role": "assistant", "content": text}) } else { json!({"content": text}) };
        self.first = false;
        let chunk = self.header.chunk(delta, Value::Null);
        self.frame(&chunk).await
    }
}

struct Collect(String);

#[async_trait::async_trait]
impl Sink for Collect {
    async fn text(&mut self, text: &str) -> bool {
        self.0.push_str(text);
        true
    }
}
