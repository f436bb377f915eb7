//! Several nodes on one database. A session runs on the node holding its lease; that node
//! renews the lease while the session is loaded and gives it up when it unloads. Another node
//! asked to resume it loads a read-only follower: it relays the events the owner persists and
//! the ephemeral ones it notifies to its own clients, forwards sends and aborts to the owner
//! (refusing other changes, naming it), and takes the session over as soon as the lease is
//! free — at the latest `lease_ttl` after the owner died.
//!
//! Files are not this module's business: every node mounts one volume for the tenants'
//! workspaces and the session directories ([`ClusterSettings::shared_root`]), so a node taking a
//! session over finds them where the last one left them.
//!
//! One periodic [`Engine::cluster_tick`] per node does the renewing, relaying and taking over.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::methods::SessionConfigParams;
use store::pg::{Lease, PgEvents};

use crate::{lock, Engine, EngineError};

/// How often lifecycle rows older than an hour are dropped.
const PRUNE_EVERY: Duration = Duration::from_secs(300);

/// How often a node waiting for a forwarded request's answer looks, should its notification
/// be lost.
const FORWARD_POLL: Duration = Duration::from_millis(500);

/// How a node takes part in a cluster.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// A lease not renewed for this long is free for another node to take.
    pub lease_ttl: Duration,
    /// The directory every node mounts from one shared volume: session directories are under
    /// its `session-state/` (tenants' default workspaces under its `workspaces/`).
    pub shared_root: PathBuf,
}

impl ClusterSettings {
    /// Where the nodes keep session directories.
    pub fn session_state_dir(&self) -> PathBuf {
        self.shared_root.join("session-state")
    }
}

pub(crate) struct Cluster {
    settings: ClusterSettings,
    pg: PgEvents,
    /// Sessions this node holds the lease of.
    owned: Mutex<HashSet<String>>,
    /// Owned sessions that unloaded (or failed to load): their leases go at the next tick,
    /// unless they are loaded again by then. Only these: a lease taken for a session still
    /// loading must not be given up under it.
    unloaded: Mutex<HashSet<String>>,
    /// Sessions loaded here as followers of another node.
    followers: Mutex<HashMap<String, Follower>>,
    last_renewal: Mutex<Instant>,
    /// The last lifecycle row of another node told to this node's clients (`None`: not read yet).
    lifecycle_seq: tokio::sync::Mutex<Option<i64>>,
    /// Sessions run here that persisted events since the last tick, with their start time: one
    /// `session.updated` each goes to the other nodes' clients.
    updated: Mutex<HashMap<String, String>>,
    last_prune: Mutex<Option<Instant>>,
    /// Requests this node forwarded to a session's owner, by inbox row: woken by the answer.
    forwarded: Mutex<HashMap<i64, Arc<tokio::sync::Notify>>>,
    /// Sessions being taken over (the follower swapped for the loaded session): requests for
    /// them wait for the swap rather than find no session.
    swapping: Mutex<HashSet<String>>,
    swapped: tokio::sync::Notify,
}

/// Marks a session as being taken over until dropped.
struct Swap<'a>(&'a Cluster, String);

impl Drop for Swap<'_> {
    fn drop(&mut self) {
        lock(&self.0.swapping).remove(&self.1);
        self.0.swapped.notify_waiters();
    }
}

struct Follower {
    owner: String,
    /// What the first client resumed with: the session is loaded with it on takeover.
    params: SessionConfigParams,
    /// Position of the last event relayed.
    last_seq: i64,
    /// The mode and title the relayed events last set (the follower's own state is as loaded).
    mode: Option<protocol::generated::types::SessionMode>,
    title: Option<String>,
}

impl Follower {
    fn note(&mut self, event: &protocol::event::Event) {
        use protocol::event::SessionEvent as E;
        match &event.payload {
            E::SessionModeChanged(d) => self.mode = Some(d.new_mode),
            E::SessionTitleChanged(d) => self.title = Some(d.title.clone()),
            _ => {}
        }
    }
}

