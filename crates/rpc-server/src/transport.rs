//! Transports: stdio (one connection) and TCP on 127.0.0.1 (many).

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use protocol::jsonrpc::{self, RpcError};

use crate::preauth::PreauthLimits;
use crate::Server;

/// Tells a connection why it is not served, and closes it.
fn refuse(mut stream: tokio::net::TcpStream, why: &'static str) {
    tokio::spawn(async move {
        let err = RpcError::overloaded(why);
        let _ = stream.write_all(&jsonrpc::error_frame(None, &err)).await;
        let _ = stream.shutdown().await;
    });
}

/// Serves the single stdio connection; returns when stdin closes or on `runtime.shutdown`.
/// Pipes and sockets are polled on the reactor (no blocking-thread hop per read and write).
/// The connection runs as a task: the caller's `block_on` thread is not one of a
/// multi-threaded runtime's workers, and a reader left there would cross threads twice for
/// every request.
pub async fn serve_stdio(server: Arc<Server>) {
    use crate::stdio_pipe::PolledStdio;
    let connection = tokio::spawn(async move {
        match PolledStdio::pair() {
            Some((stdin, stdout)) => crate::connection::serve(server, stdin, stdout).await,
            None => crate::connection::serve(server, tokio::io::stdin(), tokio::io::stdout()).await,
        }
    });
    if let Err(e) = connection.await {
        tracing::error!(error = %e, "the stdio connection's task failed");
    }
}

/// Binds 127.0.0.1:`port` (0 = any free port). Returns the listener and the bound port.
pub async fn bind_tcp(port: u16) -> std::io::Result<(TcpListener, u16)> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    Ok((listener, port))
}

/// Accepts connections until shutdown.
pub async fn serve_tcp(server: Arc<Server>, listener: TcpListener) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tracing::debug!(%peer, "connection accepted");
                    let _ = stream.set_nodelay(true);
                    let (r, w) = stream.into_split();
                    tokio::spawn(crate::connection::serve(server.clone(), r, w));
                }
                Err(e) => tracing::warn!(error = %e, "accept failed"),
            },
            _ = server.shutdown.cancelled() => break,
        }
    }
}

/// Like [`serve_tcp`], with at most `slots` connections at once (shared with other transports,
/// e.g. a WebSocket endpoint), and (with `preauth`) at most its budget of them not yet
/// authenticated. Past either a new connection gets one `-32005` error (id `null`) saying why,
/// and is closed: the server does not grow without bound, and the client is told.
pub async fn serve_tcp_limited(
    server: Arc<Server>,
    listener: TcpListener,
    slots: Arc<Semaphore>,
    preauth: Option<PreauthLimits>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let allowance = preauth.as_ref().map(PreauthLimits::admit);
                    if matches!(allowance, Some(None)) {
                        tracing::warn!(%peer, "connection refused: too many connections waiting to authenticate");
                        refuse(stream, "too many connections waiting to authenticate");
                        continue;
                    }
                    match slots.clone().try_acquire_owned() {
                        Ok(slot) => {
                            tracing::debug!(%peer, "connection accepted");
                            let server = server.clone();
                            tokio::spawn(async move {
                                let (r, w) = stream.into_split();
                                crate::connection::serve_preauth(server, r, w, allowance.flatten()).await;
                                drop(slot);
                            });
                        }
                        Err(_) => {
                            tracing::warn!(%peer, "connection refused: too many connections");
                            refuse(stream, "too many connections");
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "accept failed"),
            },
            _ = server.shutdown.cancelled() => break,
        }
    }
}
