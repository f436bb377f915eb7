//! SDK-hosted inference (`llmInference.*`): once a client calls `llmInference.setProvider`,
//! every model-layer HTTP request (catalogue, chat, any provider) is handed to that client,
//! which performs it and streams the answer back. Until then, and after it disconnects,
//! requests go to the network.
//!
//! A request is `llmInference.httpRequestStart` (the head) and `llmInference.httpRequestChunk`
//! (the body, `end: true`) sent to the client; the answer arrives as the client's
//! `llmInference.httpResponseStart` (status, headers) and `llmInference.httpResponseChunk`s
//! (body pieces, then `end` or `error`), matched by the request id we minted. Dropping the
//! response before its end tells the client to stop (`cancel: true`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use futures::Stream;
use llm_providers::transport::{
    header_lists, header_map, HeaderMap, HttpRequest, HttpResponse, HttpTransport, StatusCode,
};
use llm_providers::ProviderError;
use protocol::generated::types as t;
use tokio::sync::{mpsc, oneshot};

use crate::caller::Caller;

/// Body pieces in flight per response before the client's chunk calls wait.
const BODY_QUEUE: usize = 32;

type Head = Result<(u16, HeaderMap), String>;

struct Pending {
    /// Which connection serves it (to fail it when that connection goes).
    caller_id: u64,
    head: Option<oneshot::Sender<Head>>,
    body: mpsc::Sender<Result<Bytes, ProviderError>>,
}

pub struct InferenceBridge {
    /// Where requests go while no client serves them.
    network: Arc<dyn HttpTransport>,
    provider: Mutex<Option<Weak<Caller>>>,
    pending: Mutex<HashMap<String, Pending>>,
    /// Itself, for the exchanges it hands out (they outlive no bridge).
    me: Weak<InferenceBridge>,
}

/// Why `setProvider` was refused.
#[derive(Debug, thiserror::Error)]
#[error("Another client is already the LLM inference provider.")]
pub struct ProviderTaken;

