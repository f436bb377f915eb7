//! The MCP sampling requests a session holds: server requests waiting for a client, and
//! inferences running for clients. Apart from the logic in `mod.rs` so that the session's
//! handle can own them without depending on it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub(crate) type Answer = Result<Value, String>;

/// Server requests waiting for a client, and inferences running for clients, by request id.
#[derive(Default)]
pub(crate) struct SamplingRequests {
    /// By request id: the asking server's name, and where its answer goes.
    pub(super) waiting: Mutex<HashMap<String, (String, oneshot::Sender<Answer>)>>,
    pub(super) running: Mutex<HashMap<String, CancellationToken>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SamplingRequests {
    /// A turn was aborted: the servers waiting on a client get an error instead.
    pub(crate) fn abort_waiting(&self) {
        let waiting: Vec<_> = lock(&self.waiting).drain().collect();
        for (_, (_, tx)) in waiting {
            let _ = tx.send(Err("Sampling request was cancelled: the turn was aborted".into()));
        }
    }
}
