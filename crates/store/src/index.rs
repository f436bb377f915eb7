//! The SQLite session index behind `session.list`, `getLastId` and `getMetadata`
//! (persistence.md §5). It caches what the logs say, so [`SessionIndex::rebuild_from_logs`]
//! can always recreate it.
//!
//! Runtime-checked queries only: there is no database at build time.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Executor, Sqlite};

use crate::layout::{create_private_dir, Layout};
use crate::StoreError;

mod owners;
mod rebuild;

pub use rebuild::row_from_events;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// One row of the `sessions` table. Timestamps are the ISO strings events carry
/// (`2026-11-22T11:29:03.301Z`), which sort chronologically as text.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub cwd: String,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    /// `name` in `session.list`: the first prompt, or the name set by the user.
    pub title: Option<String>,
    /// `summary` in `session.list`: the first prompt.
    pub summary: Option<String>,
    pub client_name: Option<String>,
    /// `startTime` in `session.list`.
    pub created_at: String,
    /// `modifiedTime` in `session.list`: time of the last persisted event.
    pub updated_at: String,
    /// Only sessions with a user message are visible to list / getLastId / getMetadata.
    pub has_user_message: bool,
}

/// `session.list` filter; every set field must match exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub cwd: Option<String>,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
}

/// Handle on the index; cheap to clone (a connection pool).
#[derive(Debug, Clone)]
pub struct SessionIndex {
    pool: SqlitePool,
}

const COLUMNS: &str = "id, cwd, git_root, repository, branch, model, title, summary, \
                       client_name, created_at, updated_at, has_user_message";

impl SessionIndex {
    /// Opens (creating if missing) the index at `db_path` and applies pending migrations.
    pub async fn open(db_path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let db_path = db_path.as_ref();
        if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir(parent)?;
        }
        let options = SqliteConnectOptions::new()
            .filename(db_path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL loses at most the last commits on power loss, never consistency;
            // the index is rebuildable anyway.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options).await?;
        Self::migrated(pool).await
    }

    /// A private in-memory index (tests, or running without a writable home).
    pub async fn open_in_memory() -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?;
        // Each in-memory connection is its own database: keep exactly one, forever.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        Self::migrated(pool).await
    }

    async fn migrated(pool: SqlitePool) -> Result<Self, StoreError> {
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    /// Closes the pool so the WAL is checkpointed on shutdown.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Inserts or replaces a row. `has_user_message` never goes back from true to false: a
    /// session that has been listed stays listed.
    pub async fn upsert(&self, row: &SessionRow) -> Result<(), StoreError> {
        upsert_on(&self.pool, row).await
    }

    /// Sets `updated_at` only. Returns whether the session exists.
    pub async fn touch(&self, id: &str, updated_at: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE sessions SET updated_at = ?1 WHERE id = ?2")
            .bind(updated_at)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Records the first (or a further) user message: the session becomes listed, and the
    /// first one also sets title and summary. Returns whether the session exists.
    pub async fn mark_user_message(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        // Right-hand sides see the old row, so both CASEs test the title from before.
        let done = sqlx::query(
            "UPDATE sessions SET has_user_message = 1, \
                 title = CASE WHEN title IS NULL THEN ?1 ELSE title END, \
                 summary = CASE WHEN title IS NULL THEN ?1 ELSE summary END \
             WHERE id = ?2",
        )
        .bind(title)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The row whether or not it is listed; `getMetadata` must check `has_user_message`.
    /// A client named the session: its title and summary become the name.
    pub async fn rename(&self, id: &str, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE sessions SET title = ?1, summary = ?1 WHERE id = ?2")
            .bind(name)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn get(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1");
        Ok(sqlx::query_as(&sql).bind(id).fetch_optional(&self.pool).await?)
    }

    /// Listed sessions (with a user message) matching `filter`, most recently modified first.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<SessionRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sessions \
             WHERE has_user_message = 1 \
               AND (?1 IS NULL OR cwd = ?1) \
               AND (?2 IS NULL OR git_root = ?2) \
               AND (?3 IS NULL OR repository = ?3) \
               AND (?4 IS NULL OR branch = ?4) \
             ORDER BY updated_at DESC, rowid DESC"
        );
        Ok(sqlx::query_as(&sql)
            .bind(filter.cwd.as_deref())
            .bind(filter.git_root.as_deref())
            .bind(filter.repository.as_deref())
            .bind(filter.branch.as_deref())
            .fetch_all(&self.pool)
            .await?)
    }

    /// The most recently modified listed session.
    pub async fn last_id(&self) -> Result<Option<String>, StoreError> {
        let id: Option<(String,)> = sqlx::query_as(
            "SELECT id FROM sessions WHERE has_user_message = 1 \
             ORDER BY updated_at DESC, rowid DESC LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(id.map(|(id,)| id))
    }

    /// Returns whether a row was removed.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Replaces the whole index with rows derived from `session-state/*/events.jsonl` (and
    /// `workspace.yaml` where present). Unreadable sessions are skipped with a warning.
    /// Returns the number of rows written.
    pub async fn rebuild_from_logs(&self, layout: &Layout) -> Result<usize, StoreError> {
        let layout = layout.clone();
        // Reading every log is blocking file I/O of unbounded size.
        let rows = tokio::task::spawn_blocking(move || rebuild::scan_logs(&layout))
            .await
            .map_err(|e| StoreError::Io { path: "session-state".into(), source: std::io::Error::other(e) })??;
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM sessions").execute(&mut *tx).await?;
        for row in &rows {
            upsert_on(&mut *tx, row).await?;
        }
        tx.commit().await?;
        Ok(rows.len())
    }
}

async fn upsert_on<'e, E>(executor: E, row: &SessionRow) -> Result<(), StoreError>
where
    E: Executor<'e, Database = Sqlite>,
{
    let sql = format!(
        "INSERT INTO sessions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT(id) DO UPDATE SET \
             cwd = excluded.cwd, git_root = excluded.git_root, \
             repository = excluded.repository, branch = excluded.branch, \
             model = excluded.model, title = excluded.title, summary = excluded.summary, \
             client_name = excluded.client_name, created_at = excluded.created_at, \
             updated_at = excluded.updated_at, \
             has_user_message = MAX(sessions.has_user_message, excluded.has_user_message)"
    );
    sqlx::query(&sql)
        .bind(&row.id)
        .bind(&row.cwd)
        .bind(&row.git_root)
        .bind(&row.repository)
        .bind(&row.branch)
        .bind(&row.model)
        .bind(&row.title)
        .bind(&row.summary)
        .bind(&row.client_name)
        .bind(&row.created_at)
        .bind(&row.updated_at)
        .bind(row.has_user_message)
        .execute(executor)
        .await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly by design
mod tests;
