//! Emits a session's events: chains `parentId`, appends persisted events to the log **before**
//! delivering them, then hands every event to each subscriber in order.
//!
//! An event whose write failed (a full disk, the database gone) is never delivered: what any
//! client saw is always a prefix of what is stored. The first failure is told to clients as an
//! ephemeral `session.error`; from then on persisted events are neither written nor delivered
//! until the session clears the failure (its run has stopped, see
//! [`Emitter::clear_persist_failure`]), so the log never holds a later event without an earlier
//! one (a tool's result without the call that asked for it).
//!
//! `parentId` is the id of the latest *persisted* event: the chain a reader of
//! `events.jsonl` (or of `session.getMessages`) follows never points at an ephemeral event,
//! which is on no disk.
//!
//! Each event is serialized once; the log and every subscriber get the same JSON text. All
//! work under the lock is synchronous (a small `write` and channel sends), so the lock is never
//! held across an `.await`.

use std::sync::{Arc, Mutex, MutexGuard};

use protocol::event::{Event, SessionEvent};
use protocol::generated::types as t;
use serde_json::Value;
use store::EventSink;

/// Somebody who receives a session's events (an RPC connection, the headless runner, a test).
pub trait EventSubscriber: Send + Sync {
    /// Identifies the subscriber for unsubscribe.
    fn subscriber_id(&self) -> u64;
    /// Delivers one event; `json` is the event as serialized for everyone. Returns `false` once
    /// the subscriber is gone; it is then dropped.
    fn deliver(&self, session_id: &str, event: &Event, json: &str) -> bool;
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
    /// Wakes `session.eventLog.read` long-polls after each event.
    emitted: tokio::sync::Notify,
    /// Told of each persisted event delivered to clients (the `session.updated` lifecycle
    /// notification), outside the lock.
    on_persisted: std::sync::OnceLock<PersistedHook>,
    /// Told of each ephemeral event delivered, with the log's length, under the lock (so in
    /// order with the appends): other nodes' followers hear them this way.
    on_ephemeral: std::sync::OnceLock<crate::placement::EphemeralHook>,
    /// Sees each event emitted (the deployment's accounting), outside the lock.
    meter: std::sync::OnceLock<Arc<dyn crate::meter::Meter>>,
}

/// Written to the log for the runtime's own bookkeeping and never shown to a client
/// (`session.usage_record`): not delivered, not in `session.getMessages`, not relayed.
pub(crate) fn log_only(event: &Event) -> bool {
    matches!(event.payload, protocol::event::SessionEvent::SessionUsageRecord(_))
}

pub(crate) type PersistedHook = Box<dyn Fn(&str) + Send + Sync>;

struct Inner {
    /// The latest persisted event (the parent of the next event of any kind).
    last_persisted_id: Option<String>,
    persisted_count: usize,
    log: Option<EventSink>,
    subscribers: Vec<Arc<dyn EventSubscriber>>,
    /// Events emitted so far by this process, ephemeral ones included.
    seq: u64,
    /// Recent events for `session.eventLog.read`: made when a client first reads the log, so
    /// sessions nobody polls keep nothing.
    ring: Option<Ring>,
    /// Why the first persisted event since the failure was last cleared could not be written.
    persist_failure: Option<String>,
}

/// The most recent events, bounded in count and bytes.
#[derive(Default)]
struct Ring {
    entries: std::collections::VecDeque<RingEntry>,
    bytes: usize,
}

impl Ring {
    fn push(&mut self, entry: RingEntry) {
        self.bytes += entry.json.len();
        self.entries.push_back(entry);
        while self.entries.len() > RING_EVENTS || (self.bytes > RING_BYTES && self.entries.len() > 1) {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.json.len();
            }
        }
    }
}

const RING_EVENTS: usize = 1000;
const RING_BYTES: usize = 1 << 20;

/// One event as the ring keeps it.
#[derive(Clone)]
pub struct RingEntry {
    pub seq: u64,
    pub ephemeral: bool,
    pub kind: String,
    pub json: Arc<str>,
}

