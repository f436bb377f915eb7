//! Event payloads Skipper emits that the upstream schema does not define. Clients tolerate
//! unknown event types; each one here is documented in `spec/events.md`.

use serde::{Deserialize, Serialize};

/// `session.usage_record`: one model call's usage, written to the log only (never delivered,
/// left out of `session.getMessages`), as the original records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecordData {
    pub usage: UsageRecord,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Milliseconds.
    pub duration: u64,
    /// `user` for the first call of a message, `agent` for the calls that follow tools.
    pub initiator: String,
    /// Bytes of the request body.
    pub request_body_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Premium requests the call counts for (the model's multiplier; 0 through a session's own
    /// provider). Absent in logs written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}
