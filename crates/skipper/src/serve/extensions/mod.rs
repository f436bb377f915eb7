//! The Copilot Extensions agent endpoint (`POST /agents/{name}`) and an OpenAI-compatible
//! `POST /v1/chat/completions` on the team server. Both are in-process clients of the same
//! engine and tenants as the JSON-RPC side: a thread (or a completion request) is a session of
//! the agent's tenant, driven through its `SessionHandle` and watched through its events
//! ([`turn`]). See issue 12 and the README's "Copilot Extensions" section.

pub mod config;
mod openai;
mod request;
pub mod signature;
mod sse;
mod threads;
mod turn;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use loop_engine::{PendingAnswer, QueuedMessage, SessionHandle};
use protocol::generated::types::PermissionDecision;
use protocol::methods::{SessionConfigParams, SystemMessageConfig};
use rpc_server::tenancy::{Tenancy, Tenant};
use rpc_server::Server;
use serde_json::json;
use tokio::sync::mpsc;

use config::AgentConfig;
use request::{AgentRequest, Answer};
use signature::PublicKeys;
use turn::{Ask, Tap, Turn};

/// Chunks queued for one HTTP answer.
const BODY_QUEUE: usize = 64;

pub struct Agent {
    pub config: AgentConfig,
    pub tenant: Arc<Tenant>,
}

pub struct Extensions {
    agents: HashMap<String, Agent>,
    /// `None`: signatures are not checked (`verify_signatures = false`).
    keys: Option<PublicKeys>,
    server: Arc<Server>,
    tenancy: Arc<Tenancy>,
    /// One request at a time per thread: a turn's watcher must see only its own turn.
    busy: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Extensions {
    pub fn new(
        agents: &[AgentConfig],
        settings: &config::ExtensionsConfig,
        server: Arc<Server>,
        tenancy: Arc<Tenancy>,
    ) -> anyhow::Result<Arc<Self>> {
        let names: Vec<&str> = tenancy.tenants().map(|t| t.name.as_str()).collect();
        config::check(agents, settings, &names)?;
        let keys = match (&settings.public_keys_file, settings.verify_signatures) {
            (Some(path), true) => Some(PublicKeys::load(path)?),
            (None, true) => Some(PublicKeys::default()),
            (_, false) => {
                if !agents.is_empty() {
                    tracing::warn!("[extensions] verify_signatures is off: agent requests are not authenticated");
                }
                None
            }
        };
        let agents = agents
            .iter()
            .filter_map(|a| {
                let tenant = tenancy.tenants().find(|t| t.name == a.tenant)?.clone();
                Some((a.name.clone(), Agent { config: a.clone(), tenant }))
            })
            .collect();
        Ok(Arc::new(Self { agents, keys, server, tenancy, busy: Default::default() }))
    }

    /// Waits for the thread's previous request to finish; the guard holds the thread.
    async fn hold(&self, session_id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            // Forget threads nobody holds or waits for, so the map stays as small as the traffic.
            busy.retain(|_, l| Arc::strong_count(l) > 1);
            busy.entry(session_id.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }
}

pub fn routes(ext: Arc<Extensions>) -> Router {
    Router::new()
        .route("/agents/{name}", post(agent_endpoint))
        .route("/v1/chat/completions", post(openai::completions))
        .with_state(ext)
}

/// A JSON error answer: `{"error": message}`.
fn json_error(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"error": message}).to_string()).into_response()
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn agent_endpoint(
    State(ext): State<Arc<Extensions>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Signature first: an unsigned caller learns nothing, not even which agents exist. The
    // request's `X-GitHub-Token` is never read here, so it reaches no log, file or model.
    if let Some(keys) = &ext.keys {
        let key_id = header_text(&headers, "github-public-key-identifier");
        let signature = header_text(&headers, "github-public-key-signature");
        if let Err(e) = keys.verify(key_id, signature, &body) {
            ext.tenancy.record_auth_failure();
            return json_error(StatusCode::UNAUTHORIZED, &e.to_string());
        }
    }
    if !ext.agents.contains_key(&name) {
        return json_error(StatusCode::NOT_FOUND, &format!("no agent named {name:?}"));
    }
    let request = match AgentRequest::parse(&body) {
        Ok(r) => r,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e),
    };
    let (tx, rx) = mpsc::channel(BODY_QUEUE);
    tokio::spawn(async move {
        if let Some(agent) = ext.agents.get(&name) {
            answer_thread(&ext, agent, request, SseSink { tx }).await;
        }
    });
    stream_response("text/event-stream", rx)
}

