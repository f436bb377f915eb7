//! One client connection: the reader loop (frames → requests), the writer ([`Outbound`]),
//! per-session request lanes ([`Lanes`]), and the caller identity handlers see.
//!
//! Every request is answered: unknown methods with `-32601`, bad params with `-32602` naming
//! the field, a panicking handler with `-32603`, a full lane or too many requests in flight with
//! `-32005` (retry later). A malformed frame gets an error with a `null` id and the reader goes
//! on; only a closed transport (or a client too far behind on its events) ends the connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use protocol::jsonrpc::{self, Id, Incoming, RpcError};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::ctx::Ctx;
use crate::framing::{BadFrame, ContentLengthSink, ContentLengthSource, MessageSink, MessageSource};
use crate::lanes::{LaneFull, Lanes};
use crate::methods::{lookup, Call};
use crate::outbound::Outbound;
use crate::preauth::Preauth;
use crate::session_ids::Renamed;
use crate::tenancy::Principal;
use crate::Server;

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// Serves one `Content-Length`-framed connection (stdio, TCP) until the peer closes its side
/// (or the server shuts down).
pub async fn serve<R, W>(server: Arc<Server>, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_preauth(server, reader, writer, None).await;
}

/// [`serve`] for a connection that has `preauth` until it authenticates (a shared server's SDK
/// port): closed with an error if it has not by the deadline, frames limited until it has.
pub async fn serve_preauth<R, W>(server: Arc<Server>, reader: R, writer: W, preauth: Option<Preauth>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let source = ContentLengthSource::new(reader, server.limits.max_frame_bytes);
    serve_inner(server, source, ContentLengthSink::new(writer), None, false, preauth).await;
}

/// Serves one connection over any framing. `tenant`: the connection authenticated at the
/// transport already (a WebSocket's `Authorization` header); otherwise, on a shared server or
/// with a connection token, the first request must be a successful `connect`.
pub async fn serve_messages<S: MessageSource, K: MessageSink>(
    server: Arc<Server>,
    source: S,
    sink: K,
    tenant: Option<Principal>,
) {
    serve_inner(server, source, sink, tenant, false, None).await;
}

/// Serves a connection the server opened itself (a session extension it started): trusted
/// without a `connect` token.
pub async fn serve_trusted<R, W>(server: Arc<Server>, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max_frame_bytes = server.limits.max_frame_bytes;
    let source = ContentLengthSource::new(reader, max_frame_bytes);
    serve_inner(server, source, ContentLengthSink::new(writer), None, true, None).await;
}

/// [`serve_trusted`] over an extension's pipes, as handlers get it in their [`Ctx`].
fn serve_extension(
    server: Arc<Server>,
    reader: tokio::process::ChildStdout,
    writer: tokio::process::ChildStdin,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(serve_trusted(server, reader, writer))
}

