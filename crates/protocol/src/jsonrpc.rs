//! The JSON-RPC 2.0 envelope: decoding one incoming body without copying its params, and
//! encoding outgoing messages straight into frames.
//!
//! A request's `params` stay a borrowed [`RawValue`] until the method table parses them into
//! the method's own type, so a large body is decoded once. Ids are echoed verbatim (integers
//! from Node, UUID strings from Python), as their raw JSON text.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::frame::encode_parts;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const AUTHENTICATION_REQUIRED: i64 = -32001;
pub const AUTHENTICATION_FAILED: i64 = -32002;
/// Too many requests are already queued on this connection; the client may retry later.
pub const SERVER_OVERLOADED: i64 = -32005;
/// A tenant reached a limit of the team server's configuration (`data.limit` names it); the
/// request changed nothing, and may succeed once the tenant holds less.
pub const LIMIT_REACHED: i64 = -32012;
pub const REQUEST_CANCELLED: i64 = -32800;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
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
    pub fn overloaded(detail: impl std::fmt::Display) -> Self {
        Self::new(SERVER_OVERLOADED, format!("Server overloaded: {detail}; retry later"))
    }
}

/// A request id as its raw JSON text (a string or a number), echoed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id(Box<str>);

impl Id {
    /// Accepts the raw text of a JSON string or number; anything else is not an id.
    fn from_raw(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        let ok = text.starts_with('"') || text.starts_with('-') || text.starts_with(|c: char| c.is_ascii_digit());
        ok.then(|| Self(text.into()))
    }

    pub fn number(n: i64) -> Self {
        Self(n.to_string().into())
    }

    /// The raw JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The id as an integer, when it is one (ids of our own requests are).
    pub fn as_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }
}

/// One incoming message, borrowing from the body it was decoded from.
#[derive(Debug)]
pub enum Incoming<'a> {
    Request { id: Id, method: Cow<'a, str>, params: Params<'a> },
    Notification { method: Cow<'a, str> },
    Response { id: Id, result: Result<&'a RawValue, RpcError> },
}

/// A request's params, not yet parsed into the method's type.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a>(Option<&'a RawValue>);

impl<'a> Params<'a> {
    /// The JSON text of the params object. Absent and `null` params are the empty object (every
    /// method whose params are all optional accepts them), and so are `[]` and `[null]`: what
    /// vscode-jsonrpc sends for a call without arguments. Other arrays and scalars are refused,
    /// since every method takes named params.
    pub fn object_text(&self) -> Result<&'a str, &'static str> {
        let Some(raw) = self.0 else { return Ok("{}") };
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'{') => Ok(text),
            Some(b'n') => Ok("{}"),
            Some(b'[') if no_arguments(text) => Ok("{}"),
            Some(b'[') => Err("params must be an object, not an array"),
            _ => Err("params must be an object"),
        }
    }
}

/// `[]` or `[null]`, whitespace aside.
fn no_arguments(text: &str) -> bool {
    if text.len() > 32 {
        return false;
    }
    let inner: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    inner == "[]" || inner == "[null]"
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// What to answer when a body is not a usable message: the error, and the id if one was read.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    pub id: Option<Id>,
    pub error: RpcError,
}

fn invalid(id: Option<Id>, message: &str) -> DecodeError {
    DecodeError { id, error: RpcError::new(INVALID_REQUEST, format!("Invalid request: {message}")) }
}

