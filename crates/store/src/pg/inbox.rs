//! Requests forwarded to the node running a session (`session_inbox`, migration
//! `postgres/0007_inbox.sql`): the follower's node inserts one and waits for its answer; the
//! owner claims it (once, whatever wakes it), answers it, and the asking node deletes it.

use super::handle::PgEvents;
use crate::error::StoreError;

/// A forwarded request as the owner claims it.
#[derive(Debug, Clone)]
pub struct InboxItem {
    pub id: i64,
    pub session_id: String,
    pub method: String,
    /// The request's params as the client sent them (JSON text).
    pub params: String,
}

/// Unanswered requests older than this are dropped (their asker gave up long before).
const STALE_S: f64 = 300.0;

impl PgEvents {
    /// Leaves a request for the session's owner; returns its row.
    pub async fn forward(&self, session_id: &str, method: &str, params: &str) -> Result<i64, StoreError> {
        let (id,): (i64,) =
            sqlx::query_as("INSERT INTO session_inbox (session_id, method, params) VALUES ($1, $2, $3) RETURNING id")
                .bind(session_id)
                .bind(method)
                .bind(params)
                .fetch_one(&self.pool)
                .await?;
        Ok(id)
    }

    /// Claims the unclaimed requests for these sessions, oldest first: each is returned to one
    /// caller only.
    pub async fn claim_inbox(&self, session_ids: &[String]) -> Result<Vec<InboxItem>, StoreError> {
        if session_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<(i64, String, String, String)> = sqlx::query_as(
            "UPDATE session_inbox SET claimed_by = $2 WHERE id IN \
               (SELECT id FROM session_inbox WHERE session_id = ANY($1) AND claimed_by IS NULL AND NOT answered \
                ORDER BY id FOR UPDATE SKIP LOCKED) \
             RETURNING id, session_id, method, params",
        )
        .bind(session_ids)
        .bind(self.node_id())
        .fetch_all(&self.pool)
        .await?;
        let mut items: Vec<InboxItem> = rows
            .into_iter()
            .map(|(id, session_id, method, params)| InboxItem { id, session_id, method, params })
            .collect();
        items.sort_by_key(|i| i.id);
        Ok(items)
    }

    /// Writes a claimed request's answer: the result's JSON text, or the error's message.
    pub async fn answer(&self, id: i64, answer: Result<String, String>) -> Result<(), StoreError> {
        let (result, error) = match answer {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        sqlx::query("UPDATE session_inbox SET answered = TRUE, result = $2, error = $3 WHERE id = $1")
            .bind(id)
            .bind(result)
            .bind(error)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A forwarded request's answer, once there (the row is deleted then).
    pub async fn take_answer(&self, id: i64) -> Result<Option<Result<String, String>>, StoreError> {
        let row: Option<(Option<String>, Option<String>)> =
            sqlx::query_as("DELETE FROM session_inbox WHERE id = $1 AND answered RETURNING result, error")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(result, error)| match (result, error) {
            (Some(r), _) => Ok(r),
            (None, e) => Err(e.unwrap_or_default()),
        }))
    }

    /// Gives a request up (nobody answered in time). Returns whether the owner had claimed it
    /// (it may still run).
    pub async fn withdraw(&self, id: i64) -> Result<bool, StoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("DELETE FROM session_inbox WHERE id = $1 RETURNING claimed_by")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.is_some_and(|(c,)| c.is_some()))
    }

    /// Drops requests nobody took back.
    pub async fn prune_inbox(&self) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_inbox WHERE created_at < now() - make_interval(secs => $1)")
            .bind(STALE_S)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
