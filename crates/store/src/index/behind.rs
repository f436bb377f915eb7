//! A write-behind index's writer ([`SessionIndex::open_write_behind`], a `-p` run): one thread
//! with one plain SQLite connection (rusqlite).
//!
//! Through sqlx the same few writes cost two threads (a runtime for the writer, SQLite's
//! worker behind the pool), a channel hop per statement, the pool's bookkeeping and the
//! migrator's queries: about 3 ms of CPU per run, four tenths of the whole process's, taken
//! from the two cores the model and the client also run on. Here the statements are function
//! calls on the thread that opened the file.
//!
//! The schema is still sqlx's to make: a database whose `_sqlx_migrations` does not list
//! exactly the migrations built in (a new file, an older schema) is migrated by sqlx first,
//! with this connection already open so that closing sqlx's does not remove the WAL.
//!
//! Rows go to the database at once (a crash mid-run keeps them); modification times gather for
//! [`DELAY`] first. A write that fails keeps its data queued and is tried again by the next
//! flush, which reports the failure: the run's final flush at the latest.
//!
//! [`SessionIndex::open_write_behind`]: super::SessionIndex::open_write_behind

use rusqlite::{params, Connection, TransactionBehavior};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::sync::oneshot;

use super::rows::{upsert_sql, SessionRow, DELAY, MARK_USER_MESSAGE_SQL, TOUCH_SQL};
use super::sqlite::SQLITE_MIGRATOR;
use crate::error::StoreError;

type Reply = oneshot::Sender<Result<(), StoreError>>;

/// A row write queued instead of awaited.
#[derive(Debug)]
pub(crate) enum RowWrite {
    Upsert(Box<SessionRow>),
    MarkUserMessage { id: String, title: String },
}

/// What the run handed over and the thread has not written yet.
#[derive(Default)]
struct Queue {
    rows: Vec<RowWrite>,
    /// Session id → latest `updated_at`.
    touches: HashMap<String, String>,
    flushes: VecDeque<Reply>,
    /// The last write failed: wait for a flush before trying again.
    failed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Handle on the writer thread; the thread runs for the life of the process.
#[derive(Debug, Clone)]
pub(crate) struct Behind {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

impl Behind {
    /// Starts the thread, which opens the database at `path` straight away.
    pub(crate) fn start(path: PathBuf) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("skipper-index".into())
            .spawn(move || run(&path, &theirs))
            .map_err(thread_error)?;
        Ok(Self { shared })
    }

    pub(crate) fn row(&self, write: RowWrite) {
        self.shared.queue().rows.push(write);
        self.shared.changed.notify_one();
    }

    pub(crate) fn touch(&self, id: &str, updated_at: &str) {
        self.shared.queue().touches.insert(id.to_string(), updated_at.to_string());
        self.shared.changed.notify_one();
    }

    /// Waits until everything queued so far is written, or the attempt failed.
    pub(crate) async fn flush(&self) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        self.shared.queue().flushes.push_back(tx);
        self.shared.changed.notify_one();
        rx.await.map_err(|_| thread_error(std::io::Error::other("the thread ended")))?
    }
}

/// Why the writer's thread (or the runtime sqlx migrates on) could not start or answer.
fn thread_error(source: std::io::Error) -> StoreError {
    StoreError::Io { path: "the session index's thread".into(), source }
}

fn run(path: &Path, shared: &Shared) {
    let mut conn = match open(path) {
        Ok(conn) => Some(conn),
        Err(e) => {
            tracing::warn!(error = %e, "session index: opening failed");
            None
        }
    };
    loop {
        let (rows, touches, flush) = next_batch(shared);
        let result = match conn.as_mut() {
            Some(c) => write(c, &rows, &touches),
            // Opened again by the next attempt: the failure may have passed (a locked file).
            None => open(path).and_then(|mut c| {
                let written = write(&mut c, &rows, &touches);
                conn = Some(c);
                written
            }),
        };
        if let Err(e) = &result {
            if flush.is_none() {
                tracing::warn!(error = %e, "session index: writing queued rows and modification times failed");
            }
            let mut queue = shared.queue();
            let later = std::mem::replace(&mut queue.rows, rows);
            queue.rows.extend(later);
            for (id, at) in touches {
                queue.touches.entry(id).or_insert(at);
            }
            queue.failed = true;
        }
        if let Some(reply) = flush {
            let _ = reply.send(result);
        }
    }
}

