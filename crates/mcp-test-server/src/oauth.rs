//! `--oauth-token T`: `/mcp` behind OAuth bearer tokens, as an OAuth-protected resource answers.
//!
//! Without an accepted token (`T`, `T-refresh`, `T-upscope`) a request gets a 401 whose
//! `WWW-Authenticate` names the protected-resource metadata (served at
//! `/.well-known/oauth-protected-resource`), scope `mcp.read`, error `invalid_token`. A
//! `tools/call` of `echo` with text `needs-refresh` is refused (401 `invalid_token`) unless it
//! carries `T-refresh`; with text `needs-upscope` (403 `insufficient_scope`, scope `mcp.write`)
//! unless it carries `T-upscope`. `GET /__requests` lists every `/mcp` request's
//! `Authorization` header (`null` when absent), for tests to check what was sent.

use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Requests larger than this are not MCP messages this server expects.
const MAX_BODY: usize = 1 << 20;

#[derive(Clone)]
struct Guard {
    token: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

pub fn protect(router: Router, token: String) -> Router {
    let guard = Guard { token, seen: Arc::default() };
    let extra =
        Router::new().route(METADATA_PATH, get(metadata)).route("/__requests", get(requests)).with_state(guard.clone());
    router.layer(axum::middleware::from_fn_with_state(guard, check)).merge(extra)
}

fn origin(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    format!("http://{host}")
}

async fn metadata(headers: HeaderMap) -> Json<Value> {
    let base = origin(&headers);
    Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["mcp.read"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn requests(State(guard): State<Guard>) -> Json<Value> {
    let seen = guard.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Json(Value::Array(seen))
}

fn challenge(status: StatusCode, value: String) -> Response {
    (status, [(header::WWW_AUTHENTICATE, value)], Json(json!({"error": "unauthorized"}))).into_response()
}

async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/mcp") {
        return next.run(request).await;
    }
    let base = origin(request.headers());
    let auth = request.headers().get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).map(str::to_string);
    guard.seen.lock().unwrap_or_else(|e| e.into_inner()).push(json!({"authorization": auth}));
    let token = auth.as_deref().and_then(|a| a.strip_prefix("Bearer ")).unwrap_or_default();
    let refresh = format!("{}-refresh", guard.token);
    let upscope = format!("{}-upscope", guard.token);
    if ![guard.token.as_str(), refresh.as_str(), upscope.as_str()].contains(&token) {
        return challenge(
            StatusCode::UNAUTHORIZED,
            format!(r#"Bearer resource_metadata="{base}{METADATA_PATH}", scope="mcp.read", error="invalid_token""#),
        );
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let echo_text = (message["method"] == "tools/call" && message["params"]["name"] == "echo")
        .then(|| message["params"]["arguments"]["text"].as_str())
        .flatten();
    match echo_text {
        Some("needs-refresh") if token != refresh => {
            return challenge(StatusCode::UNAUTHORIZED, r#"Bearer error="invalid_token""#.to_string());
        }
        Some("needs-upscope") if token != upscope => {
            return challenge(
                StatusCode::FORBIDDEN,
                format!(
                    r#"Bearer resource_metadata="{base}{METADATA_PATH}", scope="mcp.write", error="insufficient_scope""#
                ),
            );
        }
        _ => {}
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