pub(crate) fn stream_response(content_type: &'static str, rx: mpsc::Receiver<Bytes>) -> Response {
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx)) });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Where the answer's text goes.
#[async_trait::async_trait]
pub(crate) trait Sink: Send {
    /// `false` once the client is gone.
    async fn text(&mut self, text: &str) -> bool;
}

struct SseSink {
    tx: mpsc::Sender<Bytes>,
}

impl SseSink {
    async fn send(&self, frame: String) -> bool {
        self.tx.send(Bytes::from(frame)).await.is_ok()
    }
}

#[async_trait::async_trait]
impl Sink for SseSink {
    async fn text(&mut self, text: &str) -> bool {
        self.send(sse::text(text)).await
    }
}

/// The configuration of an agent's sessions.
fn session_params(agent: &AgentConfig, session_id: &str, cwd: &std::path::Path) -> SessionConfigParams {
    SessionConfigParams {
        session_id: Some(session_id.to_string()),
        model: agent.model.clone(),
        client_name: Some("copilot-extensions".into()),
        working_directory: Some(cwd.to_string_lossy().into_owned()),
        streaming: Some(true),
        request_permission: Some(true),
        system_message: agent.instructions.as_ref().map(|text| SystemMessageConfig {
            mode: Some("append".into()),
            content: Some(text.clone()),
            sections: None,
        }),
        ..Default::default()
    }
}

fn message(prompt: String) -> QueuedMessage {
    QueuedMessage { prompt, ..Default::default() }
}

/// A session of the agent's tenant with `tap` subscribed: the loaded one, the one on disk,
/// or a new one. `Ok((session, known))`; `known` is false for a new session.
async fn attach(
    ext: &Extensions,
    agent: &Agent,
    session_id: &str,
    tap: Arc<Tap>,
) -> Result<(SessionHandle, bool), String> {
    let engine = &ext.server.engine;
    let tenant = &agent.tenant;
    let mut params = session_params(&agent.config, session_id, &tenant.workspace);
    rpc_server::tenant_credentials::apply(tenant, None, &mut params)?;
    let exists = engine.get(session_id).is_some() || engine.layout().events_path(session_id).exists();
    if exists {
        if !ext.tenancy.owns(tenant, session_id) {
            return Err("this thread belongs to another session owner".into());
        }
        if let Some(session) = engine.get(session_id) {
            session.subscribe(tap);
            return Ok((session, true));
        }
        let session = engine.resume(&params, Some(tap)).await.map_err(|e| format!("resuming the thread: {e}"))?;
        return Ok((session, true));
    }
    match ext.tenancy.claim(tenant, None, session_id).await {
        Ok(rpc_server::tenancy::Claim::Claimed) => {}
        Ok(rpc_server::tenancy::Claim::Taken) => return Err("this thread belongs to another session owner".into()),
        Ok(rpc_server::tenancy::Claim::Full) => return Err("the tenant holds as many sessions as it may".into()),
        Err(e) => return Err(format!("recording the thread: {e}")),
    }
    match engine.create(&params, Some(tap)).await {
        Ok(session) => Ok((session, false)),
        Err(e) => {
            let _ = ext.tenancy.release(session_id).await;
            Err(format!("starting the thread: {e}"))
        }
    }
}

