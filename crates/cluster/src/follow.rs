//! Sessions this node follows: the events their node persists and notifies reach this node's
//! clients, and once the owner's lease lapses the session is taken over and runs here.

use loop_engine::{Engine, EngineError, SessionHandle};
use protocol::event::{Event, SessionEvent};
use protocol::generated::types::SessionMode;
use protocol::methods::SessionConfigParams;
use store::pg::{EphemeralBatch, Lease};

use crate::{lock, Cluster};

pub(crate) struct Follower {
    owner: String,
    /// What the first client resumed with: the session is loaded with it on takeover.
    params: SessionConfigParams,
    /// Position of the last event relayed.
    last_seq: i64,
    /// The mode and title the relayed events last set (the follower's own state is as loaded).
    mode: Option<SessionMode>,
    title: Option<String>,
}

impl Follower {
    pub(crate) fn new(owner: &str, params: &SessionConfigParams, last_seq: i64) -> Self {
        Self { owner: owner.to_string(), params: params.clone(), last_seq, mode: None, title: None }
    }

    fn note(&mut self, event: &Event) {
        match &event.payload {
            SessionEvent::SessionModeChanged(d) => self.mode = Some(d.new_mode),
            SessionEvent::SessionTitleChanged(d) => self.title = Some(d.title.clone()),
            _ => {}
        }
    }
}

/// Marks a session as being taken over until dropped.
struct Swap<'a>(&'a Cluster, String);

impl Drop for Swap<'_> {
    fn drop(&mut self) {
        lock(&self.0.swapping).remove(&self.1);
        self.0.swapped.notify_waiters();
    }
}

impl Cluster {
    /// The node running a session this node only follows (a send must go there).
    pub fn follower_of(&self, id: &str) -> Option<String> {
        lock(&self.followers).get(id).map(|f| f.owner.clone())
    }

    /// The mode and title of a session this node follows, as the relayed events last set them
    /// (`None` when not followed; inner `None`s: unchanged since it was loaded).
    pub fn followed_state(&self, id: &str) -> Option<(Option<SessionMode>, Option<String>)> {
        lock(&self.followers).get(id).map(|f| (f.mode, f.title.clone()))
    }

    /// Returns once the session is not being taken over here (at once, almost always): between
    /// dropping its follower and loading it, the session is in neither state.
    pub async fn settled(&self, id: &str) {
        loop {
            let swapped = self.swapped.notified();
            tokio::pin!(swapped);
            swapped.as_mut().enable();
            if !lock(&self.swapping).contains(id) {
                return;
            }
            swapped.await;
        }
    }

    /// Relays new events to followers and takes over sessions whose owner's lease lapsed: on a
    /// wake-up from the database, and polled as a fallback.
    pub async fn follow(&self, engine: &Engine) {
        let ids: Vec<String> = lock(&self.followers).keys().cloned().collect();
        for id in ids {
            self.follow_one(engine, &id).await;
        }
    }

    /// A session's log changed in the database: relays at once if it is followed here.
    pub async fn session_changed(&self, engine: &Engine, id: &str) {
        if lock(&self.followers).contains_key(id) {
            self.follow_one(engine, id).await;
        }
    }

    /// Ephemeral events of a session another node runs: delivered to this node's followers
    /// after the persisted events emitted before them.
    pub async fn ephemeral(&self, engine: &Engine, batch: EphemeralBatch) {
        let id = batch.session_id.as_str();
        let Some(handle) = engine.get(id) else { return };
        if handle.runs_here() {
            return; // a stale payload of the node it was taken from
        }
        match self.relay_rows(id, &handle, Some(batch.position)).await {
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => tracing::warn!(session = %id, error = %e, "following a session on another node failed"),
        }
        for json in &batch.events {
            match serde_json::from_str::<Event>(json) {
                Ok(event) => {
                    if let Some(f) = lock(&self.followers).get_mut(id) {
                        f.note(&event);
                    }
                    handle.relay_ephemeral(&event, json);
                }
                Err(e) => tracing::warn!(session = %id, error = %e, "skipping an unreadable ephemeral event"),
            }
        }
    }

    async fn follow_one(&self, engine: &Engine, id: &str) {
        if let Err(e) = self.follow_tick(engine, id).await {
            tracing::warn!(session = %id, error = %e, "following a session on another node failed");
        }
    }

    /// Relays the rows of a followed session after the last one relayed, up to `upto` (all
    /// without). `None` when it is not followed here; else the position relayed before.
    async fn relay_rows(
        &self,
        id: &str,
        handle: &SessionHandle,
        upto: Option<i64>,
    ) -> Result<Option<i64>, EngineError> {
        let after = match lock(&self.followers).get(id) {
            Some(f) => f.last_seq,
            None => return Ok(None),
        };
        if upto.is_some_and(|u| u <= after) {
            return Ok(Some(after));
        }
        let tail = self.pg.after(id, after).await?;
        for (seq, event, json) in &tail.events {
            if upto.is_some_and(|u| *seq > u) {
                break;
            }
            // Noted first: a client that saw the event asks for what it changed next.
            if let Some(f) = lock(&self.followers).get_mut(id) {
                f.last_seq = *seq;
                f.note(event);
            }
            handle.relay(event, json);
        }
        Ok(Some(after))
    }

    async fn follow_tick(&self, engine: &Engine, id: &str) -> Result<(), EngineError> {
        let Some(handle) = engine.get(id) else {
            // Its last client left: nothing to follow for.
            lock(&self.followers).remove(id);
            return Ok(());
        };
        let Some(after) = self.relay_rows(id, &handle, None).await? else { return Ok(()) };
        if self.acquire(id).await? != Lease::Held {
            return Ok(());
        }
        // The owner is gone, and from now on its appends are refused: relay what it wrote
        // after the last look, then run the session here, for the same clients.
        let after = lock(&self.followers).get(id).map_or(after, |f| f.last_seq);
        for (_, event, json) in &self.pg.after(id, after).await?.events {
            handle.relay(event, json);
        }
        // Its files are on the shared volume already. Between forgetting the follower and
        // loading the session here, requests for it wait (`settled`).
        lock(&self.swapping).insert(id.to_string());
        let _swap = Swap(self, id.to_string());
        let Some(follower) = lock(&self.followers).remove(id) else { return Ok(()) };
        tracing::info!(session = %id, from = %follower.owner, "taking over a session");
        engine.take_over(&handle, &follower.params).await
    }
}
