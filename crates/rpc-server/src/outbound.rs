//! A connection's outgoing frames: one writer task, and a queue bounded by the bytes of the
//! events waiting in it.
//!
//! The policy for a client that reads slower than its sessions produce events: once more
//! than `max_queued_event_bytes` of frames wait for it, the next event closes the connection
//! with a logged reason. Its sessions go on (another client, or the same one reconnecting, can
//! resume them). Responses are never refused: there is one per request, and requests in
//! flight are bounded by the lanes and the parallel-request limit. A client that sends
//! requests but does not read the answers is slowed down instead: the reader stops taking
//! requests while more than that many bytes wait ([`Outbound::backlog_within`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(test)]
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[cfg(test)]
use crate::framing::ContentLengthSink;
use crate::framing::MessageSink;

#[derive(Clone)]
pub(crate) struct Outbound {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: AtomicUsize,
    max_queued_event_bytes: usize,
    /// Cancelled when the connection must end (peer gone, or too far behind).
    closed: CancellationToken,
    conn_id: u64,
    /// Signalled whenever the writer has written a batch (the backlog shrank).
    written: tokio::sync::Notify,
}

impl Outbound {
    /// Starts the writer task on a byte stream (`Content-Length` framing). The task ends when
    /// the connection is closed, or once every clone of the returned queue is gone and what was
    /// queued has been written.
    #[cfg(test)]
    pub fn start<W>(
        conn_id: u64,
        writer: W,
        max_queued_event_bytes: usize,
        closed: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with_sink(conn_id, ContentLengthSink::new(writer), max_queued_event_bytes, closed)
    }

    /// Starts the writer task on any transport's sink (see [`Outbound::start`]).
    pub fn start_with_sink<S: MessageSink>(
        conn_id: u64,
        sink: S,
        max_queued_event_bytes: usize,
        closed: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            tx,
            queued: AtomicUsize::new(0),
            max_queued_event_bytes,
            closed,
            conn_id,
            written: tokio::sync::Notify::new(),
        });
        let task = tokio::spawn(write_loop(Arc::downgrade(&inner), inner.closed.clone(), rx, sink));
        (Self { inner }, task)
    }

    /// Queues a response (or a request of ours). `false` once the connection is closing.
    pub fn response(&self, frame: Vec<u8>) -> bool {
        self.push(frame)
    }

    /// Queues an event notification, unless the client is too far behind: then the connection
    /// is closed instead, and `false` tells the session to drop this subscriber.
    pub fn event(&self, frame: Vec<u8>) -> bool {
        let queued = self.inner.queued.load(Ordering::Acquire);
        // Judged on what already waits: one event larger than the limit still goes to a client
        // that keeps up, so the bound is the limit plus one event.
        if queued > self.inner.max_queued_event_bytes {
            if !self.inner.closed.is_cancelled() {
                tracing::warn!(
                    connection = self.inner.conn_id,
                    queued_bytes = queued,
                    limit = self.inner.max_queued_event_bytes,
                    "client is not reading its events fast enough; closing the connection (its sessions go on)"
                );
                self.inner.closed.cancel();
            }
            return false;
        }
        self.push(frame)
    }

    fn push(&self, frame: Vec<u8>) -> bool {
        if self.inner.closed.is_cancelled() {
            return false;
        }
        self.inner.queued.fetch_add(frame.len(), Ordering::AcqRel);
        self.inner.tx.send(frame).is_ok()
    }

    /// Returns once at most `limit` bytes wait to be written (or the connection is closing).
    pub async fn backlog_within(&self, limit: usize) {
        loop {
            // Registered before the check, so a write finishing in between is not missed.
            let written = self.inner.written.notified();
            if self.inner.queued.load(Ordering::Acquire) <= limit || self.inner.closed.is_cancelled() {
                return;
            }
            tokio::select! {
                _ = written => {}
                _ = self.inner.closed.cancelled() => return,
            }
        }
    }

    #[cfg(test)]
    pub fn closed(&self) -> &CancellationToken {
        &self.inner.closed
    }

    /// Bytes waiting to be written.
    #[cfg(test)]
    pub fn queued_bytes(&self) -> usize {
        self.inner.queued.load(Ordering::Acquire)
    }
}

async fn write_loop<S: MessageSink>(
    inner: std::sync::Weak<Inner>,
    closed: CancellationToken,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    mut sink: S,
) {
    // Frames already queued go out together (the sink writes and flushes them at once): a turn
    // emits bursts of events.
    let mut batch: Vec<Vec<u8>> = Vec::new();
    loop {
        let first = tokio::select! {
            f = rx.recv() => f,
            _ = closed.cancelled() => None,
        };
        let Some(first) = first else { break };
        batch.clear();
        let mut bytes = first.len();
        batch.push(first);
        while bytes < 256 * 1024 {
            match rx.try_recv() {
                Ok(more) => {
                    bytes += more.len();
                    batch.push(more);
                }
                Err(_) => break,
            }
        }
        let written = tokio::select! {
            r = sink.send_all(&batch) => r.is_ok(),
            _ = closed.cancelled() => false,
        };
        if let Some(inner) = inner.upgrade() {
            inner.queued.fetch_sub(bytes, Ordering::AcqRel);
            inner.written.notify_waiters();
        }
        if !written {
            break;
        }
    }
    // Nothing more goes out; the reader notices and ends the connection.
    closed.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn frames_arrive_in_order() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (out, _) = Outbound::start(1, server, 1 << 20, CancellationToken::new());
        assert!(out.response(b"one,".to_vec()));
        assert!(out.event(b"two".to_vec()));
        let mut client = client;
        let mut buf = vec![0u8; 7];
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, b"one,two");
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_closed_once_its_events_pass_the_limit() {
        // A tiny pipe that nobody reads: the writer blocks after the first bytes.
        let (_client, server) = tokio::io::duplex(64);
        let (out, _) = Outbound::start(2, server, 1000, CancellationToken::new());
        let mut sent = 0;
        while out.event(vec![b'x'; 100]) {
            sent += 1;
            assert!(sent < 100, "the queue must be bounded");
        }
        assert!(out.closed().is_cancelled());
        assert!(out.queued_bytes() <= 1100, "{}", out.queued_bytes());
        assert!(!out.response(b"late".to_vec()), "nothing is queued after closing");
    }

    #[tokio::test]
    async fn responses_are_not_refused_for_size() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (out, _) = Outbound::start(3, server, 10, CancellationToken::new());
        assert!(out.response(vec![b'r'; 5000]));
        let mut buf = vec![0u8; 5000];
        client.read_exact(&mut buf).await.unwrap();
        assert!(!out.closed().is_cancelled());
    }
}
