//! Where a session's durable state lives: files under `$COPILOT_HOME` (the headless server and
//! a one-node `skipper serve`) or PostgreSQL (several nodes sharing no disk). Callers get one
//! API for both; the file backend does exactly what it did before the seam (a synchronous
//! whole-line write per event, no database round trip).

use protocol::event::Event;

use crate::error::{blocking, StoreError};
use crate::event_log::{EventLog, LoadedLog};
use crate::layout::{Layout, WorkspaceMeta};
use crate::pg::{DbLog, PgEvents};

/// A session's log and `workspace.yaml` metadata, by session id. Cheap to clone.
#[derive(Clone, Debug)]
pub enum EventStore {
    Files(Layout),
    Postgres(PgEvents),
}

/// An open append handle on one session's log.
#[derive(Debug)]
pub enum EventSink {
    File(EventLog),
    Postgres(DbLog),
    /// The client's storage (a sessionFs provider).
    Remote(crate::session_fs::RemoteLog),
}

impl From<EventLog> for EventSink {
    fn from(log: EventLog) -> Self {
        EventSink::File(log)
    }
}

impl EventSink {
    /// Appends one persisted event, serialized once by the emitter (compact JSON, no
    /// `ephemeral` key). Synchronous: persist before deliver.
    pub fn append(&mut self, event_id: &str, json: &[u8]) -> Result<(), StoreError> {
        match self {
            EventSink::File(log) => log.append_json(json),
            EventSink::Postgres(log) => log.append(event_id, json),
            EventSink::Remote(log) => log.append(json),
        }
    }

    /// Cuts the log before `event_id`: the events left and how many went, `None` when no event
    /// has that id.
    pub fn truncate_before(&mut self, event_id: &str) -> Result<Option<(Vec<Event>, usize)>, StoreError> {
        match self {
            EventSink::File(log) => log.truncate_before(event_id),
            EventSink::Postgres(log) => log.truncate_before(event_id),
            EventSink::Remote(_) => Err(StoreError::Unsupported("truncating a log kept by the client")),
        }
    }
}

impl EventStore {
    pub fn postgres(&self) -> Option<&PgEvents> {
        match self {
            EventStore::Postgres(pg) => Some(pg),
            EventStore::Files(_) => None,
        }
    }

    /// The whole log; `NotFound` (by session id) when the session has none.
    pub async fn load(&self, id: &str) -> Result<LoadedLog, StoreError> {
        match self {
            EventStore::Files(layout) => {
                Layout::check_id(id)?;
                let path = layout.events_path(id);
                // A long log is a blocking read: keep it off the async workers.
                blocking(move || EventLog::load(path)).await
            }
            EventStore::Postgres(pg) => pg.load(id).await,
        }
    }

    /// `DiskFull` when a turn's events would not fit where they go (files only: PostgreSQL
    /// reports its own failures, which stop the turn as any failed write does).
    pub fn room_for_a_turn(&self, id: &str) -> Result<(), StoreError> {
        match self {
            EventStore::Files(layout) => layout.room_for_a_turn(id),
            EventStore::Postgres(_) => Ok(()),
        }
    }

    /// Whether a session with this id has state (a log, or on PostgreSQL an index row).
    pub async fn exists(&self, id: &str) -> Result<bool, StoreError> {
        match self {
            EventStore::Files(layout) => Ok(layout.events_path(id).exists()),
            EventStore::Postgres(pg) => pg.exists(id).await,
        }
    }

    /// Opens the session's log for appending (creating the file on the file backend).
    pub async fn open_sink(&self, id: &str) -> Result<EventSink, StoreError> {
        match self {
            EventStore::Files(layout) => {
                layout.ensure_session_dir(id)?;
                Ok(EventSink::File(EventLog::open(layout.events_path(id))?))
            }
            EventStore::Postgres(pg) => Ok(EventSink::Postgres(pg.open_log(id).await?)),
        }
    }

    /// Writes a new session's whole log at once (a fork), durably.
    pub async fn write_log(&self, id: &str, events: Vec<Event>) -> Result<(), StoreError> {
        match self {
            EventStore::Files(layout) => {
                let (layout, id) = (layout.clone(), id.to_string());
                blocking(move || -> Result<(), StoreError> {
                    layout.ensure_session_dir(&id)?;
                    let mut log = EventLog::open(layout.events_path(&id))?;
                    for e in &events {
                        log.append(e)?;
                    }
                    log.sync()
                })
                .await
            }
            EventStore::Postgres(pg) => pg.insert_all(id, &events).await,
        }
    }

    /// Removes the session's log and metadata (on the file backend: its whole directory).
    pub async fn delete(&self, id: &str) -> Result<(), StoreError> {
        match self {
            EventStore::Files(layout) => layout.delete_session_dir(id),
            EventStore::Postgres(pg) => pg.delete(id).await,
        }
    }

    /// `workspace.yaml`, or `None` when the session has none.
    pub async fn read_meta(&self, id: &str) -> Result<Option<WorkspaceMeta>, StoreError> {
        match self {
            EventStore::Files(layout) => layout.read_workspace_yaml(id),
            EventStore::Postgres(pg) => pg.read_meta(id).await,
        }
    }

    pub async fn write_meta(&self, id: &str, meta: &WorkspaceMeta) -> Result<(), StoreError> {
        match self {
            EventStore::Files(layout) => layout.write_workspace_yaml(id, meta).await,
            EventStore::Postgres(pg) => pg.write_meta(id, meta).await,
        }
    }
}
