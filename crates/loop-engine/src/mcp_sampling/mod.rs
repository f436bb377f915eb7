//! MCP sampling, as the original runs it: a server's `sampling/createMessage` becomes an
//! ephemeral `sampling.requested` event and waits for a client. The client may run the
//! inference with `session.mcp.executeSampling` (one call of the session's current model;
//! `cancelSamplingExecution` stops it) and answers with `session.ui.handlePendingSampling`
//! (`sampling.completed` follows). Approval is the client's business: the original's own UI
//! asks its user (or remembers an `mcp-sampling` approval) before executing, and no
//! `permission.requested` goes out for sampling.

use std::sync::{Arc, Weak};
use std::time::Duration;

use llm_providers::{ContentPart, History, ImageUrl, Message, SamplingOptions, UserContent};
use mcp_client::SamplingRequest;
use protocol::event::SessionEvent;
use protocol::generated::types as t;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::handle::{SessionHandle, SessionParts};

pub(crate) mod requests;

use requests::{lock, Answer, SamplingRequests};

/// How long a server's request waits for a client's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(300);

const REJECTED: &str = "Sampling request was rejected";

/// Forgets a request whose server stopped waiting.
struct Forget<'a>(&'a SamplingRequests, String);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.0.waiting).remove(&self.1);
    }
}

/// Lets the session's MCP servers ask its clients for samples.
pub(crate) fn attach(handle: &SessionHandle) {
    attach_to(handle.mcp(), handle);
}

/// Lets another host's servers (a custom agent's own) ask the session's clients for samples.
pub(crate) fn attach_to(host: &mcp_client::McpHost, handle: &SessionHandle) {
    let session = handle.downgrade();
    host.set_sampling_handler(Arc::new(move |request, cancel| Box::pin(ask(session.clone(), request, cancel))));
}

async fn ask(session: Weak<SessionParts>, request: SamplingRequest, cancel: CancellationToken) -> Answer {
    let Some(parts) = session.upgrade() else { return Err("The session has ended".into()) };
    let handle = SessionHandle::from_parts(parts);
    let request_id = uuid::Uuid::new_v4().to_string();
    let (tx, rx) = oneshot::channel();
    let requests = handle.mcp_sampling();
    lock(&requests.waiting).insert(request_id.clone(), (request.server.clone(), tx));
    let _forget = Forget(requests, request_id.clone());
    let data = json!({
        "requestId": request_id,
        "serverName": request.server,
        "mcpRequestId": request.mcp_request_id,
        "request": request.params,
    });
    handle.emitter().emit_ephemeral(SessionEvent::Other { kind: "sampling.requested".into(), data });
    let stop = handle.stopped().clone();
    let outcome = tokio::select! {
        answer = rx => return answer.unwrap_or_else(|_| Err(REJECTED.into())),
        _ = cancel.cancelled() => "Sampling request was cancelled by the server",
        _ = stop.cancelled() => return Err("The session has ended".into()),
        _ = tokio::time::sleep(ANSWER_WAIT) => "Sampling request timed out waiting for the client",
    };
    // Clients showing the request can dismiss it.
    handle.emitter().emit_ephemeral(completed(&request_id));
    Err(outcome.into())
}

fn completed(request_id: &str) -> SessionEvent {
    SessionEvent::Other { kind: "sampling.completed".into(), data: json!({ "requestId": request_id }) }
}

/// `session.ui.handlePendingSampling`: whether a request with that id was waiting. No response
/// rejects it.
pub(crate) fn resolve(
    handle: &SessionHandle,
    request_id: &str,
    response: Option<serde_json::Map<String, Value>>,
) -> bool {
    let Some((_, tx)) = lock(&handle.mcp_sampling().waiting).remove(request_id) else { return false };
    let answer = response.map(Value::Object).ok_or_else(|| REJECTED.to_string());
    let _ = tx.send(answer);
    handle.emitter().emit_ephemeral(completed(request_id));
    true
}

/// `session.mcp.cancelSamplingExecution`: whether an execution with that id was running.
pub(crate) fn cancel(handle: &SessionHandle, request_id: &str) -> bool {
    let token = lock(&handle.mcp_sampling().running).remove(request_id);
    token.map(|t| t.cancel()).is_some()
}

/// Stops tracking an execution however it ends.
struct Running<'a>(&'a SamplingRequests, String);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(&self.0.running).remove(&self.1);
    }
}

fn failure(error: impl Into<String>) -> t::McpSamplingExecutionResult {
    t::McpSamplingExecutionResult {
        action: t::McpSamplingExecutionAction::Failure,
        result: None,
        error: Some(error.into()),
    }
}