/// What a ring read found after a position.
pub struct RingRead {
    pub entries: Vec<RingEntry>,
    /// The position after the last event looked at.
    pub next: u64,
    pub has_more: bool,
    /// Events after the position were already dropped from the ring.
    pub expired: bool,
}

impl Emitter {
    /// `last_persisted_id` and `persisted_count` describe the log as loaded (resume), or are
    /// `None` and 0 for a new session.
    pub fn new(
        session_id: String,
        log: Option<EventSink>,
        last_persisted_id: Option<String>,
        persisted_count: usize,
    ) -> Self {
        let inner = Inner {
            last_persisted_id,
            persisted_count,
            log,
            subscribers: Vec::new(),
            seq: 0,
            ring: None,
            persist_failure: None,
        };
        Self {
            session_id,
            inner: Mutex::new(inner),
            emitted: tokio::sync::Notify::new(),
            on_persisted: std::sync::OnceLock::new(),
            on_ephemeral: std::sync::OnceLock::new(),
            meter: std::sync::OnceLock::new(),
        }
    }

    /// Sets what sees every event emitted here (once; later calls are ignored).
    pub(crate) fn set_meter(&self, meter: Arc<dyn crate::meter::Meter>) {
        let _ = self.meter.set(meter);
    }

    /// Sets what hears of ephemeral events (once; later calls are ignored).
    pub(crate) fn set_on_ephemeral(&self, hook: crate::placement::EphemeralHook) {
        let _ = self.on_ephemeral.set(hook);
    }

    /// Whether events are written here (not a follower of another node).
    pub fn has_log(&self) -> bool {
        self.lock().log.is_some()
    }

    /// Sets what hears of persisted events (once; later calls are ignored).
    pub(crate) fn set_on_persisted(&self, hook: PersistedHook) {
        let _ = self.on_persisted.set(hook);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::mutex::lock(&self.inner)
    }

    /// How many events the session's log holds.
    pub fn persisted_count(&self) -> usize {
        self.lock().persisted_count
    }

    /// The log's length and the position of the latest event, read together; starts keeping
    /// recent events for readers of the log.
    pub fn read_position(&self) -> (usize, u64) {
        let mut inner = self.lock();
        inner.ring.get_or_insert_with(Ring::default);
        (inner.persisted_count, inner.seq)
    }

    /// Up to `max` events after position `after` that pass `keep`.
    pub fn ring_after(&self, after: u64, max: usize, keep: impl Fn(&RingEntry) -> bool) -> RingRead {
        let mut inner = self.lock();
        let seq = inner.seq;
        let ring = inner.ring.get_or_insert_with(Ring::default);
        let oldest = ring.entries.front().map_or(seq + 1, |e| e.seq);
        let expired = after + 1 < oldest && after < seq;
        let mut out = RingRead { entries: Vec::new(), next: seq, has_more: false, expired };
        let mut last = after;
        for e in ring.entries.iter().filter(|e| e.seq > after) {
            if keep(e) {
                if out.entries.len() == max {
                    out.has_more = true;
                    break;
                }
                out.entries.push(e.clone());
            }
            last = e.seq;
        }
        if out.has_more {
            out.next = last;
        }
        out
    }

    /// Resolves after the next event; create it before looking, so no event slips between.
    pub fn emitted(&self) -> tokio::sync::futures::Notified<'_> {
        self.emitted.notified()
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

