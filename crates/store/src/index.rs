//! The session index behind `session.list`, `getLastId` and `getMetadata` (persistence.md
//! §5), on SQLite (one node, under `$COPILOT_HOME`) or PostgreSQL (several nodes). On SQLite it
//! caches what the logs say, so [`SessionIndex::rebuild_from_logs`] can always recreate it.
//!
//! Runtime-checked queries only: there is no database at build time. Each query is written once
//! in SQLite's dialect (`?N` parameters, `TRUE`, `ON CONFLICT`) and translated for PostgreSQL
//! ([`Pool::sql`]): the two differ in parameter marks and the insertion-order tie-breaker.

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Executor, Sqlite};

use crate::error::StoreError;
use crate::layout::Layout;

mod behind;
mod health;
mod owners;
mod rebuild;
mod rows;
mod sqlite;
mod touches;
mod usage;

use behind::RowWrite;
use rows::{upsert_sql, COLUMNS, MARK_USER_MESSAGE_SQL};
use sqlite::SQLITE_MIGRATOR;

pub use owners::Claim;
pub use rows::SessionRow;
pub use usage::UsageRow;

pub use rebuild::row_from_events;

pub(crate) static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// The database behind an index.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(sqlite::SqliteDb),
    Postgres(PgPool),
}

impl Pool {
    /// A query written for SQLite, in this database's dialect.
    pub(crate) fn sql<'a>(&self, sqlite: &'a str) -> Cow<'a, str> {
        match self {
            Pool::Sqlite(_) => Cow::Borrowed(sqlite),
            Pool::Postgres(_) => Cow::Owned(to_postgres(sqlite)),
        }
    }
}

/// `?N` → `$N`; SQLite's `rowid` (insertion order) → the `seq` column.
fn to_postgres(sqlite: &str) -> String {
    let mut out = String::with_capacity(sqlite.len());
    let mut chars = sqlite.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out.replace("rowid", "seq")
}

/// Runs `$body` with `$pool` bound to the concrete pool and `$sql` to `$text` in its dialect.
macro_rules! on_pool {
    ($self:expr, $text:expr, |$pool:ident, $sql:ident| $body:expr) => {{
        $self.health.check()?;
        let result: Result<_, $crate::StoreError> = async {
            $self.write_touches().await?;
            let $sql = $self.pool.sql($text);
            Ok(match &$self.pool {
                $crate::index::Pool::Sqlite(db) => {
                    let $pool = &db.live().await?;
                    $body
                }
                $crate::index::Pool::Postgres($pool) => $body,
            })
        }
        .await;
        $self.health.note(&result);
        result?
    }};
}
pub(crate) use on_pool;

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
    pub(crate) pool: Pool,
    /// Modification times not yet written.
    touches: std::sync::Arc<touches::Touches>,
    /// A write-behind index's writer, which takes its rows and touches instead.
    behind: Option<behind::Behind>,
    /// Whether the database just failed to answer.
    health: std::sync::Arc<health::Health>,
}

impl SessionIndex {
    /// Opens (creating if missing) the index at `db_path` and applies pending migrations. A
    /// file deleted later is created again on next use (see `sqlite`).
    pub async fn open(db_path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let db = sqlite::SqliteDb::open(db_path.as_ref().to_path_buf()).await?;
        Ok(Self { pool: Pool::Sqlite(db), touches: Default::default(), behind: None, health: Default::default() })
    }

