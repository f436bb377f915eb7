//! Session lifecycle and conversation methods.

use std::sync::Arc;

use loop_engine::{LogLevel, PendingAnswer, QueuedMessage};
use protocol::methods::{
    AbortParams, ApproveAllParams, ListParams, LogParams, PermissionResponseParams, SendParams, SessionConfigParams,
    SessionIdParams, ToolCallResponseParams, ToolsSetParams,
};
use serde_json::{json, Value};

use crate::connection::Conn;
use crate::errors::engine_error;
use crate::handlers::loaded_session;
use crate::router::{params, HandlerResult};

fn session_result(session: &loop_engine::SessionHandle) -> Value {
    let view = session.view();
    let s = &view.settings;
    json!({
        "sessionId": session.id(),
        "nativeSessionId": session.id(),
        "startTime": session.start_time(),
        "isRemote": false,
        "mode": s.mode,
        "workspacePath": session.workspace_path().to_string_lossy(),
        "capabilities": {"ui": {"elicitation": false, "mcpApps": false, "canvases": false}, "extensions": false},
        "modelState": {"modelId": s.model},
    })
}

pub async fn create(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionConfigParams = params(method, &raw)?;
    let shared = conn.server.engine.create(&p, Some(conn.subscriber())).await.map_err(|e| engine_error(method, &e))?;
    Ok(session_result(&shared))
}

pub async fn resume(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionConfigParams = params(method, &raw)?;
    if p.session_id.is_none() {
        return Err(protocol::jsonrpc::RpcError::invalid_params(method, "sessionId: missing field `sessionId`"));
    }
    let shared = conn.server.engine.resume(&p, Some(conn.subscriber())).await.map_err(|e| engine_error(method, &e))?;
    Ok(session_result(&shared))
}

pub async fn send(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SendParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let message_id = uuid::Uuid::new_v4().to_string();
    let request_headers = p
        .request_headers
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
        .collect();
    let immediate = p.mode.as_deref() == Some("immediate");
    let msg = QueuedMessage {
        message_id: message_id.clone(),
        prompt: p.prompt,
        attachments: p.attachments.unwrap_or_default(),
        agent_mode: p.agent_mode,
        request_headers,
        delivery: "idle",
    };
    shared.send(msg, immediate).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"messageId": message_id}))
}

pub async fn abort(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: AbortParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.abort(p.reason.as_deref().unwrap_or("user_initiated")).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"success": true}))
}

pub async fn get_messages(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let events = conn.server.engine.messages(&p.session_id).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"events": events}))
}

pub async fn detach(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let ok = conn.server.engine.detach(&p.session_id, conn.id).await;
    Ok(json!({"success": ok}))
}

pub async fn delete(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    match conn.server.engine.delete(&p.session_id).await {
        Ok(()) => Ok(json!({"success": true})),
        Err(e) => Ok(json!({"success": false, "error": e.to_string()})),
    }
}

pub async fn list(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ListParams = params(method, &raw)?;
    let f = p.filter.unwrap_or_default();
    let filter = store::ListFilter { cwd: f.cwd, git_root: f.git_root, repository: f.repository, branch: f.branch };
    let sessions = conn.server.engine.list(&filter).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"sessions": sessions}))
}

pub async fn last_id(conn: &Arc<Conn>, method: &str) -> HandlerResult {
    match conn.server.engine.last_id().await.map_err(|e| engine_error(method, &e))? {
        Some(id) => Ok(json!({"sessionId": id})),
        None => Ok(json!({})),
    }
}

pub async fn metadata(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    match conn.server.engine.metadata(&p.session_id).await.map_err(|e| engine_error(method, &e))? {
        Some(entry) => Ok(json!({"session": entry})),
        None => Ok(json!({})),
    }
}

pub async fn log(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: LogParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let category = p.kind.clone().unwrap_or_else(|| "notification".to_string());
    let level = match p.level.as_deref().unwrap_or("info") {
        "warning" => LogLevel::Warning,
        "error" => LogLevel::Error,
        "info" => LogLevel::Info,
        other => {
            return Err(protocol::jsonrpc::RpcError::invalid_params(
                method,
                format!("level: unknown variant `{other}`, expected one of `info`, `warning`, `error`"),
            ))
        }
    };
    let id = shared
        .log(level, category, p.message, p.ephemeral.unwrap_or(false))
        .await
        .map_err(|e| engine_error(method, &e))?;
    Ok(json!({"eventId": id}))
}

pub async fn answer_permission(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: PermissionResponseParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let ok = shared.answer(&p.request_id, PendingAnswer::Permission(p.result)).await;
    Ok(json!({"success": ok.map_err(|e| engine_error(method, &e))?}))
}

pub async fn pending_permissions(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let items = shared.pending_permissions().await.map_err(|e| engine_error(method, &e))?;
    let items: Vec<Value> = items.into_iter().map(|(id, prompt)| json!({"requestId": id, "request": prompt})).collect();
    Ok(json!({"items": items}))
}

pub async fn set_approve_all(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ApproveAllParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.set_approve_all(p.enabled).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"success": true}))
}

/// Replaces the session's SDK-implemented tools; the model sees them from its next request.
pub async fn set_tools(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ToolsSetParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.set_tools(p.tools).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({}))
}

pub async fn answer_tool_call(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ToolCallResponseParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let answer = PendingAnswer::ToolCall { result: p.result, error: p.error };
    let ok = shared.answer(&p.request_id, answer).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"success": ok}))
}
