//! JSON-RPC over a WebSocket (`GET /rpc` of `skipper serve`): one JSON-RPC object per text
//! frame, no `Content-Length` headers; server→client requests and their answers are frames too.
//! Authentication happens at the HTTP upgrade, so the connection starts with its tenant known.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};

use crate::framing::{body_of, BadFrame, MessageSink, MessageSource};
use crate::Server;

/// Serves one upgraded WebSocket for `tenant` until either side closes it.
pub async fn serve_websocket(server: Arc<Server>, socket: WebSocket, tenant: crate::tenancy::Principal) {
    let (sink, stream) = socket.split();
    crate::connection::serve_messages(server, WsSource(stream), WsSink(sink), Some(tenant)).await;
}

struct WsSource(SplitStream<WebSocket>);

impl MessageSource for WsSource {
    async fn next_message(&mut self) -> Option<Result<Bytes, BadFrame>> {
        loop {
            // `StreamExt::next` on a split stream is cancel-safe.
            match self.0.next().await? {
                Ok(Message::Text(text)) => return Some(Ok(Message::Text(text).into_data())),
                Ok(Message::Binary(_)) => {
                    return Some(Err(BadFrame(
                        "binary frames are not JSON-RPC: send one JSON object per text frame".into(),
                    )))
                }
                // Pings are answered by the WebSocket layer itself.
                Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                Ok(Message::Close(_)) | Err(_) => return None,
            }
        }
    }
}

struct WsSink(SplitSink<WebSocket, Message>);

impl MessageSink for WsSink {
    async fn send_all(&mut self, frames: &[Vec<u8>]) -> std::io::Result<()> {
        for frame in frames {
            // Our encoders only ever produce UTF-8 JSON; anything else would be a bug, and is
            // refused rather than sent as a text frame that is not text.
            let text = std::str::from_utf8(body_of(frame)).map_err(std::io::Error::other)?;
            self.0.feed(Message::Text(text.into())).await.map_err(std::io::Error::other)?;
        }
        self.0.flush().await.map_err(std::io::Error::other)
    }
}
