//! JSON-RPC 2.0 envelope. Ids are echoed verbatim (integers from Node, UUID strings from Python).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const AUTHENTICATION_REQUIRED: i64 = -32001;
pub const AUTHENTICATION_FAILED: i64 = -32002;
pub const REQUEST_CANCELLED: i64 = -32800;

/// A request id: number or string, kept as raw JSON so it round-trips exactly.
pub type Id = Value;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("Unhandled method {method}"))
    }
    pub fn invalid_params(method: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(INVALID_PARAMS, format!("Request {method} failed with message: {detail}"))
    }
    /// The real CLI's shape for handler failures: `Request <m> failed with message: <detail>`.
    pub fn handler_failed(method: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(INTERNAL_ERROR, format!("Request {method} failed with message: {detail}"))
    }
}

/// Any incoming message, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request { id: Id, method: String, params: Value },
    Notification { method: String, params: Value },
    Response { id: Id, result: Result<Value, RpcError> },
}

/// Classifies a parsed JSON body. `Err` carries the error to answer (with the id if known).
#[allow(clippy::result_large_err)] // built once per bad frame; boxing buys nothing
pub fn classify(v: Value) -> Result<Incoming, (Option<Id>, RpcError)> {
    let Value::Object(mut obj) = v else {
        return Err((
            None,
            RpcError::new(INVALID_REQUEST, "Invalid request: expected a JSON object (batches are not supported)"),
        ));
    };
    let id = obj.remove("id");
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return Err((id, RpcError::new(INVALID_REQUEST, "Invalid request: method must be a string")));
        };
        let params = match obj.remove("params") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(p @ Value::Object(_)) | Some(p @ Value::Array(_)) => p,
            Some(_) => {
                return Err((id, RpcError::new(INVALID_REQUEST, "Invalid request: params must be an object or array")))
            }
        };
        return Ok(match id {
            Some(Value::Null) | None => Incoming::Notification { method, params },
            Some(id) => Incoming::Request { id, method, params },
        });
    }
    let Some(id) = id else {
        return Err((None, RpcError::new(INVALID_REQUEST, "Invalid request: no method and no id")));
    };
    if let Some(err) = obj.remove("error") {
        let err =
            serde_json::from_value(err).unwrap_or_else(|_| RpcError::new(INTERNAL_ERROR, "malformed error object"));
        return Ok(Incoming::Response { id, result: Err(err) });
    }
    let result = obj.remove("result").unwrap_or(Value::Null);
    Ok(Incoming::Response { id, result: Ok(result) })
}

pub fn response(id: &Id, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error_response(id: Option<&Id>, err: &RpcError) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": err})
}

pub fn notification(method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn request(id: i64, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_request_notification_response() {
        assert!(matches!(classify(json!({"jsonrpc":"2.0","id":1,"method":"ping"})), Ok(Incoming::Request { .. })));
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","method":"x","params":{}})),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(classify(json!({"jsonrpc":"2.0","id":"a","result":null})), Ok(Incoming::Response { .. })));
        assert!(classify(json!([1, 2])).is_err());
        assert!(classify(json!({"id":1,"method":5})).is_err());
    }

    #[test]
    fn missing_params_become_empty_object() {
        let Ok(Incoming::Request { params, .. }) = classify(json!({"id":1,"method":"ping"})) else {
            panic!("expected request")
        };
        assert_eq!(params, json!({}));
    }
}
