//! Per-session state methods: model, mode, plan.

use std::sync::Arc;

use protocol::jsonrpc::RpcError;
use protocol::methods::{ModeSetParams, ModelSwitchParams, SessionIdParams};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::connection::Conn;
use crate::errors::engine_error;
use crate::handlers::loaded_session;
use crate::router::{params, HandlerResult};
use loop_engine::{PlanOp, PlanResult};

pub fn model_get(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let view = loaded_session(conn, method, &p.session_id)?.view();
    let s = &view.settings;
    let mut out = json!({"modelId": s.model});
    if let Some(e) = &s.reasoning_effort {
        out["reasoningEffort"] = json!(e);
    }
    Ok(out)
}

pub async fn model_switch(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ModelSwitchParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    let previous =
        shared.switch_model(&p.model_id, p.reasoning_effort.clone()).await.map_err(|e| engine_error(method, &e))?;
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
    Ok(json!(loaded_session(conn, method, &p.session_id)?.view().settings.mode))
}

pub async fn mode_set(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: ModeSetParams = params(method, &raw)?;
    if !["interactive", "plan", "autopilot"].contains(&p.mode.as_str()) {
        return Err(RpcError::invalid_params(
            method,
            format!("mode: unknown variant `{}`, expected one of `interactive`, `plan`, `autopilot`", p.mode),
        ));
    }
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.set_mode(&p.mode).await.map_err(|e| engine_error(method, &e))?;
    Ok(json!({"status": "applied", "modelChanged": false, "modeApplied": true}))
}

pub async fn plan_read(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    match shared.plan(PlanOp::Read).await.map_err(|e| engine_error(method, &e))? {
        PlanResult::Read { content: Some(content), path } => {
            Ok(json!({"exists": true, "content": content, "path": path.to_string_lossy()}))
        }
        _ => Ok(json!({"exists": false, "content": null, "path": null})),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanUpdate {
    session_id: String,
    content: String,
}

pub async fn plan_update(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: PlanUpdate = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.plan(PlanOp::Update(p.content)).await.map_err(|e| engine_error(method, &e))?;
    Ok(Value::Null)
}

pub async fn plan_delete(conn: &Arc<Conn>, method: &str, raw: Value) -> HandlerResult {
    let p: SessionIdParams = params(method, &raw)?;
    let shared = loaded_session(conn, method, &p.session_id)?;
    shared.plan(PlanOp::Delete).await.map_err(|e| engine_error(method, &e))?;
    Ok(Value::Null)
}
