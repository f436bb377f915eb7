//! The node's tally of its tenants' usage. What a session's events add is counted in memory
//! (no I/O on a turn's path) and written to the database about once a second, where the nodes
//! sharing it add up; a tenant's tokens today are what the database held at the last write plus
//! what this node has not written yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use store::{SessionIndex, StoreError};

use super::usage::{self, Usage};

/// A tenant and its user (`None`: the tenant's own token).
pub type Key = (Arc<str>, Option<Arc<str>>);

#[derive(Default)]
pub struct Ledger {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Since this node started: `/metrics`.
    since_start: HashMap<Key, Usage>,
    /// Counted here, not yet written, by UTC day.
    pending: HashMap<(Key, String), Usage>,
    /// Taken by the write under way (counted until the database has it).
    writing: HashMap<(Key, String), Usage>,
    /// The tenants' tokens on `today.0` as the database summed them at the last write.
    today: (String, HashMap<Arc<str>, u64>),
}

/// Today, UTC, as the table keeps days.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Only short map updates happen under this lock; a poisoned one is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, key: Key, usage: &Usage) {
        let day = today();
        let mut inner = self.lock();
        inner.since_start.entry(key.clone()).or_default().add(usage);
        inner.pending.entry((key, day)).or_default().add(usage);
    }

    /// What this node counted since it started, per tenant and user.
    pub fn since_start(&self) -> Vec<(Key, Usage)> {
        self.lock().since_start.iter().map(|(k, u)| (k.clone(), *u)).collect()
    }

    /// `tenant`'s input and output tokens today, across the nodes.
    pub fn tokens_today(&self, tenant: &str) -> u64 {
        let day = today();
        let inner = self.lock();
        let stored = if inner.today.0 == day { inner.today.1.get(tenant).copied().unwrap_or(0) } else { 0 };
        let local = inner
            .pending
            .iter()
            .chain(inner.writing.iter())
            .filter(|((key, d), _)| *key.0 == *tenant && *d == day)
            .map(|(_, u)| u.tokens())
            .sum::<u64>();
        stored + local
    }

    /// What this node counted for `tenant` and has not written yet, per user and day.
    pub fn unwritten(&self, tenant: &str) -> Vec<(Option<Arc<str>>, String, Usage)> {
        let inner = self.lock();
        inner
            .pending
            .iter()
            .chain(inner.writing.iter())
            .filter(|((key, _), _)| *key.0 == *tenant)
            .map(|((key, day), u)| (key.1.clone(), day.clone(), *u))
            .collect()
    }

    /// Writes what was counted since the last write, then (with `read_back`: a tenant's daily
    /// tokens are limited) reads back today's sums. A write that fails keeps its figures for the
    /// next one.
    pub async fn write(&self, index: &SessionIndex, read_back: bool) -> Result<(), StoreError> {
        let taken = {
            let mut inner = self.lock();
            let taken = std::mem::take(&mut inner.pending);
            inner.writing = taken.clone();
            taken
        };
        let rows: Vec<store::UsageRow> =
            taken.iter().map(|((key, day), u)| usage::row(u, &key.0, key.1.as_deref().unwrap_or(""), day)).collect();
        if let Err(e) = index.add_usage(&rows).await {
            // None went in (one transaction): keep them all for the next write.
            let mut inner = self.lock();
            for (k, u) in std::mem::take(&mut inner.writing) {
                inner.pending.entry(k).or_default().add(&u);
            }
            return Err(e);
        }
        if !read_back {
            self.lock().writing.clear();
            return Ok(());
        }
        let day = today();
        let read = index.usage(None, &day).await;
        let mut inner = self.lock();
        inner.writing.clear();
        match read {
            Ok(rows) => {
                let mut tokens: HashMap<Arc<str>, u64> = HashMap::new();
                for row in &rows {
                    *tokens.entry(Arc::from(row.tenant.as_str())).or_default() += usage::from_row(row).tokens();
                }
                inner.today = (day, tokens);
                Ok(())
            }
            Err(e) => {
                // What was just written is in the database, not in `today`: count it there.
                if inner.today.0 == day {
                    for ((key, _), u) in taken.iter().filter(|((_, d), _)| *d == day) {
                        *inner.today.1.entry(key.0.clone()).or_default() += u.tokens();
                    }
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(tenant: &str, user: Option<&str>) -> Key {
        (Arc::from(tenant), user.map(Arc::from))
    }

    fn tokens(n: u64) -> Usage {
        Usage { model_calls: 1, input_tokens: n, output_tokens: 1, ..Default::default() }
    }

    #[tokio::test]
    async fn two_nodes_on_one_database_see_each_others_tokens_after_a_write() {
        let index = SessionIndex::open_in_memory().await.unwrap();
        let (a, b) = (Ledger::default(), Ledger::default());
        a.add(key("acme", Some("ann")), &tokens(9));
        b.add(key("acme", None), &tokens(19));
        b.add(key("other", None), &tokens(99));
        assert_eq!((a.tokens_today("acme"), b.tokens_today("acme")), (10, 20), "each its own before writing");
        a.write(&index, true).await.unwrap();
        b.write(&index, true).await.unwrap();
        assert_eq!(b.tokens_today("acme"), 30, "b read what a wrote");
        a.write(&index, true).await.unwrap();
        assert_eq!(a.tokens_today("acme"), 30);
        assert!(a.unwritten("acme").is_empty());
        assert_eq!(a.since_start().len(), 1, "since start: this node's own");
        let rows = index.usage(Some("acme"), &today()).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.model_calls).sum::<i64>(), 2);
    }
}
