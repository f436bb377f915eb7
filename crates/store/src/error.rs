//! The crate's error ([`StoreError`]). Apart from the crate root, which re-exports it, so that
//! the modules the root declares can name it without importing the root.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("I/O error on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    /// From the plain SQLite connection a write-behind index writes through.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("Session not found: {0}")]
    NotFound(String),
    /// The id would escape `session-state/` or collide with its housekeeping entries.
    #[error("Invalid session id: {0:?}")]
    InvalidSessionId(String),
    /// A client's workspace path is absolute, climbs above the files directory with `..`, or
    /// passes a symlink that leads out of it.
    #[error("Path {0:?} resolves outside the workspace files directory")]
    OutsideWorkspace(String),
    /// The path names the workspace files directory itself where an entry is needed.
    #[error("Path {0:?} does not name an entry in the workspace files directory")]
    InvalidWorkspacePath(String),
    #[error("No such file or directory in the workspace files directory: {0}")]
    NoSuchWorkspacePath(String),
    /// The backend cannot do this (e.g. rebuild a PostgreSQL index from files).
    #[error("not supported by this database: {0}")]
    Unsupported(&'static str),
    /// Another node holds the session's lease: it is running there.
    #[error("Session {session} is running on node {node}")]
    LeasedElsewhere { session: String, node: String },
    /// The database failed to answer a moment ago: requests fail at once for a short while
    /// instead of each waiting out the pool's timeout (see `index/health.rs`).
    #[error("the database did not answer a moment ago")]
    Unavailable,
    /// Too little free space where the session's events go to start a turn.
    #[error("Not enough free disk space to start a turn: {free_kib} KiB left, {needed_kib} KiB needed")]
    DiskFull { free_kib: u64, needed_kib: u64 },
    #[error("cannot encode event: {0}")]
    Encode(#[from] serde_json::Error),
}

impl StoreError {
    /// Where state is kept cannot take it now (the disk is full, the database does not
    /// answer): nothing is wrong with the request, and it may work once that is fixed.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable().is_some()
    }

    /// What is unavailable, in a client's words: `"database unavailable"` or `"disk full"`.
    pub fn unavailable(&self) -> Option<&'static str> {
        match self {
            StoreError::DiskFull { .. } => Some("disk full"),
            StoreError::Io { source, .. } => {
                matches!(source.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
                    .then_some("disk full")
            }
            StoreError::Unavailable => Some("database unavailable"),
            StoreError::Db(e) => matches!(
                e,
                sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Io(_)
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::WorkerCrashed
            )
            .then_some("database unavailable"),
            _ => None,
        }
    }
}

/// Adapter for `map_err` that records which path an I/O error happened on.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.display().to_string(), source }
}

/// Runs file work on the blocking pool (a task that panicked is an I/O error of its own).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Io { path: "blocking task".into(), source: std::io::Error::other(e) })?
}

/// A file's text, `None` when there is no such file.
pub(crate) async fn read_if_present(path: &Path) -> Result<Option<String>, StoreError> {
    match tokio::fs::read_to_string(path).await {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Removes a file; whether there was one.
pub(crate) async fn remove_if_present(path: &Path) -> Result<bool, StoreError> {
    match tokio::fs::remove_file(path).await {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(path)(e)),
    }
}
