//! `session.eventLog.read` / `tail`: a session's events by cursor. History comes from the log on
//! disk (durable events only); a reader that has caught up follows the emitter's ring of recent
//! events, ephemeral ones included, and may wait there for the next one.
//!
//! Cursors: `p<n>` = the first `n` logged events were read; `e<k>` = every event up to the
//! emitter's position `k` was read.

use std::time::Duration;

use serde_json::Value;

use crate::emitter::RingEntry;
use crate::error::EngineError;
use crate::handle::SessionHandle;

/// What a reader asks for.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub cursor: Option<String>,
    pub max: usize,
    pub wait: Duration,
    /// `None`: every type.
    pub types: Option<Vec<String>>,
    pub include_ephemeral: bool,
}

/// One batch of events and where to continue.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadBatch {
    pub events: Vec<Value>,
    pub cursor: String,
    pub has_more: bool,
    /// The cursor pointed at events no longer kept; the batch starts at the oldest kept.
    pub expired: bool,
}

enum Cursor {
    Logged(usize),
    Live(u64),
}

fn parse(cursor: &str) -> Option<Cursor> {
    if let Some(n) = cursor.strip_prefix('p') {
        return n.parse().ok().map(Cursor::Logged);
    }
    cursor.strip_prefix('e').and_then(|k| k.parse().ok()).map(Cursor::Live)
}

impl SessionHandle {
    /// A cursor at the newest event: reading from it returns only what comes after.
    pub fn event_tail(&self) -> String {
        let (_, seq) = self.emitter().read_position();
        format!("e{seq}")
    }

    /// Reads events after `req.cursor` (from the start of the log without one).
    pub async fn read_events(&self, req: ReadRequest) -> Result<ReadBatch, EngineError> {
        let (cursor, expired) = match req.cursor.as_deref().map(parse) {
            None => (Cursor::Logged(0), false),
            Some(Some(c)) => (c, false),
            // Not a cursor we made: start over, and say so.
            Some(None) => (Cursor::Logged(0), true),
        };
        let max = req.max.max(1);
        let keep = |kind: &str, ephemeral: bool| {
            (req.include_ephemeral || !ephemeral) && req.types.as_ref().is_none_or(|t| t.iter().any(|x| x == kind))
        };
        let after = match cursor {
            Cursor::Live(k) => k,
            Cursor::Logged(n) => {
                let (count, seq) = self.emitter().read_position();
                let loaded = self.event_store().load(self.id()).await?;
                let logged = &loaded.events[..count.min(loaded.events.len())];
                let mut events = Vec::new();
                for (i, e) in logged.iter().enumerate().skip(n) {
                    if !keep(e.kind(), false) {
                        continue;
                    }
                    if events.len() == max {
                        return Ok(ReadBatch { events, cursor: format!("p{i}"), has_more: true, expired });
                    }
                    events.push(serde_json::to_value(e).unwrap_or(Value::Null));
                }
                if !events.is_empty() || req.wait.is_zero() {
                    return Ok(ReadBatch { events, cursor: format!("e{seq}"), has_more: false, expired });
                }
                seq
            }
        };
        let deadline = tokio::time::Instant::now() + req.wait;
        loop {
            let next = self.emitter().emitted();
            tokio::pin!(next);
            next.as_mut().enable();
            let found = self.emitter().ring_after(after, max, |e: &RingEntry| keep(&e.kind, e.ephemeral));
            if !found.entries.is_empty() || tokio::time::Instant::now() >= deadline {
                let events =
                    found.entries.iter().map(|e| serde_json::from_str(&e.json).unwrap_or(Value::Null)).collect();
                return Ok(ReadBatch {
                    events,
                    cursor: format!("e{}", found.next),
                    has_more: found.has_more,
                    expired: expired || found.expired,
                });
            }
            let _ = tokio::time::timeout_at(deadline, next).await;
        }
    }
}
