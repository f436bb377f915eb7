//! `updated_at` written behind. A session touches its row after every batch of messages; doing
//! that as its own query on the turn's path costs a database round trip (a hand-off to the
//! SQLite worker thread and back) per turn. [`SessionIndex::touch_later`] only records the time;
//! a task writes what has gathered in one transaction shortly after, and every other index
//! query writes what is pending first, so a reader in this process always sees the latest
//! touch. A process killed in between loses at most that window's times: the index is a
//! cache of the logs (`rebuild_from_logs`).
//!
//! A write-behind index (a `-p` run) has a writer of its own (`behind`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::rows::{DELAY, TOUCH_SQL};
use super::{Pool, SessionIndex};
use crate::error::StoreError;

#[derive(Debug, Default)]
pub(crate) struct Touches {
    /// Session id → latest `updated_at` not yet written.
    pending: Mutex<HashMap<String, String>>,
    /// Held while pending touches are written: a query waits for a write under way.
    writing: tokio::sync::Mutex<()>,
    wake: tokio::sync::Notify,
    writer_started: std::sync::atomic::AtomicBool,
}

impl Touches {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SessionIndex {
    /// Sets `updated_at` soon, without waiting: the next query of this index (from anywhere in
    /// the process) sees it, and it reaches the database within a few milliseconds.
    pub fn touch_later(&self, id: &str, updated_at: &str) {
        if let Some(behind) = &self.behind {
            behind.touch(id, updated_at);
            return;
        }
        self.touches.pending().insert(id.to_string(), updated_at.to_string());
        self.wake_writer();
    }

    fn wake_writer(&self) {
        if !self.touches.writer_started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    rt.spawn(writer(self.clone()));
                }
                // No runtime: the next query writes it.
                Err(_) => self.touches.writer_started.store(false, std::sync::atomic::Ordering::Release),
            }
        }
        self.touches.wake.notify_one();
    }

    /// Writes what `touch_later` recorded (and a write-behind index's queued rows), now:
    /// before the process exits.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.write_touches().await
    }

    /// Writes the touches recorded so far (one transaction); on a write-behind index, waits
    /// for its writer to write everything queued. Every query calls it first.
    pub(crate) async fn write_touches(&self) -> Result<(), StoreError> {
        if let Some(behind) = &self.behind {
            return behind.flush().await;
        }
        let _writing = self.touches.writing.lock().await;
        let batch = std::mem::take(&mut *self.touches.pending());
        if batch.is_empty() {
            return Ok(());
        }
        let written = match self.health.check() {
            Ok(()) => self.write_batch(&batch).await,
            Err(e) => Err(e),
        };
        self.health.note(&written);
        if written.is_err() {
            // Kept for the next attempt; touches recorded since are newer.
            let mut pending = self.touches.pending();
            for (id, at) in batch {
                pending.entry(id).or_insert(at);
            }
        }
        written
    }

    async fn write_batch(&self, batch: &HashMap<String, String>) -> Result<(), StoreError> {
        let sql = self.pool.sql(TOUCH_SQL);
        match &self.pool {
            Pool::Sqlite(db) => {
                let pool = db.live().await?;
                // A lone touch (what a quiet session has pending) is one statement: it commits
                // on its own, without the two round trips to SQLite's worker thread that
                // `BEGIN` and `COMMIT` would add.
                if batch.len() == 1 {
                    if let Some((id, at)) = batch.iter().next() {
                        sqlx::query(&sql).bind(at).bind(id).execute(&pool).await?;
                        return Ok(());
                    }
                }
                let mut tx = pool.begin().await?;
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
        tokio::time::sleep(DELAY).await;
        if let Err(e) = index.write_touches().await {
            tracing::warn!(error = %e, "session index: writing modification times failed");
        }
    }
}
