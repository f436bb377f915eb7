//! The method table: method name → handler. Each handler parses typed params (bad params →
//! `-32602` naming the field) and returns a JSON result.

use std::sync::Arc;

use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::connection::Conn;
use crate::handlers::{server, session, session_state};

pub type HandlerResult = Result<Value, RpcError>;

pub async fn route(conn: &Arc<Conn>, method: &str, params: Value) -> HandlerResult {
    match method {
        "connect" => server::connect(conn, method, params),
        "ping" => server::ping(method, params),
        "status.get" => server::status(conn),
        "auth.getStatus" => server::auth_status(conn),
        "models.list" => server::models_list(conn, method).await,
        "tools.list" => server::tools_list(conn),
        "account.getQuota" => Ok(serde_json::json!({"quotaSnapshots": {}})),
        "runtime.shutdown" => server::runtime_shutdown(conn),

        "session.create" => session::create(conn, method, params).await,
        "session.resume" => session::resume(conn, method, params).await,
        "session.send" => session::send(conn, method, params).await,
        "session.abort" => session::abort(conn, method, params).await,
        "session.getMessages" => session::get_messages(conn, method, params).await,
        "session.detach" | "session.destroy" => session::detach(conn, method, params).await,
        "session.delete" => session::delete(conn, method, params).await,
        "session.list" => session::list(conn, method, params).await,
        "session.getLastId" => session::last_id(conn, method).await,
        "session.getMetadata" => session::metadata(conn, method, params).await,
        "session.log" => session::log(conn, method, params).await,
        "session.getForeground" => Ok(serde_json::json!({})),
        "session.setForeground" => Ok(serde_json::json!({
            "success": false,
            "error": "Not running in TUI+server mode - no foreground session change handler registered",
        })),
        "session.permissions.handlePendingPermissionRequest" => session::answer_permission(conn, method, params).await,
        "session.permissions.setApproveAll" => session::set_approve_all(conn, method, params).await,
        "session.permissions.pendingRequests" => session::pending_permissions(conn, method, params).await,
        "session.tools.handlePendingToolCall" => session::answer_tool_call(conn, method, params).await,
        "session.tools.set" => session::set_tools(conn, method, params).await,

        "session.model.getCurrent" => session_state::model_get(conn, method, params),
        "session.model.switchTo" => session_state::model_switch(conn, method, params).await,
        "session.mode.get" => session_state::mode_get(conn, method, params),
        "session.mode.set" => session_state::mode_set(conn, method, params).await,
        "session.plan.read" => session_state::plan_read(conn, method, params).await,
        "session.plan.update" => session_state::plan_update(conn, method, params).await,
        "session.plan.delete" => session_state::plan_delete(conn, method, params).await,

        _ => Err(RpcError::method_not_found(method)),
    }
}

/// Parses params into `T`, or a `-32602` error naming the bad field.
pub(crate) fn params<T: serde::de::DeserializeOwned>(method: &str, params: &Value) -> Result<T, RpcError> {
    protocol::methods::parse_params(params).map_err(|e| RpcError::invalid_params(method, e))
}