    /// How to ask one subscriber something (a request for the client that can answer it).
    pub fn requester_of(&self, subscriber_id: u64) -> Option<Arc<dyn ClientRequester>> {
        self.lock().subscribers.iter().find(|s| s.subscriber_id() == subscriber_id).and_then(|s| s.requester())
    }

    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }

    /// Emits one event, persisted unless its type is always ephemeral. Returns its id.
    pub fn emit(&self, payload: impl Into<SessionEvent>) -> String {
        self.emit_event(payload.into(), false, true, None)
    }

    /// Emits one event that is not persisted, whatever its type allows.
    pub fn emit_ephemeral(&self, payload: impl Into<SessionEvent>) -> String {
        self.emit_event(payload.into(), true, true, None)
    }

    /// Writes one event to the log without delivering it (`session.usage_record`).
    pub fn record(&self, payload: impl Into<SessionEvent>) -> String {
        self.emit_event(payload.into(), false, false, None)
    }

    /// Emits one event of a sub-agent (`agentId` on the envelope).
    pub fn emit_from(&self, agent_id: &str, payload: SessionEvent, ephemeral: bool, deliver: bool) -> String {
        self.emit_event(payload, ephemeral, deliver, Some(agent_id.to_string()))
    }

    /// Cuts the log before `event_id` (see [`EventSink::truncate_before`]); the next event's
    /// parent is the last one left. `None` when the log has no such event.
    pub fn truncate_log(&self, event_id: &str) -> Result<Option<(Vec<Event>, usize)>, store::StoreError> {
        let mut inner = self.lock();
        let Some(log) = inner.log.as_mut() else { return Ok(None) };
        let Some((kept, removed)) = log.truncate_before(event_id)? else { return Ok(None) };
        inner.last_persisted_id = kept.last().map(|e| e.id.clone());
        inner.persisted_count = kept.len();
        Ok(Some((kept, removed)))
    }

    /// Why a persisted event could not be written, since the failure was last cleared.
    pub fn persist_failure(&self) -> Option<String> {
        self.lock().persist_failure.clone()
    }

    /// Lets persisted events be written again; returns whether a write had failed. The
    /// session's conversation may then hold what the log does not, so its owner reads it back
    /// from the log.
    pub fn clear_persist_failure(&self) -> bool {
        self.lock().persist_failure.take().is_some()
    }

    /// Persisted events are written first and delivered only once written (see the module's
    /// notes for a write that fails).
    fn emit_event(&self, payload: SessionEvent, ephemeral: bool, deliver: bool, agent_id: Option<String>) -> String {
        let mut event = Event::new(payload, ephemeral);
        event.agent_id = agent_id;
        let mut inner = self.lock();
        event.parent_id = inner.last_persisted_id.clone();
        let json = match serde_json::to_string(&event) {
            Ok(json) => json,
            Err(e) => {
                // Generated payloads always serialize; this guards the impossible case loudly.
                tracing::error!(session = %self.session_id, kind = event.kind(), error = %e, "event not serializable");
                return event.id;
            }
        };
        if !event.ephemeral {
            if inner.persist_failure.is_some() && inner.log.is_some() {
                tracing::debug!(session = %self.session_id, kind = event.kind(), "event dropped after a failed write");
                return event.id;
            }
            if let Some(log) = inner.log.as_mut() {
                if let Err(err) = log.append(&event.id, json.as_bytes()) {
                    self.write_failed(inner, &event, &err);
                    return event.id;
                }
            }
            inner.last_persisted_id = Some(event.id.clone());
            inner.persisted_count += 1;
        }
        inner.seq += 1;
        let seq = inner.seq;
        if let Some(ring) = inner.ring.as_mut() {
            let entry = RingEntry {
                seq,
                ephemeral: event.ephemeral,
                kind: event.kind().to_string(),
                json: json.as_str().into(),
            };
            ring.push(entry);
        }
        if deliver {
            self.deliver_locked(&mut inner, &event, &json);
            if event.ephemeral {
                if let Some(hook) = self.on_ephemeral.get() {
                    hook(&json, inner.persisted_count);
                }
            }
        }
        drop(inner);
        self.emitted.notify_waiters();
        if !event.ephemeral && deliver {
            if let Some(hook) = self.on_persisted.get() {
                hook(event.kind());
            }
        }
        if let Some(meter) = self.meter.get() {
            meter.observe(&self.session_id, &event);
        }
        event.id
    }

    /// A persisted event could not be written: it is not delivered; clients are told with an
    /// ephemeral `session.error` instead.
    fn write_failed(&self, mut inner: MutexGuard<'_, Inner>, event: &Event, err: &store::StoreError) {
        // The operating system's reason, not the server's paths.
        let reason = match err {
            store::StoreError::Io { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        tracing::error!(session = %self.session_id, kind = event.kind(), error = %err, "event not persisted");
        let message = format!("Failed to persist event {}: {reason}", event.id);
        inner.persist_failure = Some(message.clone());
        let mut warn =
            Event::new(t::ErrorData { error_type: "persistence".into(), message, ..Default::default() }.into(), true);
        warn.parent_id = inner.last_persisted_id.clone();
        // Delivered as any ephemeral event is: counted, kept for readers, handed to everyone.
        if let Ok(json) = serde_json::to_string(&warn) {
            self.relay_locked(inner, &warn, &json, true);
        }
    }

    /// Delivers an event another node persisted (a follower of a session running elsewhere):
    /// it becomes the parent of what follows, and is not written again.
    pub fn relay(&self, event: &Event, json: &str) {
        let mut inner = self.lock();
        inner.last_persisted_id = Some(event.id.clone());
        inner.persisted_count += 1;
        if log_only(event) {
            return; // the owner never delivered it either
        }
        self.relay_locked(inner, event, json, false);
    }

    /// Delivers an ephemeral event of a session another node runs (never written here).
    pub fn relay_ephemeral(&self, event: &Event, json: &str) {
        self.relay_locked(self.lock(), event, json, true);
    }

    fn relay_locked(&self, mut inner: MutexGuard<'_, Inner>, event: &Event, json: &str, ephemeral: bool) {
        inner.seq += 1;
        let seq = inner.seq;
        if let Some(ring) = inner.ring.as_mut() {
            ring.push(RingEntry { seq, ephemeral, kind: event.kind().to_string(), json: json.into() });
        }
        self.deliver_locked(&mut inner, event, json);
        drop(inner);
        self.emitted.notify_waiters();
    }

    /// Removes and returns every subscriber (a session handed from one handle to another).
    pub fn take_subscribers(&self) -> Vec<Arc<dyn EventSubscriber>> {
        std::mem::take(&mut self.lock().subscribers)
    }

    /// An ephemeral event for one subscriber only: a request routed to the client that can
    /// answer it (the others would answer that they cannot). Not in the read-back ring.
    pub fn emit_ephemeral_to(&self, subscriber_id: u64, payload: impl Into<SessionEvent>) -> String {
        let mut event = Event::new(payload.into(), true);
        let mut inner = self.lock();
        event.parent_id = inner.last_persisted_id.clone();
        let json = match serde_json::to_string(&event) {
            Ok(json) => json,
            Err(e) => {
                tracing::error!(session = %self.session_id, kind = event.kind(), error = %e, "event not serializable");
                return event.id;
            }
        };
        let sid = &self.session_id;
        inner.subscribers.retain(|s| s.subscriber_id() != subscriber_id || s.deliver(sid, &event, &json));
        event.id
    }

    fn deliver_locked(&self, inner: &mut Inner, event: &Event, json: &str) {
        let sid = &self.session_id;
        inner.subscribers.retain(|s| s.deliver(sid, event, json));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Collect(Mutex<Vec<(Event, String)>>, AtomicU64);
    impl EventSubscriber for Collect {
        fn subscriber_id(&self) -> u64 {
            self.1.load(Ordering::Relaxed)
        }
        fn deliver(&self, _: &str, e: &Event, json: &str) -> bool {
            self.0.lock().unwrap().push((e.clone(), json.to_string()));
            true
        }
    }

    #[test]
    fn parent_ids_chain_persisted_events_and_only_durable_ones_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let em = Emitter::new("s".into(), Some(store::EventLog::open(&path).unwrap().into()), None, 0);
        let c = Arc::new(Collect(Mutex::new(vec![]), AtomicU64::new(1)));
        em.subscribe(c.clone());
        let a = em.emit(t::AbortData { reason: t::AbortReason::UserInitiated });
        let b = em.emit(t::IdleData::default());
        let d = em.emit(t::UserMessageData { content: "x".into(), ..Default::default() });
        let got = c.0.lock().unwrap().clone();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0.parent_id, None);
        assert_eq!(got[1].0.parent_id.as_deref(), Some(a.as_str()));
        assert!(got[1].0.ephemeral, "session.idle is always ephemeral");
        assert_eq!(got[2].0.parent_id.as_deref(), Some(a.as_str()), "the ephemeral idle is skipped");
        assert_eq!((got[1].0.id.as_str(), got[2].0.id.as_str()), (b.as_str(), d.as_str()));
        assert_eq!(em.persisted_count(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, vec![got[0].1.as_str(), got[2].1.as_str()], "the log holds what clients got");
        assert!(!text.contains("session.idle"));
    }

    /// `/dev/full` fails every write with "No space left on device".
    #[cfg(target_os = "linux")]
    #[test]
    fn an_event_that_was_not_written_is_not_delivered() {
        let em = Emitter::new("s".into(), Some(store::EventLog::open("/dev/full").unwrap().into()), None, 0);
        let c = Arc::new(Collect(Mutex::new(vec![]), AtomicU64::new(1)));
        em.subscribe(c.clone());
        em.emit(t::UserMessageData { content: "lost".into(), ..Default::default() });
        em.emit(t::AssistantTurnStartData { turn_id: "0".into(), ..Default::default() });
        em.emit_ephemeral(t::IdleData::default());
        let got: Vec<Event> = c.0.lock().unwrap().iter().map(|(e, _)| e.clone()).collect();
        let kinds: Vec<&str> = got.iter().map(Event::kind).collect();
        assert_eq!(kinds, vec!["session.error", "session.idle"], "only the failure and ephemeral events");
        assert!(got.iter().all(|e| e.ephemeral && e.parent_id.is_none()));
        let SessionEvent::SessionError(err) = &got[0].payload else { panic!("{:?}", got[0]) };
        assert_eq!(err.error_type, "persistence");
        assert!(err.message.contains("No space left on device"), "{}", err.message);
        assert!(!err.message.contains("/dev/full"), "no server path: {}", err.message);
        assert_eq!(em.persisted_count(), 0);
        assert!(em.persist_failure().is_some());

        assert!(em.clear_persist_failure());
        assert!(!em.clear_persist_failure());
        em.emit(t::UserMessageData { content: "again".into(), ..Default::default() });
        let errors = c.0.lock().unwrap().iter().filter(|(e, _)| e.kind() == "session.error").count();
        assert_eq!(errors, 2, "a failure after clearing is told again");
    }

    #[test]
    fn an_optional_type_can_be_emitted_ephemeral() {
        let em = Emitter::new("s".into(), None, None, 0);
        let c = Arc::new(Collect(Mutex::new(vec![]), AtomicU64::new(1)));
        em.subscribe(c.clone());
        em.emit_ephemeral(t::WarningData { warning_type: "w".into(), message: "m".into(), ..Default::default() });
        assert!(c.0.lock().unwrap()[0].0.ephemeral);
        assert_eq!(em.persisted_count(), 0);
    }

    #[test]
    fn the_ring_starts_with_its_first_reader_and_stays_bounded() {
        let em = Emitter::new("s".into(), None, None, 0);
        em.emit(t::IdleData::default());
        let (_, start) = em.read_position();
        assert_eq!(start, 1, "positions count every event, kept or not");
        let none = em.ring_after(start, 10, |_| true);
        assert!(none.entries.is_empty() && !none.expired && none.next == start);

        for _ in 0..RING_EVENTS + 5 {
            em.emit(t::IdleData::default());
        }
        let all = em.ring_after(start, usize::MAX, |_| true);
        assert_eq!(all.entries.len(), RING_EVENTS, "the oldest were dropped");
        assert!(all.expired, "the reader missed events that are gone");
        let recent = all.entries[0].seq;
        let page = em.ring_after(recent - 1, 2, |_| true);
        assert_eq!((page.entries.len(), page.has_more, page.next), (2, true, recent + 1));
        assert!(page.entries.iter().all(|e| e.ephemeral && e.kind == "session.idle"));
        let filtered = em.ring_after(recent - 1, 10, |e| e.kind == "nothing");
        assert!(filtered.entries.is_empty() && !filtered.has_more);
    }
}
