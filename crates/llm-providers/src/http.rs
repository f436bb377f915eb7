//! HTTP plumbing every provider shares: turning a non-2xx answer into `ProviderError::Http`
//! with the server's message and `retry-after`, headers. (Network errors get their causes in
//! [`crate::transport`], which makes them.)

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::StatusCode;
use serde_json::Value;

use crate::retry::{parse_retry_after, AttemptError};
use crate::transport::HttpResponse;
use crate::types::ProviderError;

/// Pass a 2xx response through; turn anything else into `ProviderError::Http` with the
/// server's own message and any `retry-after` hint.
pub(crate) async fn ensure_success(resp: HttpResponse, what: &str) -> Result<HttpResponse, AttemptError> {
    let status = resp.status;
    if status.is_success() {
        return Ok(resp);
    }
    let provider_call_id = resp.header("x-github-request-id");
    let retry_after = retry_after(&resp);
    // The body only adds detail; a failure reading it must not hide the status.
    let body = resp.bytes().await.unwrap_or_default();
    let detail = server_message(status, &body);
    let code = error_code(&body);
    // The detail is the server's text, which may echo a credential: callers log it once redacted.
    tracing::warn!(status = status.as_u16(), "{what} failed");
    Err(AttemptError {
        error: ProviderError::Http {
            status: status.as_u16(),
            message: format!("{what} failed with HTTP {}: {detail}", status.as_u16()),
            provider_call_id,
            code,
            retry_after,
        },
        retry_after,
        emitted_output: false,
    })
}

/// `{"message": …}` / `{"error": {"message": …}}` / a bare string, for error reporting.
pub(crate) fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| o.get("error").map(error_message))
            .unwrap_or_else(|| error.to_string()),
        other => other.to_string(),
    }
}

pub(crate) fn server_message(status: StatusCode, body: &[u8]) -> String {
    const MAX: usize = 1000;
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        if json.get("error").is_some() || json.get("message").is_some() {
            return error_message(&json);
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return status.canonical_reason().unwrap_or("no details").to_string();
    }
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The service's error code: `error.code` (OpenAI and the Copilot API), else `error.type`
/// (Anthropic), when the body is JSON.
fn error_code(body: &[u8]) -> Option<String> {
    let json = serde_json::from_slice::<Value>(body).ok()?;
    let error = json.get("error")?;
    ["code", "type"].iter().find_map(|k| error.get(*k).and_then(Value::as_str)).map(str::to_string)
}

pub(crate) fn retry_after(resp: &HttpResponse) -> Option<Duration> {
    // `retry-after-ms` (OpenAI-style) is more precise when present.
    if let Some(ms) = resp.header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_millis(ms as u64));
        }
    }
    resp.header("retry-after").and_then(|v| parse_retry_after(&v, SystemTime::now()))
}

pub(crate) fn insert(headers: &mut HeaderMap, name: &str, value: &str) {
    match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
        (Ok(name), Ok(value)) => {
            headers.insert(name, value);
        }
        _ => tracing::warn!(header = name, "skipping request header with an invalid name or value"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn error_codes_come_from_the_body() {
        let copilot = br#"{"error":{"message":"You've reached your weekly rate limit.","type":"x","code":"user_weekly_rate_limited"}}"#;
        assert_eq!(error_code(copilot).as_deref(), Some("user_weekly_rate_limited"));
        let anthropic = br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(error_code(anthropic).as_deref(), Some("rate_limit_error"));
        assert_eq!(error_code(br#"{"error":"plain"}"#), None);
        assert_eq!(error_code(b"Too Many Requests"), None);
    }

    #[test]
    fn server_messages() {
        assert_eq!(
            server_message(StatusCode::TOO_MANY_REQUESTS, br#"{"error":{"message":"rate limited"}}"#),
            "rate limited"
        );
        assert_eq!(server_message(StatusCode::UNAUTHORIZED, br#"{"message":"Bad credentials"}"#), "Bad credentials");
        assert_eq!(server_message(StatusCode::BAD_GATEWAY, b"  upstream down\n"), "upstream down");
        assert_eq!(server_message(StatusCode::BAD_GATEWAY, b""), "Bad Gateway");
        assert_eq!(server_message(StatusCode::BAD_REQUEST, br#"{"other":1}"#), r#"{"other":1}"#);
    }

    #[test]
    fn error_messages() {
        assert_eq!(error_message(&json!({"error": {"message": "rate limited", "type": "x"}})), "rate limited");
        assert_eq!(error_message(&json!({"message": "Bad credentials"})), "Bad credentials");
        assert_eq!(error_message(&json!({"error": "nope"})), "nope");
    }
}
