//! The SQLite index file, reopened when it disappears under a running server.
//!
//! SDK test harnesses (and users cleaning up) delete everything under `$COPILOT_HOME` while
//! the server runs. Open connections keep the unlinked file, but any new one would create an
//! empty database without tables, and every call would fail. So before each use the file's
//! existence is checked (one `stat`), and a missing file is created again, migrated, and its
//! pool swapped in: the server carries on with an empty index, as it would after a fresh start.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use crate::error::StoreError;
use crate::layout::create_private_dir;

/// The index's schema on SQLite (PostgreSQL's is the parent's `POSTGRES_MIGRATOR`).
pub(super) static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

#[derive(Debug, Clone)]
pub(crate) struct SqliteDb {
    /// `None` for an in-memory database, which cannot disappear.
    path: Option<PathBuf>,
    /// `None` until a lazily opened database is first used.
    pool: Arc<RwLock<Option<SqlitePool>>>,
    /// One opening at a time.
    reopening: Arc<tokio::sync::Mutex<()>>,
}

impl SqliteDb {
    pub(crate) async fn open(path: PathBuf) -> Result<Self, StoreError> {
        let pool = connect(&path).await?;
        Ok(Self::wrap(Some(path), pool))
    }

    /// A database opened by its first use (see [`SqliteDb::live`]).
    pub(crate) fn lazy(path: PathBuf) -> Self {
        Self { path: Some(path), pool: Default::default(), reopening: Default::default() }
    }

    pub(crate) fn wrap(path: Option<PathBuf>, pool: SqlitePool) -> Self {
        Self { path, pool: Arc::new(RwLock::new(Some(pool))), reopening: Default::default() }
    }

    fn current(&self) -> Option<SqlitePool> {
        self.pool.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The pool to use now: opens a lazy database, and recreates the file first if it was
    /// deleted.
    pub(crate) async fn live(&self) -> Result<SqlitePool, StoreError> {
        let usable = |pool: Option<SqlitePool>| pool.filter(|_| self.path.as_ref().is_none_or(|p| p.exists()));
        if let Some(pool) = usable(self.current()) {
            return Ok(pool);
        }
        let _one = self.reopening.lock().await;
        let current = self.current();
        if let Some(pool) = usable(current.clone()) {
            return Ok(pool); // another caller opened it meanwhile
        }
        let Some(path) = self.path.as_ref() else {
            return Err(StoreError::Unsupported("an in-memory index without its connection"));
        };
        if current.is_some() {
            tracing::warn!(path = %path.display(), "the session index file was deleted; creating it again");
        }
        let fresh = connect(path).await?;
        let old = self.pool.write().unwrap_or_else(|e| e.into_inner()).replace(fresh.clone());
        // In-flight queries on the old pool finish on the unlinked file.
        if let Some(old) = old {
            tokio::spawn(async move { old.close().await });
        }
        Ok(fresh)
    }

    pub(crate) async fn close(&self) {
        if let Some(pool) = self.current() {
            pool.close().await;
        }
    }
}

/// Opens (creating if missing) the database at `path` and applies pending migrations.
pub(super) async fn connect(path: &std::path::Path) -> Result<SqlitePool, StoreError> {
    create_parent_dir(path)?;
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // WAL + NORMAL loses at most the last commits on power loss, never consistency;
        // the index is rebuildable anyway.
        .synchronous(SqliteSynchronous::Normal)
        .pragma("wal_autocheckpoint", WAL_CHECKPOINT_PAGES.to_string())
        .busy_timeout(BUSY_TIMEOUT);
    let pool = SqlitePoolOptions::new().max_connections(max_connections()).connect_with(options).await?;
    SQLITE_MIGRATOR.run(&pool).await?;
    Ok(pool)
}

/// Creates the database file's directory (private to the user) when it is missing.
pub(super) fn create_parent_dir(path: &std::path::Path) -> Result<(), StoreError> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => create_private_dir(parent),
        None => Ok(()),
    }
}

/// How long a connection waits for another process's write lock before it fails.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// WAL pages after which a commit checkpoints (SQLite's default is 1,000). Every process's first
/// connection reads and checksums the whole WAL to rebuild its index (the shared-memory file is
/// not trusted across processes), and each `-p` run or SDK-spawned server is such a process: a
/// home that had seen a few hundred runs read up to 4 MB at every start, on the index's thread
/// (a `-p` run adds about 6 pages). A checkpoint is two `fsync`s, once per ten or so runs.
pub(crate) const WAL_CHECKPOINT_PAGES: u32 = 64;

/// Connections (each with its own thread) a pool may open. On a single-threaded runtime (a `-p`
/// run) one: a connection goes back to the pool through a task that has not run yet when the
/// next query asks, so the pool would open a second connection (a thread, three file opens, a
/// read of the WAL) for a query that needed to wait only until that task ran.
fn max_connections() -> u32 {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::CurrentThread) => 1,
        _ => 4,
    }
}