async fn serve_inner<S: MessageSource, K: MessageSink>(
    server: Arc<Server>,
    mut source: S,
    sink: K,
    tenant: Option<Principal>,
    trusted: bool,
    preauth: Option<Preauth>,
) {
    let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let limits = server.limits;
    let closed = CancellationToken::new();
    let (out, writer_task) = Outbound::start_with_sink(id, sink, limits.max_queued_event_bytes, closed.clone());
    let open = trusted || (server.tenancy.is_none() && server.connection_token.is_none());
    let caller = Arc::new(Caller::new(id, out.clone(), open, server.tenancy.clone()));
    if let Some(tenant) = tenant {
        caller.set_tenant(tenant);
    }
    server.engine.subscribe_lifecycle(caller.lifecycle_subscriber());
    let mut preauth = preauth.filter(|_| !caller.is_authenticated());
    if let Some(p) = &mut preauth {
        source.set_max_frame_bytes(p.max_frame_bytes);
        caller.hold_until_authenticated(p.permit.take());
    }

    let mut reader_state = Reader {
        server: server.clone(),
        caller: caller.clone(),
        out: out.clone(),
        lanes: Lanes::new(limits.lane_capacity),
        parallel: Arc::new(Semaphore::new(limits.max_parallel_requests)),
    };
    let mut read_in_a_row = 0u32;
    loop {
        // A client that does not read its answers is not read from either until they drain
        // (its writes block), so unanswered responses cannot pile up without bound.
        tokio::select! {
            _ = out.backlog_within(limits.max_queued_event_bytes) => {}
            _ = server.shutdown.cancelled() => break,
        }
        let waiting = preauth.as_ref().map(|p| p.deadline);
        let next = tokio::select! {
            m = source.next_message() => match m {
                None => break,
                Some(m) => Next::Message(m),
            },
            _ = closed.cancelled() => break,
            _ = server.shutdown.cancelled() => break,
            // Its token was removed from the configuration: it may not go on.
            _ = caller.revoked() => break,
            _ = caller.authenticated(), if waiting.is_some() => Next::Authenticated,
            _ = until(waiting) => Next::Late,
        };
        let next = match next {
            // Both can be ready at once: an authenticated connection is never closed as late.
            Next::Late if caller.is_authenticated() => Next::Authenticated,
            next => next,
        };
        let message = match next {
            Next::Message(m) => m,
            Next::Authenticated => {
                // Authenticated: the allowance goes back, frames may be as large as any.
                preauth = None;
                source.set_max_frame_bytes(limits.max_frame_bytes);
                continue;
            }
            Next::Late => {
                let after = preauth.as_ref().map_or(0, |p| p.after.as_secs());
                let err = RpcError::new(
                    jsonrpc::AUTHENTICATION_REQUIRED,
                    format!("AUTHENTICATION_REQUIRED: no successful connect within {after} s; closing"),
                );
                out.response(jsonrpc::error_frame(None, &err));
                break;
            }
        };
        match message {
            Ok(body) => reader_state.on_body(&body),
            Err(BadFrame(e)) => {
                out.response(jsonrpc::error_frame(None, &RpcError::new(jsonrpc::PARSE_ERROR, e)));
            }
        }
        // A batch of buffered frames is read without waiting; the requests it started get to
        // run (and free what they hold) every few frames instead of all piling up first.
        read_in_a_row += 1;
        if read_in_a_row.is_multiple_of(YIELD_EVERY) {
            tokio::task::yield_now().await;
        }
    }
    drop(reader_state);
    caller.fail_outstanding();
    caller.leave_tenant();
    server.inference.connection_closed(id);
    server.engine.unsubscribe_lifecycle(id);
    server.engine.drop_subscriber(id);
    drop((caller, out));
    // Requests still running get to send their answers (the writer ends when the last of them
    // is done), but a handler that never finishes cannot keep the connection open.
    if tokio::time::timeout(DRAIN_TIMEOUT, writer_task).await.is_err() {
        closed.cancel();
    }
}

/// What the reader's wait ended with.
enum Next {
    Message(Result<bytes::Bytes, BadFrame>),
    Authenticated,
    /// The pre-authentication deadline passed.
    Late,
}

/// Waits until `deadline`, or forever without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Frames read between two yields of the reader (see the loop in `serve_inner`).
const YIELD_EVERY: u32 = 16;

/// How long a closing connection waits for running requests to answer.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

struct Reader {
    server: Arc<Server>,
    caller: Arc<Caller>,
    out: Outbound,
    lanes: Lanes,
    /// Requests outside any lane that may run at once.
    parallel: Arc<Semaphore>,
}

impl Reader {
    fn on_body(&mut self, body: &[u8]) {
        match jsonrpc::decode(body) {
            Err(bad) => {
                self.out.response(jsonrpc::error_frame(bad.id.as_ref(), &bad.error));
            }
            Ok(Incoming::Response { id, result }) => {
                let result = result.and_then(|raw| {
                    serde_json::from_str(raw.get()).map_err(|e| RpcError::new(jsonrpc::PARSE_ERROR, e.to_string()))
                });
                self.caller.resolve(&id, result);
            }
            Ok(Incoming::Notification { method }) => tracing::debug!(%method, "notification ignored"),
            Ok(Incoming::Request { id, method, params }) => self.on_request(id, &method, params),
        }
    }

