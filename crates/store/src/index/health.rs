//! Fail fast while the database is down. Each query waits up to the pool's timeout for a
//! connection; with the database gone, every request would wait that long again, and one that
//! runs two queries (or queues behind the touch writer) twice as long. After a failure to
//! reach the database, queries for a short while fail at once; the first after it tries again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::StoreError;

/// How long after a failure queries fail without trying.
const QUIET: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
pub(crate) struct Health {
    failed_at: Mutex<Option<Instant>>,
}

impl Health {
    /// `Unavailable` within [`QUIET`] of the last failure to reach the database.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        match *self.lock() {
            Some(at) if at.elapsed() < QUIET => Err(StoreError::Unavailable),
            _ => Ok(()),
        }
    }

    /// Records how a query went: reaching the database clears a failure, not reaching it
    /// starts one; any other error (a constraint, bad SQL) says nothing about its health.
    pub(crate) fn note<T>(&self, result: &Result<T, StoreError>) {
        match result {
            Ok(_) => *self.lock() = None,
            Err(e) if matches!(e.unavailable(), Some("database unavailable")) => *self.lock() = Some(Instant::now()),
            Err(_) => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.failed_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_to_reach_the_database_fails_the_next_queries_at_once_for_a_while() {
        let health = Health::default();
        assert!(health.check().is_ok());
        health.note::<()>(&Err(StoreError::NotFound("s".into())));
        assert!(health.check().is_ok(), "an ordinary error says nothing about the database");
        health.note::<()>(&Err(StoreError::Db(sqlx::Error::PoolTimedOut)));
        assert!(matches!(health.check(), Err(StoreError::Unavailable)));
        *health.lock() = Some(Instant::now() - QUIET);
        assert!(health.check().is_ok(), "after the quiet time a query tries again");
        health.note::<()>(&Err(StoreError::Unavailable));
        assert!(health.check().is_err());
        health.note(&Ok(()));
        assert!(health.check().is_ok(), "an answer clears it");
    }
}
