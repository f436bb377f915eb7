//! A tenant's messages running at once on this node (`[[tenants]] max_turns`): one more waits,
//! queued, until one ends. The limit is read each time, so a reload applies to the next wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

#[derive(Default)]
pub struct Turns {
    running: Mutex<HashMap<Arc<str>, u64>>,
    ended: Notify,
}

/// A place held; given back when dropped.
pub struct Place {
    turns: Arc<Turns>,
    tenant: Arc<str>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(n) = self.turns.lock().get_mut(&self.tenant) {
            *n = n.saturating_sub(1);
        }
        self.turns.ended.notify_waiters();
    }
}

impl Turns {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, u64>> {
        // Only counters change under this lock; a poisoned one is still consistent.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more of `tenant`'s messages, at most `max()` running at once; `waiting`
    /// is called once if it has to wait.
    pub async fn admit(
        self: &Arc<Self>,
        tenant: Arc<str>,
        max: impl Fn() -> Option<u64>,
        waiting: impl FnOnce(u64),
    ) -> Place {
        let mut waiting = Some(waiting);
        loop {
            // Made before looking, so that a place given back in between still wakes it.
            let ended = self.ended.notified();
            {
                let mut running = self.lock();
                let n = running.entry(tenant.clone()).or_default();
                match max() {
                    Some(max) if *n >= max => {
                        if let Some(tell) = waiting.take() {
                            tell(max);
                        }
                    }
                    _ => {
                        *n += 1;
                        return Place { turns: self.clone(), tenant };
                    }
                }
            }
            ended.await;
        }
    }

    /// `tenant`'s messages running now.
    pub fn running(&self, tenant: &str) -> u64 {
        self.lock().get(tenant).copied().unwrap_or(0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_third_waits_until_one_of_two_ends_and_other_tenants_do_not_wait() {
        let turns = Arc::new(Turns::default());
        let acme: Arc<str> = Arc::from("acme");
        let first = turns.admit(acme.clone(), || Some(2), |_| panic!("no wait")).await;
        let _second = turns.admit(acme.clone(), || Some(2), |_| panic!("no wait")).await;
        let _other = turns.admit(Arc::from("other"), || Some(2), |_| panic!("no wait")).await;
        let waited = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (t, w) = (turns.clone(), waited.clone());
        let third = tokio::spawn(async move {
            t.admit(Arc::from("acme"), || Some(2), move |max| w.store(max, std::sync::atomic::Ordering::SeqCst)).await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!third.is_finished(), "the third waits");
        assert_eq!(waited.load(std::sync::atomic::Ordering::SeqCst), 2, "and was told the limit");
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(5), third).await.unwrap().unwrap();
        assert_eq!(turns.running("acme"), 2);
        drop(third);
        assert_eq!(turns.running("acme"), 1);
    }
}
