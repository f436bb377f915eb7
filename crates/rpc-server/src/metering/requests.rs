//! A tenant's model requests per minute, across nodes (`[[tenants]] model_requests_per_minute`).
//! The database counts them; a node takes a few at a time and hands them out itself, so that a
//! model call does not wait on the database each time. What a node took and did not use by the
//! end of the minute is lost to the others: at most one block per node per minute.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many requests a node takes at once: a thirty-second of the limit, 1 to 100.
pub fn block(max: u64) -> u64 {
    (max / 32).clamp(1, 100)
}

/// Requests this node took and has not handed out, per tenant, for one minute each.
#[derive(Default)]
pub struct Held {
    by_tenant: Mutex<HashMap<Arc<str>, (String, u64)>>,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, (String, u64)>> {
        // Only counters change under this lock; a poisoned one is still consistent.
        self.by_tenant.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands out one of `tenant`'s requests of `minute`, if this node holds one.
    pub fn take(&self, tenant: &str, minute: &str) -> bool {
        match self.lock().get_mut(tenant) {
            Some((held_minute, left)) if held_minute == minute && *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }

    /// Keeps `n` more of `tenant`'s requests of `minute` (those of an earlier minute are gone).
    pub fn keep(&self, tenant: &str, minute: &str, n: u64) {
        let mut held = self.lock();
        let entry = held.entry(Arc::from(tenant)).or_insert_with(|| (minute.to_string(), 0));
        if entry.0 != minute {
            *entry = (minute.to_string(), 0);
        }
        entry.1 += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_requests_are_handed_out_within_their_minute_only() {
        let held = Held::default();
        assert!(!held.take("a", "10:00"), "none held");
        held.keep("a", "10:00", 2);
        assert!(held.take("a", "10:00") && held.take("a", "10:00"));
        assert!(!held.take("a", "10:00"), "two were held");
        held.keep("a", "10:00", 1);
        assert!(!held.take("a", "10:01"), "not in the next minute");
        held.keep("a", "10:01", 1);
        assert!(held.take("a", "10:01") && !held.take("a", "10:00"), "the earlier minute's are gone");
        assert!(!held.take("b", "10:01"), "per tenant");
        assert_eq!((block(1), block(120), block(1_000_000)), (1, 3, 100));
    }
}
