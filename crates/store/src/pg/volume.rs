//! Which volume the cluster's nodes share (`cluster_volume`, migration
//! `postgres/0011_shared_volume.sql`): the id the first node wrote into its `[cluster]
//! shared_root`, which every other node's root must hold too.

use super::handle::PgEvents;
use crate::error::StoreError;

impl PgEvents {
    /// The cluster's volume id: the one recorded, or `candidate` when none was (it is recorded
    /// now, with this node's id). Two first nodes racing both get the one that won.
    pub async fn claim_volume(&self, candidate: &str) -> Result<String, StoreError> {
        sqlx::query("INSERT INTO cluster_volume (volume_id, node_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(candidate)
            .bind(self.node_id())
            .execute(self.pool())
            .await?;
        self.volume().await?.ok_or(StoreError::Unsupported("the cluster's volume id vanished as it was recorded"))
    }

    /// The cluster's volume id, if a node recorded one.
    pub async fn volume(&self) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT volume_id FROM cluster_volume").fetch_optional(self.pool()).await?;
        Ok(row.map(|(id,)| id))
    }
}
