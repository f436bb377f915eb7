//! Requests made on a follower for the node running the session (`session.send`,
//! `session.abort`), through the database's inbox: this node writes them and waits for the
//! answer; the owner claims them, runs them and writes the answer back.

use std::sync::Arc;
use std::time::Duration;

use loop_engine::{Engine, EngineError};
use store::pg::InboxItem;

use crate::{lock, Cluster};

/// How often a node waiting for a forwarded request's answer looks, should its notification
/// be lost.
const FORWARD_POLL: Duration = Duration::from_millis(500);

impl Cluster {
    /// Hands a request for a session another node runs to that node and waits for its answer
    /// (the result's JSON text or the error's message). `None` when none came in time: the
    /// request is withdrawn.
    pub async fn forward_request(
        &self,
        id: &str,
        method: &str,
        params: &str,
        wait: Duration,
    ) -> Result<Option<Result<String, String>>, EngineError> {
        let row = self.pg.forward(id, method, params).await?;
        let woken = Arc::new(tokio::sync::Notify::new());
        lock(&self.forwarded).insert(row, woken.clone());
        let deadline = tokio::time::Instant::now() + wait;
        let answer = loop {
            match self.pg.take_answer(row).await {
                Ok(Some(answer)) => break Some(answer),
                Ok(None) => {}
                Err(e) => tracing::warn!(session = %id, error = %e, "reading a forwarded request's answer failed"),
            }
            if tokio::time::Instant::now() >= deadline {
                break None;
            }
            // The answer's notification wakes this; the timeout covers one lost meanwhile.
            let _ = tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + FORWARD_POLL), woken.notified())
                .await;
        };
        lock(&self.forwarded).remove(&row);
        if answer.is_none() {
            if let Err(e) = self.pg.withdraw(row).await {
                tracing::warn!(session = %id, error = %e, "withdrawing a forwarded request failed");
            }
        }
        Ok(answer)
    }

    /// A forwarded request was answered (the database's wake-up).
    pub fn answered(&self, row: i64) {
        if let Some(woken) = lock(&self.forwarded).get(&row) {
            woken.notify_one();
        }
    }

    /// Claims the requests other nodes forwarded to sessions run here (to `only`, or to any).
    pub async fn claim_forwarded(&self, engine: &Engine, only: Option<&str>) -> Vec<InboxItem> {
        let ids: Vec<String> = match only {
            Some(id) if self.owns(id) => vec![id.to_string()],
            Some(_) => return Vec::new(),
            None => lock(&self.owned).iter().cloned().collect(),
        };
        let ids: Vec<String> = ids.into_iter().filter(|id| engine.get(id).is_some_and(|h| h.runs_here())).collect();
        match self.pg.claim_inbox(&ids).await {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "reading forwarded requests failed");
                Vec::new()
            }
        }
    }

    /// Writes the answer to a claimed forwarded request.
    pub async fn answer_forwarded(&self, row: i64, answer: Result<String, String>) {
        if let Err(e) = self.pg.answer(row, answer).await {
            tracing::warn!(row, error = %e, "answering a forwarded request failed");
        }
    }
}