    fn on_request(&mut self, id: Id, method: &str, params: jsonrpc::Params<'_>) {
        if !self.caller.is_authenticated() && method != "connect" {
            let err = RpcError::new(jsonrpc::AUTHENTICATION_REQUIRED, "AUTHENTICATION_REQUIRED");
            self.out.response(jsonrpc::error_frame(Some(&id), &err));
            return;
        }
        if self.server.stopping.load(std::sync::atomic::Ordering::Acquire) {
            let err = RpcError::handler_failed(method, "the runtime is shutting down");
            self.out.response(jsonrpc::error_frame(Some(&id), &err));
            return;
        }
        let Some(entry) = lookup(method) else {
            self.out.response(jsonrpc::error_frame(Some(&id), &RpcError::method_not_found(method)));
            return;
        };
        // A tenant's session ids become the server's before anything reads them.
        let (text, renamed) = match (params.object_text(), self.caller.namespace()) {
            (Ok(text), Some(ns)) => {
                let (text, renamed) = ns.request_in(entry.name, text);
                (Ok(std::borrow::Cow::Owned(text)), Some(renamed))
            }
            (text, _) => (text.map(std::borrow::Cow::Borrowed), None),
        };
        let named = crate::follower_gate::named_session(self.server.cluster.as_ref(), entry, text.as_deref().ok());
        let call = text.map_err(str::to_string).and_then(|text| (entry.parse)(&text));
        let call = match call {
            Ok(call) => call,
            Err(detail) => {
                let err = RpcError::invalid_params(entry.name, detail);
                let err = match (&renamed, self.caller.namespace()) {
                    (Some(renamed), Some(ns)) => ns.error_out(err, renamed),
                    _ => err,
                };
                self.out.response(jsonrpc::error_frame(Some(&id), &err));
                return;
            }
        };
        let lane = call.lane().map(str::to_string);
        let ctx = Ctx {
            server: self.server.clone(),
            caller: self.caller.clone(),
            method: entry.name,
            serve_trusted: serve_extension,
        };
        match lane {
            Some(session_id) => {
                let job = Box::pin(answer(ctx, id.clone(), call, self.out.clone(), named, renamed));
                if let Err(LaneFull(_job)) = self.lanes.submit(&session_id, job) {
                    let err = RpcError::overloaded(format!("too many requests queued for session {session_id}"));
                    self.out.response(jsonrpc::error_frame(Some(&id), &err));
                }
            }
            None => match self.parallel.clone().try_acquire_owned() {
                Ok(permit) => {
                    let out = self.out.clone();
                    tokio::spawn(async move {
                        answer(ctx, id, call, out, named, renamed).await;
                        drop(permit);
                    });
                }
                Err(_) => {
                    let err = RpcError::overloaded("too many requests in flight on this connection");
                    self.out.response(jsonrpc::error_frame(Some(&id), &err));
                }
            },
        }
    }
}

/// Runs one call and writes its answer. A panicking handler is answered with an error instead
/// of leaving the client waiting. `named`: the session the params name, on a server with several
/// nodes (a follower forwards sends and aborts and refuses other changes).
/// `renamed`: the session ids a tenant's request named, as translated (see `session_ids`).
async fn answer(
    ctx: Ctx,
    id: Id,
    call: Call,
    out: Outbound,
    named: Option<crate::follower_gate::Named>,
    renamed: Option<Renamed>,
) {
    let method = ctx.method;
    let intercepted = match &named {
        // Boxed, as the handlers are (`Call::run`): only a server with several nodes gets here,
        // and inline these futures would make every request's future several times larger.
        Some(named) => Box::pin(crate::follower_gate::intercept(&ctx, named)).await,
        None => None,
    };
    let result = match intercepted {
        Some(answer) => answer,
        None => match std::panic::AssertUnwindSafe(call.run(&ctx)).catch_unwind().await {
            Ok(r) => r,
            Err(_) => {
                tracing::error!(%method, "handler panicked");
                Err(RpcError::handler_failed(method, "internal error"))
            }
        },
    };
    let result = match (ctx.caller.namespace(), renamed) {
        (Some(ns), Some(renamed)) => {
            result.map(|json| ns.result_out(method, json)).map_err(|e| ns.error_out(e, &renamed))
        }
        _ => result,
    };
    let frame = match result {
        Ok(json) => jsonrpc::response_frame(&id, &json),
        Err(e) => jsonrpc::error_frame(Some(&id), &e),
    };
    out.response(frame);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<F, Fut>(_: F) -> usize
    where
        F: FnOnce(Ctx, Id, Call, Outbound, Option<crate::follower_gate::Named>, Option<Renamed>) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// Every request's future is boxed and moved whole: it must not carry the largest
    /// handler's state inline (see `Call::run`).
    #[test]
    fn a_requests_future_stays_small() {
        let size = future_size(answer);
        eprintln!("answer future: {size} bytes");
        assert!(size <= 1024, "the answer future is {size} bytes");
    }
}