/// `session.mcp.executeSampling`: one inference with the session's current model, or the one
/// the request's model hints name, with the request's limits.
pub(crate) async fn execute(
    handle: &SessionHandle,
    p: t::SessionMcpExecuteSamplingParams,
) -> t::McpSamplingExecutionResult {
    let server = &p.server_name;
    // The session's servers, or another host's (a custom agent's) that has asked.
    let asking = lock(&handle.mcp_sampling().waiting).values().any(|(s, _)| s == server);
    if !handle.mcp().is_configured(server) && !asking {
        return failure(format!("Sampling request from MCP server \"{server}\" failed: the server is not configured"));
    }
    let request = Value::Object(p.request);
    let (system, history) = match convert(&request) {
        Ok(parts) => parts,
        Err(e) => return failure(format!("Sampling request from MCP server \"{server}\" failed: {e}")),
    };
    let token = CancellationToken::new();
    let requests = handle.mcp_sampling();
    {
        let mut running = lock(&requests.running);
        if running.contains_key(&p.request_id) {
            return failure(format!("Sampling execution \"{}\" is already running", p.request_id));
        }
        running.insert(p.request_id.clone(), token.clone());
    }
    let _running = Running(requests, p.request_id.clone());
    let hinted = match hints(&request) {
        hints if hints.is_empty() => None,
        hints => {
            let providers = handle.view().settings.providers.clone();
            let models = handle.deps().session_models(&providers).await.unwrap_or_default();
            let ids: Vec<String> = models.into_iter().map(|m| m.id).collect();
            pick_model(&hints, &ids)
        }
    };
    let Ok((route, model)) = handle.sampling_route(hinted).await else {
        return failure("Sampling request failed: the session has ended");
    };
    let req = llm_providers::ChatRequest {
        model: route.model.clone(),
        github_token: None,
        system: system.into(),
        history,
        tools: Default::default(),
        stream: true,
        initiator: llm_providers::Initiator::Agent,
        interaction_id: uuid::Uuid::new_v4().to_string(),
        session_id: handle.id().to_string(),
        extra_headers: Vec::new(),
        reasoning_effort: None,
        purpose: llm_providers::Purpose::Turn,
        client_name: None,
        sub_agent: None,
        sampling: options(&request),
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = tokio::select! {
        r = route.client.chat(req, tx, token.clone()) => r,
        _ = token.cancelled() => Err(llm_providers::ProviderError::Cancelled),
    };
    match outcome {
        _ if token.is_cancelled() => t::McpSamplingExecutionResult {
            action: t::McpSamplingExecutionAction::Cancelled,
            result: None,
            error: None,
        },
        Ok(resp) => {
            let text: String = resp.replies.iter().map(|r| r.content.as_str()).collect();
            let stop = match resp.replies.first().and_then(|r| r.finish_reason.as_deref()) {
                Some("length") => "maxTokens",
                _ => "endTurn",
            };
            let result = json!({
                "role": "assistant",
                "content": {"type": "text", "text": text},
                "model": model,
                "stopReason": stop,
            });
            t::McpSamplingExecutionResult {
                action: t::McpSamplingExecutionAction::Success,
                result: result.as_object().cloned(),
                error: None,
            }
        }
        Err(e) => failure(format!("Sampling request from MCP server \"{server}\" failed: {e}")),
    }
}

/// What the request asks of the inference: `maxTokens`, `temperature`, `stopSequences`.
fn options(request: &Value) -> SamplingOptions {
    SamplingOptions {
        max_tokens: request.get("maxTokens").and_then(Value::as_u64).filter(|n| *n > 0),
        temperature: request.get("temperature").and_then(Value::as_f64),
        stop: request
            .get("stopSequences")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
    }
}

/// The model names the server hints at (`modelPreferences.hints[].name`), in its order.
fn hints(request: &Value) -> Vec<String> {
    let hints = request.pointer("/modelPreferences/hints").and_then(Value::as_array);
    hints
        .into_iter()
        .flatten()
        .filter_map(|h| h.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The first hint that names a model the session can use, as MCP suggests reading hints: the
/// exact id, else the first id containing the hint (ignoring case). `None`: the session's model.
fn pick_model(hints: &[String], models: &[String]) -> Option<String> {
    hints.iter().find_map(|hint| {
        let wanted = hint.to_lowercase();
        models
            .iter()
            .find(|id| id.as_str() == hint)
            .or_else(|| models.iter().find(|id| id.to_lowercase().contains(&wanted)))
            .cloned()
    })
}

/// An MCP `CreateMessageRequest`'s params as a system prompt and a history.
fn convert(request: &Value) -> Result<(String, History), String> {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or("the request has no messages")?;
    let mut history = History::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        // A message holds one content block, or (newer MCP) a list of them.
        let blocks: Vec<&Value> = match m.get("content") {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(v @ Value::Object(_)) => vec![v],
            _ => return Err(format!("message {i} has no content")),
        };
        let mut parts = Vec::new();
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
                    parts.push(ContentPart::Text { text: text.to_string() });
                }
                Some("image") => {
                    let data = b.get("data").and_then(Value::as_str).unwrap_or_default();
                    let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png");
                    parts.push(ContentPart::ImageUrl {
                        image_url: ImageUrl { url: format!("data:{mime};base64,{data}") },
                    });
                }
                Some(other) => return Err(format!("message {i} has unsupported content of type \"{other}\"")),
                None => return Err(format!("message {i} has content without a type")),
            }
        }
        match role {
            "user" => {
                let content = match parts.as_slice() {
                    [ContentPart::Text { text }] => UserContent::Text(text.clone()),
                    _ => UserContent::Parts(parts),
                };
                history.push(Message::User { content });
            }
            "assistant" => {
                let text: Vec<String> = parts
                    .into_iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text),
                        _ => None,
                    })
                    .collect();
                history.push(Message::Assistant {
                    content: Some(text.join("\n")),
                    tool_calls: Vec::new(),
                    reasoning: None,
                });
            }
            other => return Err(format!("message {i} has an unknown role \"{other}\"")),
        }
    }
    let system = request.get("systemPrompt").and_then(Value::as_str).unwrap_or_default().to_string();
    Ok((system, history))
}