    /// The index for one short run in this process (`-p`), at `db_path`: the database opens in
    /// the background, and `upsert`, `mark_user_message` and `touch_later` are queued instead
    /// of awaited. They reach the database in order within milliseconds, before any later query
    /// of this index runs, and all of them by [`Self::flush`], which reports a write that
    /// failed. The run's path then waits for neither the opening (three files, the WAL's
    /// recovery, the migrations' check) nor a round trip per write.
    ///
    /// The opening and the writes run on a thread of their own with a plain SQLite connection
    /// (`behind`); a query (none in a `-p` run) opens sqlx's pool on first use.
    pub fn open_write_behind(db_path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = db_path.as_ref().to_path_buf();
        let behind = behind::Behind::start(path.clone())?;
        Ok(Self {
            pool: Pool::Sqlite(sqlite::SqliteDb::lazy(path)),
            touches: Default::default(),
            behind: Some(behind),
            health: Default::default(),
        })
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
        SQLITE_MIGRATOR.run(&pool).await?;
        Ok(Self {
            pool: Pool::Sqlite(sqlite::SqliteDb::wrap(None, pool)),
            touches: Default::default(),
            behind: None,
            health: Default::default(),
        })
    }

    /// Connects to PostgreSQL (`postgres://…`) and applies pending migrations. A query that
    /// gets no connection within `timeout` (the database down) fails instead of waiting: a
    /// request answers within that bound, with an error a client can act on.
    pub async fn connect_postgres(url: &str, timeout: Duration) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new().max_connections(8).acquire_timeout(timeout).connect(url).await?;
        POSTGRES_MIGRATOR.run(&pool).await?;
        Ok(Self { pool: Pool::Postgres(pool), touches: Default::default(), behind: None, health: Default::default() })
    }

    /// The PostgreSQL pool, when the index lives there (the event log and leases share it).
    pub fn postgres(&self) -> Option<&PgPool> {
        match &self.pool {
            Pool::Postgres(p) => Some(p),
            Pool::Sqlite(_) => None,
        }
    }

    /// Closes the pool (on SQLite, so the WAL is checkpointed on shutdown).
    pub async fn close(&self) {
        if let Err(e) = self.write_touches().await {
            tracing::warn!(error = %e, "session index: writing modification times failed");
        }
        match &self.pool {
            Pool::Sqlite(db) => db.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }

    /// Keeps the database open until the process ends, for a process about to exit with
    /// everything written. Closing SQLite's last connection checkpoints the WAL and deletes it,
    /// and the next process to write creates it again: an fsync of the new file and one of its
    /// directory on that first write, on the path of its first session. Left open, the WAL
    /// stays (SQLite's own crash-safe state, read back at the next open) and is checkpointed as
    /// it grows.
    pub fn leave_open_at_exit(&self) {
        if let Pool::Sqlite(db) = &self.pool {
            std::mem::forget(db.clone());
        }
    }

    /// Inserts or replaces a row. `has_user_message` never goes back from true to false: a
    /// session that has been listed stays listed.
    pub async fn upsert(&self, row: &SessionRow) -> Result<(), StoreError> {
        if let Some(behind) = &self.behind {
            behind.row(RowWrite::Upsert(Box::new(row.clone())));
            return Ok(());
        }
        let text = upsert_sql();
        on_pool!(self, &text, |pool, sql| bind_row(sqlx::query(&sql), row).execute(pool).await?.rows_affected());
        Ok(())
    }

    /// Sets `updated_at` only. Returns whether the session exists.
    pub async fn touch(&self, id: &str, updated_at: &str) -> Result<bool, StoreError> {
        let done = on_pool!(self, "UPDATE sessions SET updated_at = ?1 WHERE id = ?2", |pool, sql| sqlx::query(&sql)
            .bind(updated_at)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done > 0)
    }

    /// Records the first (or a further) user message: the session becomes listed, and the
    /// first one also sets title and summary. Returns whether the session exists (always true
    /// on a write-behind index, which does not wait to know).
    pub async fn mark_user_message(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        if let Some(behind) = &self.behind {
            behind.row(RowWrite::MarkUserMessage { id: id.to_string(), title: title.to_string() });
            return Ok(true);
        }
        let done = on_pool!(self, MARK_USER_MESSAGE_SQL, |pool, sql| sqlx::query(&sql)
            .bind(title)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done > 0)
    }

    /// The row whether or not it is listed; `getMetadata` must check `has_user_message`.
    /// A client named the session: its title and summary become the name.
    pub async fn rename(&self, id: &str, name: &str) -> Result<bool, StoreError> {
        let text = "UPDATE sessions SET title = ?1, summary = ?1 WHERE id = ?2";
        let done = on_pool!(self, text, |pool, sql| sqlx::query(&sql)
            .bind(name)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done > 0)
    }

    pub async fn get(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let text = format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1");
        Ok(on_pool!(self, &text, |pool, sql| sqlx::query_as(&sql).bind(id).fetch_optional(pool).await?))
    }

    /// Listed sessions (with a user message) matching `filter`, most recently modified first.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<SessionRow>, StoreError> {
        let text = format!(
            "SELECT {COLUMNS} FROM sessions \
             WHERE has_user_message = TRUE \
               AND (?1 IS NULL OR cwd = ?1) \
               AND (?2 IS NULL OR git_root = ?2) \
               AND (?3 IS NULL OR repository = ?3) \
               AND (?4 IS NULL OR branch = ?4) \
             ORDER BY updated_at DESC, rowid DESC"
        );
        Ok(on_pool!(self, &text, |pool, sql| sqlx::query_as(&sql)
            .bind(filter.cwd.as_deref())
            .bind(filter.git_root.as_deref())
            .bind(filter.repository.as_deref())
            .bind(filter.branch.as_deref())
            .fetch_all(pool)
            .await?))
    }

    /// The most recently modified listed session.
    pub async fn last_id(&self) -> Result<Option<String>, StoreError> {
        let text = "SELECT id FROM sessions WHERE has_user_message = TRUE \
             ORDER BY updated_at DESC, rowid DESC LIMIT 1";
        let id: Option<(String,)> = on_pool!(self, text, |pool, sql| sqlx::query_as(&sql).fetch_optional(pool).await?);
        Ok(id.map(|(id,)| id))
    }

    /// Returns whether a row was removed.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let text = "DELETE FROM sessions WHERE id = ?1";
        let done = on_pool!(self, text, |pool, sql| sqlx::query(&sql).bind(id).execute(pool).await?.rows_affected());
        Ok(done > 0)
    }

    /// Replaces the whole index with rows derived from `session-state/*/events.jsonl` (and
    /// `workspace.yaml` where present). Unreadable sessions are skipped with a warning.
    /// Returns the number of rows written.
    pub async fn rebuild_from_logs(&self, layout: &Layout) -> Result<usize, StoreError> {
        let Pool::Sqlite(db) = &self.pool else {
            // On PostgreSQL the log is in the database with the index; there are no files.
            return Err(StoreError::Unsupported("rebuilding a PostgreSQL index from log files"));
        };
        self.write_touches().await?;
        let pool = &db.live().await?;
        let layout = layout.clone();
        // Reading every log is blocking file I/O of unbounded size.
        let rows = tokio::task::spawn_blocking(move || rebuild::scan_logs(&layout))
            .await
            .map_err(|e| StoreError::Io { path: "session-state".into(), source: std::io::Error::other(e) })??;
        let mut tx = pool.begin().await?;
        sqlx::query("DELETE FROM sessions").execute(&mut *tx).await?;
        for row in &rows {
            upsert_on(&mut *tx, row).await?;
        }
        tx.commit().await?;
        Ok(rows.len())
    }
}

fn bind_row<'q, DB>(
    query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>,
    row: &SessionRow,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    DB: sqlx::Database,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    query
        .bind(row.id.clone())
        .bind(row.cwd.clone())
        .bind(row.git_root.clone())
        .bind(row.repository.clone())
        .bind(row.branch.clone())
        .bind(row.model.clone())
        .bind(row.title.clone())
        .bind(row.summary.clone())
        .bind(row.client_name.clone())
        .bind(row.created_at.clone())
        .bind(row.updated_at.clone())
        .bind(row.has_user_message)
}

async fn upsert_on<'e, E>(executor: E, row: &SessionRow) -> Result<(), StoreError>
where
    E: Executor<'e, Database = Sqlite>,
{
    bind_row(sqlx::query(&upsert_sql()), row).execute(executor).await?;
    Ok(())
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
