//! The event log, `workspace.yaml` metadata, lifecycle notifications, forwarded requests and
//! session leases in PostgreSQL, for several nodes (migration `postgres/0003_cluster.sql`).
//! Files are not here: the nodes share a volume for workspaces and session directories, and
//! [`volume`] records which one.
//!
//! The emitter appends synchronously under its lock (persist before deliver), so appends go
//! through [`writer::Writer`]: a thread with its own runtime and connection that the caller
//! waits on. Reads, leases and metadata are plain async queries on the shared pool.

mod ephemeral;
mod handle;
mod inbox;
mod leases;
mod lifecycle;
mod log;
mod notify;
mod volume;
mod writer;

pub use ephemeral::EphemeralBatch;
pub use handle::PgEvents;
pub use inbox::InboxItem;
pub use leases::Lease;
pub use lifecycle::LifecycleRow;
pub use log::DbLog;
pub use notify::{Wakeup, Wakeups};

use sqlx::Row;

use protocol::event::Event;

use crate::error::StoreError;
use crate::event_log::LoadedLog;
use crate::layout::{parse_workspace_yaml, render_workspace_yaml, WorkspaceMeta};

/// Events of a session after a position, as a follower reads them.
#[derive(Debug, Default)]
pub struct Tail {
    /// `(seq, event, json)` in log order.
    pub events: Vec<(i64, Event, String)>,
}

impl PgEvents {
    /// The whole log in order. A session with no events is `NotFound`.
    pub async fn load(&self, id: &str) -> Result<LoadedLog, StoreError> {
        let tail = self.after(id, 0).await?;
        if tail.events.is_empty() {
            return Err(StoreError::NotFound(id.to_string()));
        }
        let size_bytes = tail.events.iter().map(|(_, _, j)| j.len() as u64 + 1).sum();
        let events: Vec<Event> = tail.events.into_iter().map(|(_, e, _)| e).collect();
        Ok(LoadedLog { count: events.len(), events, size_bytes, skipped: 0 })
    }

    /// Events with a position after `seq`, in order (a row that does not parse is skipped).
    pub async fn after(&self, id: &str, seq: i64) -> Result<Tail, StoreError> {
        let rows = sqlx::query("SELECT seq, json FROM session_events WHERE session_id = $1 AND seq > $2 ORDER BY seq")
            .bind(id)
            .bind(seq)
            .fetch_all(&self.pool)
            .await?;
        let mut tail = Tail::default();
        for row in rows {
            let (seq, json): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
            match serde_json::from_str::<Event>(&json) {
                Ok(event) => tail.events.push((seq, event, json)),
                Err(e) => tracing::warn!(session = %id, seq, error = %e, "skipping unparsable event row"),
            }
        }
        Ok(tail)
    }

    /// Whether the session has a log or an index row.
    pub async fn exists(&self, id: &str) -> Result<bool, StoreError> {
        let found: Option<(i32,)> = sqlx::query_as(
            "SELECT 1 FROM session_events WHERE session_id = $1 \
             UNION ALL SELECT 1 FROM sessions WHERE id = $1 LIMIT 1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.is_some())
    }

    /// An append handle continuing after the log's last event, fenced by this node's lease.
    pub async fn open_log(&self, id: &str) -> Result<DbLog, StoreError> {
        let (last,): (Option<i64>,) = sqlx::query_as("SELECT MAX(seq) FROM session_events WHERE session_id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(DbLog::new(self.writer.clone(), id.to_string(), self.node_id.clone(), last.unwrap_or(0)))
    }

    /// Writes a whole log at once (a fork); the session must have none yet.
    pub async fn insert_all(&self, id: &str, events: &[Event]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (n, e) in events.iter().enumerate() {
            let json = serde_json::to_string(e)?;
            sqlx::query("INSERT INTO session_events (session_id, seq, id, json) VALUES ($1, $2, $3, $4)")
                .bind(id)
                .bind(n as i64 + 1)
                .bind(&e.id)
                .bind(json)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Removes the session's log, metadata and lease.
    pub async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for sql in [
            "DELETE FROM session_events WHERE session_id = $1",
            "DELETE FROM session_meta WHERE session_id = $1",
            "DELETE FROM session_leases WHERE session_id = $1",
            "DELETE FROM session_inbox WHERE session_id = $1",
        ] {
            sqlx::query(sql).bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn read_meta(&self, id: &str) -> Result<Option<WorkspaceMeta>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT yaml FROM session_meta WHERE session_id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(yaml,)| parse_workspace_yaml(&yaml)))
    }

    pub async fn write_meta(&self, id: &str, meta: &WorkspaceMeta) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_meta (session_id, yaml) VALUES ($1, $2) \
             ON CONFLICT (session_id) DO UPDATE SET yaml = excluded.yaml",
        )
        .bind(id)
        .bind(render_workspace_yaml(meta))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
