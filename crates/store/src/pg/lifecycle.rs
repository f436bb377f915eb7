//! Sessions created and deleted (and updated) on some node, for every node's clients
//! (`session_lifecycle`, migration `postgres/0004_shared_files.sql`): each node reads the rows
//! other nodes wrote since it started.

use sqlx::Row;

use super::handle::PgEvents;
use crate::error::StoreError;

/// Sessions created or deleted on some node, as `session.lifecycle` tells them.
#[derive(Debug, Clone)]
pub struct LifecycleRow {
    pub seq: i64,
    /// The tenant owning the session when the row was written.
    pub tenant: Option<String>,
    /// The notification's params.
    pub json: String,
}

impl PgEvents {
    /// Records a lifecycle notification of this node, with the session's owner (if any) now.
    pub async fn publish_lifecycle(&self, session_id: &str, json: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_lifecycle (node_id, tenant, json) \
             VALUES ($1, (SELECT tenant FROM session_owners WHERE session_id = $2), $3)",
        )
        .bind(self.node_id())
        .bind(session_id)
        .bind(json)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The position of the newest lifecycle row (a node starts reading after it).
    pub async fn lifecycle_head(&self) -> Result<i64, StoreError> {
        let (head,): (Option<i64>,) =
            sqlx::query_as("SELECT MAX(seq) FROM session_lifecycle").fetch_one(self.pool()).await?;
        Ok(head.unwrap_or(0))
    }

    /// Other nodes' lifecycle rows after `seq`; rows older than an hour are dropped on the way.
    pub async fn lifecycle_after(&self, seq: i64) -> Result<Vec<LifecycleRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, tenant, json FROM session_lifecycle WHERE seq > $1 AND node_id <> $2 ORDER BY seq",
        )
        .bind(seq)
        .bind(self.node_id())
        .fetch_all(self.pool())
        .await?;
        let rows = rows
            .into_iter()
            .map(|row| Ok(LifecycleRow { seq: row.try_get(0)?, tenant: row.try_get(1)?, json: row.try_get(2)? }))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(rows)
    }

    /// Drops lifecycle rows every node has long read.
    pub async fn prune_lifecycle(&self) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_lifecycle WHERE created_at < now() - interval '1 hour'")
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