impl Cluster {
    pub(crate) fn new(settings: ClusterSettings, pg: PgEvents) -> Self {
        Self {
            settings,
            pg,
            owned: Mutex::default(),
            unloaded: Mutex::default(),
            followers: Mutex::default(),
            last_renewal: Mutex::new(Instant::now()),
            lifecycle_seq: Default::default(),
            updated: Mutex::default(),
            last_prune: Mutex::default(),
            forwarded: Mutex::default(),
            swapping: Mutex::default(),
            swapped: tokio::sync::Notify::new(),
        }
    }

    fn ttl_s(&self) -> u64 {
        self.settings.lease_ttl.as_secs().max(1)
    }

    /// Takes the lease of a session about to be created here.
    pub(crate) async fn acquire_new(&self, id: &str) -> Result<(), EngineError> {
        match self.acquire(id).await? {
            Lease::Held => Ok(()),
            Lease::Elsewhere(_) => Err(EngineError::SessionExists(id.to_string())),
        }
    }

    /// Takes the lease if it is free (or this node's), remembering it for renewal.
    pub(crate) async fn acquire(&self, id: &str) -> Result<Lease, EngineError> {
        let lease = self.pg.acquire(id, self.ttl_s()).await?;
        if lease == Lease::Held {
            lock(&self.unloaded).remove(id);
            lock(&self.owned).insert(id.to_string());
        }
        Ok(lease)
    }

    /// A session stopped running here (or never started): give its lease up at the next tick.
    pub(crate) fn unloaded(&self, id: &str) {
        if lock(&self.owned).contains(id) {
            lock(&self.unloaded).insert(id.to_string());
        }
    }

    /// The node a session loaded here as a follower runs on.
    pub(crate) fn following(&self, id: &str) -> Option<String> {
        lock(&self.followers).get(id).map(|f| f.owner.clone())
    }

    pub(crate) fn owns(&self, id: &str) -> bool {
        lock(&self.owned).contains(id)
    }

    /// A session run here persisted an event (its start excepted, as for `session.updated` here).
    pub(crate) fn note_updated(&self, id: &str, start_time: &str) {
        lock(&self.updated).insert(id.to_string(), start_time.to_string());
    }

    pub(crate) fn pg(&self) -> &PgEvents {
        &self.pg
    }

    pub(crate) fn add_follower(&self, id: &str, owner: &str, params: &SessionConfigParams, last_seq: i64) {
        let follower = Follower { owner: owner.to_string(), params: params.clone(), last_seq, mode: None, title: None };
        lock(&self.followers).insert(id.to_string(), follower);
    }
}

impl Engine {
    /// Whether this node is one of several on a shared database.
    pub fn is_clustered(&self) -> bool {
        self.cluster.is_some()
    }

    /// Tells the other nodes' clients of a session created or deleted here (with its owner as
    /// the database has it now, so only that tenant's clients hear of it).
    pub(crate) async fn publish_lifecycle(&self, notification: &protocol::methods::LifecycleNotification) {
        let Some(cluster) = &self.cluster else { return };
        let json = match serde_json::to_string(notification) {
            Ok(j) => j,
            Err(_) => return,
        };
        if let Err(e) = cluster.pg.publish_lifecycle(&notification.session_id, &json).await {
            tracing::warn!(session = %notification.session_id, error = %e, "publishing a lifecycle notification failed");
        }
    }

