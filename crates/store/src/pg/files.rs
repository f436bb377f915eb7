//! A session's own files (everything in its directory but the log and `workspace.yaml`) in
//! `session_files`, so nodes that share no disk see the same plan, checkpoints and workspace
//! files (migration `postgres/0004_shared_files.sql`).

use sqlx::Row;

use super::PgEvents;
use crate::StoreError;

/// One file's latest state: its content, or `None` once removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// Relative to the session's directory, `/`-separated.
    pub path: String,
    pub content: Option<Vec<u8>>,
    pub version: i64,
}

impl PgEvents {
    /// Records a file's content (`None`: removed).
    pub async fn put_file(&self, id: &str, path: &str, content: Option<&[u8]>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_files (session_id, path, content) VALUES ($1, $2, $3) \
             ON CONFLICT (session_id, path) DO UPDATE \
               SET content = excluded.content, version = nextval('session_files_version')",
        )
        .bind(id)
        .bind(path)
        .bind(content)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The files changed after `version`, in the order they changed.
    pub async fn files_after(&self, id: &str, version: i64) -> Result<Vec<SharedFile>, StoreError> {
        let rows = sqlx::query(
            "SELECT path, content, version FROM session_files WHERE session_id = $1 AND version > $2 ORDER BY version",
        )
        .bind(id)
        .bind(version)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|row| Ok(SharedFile { path: row.try_get(0)?, content: row.try_get(1)?, version: row.try_get(2)? }))
            .collect()
    }
}

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
