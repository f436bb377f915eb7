//! Per-session request lanes of one connection: requests naming the same session run one after
//! another, in arrival order; different sessions run in parallel.
//!
//! Each lane is a bounded queue with its own task. A lane with nothing queued or running is
//! dropped (its task ends), so a connection keeps lanes only for sessions it is busy with, not
//! for every session id it ever named.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

/// One queued request: the future that answers it.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Lane {
    tx: mpsc::Sender<Job>,
    /// Jobs queued or running. Only the reader adds (before queueing); the lane's task
    /// subtracts after a job is done. Zero therefore means idle for as long as the reader
    /// does not queue again.
    busy: Arc<AtomicUsize>,
}

pub(crate) struct Lanes {
    lanes: HashMap<String, Lane>,
    capacity: usize,
    /// Idle lanes are swept when the map grows past this.
    sweep_at: usize,
}

/// The lane is full: the client has too many requests queued for one session.
pub(crate) struct LaneFull(pub Job);

const MIN_SWEEP: usize = 16;

impl Lanes {
    pub fn new(capacity: usize) -> Self {
        Self { lanes: HashMap::new(), capacity: capacity.max(1), sweep_at: MIN_SWEEP }
    }

    /// Queues `job` behind the earlier requests for `session_id`.
    pub fn submit(&mut self, session_id: &str, job: Job) -> Result<(), LaneFull> {
        if !self.lanes.contains_key(session_id) {
            if self.lanes.len() >= self.sweep_at {
                self.sweep();
            }
            self.lanes.insert(session_id.to_string(), self.spawn_lane());
        }
        let Some(lane) = self.lanes.get(session_id) else { return Err(LaneFull(job)) };
        lane.busy.fetch_add(1, Ordering::AcqRel);
        match lane.tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(job) | mpsc::error::TrySendError::Closed(job)) => {
                lane.busy.fetch_sub(1, Ordering::AcqRel);
                Err(LaneFull(job))
            }
        }
    }

    fn spawn_lane(&self) -> Lane {
        let (tx, mut rx) = mpsc::channel::<Job>(self.capacity);
        let busy = Arc::new(AtomicUsize::new(0));
        let counter = busy.clone();
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                job.await;
                counter.fetch_sub(1, Ordering::AcqRel);
            }
        });
        Lane { tx, busy }
    }

    /// Drops idle lanes (their tasks end when the sender goes).
    fn sweep(&mut self) {
        self.lanes.retain(|_, lane| lane.busy.load(Ordering::Acquire) > 0);
        self.sweep_at = (self.lanes.len() * 2).max(MIN_SWEEP);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lanes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    fn job(log: &Arc<Mutex<Vec<String>>>, name: &str, delay_ms: u64) -> Job {
        let (log, name) = (log.clone(), name.to_string());
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            log.lock().unwrap().push(name);
        })
    }

    #[tokio::test]
    async fn one_session_in_order_sessions_in_parallel() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut lanes = Lanes::new(8);
        assert!(lanes.submit("a", job(&log, "a1", 40)).is_ok());
        assert!(lanes.submit("a", job(&log, "a2", 0)).is_ok());
        assert!(lanes.submit("b", job(&log, "b1", 0)).is_ok());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(*log.lock().unwrap(), vec!["b1", "a1", "a2"]);
    }

    #[tokio::test]
    async fn a_full_lane_refuses_instead_of_growing() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut lanes = Lanes::new(2);
        let mut refused = 0;
        for i in 0..10 {
            if lanes.submit("a", job(&log, &format!("{i}"), 50)).is_err() {
                refused += 1;
            }
        }
        // One running (taken off the queue) plus two queued; the rest are refused.
        assert!((6..=8).contains(&refused), "refused {refused}");
    }

    #[tokio::test]
    async fn idle_lanes_are_dropped() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut lanes = Lanes::new(4);
        for i in 0..1000 {
            assert!(lanes.submit(&format!("s{i}"), job(&log, "x", 0)).is_ok());
            if i % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        lanes.sweep();
        assert_eq!(lanes.len(), 0, "every lane finished its work");
        assert_eq!(log.lock().unwrap().len(), 1000);
    }
}
