//! What a connection to a shared server's SDK port may do before it authenticates: little. A
//! small budget of such connections apart from the connection limit's (so that strangers
//! cannot hold every slot), a deadline for its `connect`, and a small frame limit until then.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The server's pre-authentication limits.
#[derive(Clone)]
pub struct PreauthLimits {
    budget: Arc<Semaphore>,
    deadline: Duration,
    max_frame_bytes: usize,
}

impl PreauthLimits {
    /// At most `max_connections` unauthenticated at once, each given `deadline` to `connect`,
    /// with frames of at most `max_frame_bytes` until then.
    pub fn new(max_connections: usize, deadline: Duration, max_frame_bytes: usize) -> Self {
        Self { budget: Arc::new(Semaphore::new(max_connections)), deadline, max_frame_bytes }
    }

    /// A new connection's allowance; `None` when the budget is spent (the connection is
    /// refused).
    pub fn admit(&self) -> Option<Preauth> {
        let permit = self.budget.clone().try_acquire_owned().ok()?;
        Some(Preauth {
            deadline: Instant::now() + self.deadline,
            after: self.deadline,
            max_frame_bytes: self.max_frame_bytes,
            permit: Some(permit),
        })
    }
}

/// One connection's pre-authentication allowance, held until it authenticates (or closes).
pub struct Preauth {
    pub(crate) deadline: Instant,
    /// The deadline as configured (for the message that closes a late connection).
    pub(crate) after: Duration,
    pub(crate) max_frame_bytes: usize,
    /// Its place in the budget; the connection's caller gives it back as it authenticates.
    pub(crate) permit: Option<OwnedSemaphorePermit>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_comes_back() {
        let limits = PreauthLimits::new(2, Duration::from_secs(1), 1024);
        let (a, b) = (limits.admit(), limits.admit());
        assert!(a.is_some() && b.is_some());
        assert!(limits.admit().is_none(), "a third waits for one of the two");
        drop(a);
        assert!(limits.admit().is_some());
    }
}
