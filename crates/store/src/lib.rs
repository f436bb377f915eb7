//! Durable session state. Only this crate knows disk formats.
//!
//! - [`event_log`]: `$COPILOT_HOME/session-state/<id>/events.jsonl`, append-only, one event per
//!   line, written before the event is sent to any client. A torn last line is skipped on load.
//! - [`backend`]: the seam: a session's log and metadata in files or in PostgreSQL ([`pg`],
//!   with the leases several nodes run sessions under).
//! - [`index`]: the SQLite (or PostgreSQL) `sessions` table behind `session.list` / `getLastId` / `getMetadata`.
//!   It can be rebuilt from the logs.
//! - [`layout`]: paths under `$COPILOT_HOME`, and `workspace.yaml`.
//! - [`checkpoints`]: compaction summaries under `checkpoints/`, listed in `index.md`.
//! - [`session_fs`]: the same files kept by the client (a sessionFs provider) instead.
//! - [`session_db`]: a session's SQLite database behind the `sql` tool.
//! - [`workspace_files`]: the client-managed files under `files/`, confined to that directory.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod backend;
pub mod checkpoints;
pub mod event_log;
mod files;
pub mod index;
pub mod layout;
pub mod pg;
pub mod session_db;
pub mod session_fs;
pub mod workspace_files;

pub use backend::{EventSink, EventStore};
pub use checkpoints::Checkpoint;
pub use event_log::{EventLog, LoadedLog};
pub use index::{ListFilter, SessionIndex, SessionRow};
pub use layout::{Layout, WorkspaceMeta};
pub use workspace_files::WorkspaceStat;

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
    #[error("cannot encode event: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Adapter for `map_err` that records which path an I/O error happened on.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.display().to_string(), source }
}