/// Waits for something to write: a flush (one per batch, so each gets its own attempt's
/// result), queued rows at once, or queued touches after [`DELAY`].
fn next_batch(shared: &Shared) -> (Vec<RowWrite>, HashMap<String, String>, Option<Reply>) {
    let mut queue = shared.queue();
    loop {
        if !queue.flushes.is_empty() {
            break;
        }
        if queue.failed || (queue.rows.is_empty() && queue.touches.is_empty()) {
            queue = shared.changed.wait(queue).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        if !queue.rows.is_empty() {
            break;
        }
        // Only touches: let more gather, unless a flush or a row comes first.
        let (q, _) = shared
            .changed
            .wait_timeout_while(queue, DELAY, |q| q.flushes.is_empty() && q.rows.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        queue = q;
        break;
    }
    let flush = queue.flushes.pop_front();
    if flush.is_some() {
        queue.failed = false;
    }
    (std::mem::take(&mut queue.rows), std::mem::take(&mut queue.touches), flush)
}

fn open(path: &Path) -> Result<Connection, StoreError> {
    super::sqlite::create_parent_dir(path)?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(super::sqlite::BUSY_TIMEOUT)?;
    // The settings sqlx's connections use (`sqlite::connect`); the journal mode is the file's
    // own once set, the others are per connection.
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.query_row(&format!("PRAGMA wal_autocheckpoint = {}", super::sqlite::WAL_CHECKPOINT_PAGES), [], |_| Ok(()))?;
    if !migrated(&conn) {
        migrate_with_sqlx(path)?;
    }
    Ok(conn)
}

/// Whether `_sqlx_migrations` lists exactly the migrations built in, each applied, with the
/// same checksum.
fn migrated(conn: &Connection) -> bool {
    let applied = conn.prepare("SELECT version, checksum, success FROM _sqlx_migrations").and_then(|mut stmt| {
        stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?, r.get::<_, bool>(2)?)))?
            .collect::<Result<Vec<_>, _>>()
    });
    let Ok(applied) = applied else { return false }; // no table yet
    let built: Vec<_> = SQLITE_MIGRATOR.iter().filter(|m| !m.migration_type.is_down_migration()).collect();
    applied.len() == built.len()
        && built.iter().all(|m| {
            applied.iter().any(|(version, checksum, ok)| *ok && *version == m.version && checksum[..] == m.checksum[..])
        })
}

/// Lets sqlx create or migrate the schema (a runtime of its own, on this thread, for this once).
fn migrate_with_sqlx(path: &Path) -> Result<(), StoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(thread_error)?;
    runtime.block_on(async {
        let pool = super::sqlite::connect(path).await?;
        pool.close().await;
        Ok(())
    })
}

fn write(conn: &mut Connection, rows: &[RowWrite], touches: &HashMap<String, String>) -> Result<(), StoreError> {
    if rows.is_empty() && touches.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for write in rows {
        match write {
            RowWrite::Upsert(row) => upsert(&tx, row)?,
            RowWrite::MarkUserMessage { id, title } => {
                tx.prepare_cached(MARK_USER_MESSAGE_SQL)?.execute(params![title, id])?;
            }
        }
    }
    for (id, at) in touches {
        tx.prepare_cached(TOUCH_SQL)?.execute(params![at, id])?;
    }
    tx.commit()?;
    Ok(())
}

fn upsert(conn: &Connection, row: &SessionRow) -> Result<(), StoreError> {
    conn.prepare_cached(&upsert_sql())?.execute(params![
        row.id,
        row.cwd,
        row.git_root,
        row.repository,
        row.branch,
        row.model,
        row.title,
        row.summary,
        row.client_name,
        row.created_at,
        row.updated_at,
        row.has_user_message,
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_schema_is_migrated_only_when_sqlx_lists_every_built_in_migration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let empty = Connection::open(&path).unwrap();
        assert!(!migrated(&empty), "an empty file has no schema");
        migrate_with_sqlx(&path).unwrap();
        assert!(migrated(&empty));
        // A checksum that differs (an edited migration) is sqlx's to judge.
        empty.execute("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1", []).unwrap();
        assert!(!migrated(&empty));
    }

    #[test]
    fn touches_alone_are_written_after_the_delay_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home").join("index.db");
        let behind = Behind::start(path.clone()).unwrap();
        let row = SessionRow { id: "s".into(), cwd: "/w".into(), updated_at: "1".into(), ..Default::default() };
        behind.row(RowWrite::Upsert(Box::new(row)));
        behind.touch("s", "2");
        // Another process's view; the thread may not have created the file yet.
        let read = || {
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|c| {
                c.query_row("SELECT updated_at FROM sessions WHERE id = 's'", [], |r| r.get::<_, String>(0))
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while read().ok().as_deref() != Some("2") {
            assert!(std::time::Instant::now() < deadline, "the touch never reached the file: {:?}", read());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