impl SessionHandle {
    /// `session.mcp.executeSampling`: one inference with the session's model for an MCP server.
    pub async fn execute_sampling(&self, params: t::SessionMcpExecuteSamplingParams) -> t::McpSamplingExecutionResult {
        execute(self, params).await
    }

    /// `session.mcp.cancelSamplingExecution`: whether an execution with that id was running.
    pub fn cancel_sampling(&self, request_id: &str) -> bool {
        cancel(self, request_id)
    }

    /// `session.ui.handlePendingSampling`: whether a server request with that id was waiting.
    pub fn resolve_sampling(&self, request_id: &str, response: Option<serde_json::Map<String, Value>>) -> bool {
        resolve(self, request_id, response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_text_and_image_messages() {
        let req = json!({
            "systemPrompt": "be brief",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": {"type": "text", "text": "hello"}},
                {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "data": "AAA", "mimeType": "image/png"}]},
            ],
            "maxTokens": 10,
        });
        let (system, history) = convert(&req).unwrap();
        assert_eq!(system, "be brief");
        let messages: Vec<&Message> = history.messages().collect();
        assert_eq!(messages.len(), 3);
        assert!(matches!(messages[0], Message::User { content: UserContent::Text(t) } if t == "hi"));
        assert!(matches!(messages[2], Message::User { content: UserContent::Parts(p) } if p.len() == 2));
    }

    #[test]
    fn reads_the_requests_limits_and_model_hints() {
        let req = json!({
            "maxTokens": 64, "temperature": 0.5, "stopSequences": ["STOP", 3],
            "modelPreferences": {"hints": [{"name": "nonesuch"}, {"name": "GPT"}, {}], "speedPriority": 1},
        });
        let o = options(&req);
        assert_eq!((o.max_tokens, o.temperature, o.stop), (Some(64), Some(0.5), vec!["STOP".to_string()]));
        assert_eq!(options(&json!({})), SamplingOptions::default());
        let h = hints(&req);
        assert_eq!(h, ["nonesuch", "GPT"]);
        let models = ["claude-sonnet-4.5".to_string(), "gpt-4.1".to_string(), "gpt-4".to_string()];
        assert_eq!(pick_model(&h, &models).as_deref(), Some("gpt-4.1"));
        assert_eq!(pick_model(&["gpt-4".into()], &models).as_deref(), Some("gpt-4"));
        assert_eq!(pick_model(&["nonesuch".into()], &models), None);
    }

    #[test]
    fn refuses_requests_without_messages() {
        assert_eq!(convert(&json!({})).unwrap_err(), "the request has no messages");
        assert!(convert(&json!({"messages": [{"role": "user", "content": {"type": "audio"}}]})).is_err());
    }
}
