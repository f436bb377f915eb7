//! One client connection: a reader loop, a writer task, per-session request lanes, and the
//! subscriber that forwards session events and lifecycle notifications to this client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use loop_engine::{ClientRequester, EventSubscriber, LifecycleSubscriber};
use protocol::event::Event;
use protocol::frame::{encode, FrameDecoder};
use protocol::jsonrpc::{self, Id, Incoming, RpcError};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::Server;

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// What handlers know about the connection they serve.
pub struct Conn {
    pub id: u64,
    pub server: Arc<Server>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    authenticated: AtomicBool,
    /// Server→client requests awaiting an answer, by our integer id (from 1, per connection).
    outstanding: Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request_id: AtomicI64,
}

impl Conn {
    /// Queues one JSON message for the writer.
    pub fn send(&self, msg: &Value) -> bool {
        match serde_json::to_vec(msg) {
            Ok(body) => self.out.send(encode(&body)).is_ok(),
            Err(e) => {
                tracing::error!(error = %e, "could not serialize outgoing message");
                false
            }
        }
    }

    pub fn is_authenticated(&self) -> bool {
        self.server.connection_token.is_none() || self.authenticated.load(Ordering::Acquire)
    }

    pub fn set_authenticated(&self) {
        self.authenticated.store(true, Ordering::Release);
    }

    /// Sends a request to the client and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.outstanding().insert(id, tx);
        if !self.send(&jsonrpc::request(id, method, params)) {
            self.outstanding().remove(&id);
            return Err(RpcError::new(jsonrpc::INTERNAL_ERROR, "client connection closed"));
        }
        rx.await.unwrap_or_else(|_| Err(RpcError::new(jsonrpc::INTERNAL_ERROR, "client connection closed")))
    }

    fn resolve(&self, id: &Id, result: Result<Value, RpcError>) {
        let Some(id) = id.as_i64() else { return };
        let tx = self.outstanding().remove(&id);
        if let Some(tx) = tx {
            let _ = tx.send(result);
        }
    }

    fn outstanding(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.outstanding.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fail_outstanding(&self) {
        let pending: Vec<_> = self.outstanding().drain().collect();
        for (_, tx) in pending {
            let _ = tx.send(Err(RpcError::new(jsonrpc::INTERNAL_ERROR, "client connection closed")));
        }
    }

    /// This connection as an event subscriber for sessions it creates or resumes.
    pub fn subscriber(self: &Arc<Self>) -> Arc<dyn EventSubscriber> {
        Arc::new(ConnSubscriber(self.clone()))
    }
}

struct ConnSubscriber(Arc<Conn>);

impl EventSubscriber for ConnSubscriber {
    fn subscriber_id(&self) -> u64 {
        self.0.id
    }
    fn deliver(&self, session_id: &str, event: &Event) -> bool {
        self.0.send(&jsonrpc::notification("session.event", json!({"sessionId": session_id, "event": event})))
    }
    fn requester(&self) -> Option<Arc<dyn ClientRequester>> {
        Some(Arc::new(ConnRequester(self.0.clone())))
    }
}

struct ConnRequester(Arc<Conn>);

#[async_trait::async_trait]
impl ClientRequester for ConnRequester {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        self.0.request(method, params).await.map_err(|e| e.message)
    }
}

impl LifecycleSubscriber for ConnSubscriber {
    fn subscriber_id(&self) -> u64 {
        self.0.id
    }
    fn notify(&self, params: &Value) -> bool {
        self.0.send(&jsonrpc::notification("session.lifecycle", params.clone()))
    }
}

