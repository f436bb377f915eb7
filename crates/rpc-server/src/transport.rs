//! Transports: stdio (one connection) and TCP on 127.0.0.1 (many).

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::Server;

/// Serves the single stdio connection; returns when stdin closes or on `runtime.shutdown`.
pub async fn serve_stdio(server: Arc<Server>) {
    crate::connection::serve(server, tokio::io::stdin(), tokio::io::stdout()).await;
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