async fn answer_thread(ext: &Extensions, agent: &Agent, request: AgentRequest, mut sink: SseSink) {
    let thread = threads::session_id(&agent.tenant.name, &agent.config.name, &request.copilot_thread_id);
    // The tenant's namespace of ids (`rpc_server::session_ids`), but a thread begun before ids
    // were namespaced goes on in the session it has.
    let session_id = match ext.tenancy.owns(&agent.tenant, &thread) {
        true => thread,
        false => format!("{}{thread}", agent.tenant.id_prefix()),
    };
    let _held = ext.hold(&session_id).await;
    let (tap, rx) = Tap::new();
    let (session, known) = match attach(ext, agent, &session_id, tap.clone()).await {
        Ok(s) => s,
        Err(message) => {
            sink.send(sse::errors(&[turn::agent_error("thread_unavailable", &message)])).await;
            sink.send(sse::done()).await;
            return;
        }
    };
    let mut turn = Turn {
        session: session.clone(),
        tap: tap.clone(),
        rx,
        allow: agent.config.allow_tools.clone(),
        ask: Ask::User,
        cwd: session.view().settings.cwd.clone(),
        running_tools: 0,
    };
    let ending = match start(&mut turn, &request, known).await {
        Ok(None) => {
            let outcome = turn.watch_with(&mut sink).await;
            if outcome.gone {
                None
            } else if let Some(c) = outcome.confirm {
                Some(sse::confirmation(&c.id, &c.title, &c.message))
            } else if !outcome.errors.is_empty() {
                Some(sse::errors(&outcome.errors))
            } else if !outcome.references.is_empty() {
                Some(sse::references(&outcome.references))
            } else {
                Some(String::new())
            }
        }
        Ok(Some(confirm)) => Some(sse::confirmation(&confirm.id, &confirm.title, &confirm.message)),
        Err(e) => Some(sse::errors(&[e])),
    };
    session.unsubscribe(tap.id());
    if let Some(ending) = ending {
        if ending.is_empty() || sink.send(ending).await {
            sink.send(sse::done()).await;
        }
    }
}

/// Hands the request's input to the session: the answer to a pending confirmation, or a new
/// message. `Ok(Some(_))`: another request still waits for the user, to be asked first.
async fn start(turn: &mut Turn, request: &AgentRequest, known: bool) -> Result<Option<turn::Confirm>, sse::AgentError> {
    let last = request.last_user().map(|m| m.text().to_string()).unwrap_or_default();
    if let (Some(answer), true) = (request.answer(), known) {
        let (id, decision) = match &answer {
            Answer::Accepted(id) => (id.clone(), PermissionDecision::Approved),
            Answer::Dismissed(id) => (id.clone(), PermissionDecision::Reject(Default::default())),
        };
        let answered = turn.session.answer(&id, PendingAnswer::Permission(decision)).await.unwrap_or(false);
        if answered {
            if matches!(answer, Answer::Accepted(_)) {
                turn.running_tools = 1;
            }
            // Calls made together ask together: one still waiting is asked for next.
            return Ok(next_pending(&turn.session).await);
        }
        if last.trim().is_empty() {
            return Err(turn::agent_error("confirmation_expired", "That confirmation is no longer pending."));
        }
    }
    if last.trim().is_empty() {
        return Err(turn::agent_error("empty_message", "The message is empty."));
    }
    dismiss_pending(turn).await;
    let prompt = if known {
        last
    } else {
        let earlier: Vec<(&str, &str)> = request.earlier().iter().map(|m| (m.role.as_str(), m.text())).collect();
        request::prompt_with_history(&earlier, &last)
    };
    turn.session
        .send(message(prompt), false)
        .await
        .map_err(|e| turn::agent_error("send_failed", &format!("The message could not be sent: {e}")))?;
    Ok(None)
}

/// The first permission request still waiting, as a confirmation.
async fn next_pending(session: &SessionHandle) -> Option<turn::Confirm> {
    let pending = session.pending_permissions().await.ok()?;
    let (id, prompt) = pending.into_iter().next()?;
    let request = serde_json::to_value(&prompt).unwrap_or_default();
    Some(turn::confirmation(&id, None, &request))
}

/// A user who writes a new message instead of answering a confirmation dismissed it; the run
/// that waited ends before the new message starts one.
async fn dismiss_pending(turn: &mut Turn) {
    let Ok(pending) = turn.session.pending_permissions().await else { return };
    if pending.is_empty() {
        return;
    }
    for (id, _) in pending {
        let decision = PermissionDecision::Reject(Default::default());
        let _ = turn.session.answer(&id, PendingAnswer::Permission(decision)).await;
    }
    turn.wait_idle().await;
}
