//! Server-level methods: handshake, status, auth, catalogues, shutdown.

use std::sync::Arc;

use protocol::jsonrpc::{self, RpcError};
use protocol::methods::{ConnectParams, PingParams};
use protocol::PROTOCOL_VERSION;
use serde_json::{json, Value};

use crate::connection::Conn;
use crate::router::{params, HandlerResult};

pub fn connect(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ConnectParams = params(method, &raw)?;
    if let Some(expected) = &conn.server.connection_token {
        if p.token.as_deref() != Some(expected.as_str()) {
            return Err(RpcError::new(jsonrpc::AUTHENTICATION_FAILED, "AUTHENTICATION_FAILED"));
        }
    }
    conn.set_authenticated();
    let kinds: Vec<String> = match p.supported_task_kinds {
        Some(kinds) => kinds.into_iter().filter(|k| ["agent", "shell", "client"].contains(&k.as_str())).collect(),
        None => vec!["agent".into(), "shell".into()],
    };
    Ok(json!({
        "ok": true,
        "protocolVersion": PROTOCOL_VERSION,
        "version": conn.server.engine.version(),
        "taskKinds": kinds,
    }))
}

pub fn ping(method: &str, raw: Value) -> HandlerResult {
    let p: PingParams = params(method, &raw)?;
    let message = match p.message {
        Some(m) => format!("pong: {m}"),
        None => "pong".to_string(),
    };
    Ok(json!({
        "message": message,
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
        "protocolVersion": PROTOCOL_VERSION,
    }))
}

pub fn status(conn: &Arc<Conn>) -> HandlerResult {
    Ok(json!({"version": conn.server.engine.version(), "protocolVersion": PROTOCOL_VERSION}))
}

pub fn auth_status(conn: &Arc<Conn>) -> HandlerResult {
    let auth = &conn.server.auth;
    if !auth.token_present {
        return Ok(json!({"isAuthenticated": false, "statusMessage": "Not authenticated"}));
    }
    Ok(json!({
        "isAuthenticated": true,
        "authType": auth.auth_type,
        "host": auth.host,
        "statusMessage": format!("{} (via {})", auth.host, auth.auth_type),
    }))
}

pub async fn models_list(conn: &Arc<Conn>, method: &str) -> HandlerResult {
    let models = conn.server.engine.list_models().await.map_err(|e| RpcError::handler_failed(method, e))?;
    Ok(json!({"models": models}))
}

pub fn tools_list(conn: &Arc<Conn>) -> HandlerResult {
    let tools: Vec<Value> = conn
        .server
        .engine
        .builtins()
        .tools()
        .iter()
        .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
        .collect();
    Ok(json!({"tools": tools}))
}

pub fn runtime_shutdown(conn: &Arc<Conn>) -> HandlerResult {
    conn.server.engine.shutdown_all();
    // Let the response reach the client before the transports stop.
    let shutdown = conn.server.shutdown.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        shutdown.cancel();
    });
    Ok(Value::Null)
}
