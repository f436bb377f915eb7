//! Captured model requests and request/response exchanges.
//!
//! A request body is kept as the bytes that arrived and parsed at most once, when something
//! needs it: a snapshot match, a `/responses` or Anthropic handler, or a test reading the
//! captured requests. A chat-completions call answered by a scripted reply reads only
//! `stream` and `model` ([`Head`]). Building and cloning the whole body per call made the fake
//! spend several milliseconds on each request of a long conversation (a 150 KB body is a few
//! thousand small allocations), on the same cores as the server it is measured against.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{json, Value};

/// A request body as it arrived, parsed on first use.
pub(crate) struct RequestBody {
    raw: Bytes,
    parsed: OnceLock<Result<Value, String>>,
}

impl RequestBody {
    pub fn new(raw: Bytes) -> Arc<Self> {
        Arc::new(Self { raw, parsed: OnceLock::new() })
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The body as JSON, or why it is not JSON.
    pub fn parse(&self) -> Result<&Value, &str> {
        self.parsed
            .get_or_init(|| serde_json::from_slice(&self.raw).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// What the control endpoints show: the JSON body, or a body that is not JSON as text.
    pub fn to_json(&self) -> Value {
        match self.parse() {
            Ok(v) => v.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(&self.raw).into_owned()),
        }
    }
}

/// The fields of a chat-completions request the fake reads when a scripted reply answers it.
#[derive(serde::Deserialize)]
pub(crate) struct Head {
    #[serde(default)]
    pub stream: Option<Value>,
    #[serde(default)]
    pub model: Option<Value>,
}

impl Head {
    /// Reads `stream` and `model`; the rest of the body is checked but not built. The error
    /// says whether the body is not JSON or not a JSON object.
    pub fn read(body: &[u8]) -> Result<Self, String> {
        let not_json = |e: serde_json::Error| format!("fake-model: request body is not JSON: {e}");
        // A derived struct also accepts a JSON array (its fields in order): look first.
        if body.trim_ascii_start().first() != Some(&b'{') {
            serde_json::from_slice::<serde::de::IgnoredAny>(body).map_err(not_json)?;
            return Err("fake-model: request body is not a JSON object".to_string());
        }
        serde_json::from_slice::<Self>(body).map_err(not_json)
    }
}

/// One model request as it arrived.
pub(crate) struct CapturedRequest {
    pub path: String,
    pub headers: Arc<Value>,
    pub body: Arc<RequestBody>,
}

impl CapturedRequest {
    /// `{"path", "headers", "body"}`.
    pub fn to_json(&self) -> Value {
        json!({"path": self.path, "headers": *self.headers, "body": self.body.to_json()})
    }
}

/// A request and the assistant message answered to it, in the official harness' shape.
pub(crate) struct Exchange {
    pub request: Arc<RequestBody>,
    pub response: Option<Value>,
    pub request_headers: Arc<Value>,
}

impl Exchange {
    /// `{"request", "response", "requestHeaders"}`.
    pub fn to_json(&self) -> Value {
        json!({"request": self.request.to_json(), "response": self.response, "requestHeaders": *self.request_headers})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_reads_stream_and_model_and_tells_not_json_from_not_an_object() {
        let head = Head::read(br#"{"messages":[{"role":"user","content":"hi \"x\""}],"stream":true,"model":"m"}"#)
            .expect("an object");
        assert_eq!(head.stream, Some(Value::Bool(true)));
        assert_eq!(head.model, Some(json!("m")));
        let bare = Head::read(b"{}").expect("an empty object");
        assert!(bare.stream.is_none() && bare.model.is_none());

        let not_object = Head::read(b"[1, 2]").err().unwrap_or_default();
        assert_eq!(not_object, "fake-model: request body is not a JSON object");
        let not_object = Head::read(b" \"text\"").err().unwrap_or_default();
        assert_eq!(not_object, "fake-model: request body is not a JSON object");
        for bad in [&br#"{"stream": tru"#[..], b"[1, ", b"", b"{} x"] {
            let not_json = Head::read(bad).err().unwrap_or_default();
            assert!(not_json.starts_with("fake-model: request body is not JSON: "), "{not_json}");
        }
    }

    #[test]
    fn a_body_is_parsed_once_and_shown_as_text_when_it_is_not_json() {
        let body = RequestBody::new(Bytes::from_static(br#"{"a":[1,2]}"#));
        let first: *const Value = body.parse().expect("JSON");
        let second: *const Value = body.parse().expect("JSON");
        assert_eq!(first, second, "the parsed value is kept");
        assert_eq!(body.to_json(), json!({"a": [1, 2]}));
        assert_eq!(body.len(), 11);

        let text = RequestBody::new(Bytes::from_static(b"not json"));
        assert!(text.parse().is_err());
        assert_eq!(text.to_json(), json!("not json"));
    }
}
