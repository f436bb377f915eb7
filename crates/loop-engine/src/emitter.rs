//! Emits a session's events: chains `parentId`, appends persisted events to the log **before**
//! delivering them, then hands every event to each subscriber in order.
//!
//! `parentId` is the id of the latest *persisted* event: the chain a reader of
//! `events.jsonl` (or of `session.getMessages`) follows never points at an ephemeral event,
//! which is on no disk.
//!
//! All work under the lock is synchronous (a small `write` and channel sends), so the lock is
//! never held across an `.await`.

use std::sync::{Arc, Mutex, MutexGuard};

use protocol::event::{is_always_ephemeral, Event};
use serde_json::Value;
use store::EventLog;

/// Somebody who receives a session's events (an RPC connection, the headless runner, a test).
pub trait EventSubscriber: Send + Sync {
    /// Identifies the subscriber for unsubscribe.
    fn subscriber_id(&self) -> u64;
    /// Delivers one event. Returns `false` once the subscriber is gone; it is then dropped.
    fn deliver(&self, session_id: &str, event: &Event) -> bool;
    /// The subscriber's way to answer server→client requests (hooks, user input, transforms),
    /// if it has one.
    fn requester(&self) -> Option<Arc<dyn ClientRequester>> {
        None
    }
}

/// Sends a request to a client and waits for its answer (`Err` carries the error message).
#[async_trait::async_trait]
pub trait ClientRequester: Send + Sync {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String>;
}

pub struct Emitter {
    session_id: String,
    inner: Mutex<Inner>,
}

struct Inner {
    /// The latest persisted event (the parent of the next event of any kind).
    last_persisted_id: Option<String>,
    persisted_count: usize,
    log: Option<EventLog>,
    subscribers: Vec<Arc<dyn EventSubscriber>>,
    last_persisted_at: Option<String>,
}

impl Emitter {
    /// `last_persisted_id` and `persisted_count` describe the log as loaded (resume), or are
    /// `None` and 0 for a new session.
    pub fn new(
        session_id: String,
        log: Option<EventLog>,
        last_persisted_id: Option<String>,
        persisted_count: usize,
    ) -> Self {
        let inner = Inner { last_persisted_id, persisted_count, log, subscribers: Vec::new(), last_persisted_at: None };
        Self { session_id, inner: Mutex::new(inner) }
    }

    /// How many events the session's log holds.
    pub fn persisted_count(&self) -> usize {
        self.lock().persisted_count
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::lock(&self.inner)
    }

    pub fn subscribe(&self, sub: Arc<dyn EventSubscriber>) {
        let mut inner = self.lock();
        let id = sub.subscriber_id();
        if !inner.subscribers.iter().any(|s| s.subscriber_id() == id) {
            inner.subscribers.push(sub);
        }
    }

    /// Removes a subscriber; returns how many remain.
    pub fn unsubscribe(&self, subscriber_id: u64) -> usize {
        let mut inner = self.lock();
        inner.subscribers.retain(|s| s.subscriber_id() != subscriber_id);
        inner.subscribers.len()
    }

    /// The first subscriber able to answer requests (the session's earliest client).
    pub fn requester(&self) -> Option<Arc<dyn ClientRequester>> {
        self.lock().subscribers.iter().find_map(|s| s.requester())
    }

    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }

    pub fn last_persisted_at(&self) -> Option<String> {
        self.lock().last_persisted_at.clone()
    }

    /// Emits one event. Persisted events are written first; if the write fails twice the
    /// event is still delivered (a client must never hang) together with a `session.error`.
    pub fn emit(&self, kind: &str, data: Value, ephemeral: bool) -> Event {
        let ephemeral = ephemeral || is_always_ephemeral(kind);
        let mut event = Event::new(kind, data, ephemeral);
        let mut inner = self.lock();
        event.parent_id = inner.last_persisted_id.clone();
        let mut write_error = None;
        if !ephemeral {
            inner.last_persisted_id = Some(event.id.clone());
            inner.persisted_count += 1;
            if let Some(log) = inner.log.as_mut() {
                if let Err(first) = log.append(&event) {
                    tracing::warn!(session = %self.session_id, error = %first, "event log write failed; retrying");
                    if let Err(second) = log.append(&event) {
                        write_error = Some(second.to_string());
                    }
                }
            }
            inner.last_persisted_at = Some(event.timestamp.clone());
        }
        self.deliver_locked(&mut inner, &event);
        if let Some(err) = write_error {
            tracing::error!(session = %self.session_id, error = %err, "event not persisted");
            let mut warn = Event::new(
                "session.error",
                serde_json::json!({"errorType": "persistence", "message": format!("Failed to persist event {}: {err}", event.id)}),
                true,
            );
            warn.parent_id = inner.last_persisted_id.clone();
            self.deliver_locked(&mut inner, &warn);
        }
        event
    }

    fn deliver_locked(&self, inner: &mut Inner, event: &Event) {
        let sid = &self.session_id;
        inner.subscribers.retain(|s| s.deliver(sid, event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Collect(Mutex<Vec<Event>>, AtomicU64);
    impl EventSubscriber for Collect {
        fn subscriber_id(&self) -> u64 {
            self.1.load(Ordering::Relaxed)
        }
        fn deliver(&self, _: &str, e: &Event) -> bool {
            self.0.lock().unwrap().push(e.clone());
            true
        }
    }

    #[test]
    fn parent_ids_chain_persisted_events_and_only_durable_ones_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let em = Emitter::new("s".into(), Some(EventLog::open(&path).unwrap()), None, 0);
        let c = Arc::new(Collect(Mutex::new(vec![]), AtomicU64::new(1)));
        em.subscribe(c.clone());
        let a = em.emit("session.start", serde_json::json!({}), false);
        let b = em.emit("session.idle", serde_json::json!({}), false);
        let d = em.emit("user.message", serde_json::json!({"content":"x"}), false);
        assert_eq!(a.parent_id, None);
        assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
        assert!(b.ephemeral, "session.idle is always ephemeral");
        assert_eq!(d.parent_id.as_deref(), Some(a.id.as_str()), "the ephemeral idle is skipped");
        assert_eq!(em.persisted_count(), 2);
        assert_eq!(c.0.lock().unwrap().len(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(!text.contains("session.idle"));
    }
}
