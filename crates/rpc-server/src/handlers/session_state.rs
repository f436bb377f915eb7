//! Per-session state methods: model, mode, plan.

use std::sync::Arc;

use protocol::jsonrpc::RpcError;
use protocol::methods::{ModeSetParams, ModelSwitchParams, SessionIdParams};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::connection::Conn;
use crate::handlers::loaded_session;
use crate::router::{params, HandlerResult};

pub fn model_get(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let s = loaded_session(conn, method, &p.session_id)?.settings();
    let mut out = json!({"modelId": s.model});
    if let Some(e) = s.reasoning_effort {
        out["reasoningEffort"] = json!(e);
    }
    Ok(out)
}

pub fn model_switch(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ModelSwitchParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let previous = shared.settings().model;
    shared.update_settings(|s| {
        s.model = p.model_id.clone();
        if p.reasoning_effort.is_some() {
            s.reasoning_effort = p.reasoning_effort.clone();
        }
    });
    let mut data = json!({"previousModel": previous, "newModel": p.model_id, "source": "sdk"});
    if let Some(e) = &p.reasoning_effort {
        data["reasoningEffort"] = json!(e);
    }
    shared.emitter.emit("session.model_change", data, false);
    Ok(json!({
        "status": "applied",
        "deferred": false,
        "modelId": p.model_id,
        "message": format!("Model changed from {previous} to {}", p.model_id),
        "deprecationWarnings": [],
        "modelState": {"modelId": p.model_id},
    }))
}

pub fn mode_get(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    Ok(json!(loaded_session(conn, method, &p.session_id)?.settings().mode))
}

pub fn mode_set(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ModeSetParams = params(method, &raw)?;
    if !["interactive", "plan", "autopilot"].contains(&p.mode.as_str()) {
        return Err(RpcError::invalid_params(
            method,
            format!("mode: unknown variant `{}`, expected one of `interactive`, `plan`, `autopilot`", p.mode),
        ));
    }
    let shared = loaded_session(conn, method, &p.session_id)?;
    let previous = shared.settings().mode;
    if previous != p.mode {
        shared.update_settings(|s| s.mode = p.mode.clone());
        shared.emitter.emit("session.mode_changed", json!({"previousMode": previous, "newMode": p.mode}), false);
    }
    Ok(json!({"status": "applied", "modelChanged": false, "modeApplied": true}))
}

fn plan_path(shared: &loop_engine::SessionShared) -> std::path::PathBuf {
    shared.workspace_path.join("plan.md")
}

pub fn plan_read(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let path = plan_path(&shared);
    match std::fs::read_to_string(&path) {
        Ok(content) => Ok(json!({"exists": true, "content": content, "path": path.to_string_lossy()})),
        Err(_) => Ok(json!({"exists": false, "content": null, "path": null})),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanUpdate {
    session_id: String,
    content: String,
}

pub fn plan_update(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: PlanUpdate = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let path = plan_path(&shared);
    let operation = if path.exists() { "update" } else { "create" };
    std::fs::write(&path, p.content).map_err(|e| RpcError::handler_failed(method, e))?;
    shared.emitter.emit("session.plan_changed", json!({"operation": operation}), false);
    Ok(Value::Null)
}

pub fn plan_delete(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let path = plan_path(&shared);
    if path.exists() {
        std::fs::remove_file(&path).map_err(|e| RpcError::handler_failed(method, e))?;
        shared.emitter.emit("session.plan_changed", json!({"operation": "delete"}), false);
    }
    Ok(Value::Null)
}
