//! `POST /mcp` and `/mcp/readonly`: a stand-in for the Copilot API's GitHub MCP endpoint, as
//! the official harness answers it — the handshake, one read-only tool (`get_me`) and its
//! call — keeping every request (path, headers, body) for `GET /_fake/mcp_requests`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{headers_to_json, json_response, S};

/// What `get_me` answers.
const GET_ME_TEXT: &str = "You are octocat (fake GitHub MCP server).";

pub(crate) async fn post(State(s): S, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    s.lock().mcp_requests.push(json!({
        "method": "POST",
        "path": uri.path(),
        "headers": headers_to_json(&headers),
        "body": parsed.clone(),
    }));
    let Some(id) = parsed.get("id").cloned() else {
        // A notification or a response: accepted, nothing to say.
        return StatusCode::ACCEPTED.into_response();
    };
    let method = parsed.get("method").and_then(Value::as_str).unwrap_or_default();
    let result = match method {
        "initialize" => json!({
            "protocolVersion": parsed.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-03-26")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-github-mcp", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "get_me",
            "description": "Details of the signed-in GitHub user.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": true},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": GET_ME_TEXT}]}),
        _ => json!({}),
    };
    json_response(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// `GET` (the server-sent stream) and `DELETE` (session end): not offered.
pub(crate) async fn other() -> Response {
    StatusCode::METHOD_NOT_ALLOWED.into_response()
}

pub(crate) async fn requests(State(s): S) -> Response {
    json_response(StatusCode::OK, Value::Array(s.lock().mcp_requests.clone()))
}
