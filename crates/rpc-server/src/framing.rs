//! How messages travel on a connection. The connection machinery (reader loop, lanes, the
//! bounded outbound queue, server→client requests) is the same for every transport; only the
//! framing differs: `Content-Length` headers on byte streams (stdio, TCP), one message per text
//! frame on a WebSocket ([`crate::websocket`]).
//!
//! Outgoing frames are built once, `Content-Length`-framed, by the encoders in
//! `protocol::jsonrpc`; a sink that frames differently takes the body out of them ([`body_of`]).

use std::future::Future;

use bytes::Bytes;
use protocol::frame::FrameDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A message that could not be read; it is answered with a parse error and the stream goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame(pub String);

/// Incoming message bodies.
pub trait MessageSource: Send + 'static {
    /// The next body; `None` once the peer is gone. Must be cancel-safe: the reader selects it
    /// against shutdown, and a dropped call must lose no message.
    fn next_message(&mut self) -> impl Future<Output = Option<Result<Bytes, BadFrame>>> + Send;

    /// Changes the largest body accepted from the next frame on, where the framing has its own
    /// limit (a transport that limits frames itself ignores it).
    fn set_max_frame_bytes(&mut self, _bytes: usize) {}
}

/// Outgoing frames.
pub trait MessageSink: Send + 'static {
    /// Writes `frames` (each as the `protocol::jsonrpc` encoders build it) in order, and flushes.
    fn send_all(&mut self, frames: &[Vec<u8>]) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// `Content-Length` framing on a byte stream (stdio, TCP).
pub struct ContentLengthSource<R> {
    reader: R,
    decoder: FrameDecoder,
    buf: Vec<u8>,
}

impl<R> ContentLengthSource<R> {
    /// A source refusing bodies over `max_frame_bytes` (skipped unread, answered `-32700`).
    pub fn new(reader: R, max_frame_bytes: usize) -> Self {
        Self { reader, decoder: FrameDecoder::new(max_frame_bytes), buf: vec![0u8; 64 * 1024] }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageSource for ContentLengthSource<R> {
    fn set_max_frame_bytes(&mut self, bytes: usize) {
        self.decoder.set_limit(bytes);
    }

    async fn next_message(&mut self) -> Option<Result<Bytes, BadFrame>> {
        loop {
            // Decoded frames wait in the decoder, so a call dropped at the read below loses
            // nothing: the only await is the read itself, which is cancel-safe.
            match self.decoder.next_frame() {
                Ok(Some(body)) => return Some(Ok(body)),
                Ok(None) => {}
                Err(e) => return Some(Err(BadFrame(e.to_string()))),
            }
            match self.reader.read(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.decoder.push(&self.buf[..n]),
            }
        }
    }
}

/// `Content-Length` framing on a byte stream: frames go out as they are.
pub struct ContentLengthSink<W> {
    writer: W,
    batch: Vec<u8>,
}

impl<W> ContentLengthSink<W> {
    pub fn new(writer: W) -> Self {
        Self { writer, batch: Vec::with_capacity(64 * 1024) }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> MessageSink for ContentLengthSink<W> {
    async fn send_all(&mut self, frames: &[Vec<u8>]) -> std::io::Result<()> {
        // One write and one flush for a burst of frames: each separate write is a syscall and
        // (on stdout) a thread hop.
        self.batch.clear();
        for f in frames {
            self.batch.extend_from_slice(f);
        }
        let result = async {
            self.writer.write_all(&self.batch).await?;
            self.writer.flush().await
        }
        .await;
        if self.batch.capacity() > 4 * 1024 * 1024 {
            self.batch = Vec::with_capacity(64 * 1024); // one huge response must not pin its buffer
        }
        result
    }
}

/// The body of a frame built by `protocol::jsonrpc` (everything after its header).
pub fn body_of(frame: &[u8]) -> &[u8] {
    match frame.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => &frame[end + 4..],
        None => frame,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn content_length_frames_round_trip_and_bad_ones_are_reported() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let mut sink = ContentLengthSink::new(client);
        let frames = vec![protocol::frame::encode(b"{\"a\":1}"), protocol::frame::encode(b"{\"b\":2}")];
        sink.send_all(&frames).await.unwrap();
        sink.writer.write_all(b"Content-Length: x\r\n\r\n").await.unwrap();
        sink.send_all(&[protocol::frame::encode(b"{}")]).await.unwrap();
        drop(sink);
        let mut source = ContentLengthSource::new(server, 1024);
        assert_eq!(source.next_message().await.unwrap().unwrap(), Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(source.next_message().await.unwrap().unwrap(), Bytes::from_static(b"{\"b\":2}"));
        assert!(source.next_message().await.unwrap().is_err(), "a malformed header is reported");
        assert_eq!(source.next_message().await.unwrap().unwrap(), Bytes::from_static(b"{}"));
        assert!(source.next_message().await.is_none());
    }

    #[test]
    fn body_of_strips_the_header() {
        assert_eq!(body_of(&protocol::frame::encode(b"{\"x\":\"\\r\\n\"}")), b"{\"x\":\"\\r\\n\"}");
    }
}