/// Serves one connection until the peer closes its side (or the server shuts down).
pub async fn serve<R, W>(server: Arc<Server>, mut reader: R, mut writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let conn = Arc::new(Conn {
        id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
        server: server.clone(),
        out: tx,
        authenticated: AtomicBool::new(false),
        outstanding: Mutex::new(HashMap::new()),
        next_request_id: AtomicI64::new(1),
    });
    server.engine.subscribe_lifecycle(Arc::new(ConnSubscriber(conn.clone())));

    let writer_task = tokio::spawn(async move {
        // Frames that are already queued go out in one write and one flush: a turn emits
        // bursts of events, and each separate write is a syscall and (on stdout) a thread hop.
        let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
        while let Some(frame) = rx.recv().await {
            batch.clear();
            batch.extend_from_slice(&frame);
            while batch.len() < 256 * 1024 {
                match rx.try_recv() {
                    Ok(more) => batch.extend_from_slice(&more),
                    Err(_) => break,
                }
            }
            if writer.write_all(&batch).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });

    let mut lanes: HashMap<String, mpsc::UnboundedSender<(Id, String, Value)>> = HashMap::new();
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    'read: loop {
        let n = tokio::select! {
            r = reader.read(&mut buf) => match r {
                Ok(0) | Err(_) => break 'read,
                Ok(n) => n,
            },
            _ = server.shutdown.cancelled() => break 'read,
        };
        decoder.push(&buf[..n]);
        loop {
            let body = match decoder.next_frame() {
                Ok(Some(body)) => body,
                Ok(None) => break,
                Err(e) => {
                    conn.send(&jsonrpc::error_response(None, &RpcError::new(jsonrpc::PARSE_ERROR, e.to_string())));
                    continue;
                }
            };
            let value: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => {
                    let err = RpcError::new(jsonrpc::PARSE_ERROR, format!("Parse error: {e}"));
                    conn.send(&jsonrpc::error_response(None, &err));
                    continue;
                }
            };
            match jsonrpc::classify(value) {
                Err((id, err)) => {
                    conn.send(&jsonrpc::error_response(id.as_ref(), &err));
                }
                Ok(Incoming::Response { id, result }) => conn.resolve(&id, result),
                Ok(Incoming::Notification { method, .. }) => {
                    tracing::debug!(%method, "notification ignored");
                }
                Ok(Incoming::Request { id, method, params }) => {
                    dispatch(&conn, &mut lanes, id, method, params);
                }
            }
        }
    }
    drop(lanes);
    conn.fail_outstanding();
    server.engine.unsubscribe_lifecycle(conn.id);
    server.engine.drop_subscriber(conn.id);
    drop(conn);
    // The writer ends once every sender (lanes, subscribers, in-flight handlers) is gone.
    let _ = writer_task.await;
}

fn dispatch(
    conn: &Arc<Conn>,
    lanes: &mut HashMap<String, mpsc::UnboundedSender<(Id, String, Value)>>,
    id: Id,
    method: String,
    params: Value,
) {
    if !conn.is_authenticated() && method != "connect" {
        let err = RpcError::new(jsonrpc::AUTHENTICATION_REQUIRED, "AUTHENTICATION_REQUIRED");
        conn.send(&jsonrpc::error_response(Some(&id), &err));
        return;
    }
    let session_id = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
    let Some(session_id) = session_id else {
        let conn = conn.clone();
        tokio::spawn(async move { answer(&conn, id, &method, params).await });
        return;
    };
    let lane = lanes.entry(session_id).or_insert_with(|| {
        let (tx, mut rx) = mpsc::unbounded_channel::<(Id, String, Value)>();
        let conn = conn.clone();
        tokio::spawn(async move {
            while let Some((id, method, params)) = rx.recv().await {
                answer(&conn, id, &method, params).await;
            }
        });
        tx
    });
    if let Err(mpsc::error::SendError((id, method, params))) = lane.send((id, method, params)) {
        let conn = conn.clone();
        tokio::spawn(async move { answer(&conn, id, &method, params).await });
    }
}

async fn answer(conn: &Arc<Conn>, id: Id, method: &str, params: Value) {
    // A panicking handler answers with an error instead of leaving the client waiting.
    let fut = crate::router::route(conn, method, params);
    let result = match futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(fut)).await {
        Ok(r) => r,
        Err(_) => Err(RpcError::handler_failed(method, "internal error")),
    };
    let msg = match result {
        Ok(v) => jsonrpc::response(&id, v),
        Err(e) => jsonrpc::error_response(Some(&id), &e),
    };
    conn.send(&msg);
}
