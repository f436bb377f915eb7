//! Ephemeral events (deltas, `session.idle`, progress) of the sessions a node runs, for the
//! clients following them on other nodes: they are in no log, so they go as NOTIFY payloads on
//! channel `skipper_ephemeral`. Each carries the owner's log length when it was emitted, so a
//! follower relays the rows before it first.
//!
//! The emitter hands them over under its lock; they are sent by the database writer, in the
//! same queue as the appends, so an ephemeral event reaches the database before the events
//! persisted after it. Events waiting for the writer go together: consecutive events of one
//! session at one log position share a payload (8000 bytes at most: a larger event is split in
//! pieces the listener joins again).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::writer::Writer;

pub(crate) const CHANNEL: &str = "skipper_ephemeral";

/// Below PostgreSQL's 8000-byte payload limit, with room for the header.
const PAYLOAD_BYTES: usize = 7600;
/// Events waiting for the writer past this many are dropped (a stalled database must not grow
/// the node's memory; followers miss some deltas, the log is intact).
const PENDING_MAX: usize = 4096;

/// Ephemeral events of one session emitted at one log position, as a follower receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EphemeralBatch {
    pub session_id: String,
    /// How many events the owner's log held when they were emitted.
    pub position: i64,
    /// Each event's JSON, in order.
    pub events: Vec<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Outbox {
    pending: Mutex<VecDeque<(Arc<str>, i64, String)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Queues one ephemeral event of a session run here for the other nodes; `writer` sends it
/// (see [`PgEvents::publish_ephemeral`](super::PgEvents::publish_ephemeral)).
pub(super) fn publish(outbox: &Arc<Outbox>, writer: &Writer, session_id: &str, position: i64, json: &str) {
    if session_id.contains(['\n', ' ']) {
        return; // not expressible in a header; such ids are not made by clients anyway
    }
    let was_empty = {
        let mut pending = lock(&outbox.pending);
        if pending.len() >= PENDING_MAX {
            tracing::warn!(session = %session_id, "ephemeral events for other nodes dropped: the database is behind");
            return;
        }
        pending.push_back((session_id.into(), position, json.to_string()));
        pending.len() == 1
    };
    if was_empty {
        let outbox = outbox.clone();
        writer.submit(move |pool| async move {
            let batch: Vec<_> = lock(&outbox.pending).drain(..).collect();
            for payload in encode(&batch) {
                let sent = sqlx::query("SELECT pg_notify($1, $2)").bind(CHANNEL).bind(&payload).execute(&pool).await;
                if let Err(e) = sent {
                    tracing::warn!(error = %e, "sending ephemeral events to other nodes failed");
                }
            }
        });
    }
}

/// Payloads for queued events: `<position> <part>/<parts> <session>` then, for one part, the
/// events' JSON one a line (serialized JSON holds no raw newline), or one piece of one event.
fn encode(batch: &[(Arc<str>, i64, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<(Arc<str>, i64, String)> = None;
    let flush = |current: &mut Option<(Arc<str>, i64, String)>, out: &mut Vec<String>| {
        if let Some((session, position, body)) = current.take() {
            out.push(format!("{position} 1/1 {session}\n{body}"));
        }
    };
    for (session, position, json) in batch {
        if json.len() > PAYLOAD_BYTES {
            flush(&mut current, &mut out);
            let pieces = split(json, PAYLOAD_BYTES);
            let n = pieces.len();
            for (i, piece) in pieces.into_iter().enumerate() {
                out.push(format!("{position} {}/{n} {session}\n{piece}", i + 1));
            }
            continue;
        }
        let fits = current
            .as_ref()
            .is_some_and(|(s, p, body)| s == session && p == position && body.len() + 1 + json.len() <= PAYLOAD_BYTES);
        if fits {
            if let Some((_, _, body)) = current.as_mut() {
                body.push('\n');
                body.push_str(json);
            }
        } else {
            flush(&mut current, &mut out);
            current = Some((session.clone(), *position, json.clone()));
        }
    }
    flush(&mut current, &mut out);
    out
}

/// `text` in pieces of at most `max` bytes, cut at character boundaries.
fn split(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut at = rest.len().min(max);
        while !rest.is_char_boundary(at) {
            at -= 1;
        }
        let (piece, tail) = rest.split_at(at);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Joins the pieces of split events (on the listening side).
#[derive(Default)]
pub(crate) struct Assembler {
    /// Per session: the position, the next part expected and the text so far.
    partial: HashMap<String, (i64, usize, String)>,
}

impl Assembler {
    /// The batch a payload completes, if any (a piece out of order drops the event).
    pub(crate) fn feed(&mut self, payload: &str) -> Option<EphemeralBatch> {
        let (header, body) = payload.split_once('\n')?;
        let mut fields = header.splitn(3, ' ');
        let position: i64 = fields.next()?.parse().ok()?;
        let (part, parts) = fields.next()?.split_once('/')?;
        let (part, parts): (usize, usize) = (part.parse().ok()?, parts.parse().ok()?);
        let session_id = fields.next()?.to_string();
        if parts == 1 {
            let events = body.lines().map(str::to_string).collect();
            return Some(EphemeralBatch { session_id, position, events });
        }
        if part == 1 {
            self.partial.insert(session_id.clone(), (position, 2, body.to_string()));
        } else {
            match self.partial.get_mut(&session_id) {
                Some((p, next, text)) if *p == position && *next == part => {
                    text.push_str(body);
                    *next += 1;
                }
                _ => {
                    self.partial.remove(&session_id);
                    return None;
                }
            }
        }
        if part < parts {
            return None;
        }
        let (position, _, text) = self.partial.remove(&session_id)?;
        Some(EphemeralBatch { session_id, position, events: vec![text] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(items: &[(&str, i64, &str)]) -> Vec<(Arc<str>, i64, String)> {
        items.iter().map(|(s, p, j)| (Arc::from(*s), *p, j.to_string())).collect()
    }

    #[test]
    fn events_at_one_position_share_a_payload() {
        let payloads = encode(&queued(&[("a", 3, "{\"x\":1}"), ("a", 3, "{\"x\":2}"), ("a", 4, "{}"), ("b", 4, "{}")]));
        assert_eq!(payloads.len(), 3);
        let mut asm = Assembler::default();
        let first = asm.feed(&payloads[0]).unwrap();
        assert_eq!(
            first,
            EphemeralBatch {
                session_id: "a".into(),
                position: 3,
                events: vec!["{\"x\":1}".into(), "{\"x\":2}".into()]
            }
        );
        assert_eq!(asm.feed(&payloads[2]).unwrap().session_id, "b");
    }

    #[test]
    fn a_large_event_is_split_and_joined() {
        let big = format!("{{\"t\":\"{}\"}}", "é".repeat(PAYLOAD_BYTES));
        let payloads = encode(&queued(&[("s", 7, &big)]));
        assert!(payloads.len() >= 3);
        assert!(payloads.iter().all(|p| p.len() < 8000));
        let mut asm = Assembler::default();
        let joined: Vec<_> = payloads.iter().filter_map(|p| asm.feed(p)).collect();
        assert_eq!(joined, vec![EphemeralBatch { session_id: "s".into(), position: 7, events: vec![big] }]);
    }
}
