//! One session's append handle on the `session_events` table.

use std::sync::Arc;

use protocol::event::Event;
use sqlx::Row;

use super::writer::Writer;
use crate::error::StoreError;

#[derive(Debug)]
pub struct DbLog {
    writer: Writer,
    session_id: Arc<str>,
    node_id: Arc<str>,
    /// Position of the last event written (0: none).
    last_seq: i64,
    /// An append failed, and may have reached the table anyway (the answer was lost on the
    /// way back): the next append first reads where the log ends.
    unsure: bool,
}

impl DbLog {
    pub(crate) fn new(writer: Writer, session_id: String, node_id: Arc<str>, last_seq: i64) -> Self {
        Self { writer, session_id: session_id.into(), node_id, last_seq, unsure: false }
    }

    /// Position of the last event written.
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// Inserts one event at the next position. Refused when another node holds the session's
    /// lease (it took the session over), or when the position is taken (a second writer).
    pub fn append(&mut self, event_id: &str, json: &[u8]) -> Result<(), StoreError> {
        if self.unsure {
            let session = self.session_id.clone();
            let (last,): (Option<i64>,) = self.writer.run(move |pool| async move {
                Ok(sqlx::query_as("SELECT MAX(seq) FROM session_events WHERE session_id = $1")
                    .bind(&*session)
                    .fetch_one(&pool)
                    .await?)
            })?;
            self.last_seq = last.unwrap_or(0);
            self.unsure = false;
        }
        let written = self.insert(event_id, json);
        self.unsure = written.is_err();
        written
    }

    fn insert(&mut self, event_id: &str, json: &[u8]) -> Result<(), StoreError> {
        let json = String::from_utf8_lossy(json).into_owned();
        let (session, node, id, seq) =
            (self.session_id.clone(), self.node_id.clone(), event_id.to_string(), self.last_seq + 1);
        self.writer.run(move |pool| async move {
            let done = sqlx::query(
                "INSERT INTO session_events (session_id, seq, id, json) \
                 SELECT $1, $2, $3, $4 WHERE NOT EXISTS \
                   (SELECT 1 FROM session_leases WHERE session_id = $1 AND node_id <> $5 AND expires_at > now())",
            )
            .bind(&*session)
            .bind(seq)
            .bind(&id)
            .bind(json)
            .bind(&*node)
            .execute(&pool)
            .await?;
            if done.rows_affected() == 0 {
                let holder: Option<(String,)> =
                    sqlx::query_as("SELECT node_id FROM session_leases WHERE session_id = $1")
                        .bind(&*session)
                        .fetch_optional(&pool)
                        .await?;
                return Err(StoreError::LeasedElsewhere {
                    session: session.to_string(),
                    node: holder.map(|(n,)| n).unwrap_or_default(),
                });
            }
            Ok(())
        })?;
        self.last_seq = seq;
        Ok(())
    }

    /// Cuts the log before `event_id` (see [`crate::EventLog::truncate_before`]).
    pub fn truncate_before(&mut self, event_id: &str) -> Result<Option<(Vec<Event>, usize)>, StoreError> {
        let (session, id) = (self.session_id.clone(), event_id.to_string());
        let cut = self.writer.run(move |pool| async move {
            let mut tx = pool.begin().await?;
            let at: Option<(i64,)> = sqlx::query_as("SELECT seq FROM session_events WHERE session_id = $1 AND id = $2")
                .bind(&*session)
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?;
            let Some((at,)) = at else { return Ok(None) };
            let removed = sqlx::query("DELETE FROM session_events WHERE session_id = $1 AND seq >= $2")
                .bind(&*session)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected() as usize;
            let rows = sqlx::query("SELECT json FROM session_events WHERE session_id = $1 ORDER BY seq")
                .bind(&*session)
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            let mut kept = Vec::with_capacity(rows.len());
            for row in rows {
                let json: String = row.try_get(0)?;
                if let Ok(e) = serde_json::from_str::<Event>(&json) {
                    kept.push(e);
                }
            }
            Ok(Some((kept, removed, at - 1)))
        })?;
        Ok(cut.map(|(kept, removed, last)| {
            self.last_seq = last;
            (kept, removed)
        }))
    }
}
