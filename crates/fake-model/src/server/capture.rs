//! Captured model requests and request/response exchanges.
//!
//! A request body is parsed once and shared (`Arc`) by the handler, the request log and the
//! exchange log; the JSON the control endpoints return is built only when asked for. Cloning
//! every body twice per request made the fake spend several milliseconds per call on a long
//! conversation (a 150 KB body is a few thousand small allocations), on the same cores as the
//! server it is measured against.

use std::sync::Arc;

use serde_json::{json, Value};

/// One model request as it arrived.
pub(crate) struct CapturedRequest {
    pub path: String,
    pub headers: Arc<Value>,
    pub body: Arc<Value>,
}

impl CapturedRequest {
    /// `{"path", "headers", "body"}`.
    pub fn to_json(&self) -> Value {
        json!({"path": self.path, "headers": *self.headers, "body": *self.body})
    }
}

/// A request and the assistant message answered to it, in the official harness' shape.
pub(crate) struct Exchange {
    pub request: Arc<Value>,
    pub response: Option<Value>,
    pub request_headers: Arc<Value>,
}

impl Exchange {
    /// `{"request", "response", "requestHeaders"}`.
    pub fn to_json(&self) -> Value {
        json!({"request": *self.request, "response": self.response, "requestHeaders": *self.request_headers})
    }
}