impl InferenceBridge {
    pub fn new(network: Arc<dyn HttpTransport>) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            network,
            provider: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            me: me.clone(),
        })
    }

    fn provider_slot(&self) -> MutexGuard<'_, Option<Weak<Caller>>> {
        self.provider.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client serving requests now, if it is still connected.
    fn provider(&self) -> Option<Arc<Caller>> {
        self.provider_slot().as_ref().and_then(Weak::upgrade)
    }

    /// `llmInference.setProvider`: one client at a time serves requests.
    pub fn set_provider(&self, caller: &Arc<Caller>) -> Result<(), ProviderTaken> {
        let mut slot = self.provider_slot();
        match slot.as_ref().and_then(Weak::upgrade) {
            Some(current) if current.id != caller.id => Err(ProviderTaken),
            _ => {
                *slot = Some(Arc::downgrade(caller));
                Ok(())
            }
        }
    }

    /// A connection closed: if it served requests, the network serves them again, and what it
    /// had in flight fails (a model call then retries or reports it).
    pub fn connection_closed(&self, caller_id: u64) {
        {
            let mut slot = self.provider_slot();
            if slot.as_ref().and_then(Weak::upgrade).is_none_or(|c| c.id == caller_id) {
                *slot = None;
            }
        }
        let gone: Vec<Pending> = {
            let mut pending = self.pending();
            let ids: Vec<String> =
                pending.iter().filter(|(_, p)| p.caller_id == caller_id).map(|(id, _)| id.clone()).collect();
            ids.iter().filter_map(|id| pending.remove(id)).collect()
        };
        for p in gone {
            let why = "the SDK client serving model requests disconnected".to_string();
            match p.head {
                Some(head) => {
                    let _ = head.send(Err(why));
                }
                None => {
                    let _ = p.body.try_send(Err(ProviderError::Network(why)));
                }
            }
        }
    }

    /// `llmInference.httpResponseStart`. `false`: no such request is waiting for its head.
    pub fn response_start(&self, p: t::LlmInferenceHttpResponseStartRequest) -> bool {
        let head = self.pending().get_mut(&p.request_id).and_then(|pending| pending.head.take());
        let Some(head) = head else { return false };
        let status = match u16::try_from(p.status) {
            Ok(s) if (100..=999).contains(&s) => s,
            _ => {
                let _ = head.send(Err(format!("the SDK client answered with an invalid HTTP status {}", p.status)));
                self.pending().remove(&p.request_id);
                return true;
            }
        };
        head.send(Ok((status, header_map(&p.headers)))).is_ok()
    }

    /// `llmInference.httpResponseChunk`. `false`: no such request is in flight.
    pub async fn response_chunk(&self, p: t::LlmInferenceHttpResponseChunkRequest) -> bool {
        let finished = p.end == Some(true) || p.error.is_some();
        let (head, body) = {
            let mut pending = self.pending();
            let Some(entry) = pending.get_mut(&p.request_id) else { return false };
            let head = entry.head.take();
            let body = entry.body.clone();
            if finished {
                pending.remove(&p.request_id);
            }
            (head, body)
        };
        if let Some(error) = &p.error {
            let why = match &error.code {
                Some(code) => format!("{} ({code})", error.message),
                None => error.message.clone(),
            };
            match head {
                Some(head) => {
                    let _ = head.send(Err(why));
                }
                None => {
                    let _ = body.send(Err(ProviderError::Network(why))).await;
                }
            }
            return true;
        }
        if let Some(head) = head {
            // A body before its head: the client broke the order; fail the request clearly.
            let _ = head.send(Err("the SDK client sent a response body before its status".into()));
            self.pending().remove(&p.request_id);
            return true;
        }
        let data = if p.binary == Some(true) {
            match base64::engine::general_purpose::STANDARD.decode(p.data.as_bytes()) {
                Ok(bytes) => Bytes::from(bytes),
                Err(_) => {
                    self.pending().remove(&p.request_id);
                    let _ = body.send(Err(ProviderError::Network("the SDK client sent invalid base64".into()))).await;
                    return true;
                }
            }
        } else {
            Bytes::from(p.data)
        };
        if !data.is_empty() {
            // Bounded: a client that outpaces the model call waits here.
            let _ = body.send(Ok(data)).await;
        }
        true
    }

    async fn send_through(&self, client: Arc<Caller>, request: HttpRequest) -> Result<HttpResponse, ProviderError> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let (head_tx, head_rx) = oneshot::channel();
        let (body_tx, body_rx) = mpsc::channel(BODY_QUEUE);
        self.pending().insert(request_id.clone(), Pending { caller_id: client.id, head: Some(head_tx), body: body_tx });
        let mut guard =
            Exchange { bridge: self.me.clone(), client: client.clone(), request_id: request_id.clone(), done: false };

        let ctx = &request.context;
        let start = t::LlmInferenceHttpRequestStartRequest {
            request_id: request_id.clone(),
            session_id: ctx.session_id.clone(),
            method: request.method.to_string(),
            url: request.url.clone(),
            headers: header_lists(&request.headers),
            transport: Some(t::LlmInferenceHttpRequestStartTransport::Http),
            agent_id: ctx.agent_id.clone(),
            parent_agent_id: ctx.parent_agent_id.clone(),
            agent_invocation_id: ctx.invocation_id.clone(),
            interaction_type: ctx.interaction_type.map(str::to_string),
        };
        let unreachable = |e: protocol::jsonrpc::RpcError| {
            ProviderError::Network(format!("the SDK client did not take the model request: {}", e.message))
        };
        let start = serde_json::to_value(&start).map_err(|e| ProviderError::Protocol(e.to_string()))?;
        client.request("llmInference.httpRequestStart", &start).await.map_err(unreachable)?;
        let body = request.body.to_bytes();
        let (data, binary) = match std::str::from_utf8(&body) {
            Ok(text) => (text.to_string(), None),
            Err(_) => (base64::engine::general_purpose::STANDARD.encode(&body), Some(true)),
        };
        let chunk = t::LlmInferenceHttpRequestChunkRequest {
            request_id: request_id.clone(),
            data,
            binary,
            end: Some(true),
            agent_invocation_id: ctx.invocation_id.clone(),
            ..Default::default()
        };
        let chunk = serde_json::to_value(&chunk).map_err(|e| ProviderError::Protocol(e.to_string()))?;
        client.request("llmInference.httpRequestChunk", &chunk).await.map_err(unreachable)?;

        let (status, headers) = match head_rx.await {
            Ok(Ok(head)) => head,
            Ok(Err(why)) => {
                guard.done = true;
                return Err(ProviderError::Network(why));
            }
            Err(_) => {
                guard.done = true;
                return Err(ProviderError::Network("the SDK client never answered the model request".into()));
            }
        };
        let status = StatusCode::from_u16(status)
            .map_err(|_| ProviderError::Network(format!("the SDK client answered with HTTP status {status}")))?;
        Ok(HttpResponse { status, headers, body: Box::pin(BodyStream { rx: body_rx, guard }) })
    }
}

#[async_trait]
impl HttpTransport for InferenceBridge {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ProviderError> {
        match self.provider() {
            Some(client) => self.send_through(client, request).await,
            None => self.network.send(request).await,
        }
    }
}

/// One request handed to the client. Dropped before the answer ended (the caller gave up, a
/// turn was aborted): forget it and tell the client to stop.
struct Exchange {
    bridge: Weak<InferenceBridge>,
    client: Arc<Caller>,
    request_id: String,
    done: bool,
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let Some(bridge) = self.bridge.upgrade() else { return };
        let still_pending = bridge.pending().remove(&self.request_id).is_some();
        if self.done || !still_pending {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let client = self.client.clone();
        let cancel = serde_json::json!({
            "requestId": self.request_id, "data": "", "end": true, "cancel": true, "cancelReason": "cancelled by the runtime"
        });
        runtime.spawn(async move {
            let _ = client.request("llmInference.httpRequestChunk", &cancel).await;
        });
    }
}

/// The response body as it arrives from the client; ends when the client says `end`.
struct BodyStream {
    rx: mpsc::Receiver<Result<Bytes, ProviderError>>,
    guard: Exchange,
}

impl Stream for BodyStream {
    type Item = Result<Bytes, ProviderError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.rx.poll_recv(cx);
        if let std::task::Poll::Ready(None) = polled {
            // The client ended the body: nothing to cancel.
            self.guard.done = true;
        }
        polled
    }
}
