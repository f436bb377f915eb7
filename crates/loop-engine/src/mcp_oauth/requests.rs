//! The MCP OAuth token requests a session holds while they wait for a client. Apart from the
//! logic in `mod.rs` so that the session's handle can own them without depending on it.

use std::collections::HashMap;
use std::sync::Mutex;

use mcp_client::AuthReply;
use tokio::sync::oneshot;

/// Token requests waiting for a client's answer, by request id.
#[derive(Default)]
pub(crate) struct OAuthRequests {
    pending: Mutex<HashMap<String, oneshot::Sender<AuthReply>>>,
}

impl OAuthRequests {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<AuthReply>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}
