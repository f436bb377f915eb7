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

mod autopilot_objective;
pub mod backend;
pub mod checkpoints;
pub mod client_metadata;
mod error;
pub mod event_log;
mod files;
mod free_space;
pub mod index;
pub mod interchange;
pub mod layout;
pub mod pg;
pub mod session_db;
pub mod session_fs;
pub mod workspace_files;

pub use backend::{EventSink, EventStore};
pub use checkpoints::Checkpoint;
pub use error::StoreError;
pub use event_log::{EventLog, LoadedLog};
pub use index::{Claim, ListFilter, SessionIndex, SessionRow, UsageRow};
pub use layout::{check_session_name, Layout, WorkspaceMeta};
pub use workspace_files::WorkspaceStat;
