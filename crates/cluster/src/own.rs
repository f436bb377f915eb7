//! Sessions run here: their leases renewed and given up, their updates told to the other
//! nodes, and the other nodes' creations and deletions told to this node's clients.

use std::time::{Duration, Instant};

use loop_engine::Engine;
use protocol::methods::{LifecycleMetadata, LifecycleNotification};

use crate::{lock, Cluster, Placement};

/// How often lifecycle rows older than an hour are dropped.
const PRUNE_EVERY: Duration = Duration::from_secs(300);

impl Cluster {
    /// The work for sessions run here: renew the leases of sessions loaded here, give up those
    /// of sessions that unloaded, tell other nodes of updates. Called every few hundred
    /// milliseconds by the server.
    pub async fn tick_own(&self, engine: &Engine) {
        self.renew_and_release(engine).await;
        self.publish_updated().await;
    }

    async fn renew_and_release(&self, engine: &Engine) {
        let unloaded: Vec<String> = lock(&self.unloaded).drain().collect();
        for id in unloaded.iter().filter(|id| engine.get(id).is_none()) {
            lock(&self.owned).remove(id);
            if let Err(e) = self.pg.release(id).await {
                tracing::warn!(session = %id, error = %e, "releasing a session lease failed");
            }
        }
        let due = lock(&self.last_renewal).elapsed() >= self.settings.lease_ttl / 3;
        if !due {
            return;
        }
        *lock(&self.last_renewal) = Instant::now();
        let owned: Vec<String> = lock(&self.owned).iter().cloned().collect();
        for id in &owned {
            match self.pg.renew(id, self.ttl_s()).await {
                Ok(true) => {}
                Ok(false) => {
                    // Another node took it (this one stalled past the lease): its appends here
                    // are refused by the database from now on.
                    tracing::warn!(session = %id, "lease lost to another node");
                    lock(&self.owned).remove(id);
                }
                Err(e) => tracing::warn!(session = %id, error = %e, "renewing a session lease failed"),
            }
        }
    }

    /// One `session.updated` per session run here that persisted events since the last tick,
    /// for the other nodes' clients (this node's heard one per event). Old lifecycle rows are
    /// dropped every few minutes.
    async fn publish_updated(&self) {
        let updated: Vec<(String, String)> = lock(&self.updated).drain().collect();
        for (id, start_time) in updated {
            let notification = LifecycleNotification {
                kind: "session.updated".into(),
                session_id: id,
                metadata: Some(LifecycleMetadata { start_time, modified_time: protocol::now_iso() }),
            };
            self.publish(&notification).await;
        }
        let due = lock(&self.last_prune).is_none_or(|t| t.elapsed() >= PRUNE_EVERY);
        if due {
            *lock(&self.last_prune) = Some(Instant::now());
            if let Err(e) = self.pg.prune_lifecycle().await {
                tracing::warn!(error = %e, "pruning lifecycle notifications failed");
            }
            if let Err(e) = self.pg.prune_inbox().await {
                tracing::warn!(error = %e, "pruning forwarded requests failed");
            }
        }
    }

    /// Sessions other nodes created or deleted since the last call, with their owning tenant.
    /// The caller makes the owner known, then tells its clients ([`Engine::tell_lifecycle`]).
    pub async fn remote_lifecycle(&self) -> Vec<(Option<String>, LifecycleNotification)> {
        let mut seq = self.lifecycle_seq.lock().await;
        let after = match *seq {
            Some(s) => s,
            None => match self.pg.lifecycle_head().await {
                Ok(head) => {
                    *seq = Some(head);
                    if let Err(e) = self.pg.prune_lifecycle().await {
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
        let rows = match self.pg.lifecycle_after(after).await {
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
}