    /// Sessions other nodes created or deleted since the last call, with their owning tenant
    /// (empty on one node). The caller makes the owner known, then [`Engine::tell_lifecycle`].
    pub async fn remote_lifecycle(&self) -> Vec<(Option<String>, protocol::methods::LifecycleNotification)> {
        let Some(cluster) = &self.cluster else { return Vec::new() };
        let mut seq = cluster.lifecycle_seq.lock().await;
        let after = match *seq {
            Some(s) => s,
            None => match cluster.pg.lifecycle_head().await {
                Ok(head) => {
                    *seq = Some(head);
                    if let Err(e) = cluster.pg.prune_lifecycle().await {
                        tracing::warn!(error = %e, "pruning lifecycle notifications failed");
                    }
                    return Vec::new();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading lifecycle notifications failed");
                    return Vec::new();
                }
            },
        };
        let rows = match cluster.pg.lifecycle_after(after).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "reading lifecycle notifications failed");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for row in rows {
            *seq = Some(row.seq);
            match serde_json::from_str(&row.json) {
                Ok(n) => out.push((row.tenant, n)),
                Err(e) => tracing::warn!(seq = row.seq, error = %e, "skipping an unreadable lifecycle row"),
            }
        }
        out
    }

    /// Delivers a lifecycle notification (from another node) to this node's clients.
    pub fn tell_lifecycle(&self, notification: protocol::methods::LifecycleNotification) {
        self.broadcast_lifecycle(notification);
    }

    /// The mode and title of a session this node follows, as the relayed events last set them
    /// (`None` when not followed; inner `None`s: unchanged since it was loaded).
    pub fn followed_state(
        &self,
        id: &str,
    ) -> Option<(Option<protocol::generated::types::SessionMode>, Option<String>)> {
        let cluster = self.cluster.as_ref()?;
        lock(&cluster.followers).get(id).map(|f| (f.mode, f.title.clone()))
    }

    /// Returns once the session is not being taken over here (at once, almost always): between
    /// dropping its follower and loading it, the session is in neither state.
    pub async fn settled(&self, id: &str) {
        let Some(cluster) = &self.cluster else { return };
        loop {
            let swapped = cluster.swapped.notified();
            tokio::pin!(swapped);
            swapped.as_mut().enable();
            if !lock(&cluster.swapping).contains(id) {
                return;
            }
            swapped.await;
        }
    }

    /// The node running a session this node only follows (a send must go there).
    pub fn follower_of(&self, id: &str) -> Option<String> {
        self.cluster.as_ref().and_then(|c| c.following(id))
    }

    /// One round of cluster work: [`Engine::cluster_tick_own`], then [`Engine::cluster_follow`].
    pub async fn cluster_tick(&self) {
        self.cluster_tick_own().await;
        self.cluster_follow().await;
    }

    /// The work for sessions run here: renew the leases of sessions loaded here, give up those
    /// of sessions that unloaded, tell other nodes of updates. Called every few hundred
    /// milliseconds by the server.
    pub async fn cluster_tick_own(&self) {
        let Some(cluster) = &self.cluster else { return };
        self.renew_and_release(cluster).await;
        self.publish_updated(cluster).await;
    }

    /// Relays new events to followers and takes over sessions whose owner's lease lapsed: on a
    /// wake-up from the database, and polled as a fallback.
    pub async fn cluster_follow(&self) {
        let Some(cluster) = &self.cluster else { return };
        let ids: Vec<String> = lock(&cluster.followers).keys().cloned().collect();
        for id in ids {
            self.follow_one(cluster, &id).await;
        }
    }

    /// A session's log changed in the database: relays at once if it is followed here.
    pub async fn cluster_session_changed(&self, id: &str) {
        let Some(cluster) = &self.cluster else { return };
        if lock(&cluster.followers).contains_key(id) {
            self.follow_one(cluster, id).await;
        }
    }

    /// Starts listening for the database's wake-ups (`None` on one node or when it cannot).
    pub async fn cluster_wakeups(&self) -> Option<store::pg::Wakeups> {
        let cluster = self.cluster.as_ref()?;
        match cluster.pg.listen().await {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "cannot LISTEN for cluster wake-ups; polling only");
                None
            }
        }
    }

    async fn follow_one(&self, cluster: &Cluster, id: &str) {
        if let Err(e) = self.follow_tick(cluster, id).await {
            tracing::warn!(session = %id, error = %e, "following a session on another node failed");
        }
    }

    async fn renew_and_release(&self, cluster: &Cluster) {
        let unloaded: Vec<String> = lock(&cluster.unloaded).drain().collect();
        for id in unloaded.iter().filter(|id| self.get(id).is_none()) {
            lock(&cluster.owned).remove(id);
            if let Err(e) = cluster.pg.release(id).await {
                tracing::warn!(session = %id, error = %e, "releasing a session lease failed");
            }
        }
        let due = cluster.last_renewal.lock().map(|t| t.elapsed() >= cluster.settings.lease_ttl / 3).unwrap_or(true);
        if !due {
            return;
        }
        *lock(&cluster.last_renewal) = Instant::now();
        let owned: Vec<String> = lock(&cluster.owned).iter().cloned().collect();
        for id in &owned {
            match cluster.pg.renew(id, cluster.ttl_s()).await {
                Ok(true) => {}
                Ok(false) => {
                    // Another node took it (this one stalled past the lease): its appends here
                    // are refused by the database from now on.
                    tracing::warn!(session = %id, "lease lost to another node");
                    lock(&cluster.owned).remove(id);
                }
                Err(e) => tracing::warn!(session = %id, error = %e, "renewing a session lease failed"),
            }
        }
    }

    /// One `session.updated` per session run here that persisted events since the last tick,
    /// for the other nodes' clients (this node's heard one per event). Old lifecycle rows are
    /// dropped every few minutes.
    async fn publish_updated(&self, cluster: &Cluster) {
        let updated: Vec<(String, String)> = lock(&cluster.updated).drain().collect();
        for (id, start_time) in updated {
            let notification = protocol::methods::LifecycleNotification {
                kind: "session.updated".into(),
                session_id: id,
                metadata: Some(protocol::methods::LifecycleMetadata { start_time, modified_time: crate::now() }),
            };
            self.publish_lifecycle(&notification).await;
        }
        let due = lock(&cluster.last_prune).is_none_or(|t| t.elapsed() >= PRUNE_EVERY);
        if due {
            *lock(&cluster.last_prune) = Some(Instant::now());
            if let Err(e) = cluster.pg.prune_lifecycle().await {
                tracing::warn!(error = %e, "pruning lifecycle notifications failed");
            }
            if let Err(e) = cluster.pg.prune_inbox().await {
                tracing::warn!(error = %e, "pruning forwarded requests failed");
            }
        }
    }

    /// Relays the rows of a followed session after the last one relayed, up to `upto` (all
    /// without). `None` when it is not followed here; else the position relayed before.
    async fn relay_rows(
        &self,
        cluster: &Cluster,
        id: &str,
        handle: &crate::SessionHandle,
        upto: Option<i64>,
    ) -> Result<Option<i64>, EngineError> {
        let after = match lock(&cluster.followers).get(id) {
            Some(f) => f.last_seq,
            None => return Ok(None),
        };
        if upto.is_some_and(|u| u <= after) {
            return Ok(Some(after));
        }
        let tail = cluster.pg.after(id, after).await?;
        for (seq, event, json) in &tail.events {
            if upto.is_some_and(|u| *seq > u) {
                break;
            }
            // Noted first: a client that saw the event asks for what it changed next.
            if let Some(f) = lock(&cluster.followers).get_mut(id) {
                f.last_seq = *seq;
                f.note(event);
            }
            handle.emitter().relay(event, json);
        }
        Ok(Some(after))
    }

    /// Ephemeral events of a session another node runs: delivered to this node's followers
    /// after the persisted events emitted before them.
    pub async fn cluster_ephemeral(&self, batch: store::pg::EphemeralBatch) {
        let Some(cluster) = &self.cluster else { return };
        let id = batch.session_id.as_str();
        let Some(handle) = self.get(id) else { return };
        if handle.emitter().has_log() {
            return; // run here (a stale payload of the node it was taken from)
        }
        match self.relay_rows(cluster, id, &handle, Some(batch.position)).await {
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => tracing::warn!(session = %id, error = %e, "following a session on another node failed"),
        }
        for json in &batch.events {
            match serde_json::from_str::<protocol::event::Event>(json) {
                Ok(event) => {
                    if let Some(f) = lock(&cluster.followers).get_mut(id) {
                        f.note(&event);
                    }
                    handle.emitter().relay_ephemeral(&event, json);
                }
                Err(e) => tracing::warn!(session = %id, error = %e, "skipping an unreadable ephemeral event"),
            }
        }
    }

    /// Hands a request for a session another node runs to that node and waits for its answer
    /// (the result's JSON text or the error's message). `None` when none came in time: the
    /// request is withdrawn.
    pub async fn forward_request(
        &self,
        id: &str,
        method: &str,
        params: &str,
        wait: Duration,
    ) -> Result<Option<Result<String, String>>, EngineError> {
        let Some(cluster) = &self.cluster else { return Ok(None) };
        let row = cluster.pg.forward(id, method, params).await?;
        let woken = Arc::new(tokio::sync::Notify::new());
        lock(&cluster.forwarded).insert(row, woken.clone());
        let deadline = tokio::time::Instant::now() + wait;
        let answer = loop {
            match cluster.pg.take_answer(row).await {
                Ok(Some(answer)) => break Some(answer),
                Ok(None) => {}
                Err(e) => tracing::warn!(session = %id, error = %e, "reading a forwarded request's answer failed"),
            }
            if tokio::time::Instant::now() >= deadline {
                break None;
            }
            // The answer's notification wakes this; the timeout covers one lost meanwhile.
            let _ = tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + FORWARD_POLL), woken.notified())
                .await;
        };
        lock(&cluster.forwarded).remove(&row);
        if answer.is_none() {
            if let Err(e) = cluster.pg.withdraw(row).await {
                tracing::warn!(session = %id, error = %e, "withdrawing a forwarded request failed");
            }
        }
        Ok(answer)
    }

    /// A forwarded request was answered (the database's wake-up).
    pub fn cluster_answered(&self, row: i64) {
        let Some(cluster) = &self.cluster else { return };
        if let Some(woken) = lock(&cluster.forwarded).get(&row) {
            woken.notify_one();
        }
    }

    /// Claims the requests other nodes forwarded to sessions run here (to `only`, or to any).
    pub async fn claim_forwarded(&self, only: Option<&str>) -> Vec<store::pg::InboxItem> {
        let Some(cluster) = &self.cluster else { return Vec::new() };
        let ids: Vec<String> = match only {
            Some(id) if cluster.owns(id) => vec![id.to_string()],
            Some(_) => return Vec::new(),
            None => lock(&cluster.owned).iter().cloned().collect(),
        };
        let ids: Vec<String> =
            ids.into_iter().filter(|id| self.get(id).is_some_and(|h| h.emitter().has_log())).collect();
        match cluster.pg.claim_inbox(&ids).await {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "reading forwarded requests failed");
                Vec::new()
            }
        }
    }

    /// Writes the answer to a claimed forwarded request.
    pub async fn answer_forwarded(&self, row: i64, answer: Result<String, String>) {
        let Some(cluster) = &self.cluster else { return };
        if let Err(e) = cluster.pg.answer(row, answer).await {
            tracing::warn!(row, error = %e, "answering a forwarded request failed");
        }
    }

    async fn follow_tick(&self, cluster: &Cluster, id: &str) -> Result<(), EngineError> {
        let Some(handle) = self.get(id) else {
            // Its last client left: nothing to follow for.
            lock(&cluster.followers).remove(id);
            return Ok(());
        };
        let Some(after) = self.relay_rows(cluster, id, &handle, None).await? else { return Ok(()) };
        if cluster.acquire(id).await? != Lease::Held {
            return Ok(());
        }
        // The owner is gone, and from now on its appends are refused: relay what it wrote
        // after the last look, then run the session here, for the same clients.
        let after = lock(&cluster.followers).get(id).map_or(after, |f| f.last_seq);
        for (_, event, json) in &cluster.pg.after(id, after).await?.events {
            handle.emitter().relay(event, json);
        }
        // Its files are on the shared volume already. Between forgetting the follower and
        // loading the session here, requests for it wait (`settled`).
        lock(&cluster.swapping).insert(id.to_string());
        let _swap = Swap(cluster, id.to_string());
        let Some(follower) = lock(&cluster.followers).remove(id) else { return Ok(()) };
        tracing::info!(session = %id, from = %follower.owner, "taking over a session");
        let subscribers = handle.emitter().take_subscribers();
        self.forget(&handle);
        handle.shutdown();
        let mut params = follower.params;
        params.disable_resume = Some(false);
        self.load(id, &params, subscribers, None, Default::default()).await?;
        Ok(())
    }
}
