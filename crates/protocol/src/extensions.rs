//! Event payloads Skipper emits that the upstream schema does not define. Clients tolerate
//! unknown event types; each one here is documented in `spec/events.md`.

use serde::{Deserialize, Serialize};

/// `session.autopilot_stopped`: an autopilot run ended (always ephemeral). Python's
/// `send_and_wait` completes on it in autopilot mode, so it precedes `session.idle`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutopilotStoppedData {
    /// `task_complete`, `max_continues`, `error`, `aborted` or `rejected`.
    pub reason: String,
    /// The `messageId` of the user message whose run stopped.
    #[serde(rename = "requestId")]
    pub request_id: String,
}
