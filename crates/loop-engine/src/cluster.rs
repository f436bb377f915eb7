//! Several nodes on one database. A session runs on the node holding its lease; that node
//! renews the lease while the session is loaded and gives it up when it unloads. Another node
//! asked to resume it loads a read-only follower: it relays the events the owner persists to
//! its own clients, refuses sends (naming the owner), and takes the session over as soon as
//! the lease is free — at the latest `lease_ttl` after the owner died.
//!
//! One periodic [`Engine::cluster_tick`] per node does the renewing, relaying and taking over.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::methods::SessionConfigParams;
use store::pg::{Lease, PgEvents};

use crate::{lock, Engine, EngineError};

/// How often lifecycle rows older than an hour are dropped.
const PRUNE_EVERY: Duration = Duration::from_secs(300);

/// How a node takes part in a cluster.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// A lease not renewed for this long is free for another node to take.
    pub lease_ttl: Duration,
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
    /// Session files mirrored in the database (`shared_files`).
    pub(crate) files: crate::shared_files::Mirror,
    /// The last lifecycle row of another node told to this node's clients (`None`: not read yet).
    lifecycle_seq: tokio::sync::Mutex<Option<i64>>,
    /// Sessions run here that persisted events since the last tick, with their start time: one
    /// `session.updated` each goes to the other nodes' clients.
    updated: Mutex<HashMap<String, String>>,
    last_prune: Mutex<Option<Instant>>,
}

struct Follower {
    owner: String,
    /// What the first client resumed with: the session is loaded with it on takeover.
    params: SessionConfigParams,
    /// Position of the last event relayed.
    last_seq: i64,
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
            files: Default::default(),
            lifecycle_seq: Default::default(),
            updated: Mutex::default(),
            last_prune: Mutex::default(),
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
        let follower = Follower { owner: owner.to_string(), params: params.clone(), last_seq };
        lock(&self.followers).insert(id.to_string(), follower);
    }
}

/// A session's files, sent to the database before an event that may mention them (a tool's
/// completion, a compaction's checkpoint): once that event is persisted another node may follow
/// or take the session over, and a kill -9 right after must not lose what it names. Awaited on
/// the turn, but when nothing changed it costs a walk of the session directory's sizes and
/// times; on one node, or for a session another node runs, nothing.
#[derive(Clone)]
pub(crate) struct FilesBarrier(Option<(Arc<Cluster>, crate::SessionHandle, std::path::PathBuf)>);

impl FilesBarrier {
    pub(crate) fn of(deps: &crate::Deps, handle: &crate::SessionHandle) -> Self {
        let cluster = deps.cluster.clone().filter(|_| handle.remote_state().is_none());
        Self(cluster.map(|c| (c, handle.clone(), deps.layout.session_dir(handle.id()))))
    }

    pub(crate) async fn share(&self) {
        let Some((cluster, handle, dir)) = &self.0 else { return };
        let id = handle.id();
        if !cluster.owns(id) {
            return;
        }
        // The event count stays: the events after this one still ask for the tick's push.
        let events = cluster.files.pushed_events(id);
        if let Err(e) = cluster.files.push(&cluster.pg, id, dir, events).await {
            tracing::warn!(session = %id, error = %e, "sharing session files failed");
        }
    }
}

impl Engine {
    /// Whether this node is one of several on a shared database.
    pub fn is_clustered(&self) -> bool {
        self.cluster.is_some()
    }

    /// Sends a session's changed files to the database, when this node runs it (a client
    /// changed it, or it persisted events). Failures are logged: the files stay here, and the
    /// next push sends them.
    pub async fn share_files(&self, id: &str) {
        let Some(cluster) = &self.cluster else { return };
        let Some(handle) = self.get(id) else { return };
        if !cluster.owns(id) || handle.remote_state().is_some() {
            return;
        }
        let events = handle.emitter().persisted_count();
        let dir = self.deps.layout.session_dir(id);
        if let Err(e) = cluster.files.push(&cluster.pg, id, &dir, events).await {
            tracing::warn!(session = %id, error = %e, "sharing session files failed");
        }
    }

    /// Writes out the session files the database holds that this node has not seen.
    pub(crate) async fn fetch_shared_files(&self, id: &str) {
        let Some(cluster) = &self.cluster else { return };
        let dir = self.deps.layout.session_dir(id);
        if let Err(e) = cluster.files.pull(&cluster.pg, id, &dir).await {
            tracing::warn!(session = %id, error = %e, "reading shared session files failed");
        }
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
    /// of sessions that unloaded, share changed files, tell other nodes of updates. Called every
    /// few hundred milliseconds by the server.
    pub async fn cluster_tick_own(&self) {
        let Some(cluster) = &self.cluster else { return };
        self.renew_and_release(cluster).await;
        self.share_changed_files(cluster).await;
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

    /// A session's log or files changed in the database: relays at once if it is followed here.
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
            // What the session wrote since the last push goes before the lease does.
            let dir = self.deps.layout.session_dir(id);
            if let Err(e) = cluster.files.push(&cluster.pg, id, &dir, 0).await {
                tracing::warn!(session = %id, error = %e, "sharing session files failed");
            }
            cluster.files.forget(id);
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
        }
    }

    /// Pushes the files of sessions run here that persisted events since their last push (a
    /// turn's tools may have written them).
    async fn share_changed_files(&self, cluster: &Cluster) {
        let owned: Vec<String> = lock(&cluster.owned).iter().cloned().collect();
        for id in owned {
            let Some(handle) = self.get(&id) else { continue };
            if cluster.files.stale(&id, handle.emitter().persisted_count()) {
                self.share_files(&id).await;
            }
        }
    }

    async fn follow_tick(&self, cluster: &Cluster, id: &str) -> Result<(), EngineError> {
        let Some(handle) = self.get(id) else {
            // Its last client left: nothing to follow for.
            lock(&cluster.followers).remove(id);
            if !cluster.owns(id) {
                cluster.files.forget(id);
            }
            return Ok(());
        };
        let after = match lock(&cluster.followers).get(id) {
            Some(f) => f.last_seq,
            None => return Ok(()),
        };
        let tail = cluster.pg.after(id, after).await?;
        for (seq, event, json) in &tail.events {
            handle.emitter().relay(event, json);
            if let Some(f) = lock(&cluster.followers).get_mut(id) {
                f.last_seq = *seq;
            }
        }
        // A client's change to the plan or a file adds no event: the files are looked at each time.
        self.fetch_shared_files(id).await;
        if cluster.acquire(id).await? != Lease::Held {
            return Ok(());
        }
        // The owner is gone, and from now on its appends are refused: relay what it wrote
        // after the last look, then run the session here, for the same clients.
        let after = lock(&cluster.followers).get(id).map_or(after, |f| f.last_seq);
        for (_, event, json) in &cluster.pg.after(id, after).await?.events {
            handle.emitter().relay(event, json);
        }
        // The files first, while the follower still answers: between forgetting it and loading
        // the session here, requests for it find no session.
        self.fetch_shared_files(id).await;
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