/// Decodes one frame body. Only the envelope is parsed; params and results stay raw.
pub fn decode(body: &[u8]) -> Result<Incoming<'_>, DecodeError> {
    let parse_error =
        |e: serde_json::Error| DecodeError { id: None, error: RpcError::new(PARSE_ERROR, format!("Parse error: {e}")) };
    // JSON is UTF-8. Checked for the whole body up front: serde_json only validates the
    // strings it decodes, so invalid bytes inside an ignored field would otherwise pass.
    let body = std::str::from_utf8(body).map_err(|e| DecodeError {
        id: None,
        error: RpcError::new(PARSE_ERROR, format!("Parse error: invalid UTF-8 ({e})")),
    })?;
    // Serde would also read a struct from an array; JSON-RPC messages are objects only.
    match body.bytes().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') => {
            serde_json::from_str::<serde::de::IgnoredAny>(body).map_err(parse_error)?;
            return Err(invalid(None, "batches are not supported"));
        }
        _ => {
            serde_json::from_str::<serde::de::IgnoredAny>(body).map_err(parse_error)?;
            return Err(invalid(None, "expected a JSON object"));
        }
    }
    let env: Envelope<'_> = serde_json::from_str(body).map_err(parse_error)?;
    let id = match env.id {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => match Id::from_raw(raw) {
            Some(id) => Some(id),
            None => return Err(invalid(None, "id must be a string or a number")),
        },
    };
    if let Some(method) = env.method {
        let method: Cow<'_, str> = match serde_json::from_str(method.get()) {
            Ok(m) => m,
            Err(_) => return Err(invalid(id, "method must be a string")),
        };
        return Ok(match id {
            None => Incoming::Notification { method },
            Some(id) => Incoming::Request { id, method, params: Params(env.params) },
        });
    }
    let Some(id) = id else { return Err(invalid(None, "no method and no id")) };
    if let Some(err) = env.error {
        let err =
            serde_json::from_str(err.get()).unwrap_or_else(|_| RpcError::new(INTERNAL_ERROR, "malformed error object"));
        return Ok(Incoming::Response { id, result: Err(err) });
    }
    let null: &'static RawValue = serde_json::from_str("null").unwrap_or_else(|_| unreachable!());
    Ok(Incoming::Response { id, result: Ok(env.result.unwrap_or(null)) })
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` as one frame; `result` is JSON text.
pub fn response_frame(id: &Id, result: &[u8]) -> Vec<u8> {
    encode_parts(&[b"{\"jsonrpc\":\"2.0\",\"id\":", id.as_json().as_bytes(), b",\"result\":", result, b"}"])
}

/// An error response frame; `id` is `null` when the request's id could not be read.
pub fn error_frame(id: Option<&Id>, err: &RpcError) -> Vec<u8> {
    let error = serde_json::to_vec(err).unwrap_or_else(|_| b"{\"code\":-32603,\"message\":\"error\"}".to_vec());
    let id = id.map_or("null", Id::as_json);
    encode_parts(&[b"{\"jsonrpc\":\"2.0\",\"id\":", id.as_bytes(), b",\"error\":", &error, b"}"])
}

/// A notification frame; `params` is JSON text.
pub fn notification_frame(method: &str, params: &[u8]) -> Vec<u8> {
    let method = json_string(method);
    encode_parts(&[b"{\"jsonrpc\":\"2.0\",\"method\":", method.as_bytes(), b",\"params\":", params, b"}"])
}

/// A server→client request frame; `params` is JSON text.
pub fn request_frame(id: i64, method: &str, params: &[u8]) -> Vec<u8> {
    let (id, method) = (id.to_string(), json_string(method));
    encode_parts(&[
        b"{\"jsonrpc\":\"2.0\",\"id\":",
        id.as_bytes(),
        b",\"method\":",
        method.as_bytes(),
        b",\"params\":",
        params,
        b"}",
    ])
}

/// A string as a JSON string literal.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(frame: &[u8]) -> serde_json::Value {
        let start = frame.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        serde_json::from_slice(&frame[start..]).unwrap()
    }

    #[test]
    fn classifies_request_notification_response() {
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Ok(Incoming::Request { .. })));
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","method":"x","params":{}}"#), Ok(Incoming::Notification { .. })));
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","id":"a","result":null}"#), Ok(Incoming::Response { .. })));
        assert!(matches!(
            decode(br#"{"id":7,"error":{"code":1,"message":"m"}}"#),
            Ok(Incoming::Response { result: Err(_), .. })
        ));
    }

    #[test]
    fn bad_envelopes_get_the_right_errors() {
        let e = decode(b"[1,2]").unwrap_err();
        assert_eq!(e.error.code, INVALID_REQUEST);
        assert!(e.error.message.contains("batch"), "{}", e.error.message);
        assert_eq!(decode(b"{not json").unwrap_err().error.code, PARSE_ERROR);
        assert_eq!(decode(b"\"str\"").unwrap_err().error.code, INVALID_REQUEST);
        let e = decode(br#"{"id":1,"method":5}"#).unwrap_err();
        assert_eq!((e.error.code, e.id.map(|i| i.as_json().to_string())), (INVALID_REQUEST, Some("1".into())));
        for id in ["{}", "[1]", "true"] {
            let body = format!(r#"{{"id":{id},"method":"ping"}}"#);
            let e = decode(body.as_bytes()).unwrap_err();
            assert_eq!((e.error.code, e.id), (INVALID_REQUEST, None), "id {id}");
        }
        assert_eq!(decode(b"{}").unwrap_err().error.code, INVALID_REQUEST);
    }

    #[test]
    fn invalid_utf8_anywhere_is_a_parse_error() {
        for body in [
            &b"{\"id\":1,\"method\":\"ping\",\"extra\":\"\xed\xa0\x80\"}"[..],
            b"{\"id\":1,\"method\":\"ping\",\"params\":{\"message\":\"\xff\"}}",
            b"\xff",
        ] {
            let e = decode(body).unwrap_err();
            assert_eq!((e.id, e.error.code), (None, PARSE_ERROR), "{:?}", e.error);
        }
    }

    #[test]
    fn deep_nesting_is_refused_where_it_is_parsed_not_a_crash() {
        let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        // The envelope keeps params raw, so only the method's own parse meets the nesting,
        // and serde_json's recursion limit turns it into an error.
        let body = format!(r#"{{"id":1,"method":"ping","params":{{"x":{nested}}}}}"#);
        let Ok(Incoming::Request { params, .. }) = decode(body.as_bytes()) else { panic!("envelope") };
        let text = params.object_text().unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(text).is_err());
        let body = format!(r#"{{"id":1,"method":"ping","params":{{}}, "extra":{nested}}}"#);
        assert!(decode(body.as_bytes()).is_ok());
        assert_eq!(decode(nested.as_bytes()).unwrap_err().error.code, INVALID_REQUEST);
    }

    #[test]
    fn params_must_be_an_object() {
        let Ok(Incoming::Request { params, .. }) = decode(br#"{"id":1,"method":"ping"}"#) else { panic!() };
        assert_eq!(params.object_text(), Ok("{}"));
        let Ok(Incoming::Request { params, .. }) = decode(br#"{"id":1,"method":"ping","params":null}"#) else {
            panic!()
        };
        assert_eq!(params.object_text(), Ok("{}"));
        let Ok(Incoming::Request { params, .. }) = decode(br#"{"id":1,"method":"ping","params":["x"]}"#) else {
            panic!()
        };
        assert!(params.object_text().is_err());
        for empty in ["[]", "[ null ]"] {
            let body = format!(r#"{{"id":1,"method":"ping","params":{empty}}}"#);
            let Ok(Incoming::Request { params, .. }) = decode(body.as_bytes()) else { panic!() };
            assert_eq!(params.object_text(), Ok("{}"), "{empty}: a call without arguments");
        }
        let Ok(Incoming::Request { params, .. }) = decode(br#"{"id":1,"method":"ping","params":"x"}"#) else {
            panic!()
        };
        assert!(params.object_text().is_err());
    }

    #[test]
    fn ids_round_trip_verbatim() {
        for id in [r#""abc-1""#, "7", "-3", "1.5e3"] {
            let body = format!(r#"{{"id":{id},"method":"ping"}}"#);
            let Ok(Incoming::Request { id: got, .. }) = decode(body.as_bytes()) else { panic!("{id}") };
            let frame = response_frame(&got, b"{}");
            let v = body_of(&frame);
            assert_eq!(v["id"], serde_json::from_str::<serde_json::Value>(id).unwrap());
        }
    }

    #[test]
    fn frames_are_valid_json_rpc() {
        let v = body_of(&error_frame(None, &RpcError::method_not_found("x")));
        assert_eq!(v["error"]["code"], METHOD_NOT_FOUND);
        assert!(v["id"].is_null());
        let v = body_of(&notification_frame("session.event", br#"{"a":1}"#));
        assert_eq!(v["method"], "session.event");
        let v = body_of(&request_frame(3, "hooks.invoke", b"{}"));
        assert_eq!((v["id"].as_i64(), v["method"].as_str()), (Some(3), Some("hooks.invoke")));
    }
}
