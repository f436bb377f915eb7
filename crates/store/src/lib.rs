//! Durable session state. Only this crate knows disk formats.
//!
//! - [`event_log`]: `$COPILOT_HOME/session-state/<id>/events.jsonl`, append-only, one event per
//!   line, written before the event is sent to any client. A torn last line is skipped on load.
//! - [`index`]: the SQLite `sessions` table behind `session.list` / `getLastId` / `getMetadata`.
//!   It can be rebuilt from the logs.
//! - [`layout`]: paths under `$COPILOT_HOME`, and `workspace.yaml`.

pub mod event_log;
pub mod index;
pub mod layout;

pub use event_log::EventLog;
pub use index::{SessionIndex, SessionRow, ListFilter};
pub use layout::Layout;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("I/O error on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("Session not found: {0}")]
    NotFound(String),
}
