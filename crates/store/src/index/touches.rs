//! `updated_at` written behind. A session touches its row after every batch of messages; doing
//! that as its own query on the turn's path costs a database round trip (a hand-off to the
//! SQLite worker thread and back) per turn. [`SessionIndex::touch_later`] only records the time;
//! a task writes what has gathered in one transaction shortly after, and every other index
//! query writes what is pending first, so a reader in this process always sees the latest
//! touch. A process killed in between loses at most that window's times: the index is a
//! cache of the logs (`rebuild_from_logs`).
//!
//! A write-behind index ([`SessionIndex::open_write_behind`], a `-p` run) queues its row writes
//! here too: they go first, in order, in the same transaction, and without the delay.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Pool, SessionIndex, SessionRow};
use crate::StoreError;

/// How long touches gather before they are written.
const DELAY: Duration = Duration::from_millis(20);

const TOUCH_SQL: &str = "UPDATE sessions SET updated_at = ?1 WHERE id = ?2";

/// A row write a write-behind index queued instead of waiting for it
/// ([`SessionIndex::open_write_behind`]).
#[derive(Debug)]
pub(crate) enum RowWrite {
    Upsert(Box<SessionRow>),
    MarkUserMessage { id: String, title: String },
}

#[derive(Debug, Default)]
pub(crate) struct Touches {
    /// Session id → latest `updated_at` not yet written.
    pending: Mutex<HashMap<String, String>>,
    /// Row writes not yet made, in order; written before the touches.
    rows: Mutex<Vec<RowWrite>>,
    /// Held while pending touches are written: a query waits for a write under way.
    writing: tokio::sync::Mutex<()>,
    wake: tokio::sync::Notify,
    writer_started: std::sync::atomic::AtomicBool,
    /// Where the writer runs: a write-behind index's own runtime, else the caller's.
    runtime: Option<tokio::runtime::Handle>,
}

/// Why the index's own thread could not start, or a task on it did not finish.
fn thread_error(source: std::io::Error) -> StoreError {
    StoreError::Io { path: "the session index's thread".into(), source }
}

/// A single-threaded runtime on a thread of its own, running for the life of the process.
pub(crate) fn background_runtime() -> Result<tokio::runtime::Handle, StoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(thread_error)?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("skipper-index".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .map_err(thread_error)?;
    Ok(handle)
}

impl Touches {
    /// Touches whose writer runs on `runtime`.
    pub(crate) fn on(runtime: tokio::runtime::Handle) -> Self {
        Self { runtime: Some(runtime), ..Default::default() }
    }

    /// A write-behind index's: `upsert` and `mark_user_message` are queued, not awaited
    /// ([`SessionIndex::open_write_behind`]), and everything runs on its own runtime.
    pub(crate) fn write_behind(&self) -> bool {
        self.runtime.is_some()
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, Vec<RowWrite>> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SessionIndex {
    /// Sets `updated_at` soon, without waiting: the next query of this index (from anywhere in
    /// the process) sees it, and it reaches the database within a few milliseconds.
    pub fn touch_later(&self, id: &str, updated_at: &str) {
        self.touches.pending().insert(id.to_string(), updated_at.to_string());
        self.wake_writer();
    }

    /// Queues a row write of a write-behind index.
    pub(crate) fn write_later(&self, write: RowWrite) {
        self.touches.rows().push(write);
        self.wake_writer();
    }

    fn wake_writer(&self) {
        if !self.touches.writer_started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            match self.touches.runtime.clone().map_or_else(tokio::runtime::Handle::try_current, Ok) {
                Ok(rt) => {
                    rt.spawn(writer(self.clone()));
                }
                // No runtime: the next query writes it.
                Err(_) => self.touches.writer_started.store(false, std::sync::atomic::Ordering::Release),
            }
        }
        self.touches.wake.notify_one();
    }

    /// Writes what `touch_later` recorded, now (before the process exits).
    ///
    /// A write-behind index writes on its own runtime: a connection goes back to the pool
    /// through a task of the runtime that used it, and the caller's is about to shut down. A
    /// connection dropped with that task is closed, and closing SQLite's last connection
    /// checkpoints the WAL and deletes it (see [`SessionIndex::leave_open_at_exit`]).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let Some(runtime) = self.touches.runtime.clone() else {
            return self.write_touches().await;
        };
        let index = self.clone();
        runtime
            .spawn(async move { index.write_touches().await })
            .await
            .map_err(|e| thread_error(std::io::Error::other(e)))?
    }

    /// Writes the row writes and touches recorded so far (one transaction). Every query calls
    /// it first.
    pub(crate) async fn write_touches(&self) -> Result<(), StoreError> {
        let _writing = self.touches.writing.lock().await;
        let rows = std::mem::take(&mut *self.touches.rows());
        let batch = std::mem::take(&mut *self.touches.pending());
        if batch.is_empty() && rows.is_empty() {
            return Ok(());
        }
        let written = self.write_batch(&rows, &batch).await;
        if written.is_err() {
            // Kept for the next attempt (the final flush at the latest, which then reports
            // the failure): queued since were queued after them.
            let mut queued = self.touches.rows();
            let later = std::mem::replace(&mut *queued, rows);
            queued.extend(later);
            drop(queued);
            let mut pending = self.touches.pending();
            for (id, at) in batch {
                pending.entry(id).or_insert(at);
            }
        }
        written
    }

    async fn write_batch(&self, rows: &[RowWrite], batch: &HashMap<String, String>) -> Result<(), StoreError> {
        let sql = self.pool.sql(TOUCH_SQL);
        match &self.pool {
            Pool::Sqlite(db) => {
                let pool = db.live().await?;
                // A lone touch (what a quiet session or a `-p` run's end has pending) is one
                // statement: it commits on its own, without the two round trips to SQLite's
                // worker thread that `BEGIN` and `COMMIT` would add.
                if rows.is_empty() && batch.len() == 1 {
                    if let Some((id, at)) = batch.iter().next() {
                        sqlx::query(&sql).bind(at).bind(id).execute(&pool).await?;
                        return Ok(());
                    }
                }
                let mut tx = pool.begin().await?;
                for write in rows {
                    match write {
                        RowWrite::Upsert(row) => super::upsert_on(&mut *tx, row).await?,
                        RowWrite::MarkUserMessage { id, title } => {
                            sqlx::query(super::MARK_USER_MESSAGE_SQL).bind(title).bind(id).execute(&mut *tx).await?;
                        }
                    }
                }
                for (id, at) in batch {
                    sqlx::query(&sql).bind(at).bind(id).execute(&mut *tx).await?;
                }
                tx.commit().await?;
            }
            Pool::Postgres(pg) => {
                let mut tx = pg.begin().await?;
                for (id, at) in batch {
                    sqlx::query(&sql).bind(at).bind(id).execute(&mut *tx).await?;
                }
                tx.commit().await?;
            }
        }
        Ok(())
    }
}

/// Writes gathered touches shortly after each wake-up, for as long as the runtime lives.
async fn writer(index: SessionIndex) {
    let touches: Arc<Touches> = index.touches.clone();
    loop {
        touches.wake.notified().await;
        // Queued rows go at once: a short run may end before the delay would. Touches gather.
        if touches.rows().is_empty() {
            tokio::time::sleep(DELAY).await;
        }
        if let Err(e) = index.write_touches().await {
            tracing::warn!(error = %e, "session index: writing queued rows and modification times failed");
        }
    }
}
