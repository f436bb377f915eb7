//! Which node runs a session: a row in `session_leases`, valid until `expires_at` (the
//! database's clock, so nodes' clocks need not agree). A node takes a free or expired lease,
//! renews its own, and gives it up when the session unloads.

use super::handle::PgEvents;
use crate::error::StoreError;

/// The outcome of asking for a session's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// This node holds it now.
    Held,
    /// Another node holds an unexpired lease.
    Elsewhere(String),
}

impl PgEvents {
    /// Takes the lease if it is free, expired or already this node's; extends it by `ttl_s`.
    pub async fn acquire(&self, id: &str, ttl_s: u64) -> Result<Lease, StoreError> {
        let got: Option<(String,)> = sqlx::query_as(
            "INSERT INTO session_leases (session_id, node_id, expires_at) \
             VALUES ($1, $2, now() + make_interval(secs => $3)) \
             ON CONFLICT (session_id) DO UPDATE \
               SET node_id = excluded.node_id, expires_at = excluded.expires_at \
               WHERE session_leases.node_id = excluded.node_id OR session_leases.expires_at <= now() \
             RETURNING node_id",
        )
        .bind(id)
        .bind(self.node_id())
        .bind(ttl_s as f64)
        .fetch_optional(self.pool())
        .await?;
        if got.is_some() {
            return Ok(Lease::Held);
        }
        Ok(Lease::Elsewhere(self.holder(id).await?.unwrap_or_default()))
    }

    /// Extends this node's lease; `false` when it is no longer this node's.
    pub async fn renew(&self, id: &str, ttl_s: u64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE session_leases SET expires_at = now() + make_interval(secs => $3) \
             WHERE session_id = $1 AND node_id = $2",
        )
        .bind(id)
        .bind(self.node_id())
        .bind(ttl_s as f64)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Gives up this node's lease (the session unloaded here).
    pub async fn release(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_leases WHERE session_id = $1 AND node_id = $2")
            .bind(id)
            .bind(self.node_id())
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The node holding an unexpired lease, if any.
    pub async fn holder(&self, id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT node_id FROM session_leases WHERE session_id = $1 AND expires_at > now()")
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.map(|(n,)| n))
    }
}
