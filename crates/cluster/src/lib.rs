//! Several nodes on one database. A session runs on the node holding its lease; that node
//! renews the lease while the session is loaded and gives it up when it unloads. Another node
//! asked to resume it loads a read-only follower: it relays the events the owner persists and
//! the ephemeral ones it notifies to its own clients, forwards sends and aborts to the owner
//! (the server refuses other changes, naming it), and takes the session over as soon as the
//! lease is free — at the latest `lease_ttl` after the owner died.
//!
//! [`Cluster`] is the engine's [`Placement`] on several nodes: the engine calls it when a
//! session is created, loaded, unloaded or persists an event, and knows nothing else of this.
//! The server drives the rest: one periodic [`Cluster::tick_own`] and [`Cluster::follow`] per
//! node, and the database's wake-ups ([`Cluster::wakeups`]).
//!
//! Files are not this crate's business: every node mounts one volume for the tenants'
//! workspaces and the session directories ([`ClusterSettings::shared_root`]), so a node taking a
//! session over finds them where the last one left them.

mod follow;
mod forward;
mod own;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loop_engine::placement::EphemeralHook;
use loop_engine::{EngineError, Placed, Placement};
use protocol::methods::{LifecycleNotification, SessionConfigParams};
use store::pg::{Lease, PgEvents};

pub use store::pg::{EphemeralBatch, InboxItem, Wakeup, Wakeups};

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

/// This node's part in the cluster: the leases it holds, the sessions it follows, the requests
/// it forwarded.
pub struct Cluster {
    settings: ClusterSettings,
    pg: PgEvents,
    /// Sessions this node holds the lease of.
    owned: Mutex<HashSet<String>>,
    /// Owned sessions that unloaded (or failed to load): their leases go at the next tick,
    /// unless they are loaded again by then. Only these: a lease taken for a session still
    /// loading must not be given up under it.
    unloaded: Mutex<HashSet<String>>,
    /// Sessions loaded here as followers of another node.
    followers: Mutex<HashMap<String, follow::Follower>>,
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

/// Locks a mutex, recovering it if a panicking holder poisoned it: every lock here guards a
/// short synchronous update, so the data stays usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cluster {
    pub fn new(settings: ClusterSettings, pg: PgEvents) -> Self {
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

    /// Takes the lease if it is free (or this node's), remembering it for renewal.
    async fn acquire(&self, id: &str) -> Result<Lease, EngineError> {
        let lease = self.pg.acquire(id, self.ttl_s()).await?;
        if lease == Lease::Held {
            lock(&self.unloaded).remove(id);
            lock(&self.owned).insert(id.to_string());
        }
        Ok(lease)
    }

    fn owns(&self, id: &str) -> bool {
        lock(&self.owned).contains(id)
    }

    /// Starts listening for the database's wake-ups (`None` when it cannot: polling only).
    pub async fn wakeups(&self) -> Option<Wakeups> {
        match self.pg.listen().await {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "cannot LISTEN for cluster wake-ups; polling only");
                None
            }
        }
    }
}

#[async_trait::async_trait]
impl Placement for Cluster {
    fn session_state_dir(&self) -> Option<PathBuf> {
        Some(self.settings.session_state_dir())
    }

    async fn claim_new(&self, id: &str) -> Result<(), EngineError> {
        match self.acquire(id).await? {
            Lease::Held => Ok(()),
            Lease::Elsewhere(_) => Err(EngineError::SessionExists(id.to_string())),
        }
    }

    async fn claim(&self, id: &str) -> Result<Placed, EngineError> {
        Ok(match self.acquire(id).await? {
            Lease::Held => Placed::Here,
            Lease::Elsewhere(node) => Placed::Elsewhere(node),
        })
    }

    fn unloaded(&self, id: &str) {
        if self.owns(id) {
            lock(&self.unloaded).insert(id.to_string());
        }
    }

    fn following(&self, id: &str, owner: &str, params: &SessionConfigParams, read: i64) {
        let follower = follow::Follower::new(owner, params, read);
        lock(&self.followers).insert(id.to_string(), follower);
    }

    fn followed_owner(&self, id: &str) -> Option<String> {
        self.follower_of(id)
    }

    fn persisted(&self, id: &str, start_time: &str) {
        lock(&self.updated).insert(id.to_string(), start_time.to_string());
    }

    fn ephemeral_hook(&self, id: &str) -> Option<EphemeralHook> {
        let (pg, id) = (self.pg.clone(), id.to_string());
        Some(Box::new(move |json, position| pg.publish_ephemeral(&id, position as i64, json)))
    }

    async fn publish(&self, notification: &LifecycleNotification) {
        let json = match serde_json::to_string(notification) {
            Ok(j) => j,
            Err(_) => return,
        };
        if let Err(e) = self.pg.publish_lifecycle(&notification.session_id, &json).await {
            tracing::warn!(session = %notification.session_id, error = %e, "publishing a lifecycle notification failed");
        }
    }

    async fn running_elsewhere(&self, id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.pg.holder(id).await?.filter(|n| n != self.pg.node_id()))
    }
}
