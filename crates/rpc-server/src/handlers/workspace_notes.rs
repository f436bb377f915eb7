//! What a client keeps in a session's folder besides files: summaries (written as the
//! session's checkpoints, which compaction writes too) and the autopilot objective.
//! `session.autopilotObjective.getState` reports no objective: Skipper does not run objectives
//! itself, so none is ever started, whatever file a client keeps.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde_json::{json, Map, Value};

use crate::ctx::Ctx;
use crate::handlers::workspaces::workspace_of;

pub async fn add_summary(
    ctx: &Ctx,
    p: t::SessionWorkspacesAddSummaryParams,
) -> Result<t::WorkspacesAddSummaryResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let (number, path, title) = session.add_summary(&p.title, &p.content).await.map_err(|e| ctx.engine_error(&e))?;
    let summary = json!({
        "checkpointNumber": number,
        "checkpointPath": path.to_string_lossy(),
        "checkpointTitle": title,
    });
    let workspace = workspace_of(ctx, &p.session_id).await?.workspace;
    Ok(t::WorkspacesAddSummaryResult { summary: as_map(summary), workspace: workspace.and_then(|w| as_map(json!(w))) })
}

pub async fn truncate_summaries(
    ctx: &Ctx,
    p: t::SessionWorkspacesTruncateSummariesParams,
) -> Result<t::WorkspacesGetWorkspaceResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let keep = usize::try_from(p.keep_count).unwrap_or(usize::MAX);
    session.truncate_summaries(keep).await.map_err(|e| ctx.engine_error(&e))?;
    // The original answers with the workspace alone, not its folder.
    Ok(t::WorkspacesGetWorkspaceResult { path: None, ..workspace_of(ctx, &p.session_id).await? })
}

pub async fn read_objective(
    ctx: &Ctx,
    p: t::SessionWorkspacesReadAutopilotObjectiveParams,
) -> Result<t::WorkspacesReadAutopilotObjectiveResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let content = session.read_autopilot_objective().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::WorkspacesReadAutopilotObjectiveResult { content })
}

pub async fn write_objective(
    ctx: &Ctx,
    p: t::SessionWorkspacesWriteAutopilotObjectiveParams,
) -> Result<t::WorkspacesWriteAutopilotObjectiveResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let replaced = session.write_autopilot_objective(&p.content).await.map_err(|e| ctx.engine_error(&e))?;
    let operation = if replaced { "update" } else { "create" };
    Ok(t::WorkspacesWriteAutopilotObjectiveResult { operation: operation.into() })
}

pub async fn delete_objective(
    ctx: &Ctx,
    p: t::SessionWorkspacesDeleteAutopilotObjectiveParams,
) -> Result<t::WorkspacesDeleteAutopilotObjectiveResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let deleted = session.delete_autopilot_objective().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::WorkspacesDeleteAutopilotObjectiveResult { deleted })
}

pub async fn objective_exists(
    ctx: &Ctx,
    p: t::SessionWorkspacesAutopilotObjectiveExistsParams,
) -> Result<t::WorkspacesAutopilotObjectiveExistsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let exists = session.read_autopilot_objective().await.map_err(|e| ctx.engine_error(&e))?.is_some();
    Ok(t::WorkspacesAutopilotObjectiveExistsResult { exists })
}

pub async fn objective_state(
    ctx: &Ctx,
    p: t::SessionAutopilotObjectiveGetStateParams,
) -> Result<t::AutopilotObjectiveGetStateResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::AutopilotObjectiveGetStateResult { state: None })
}

fn as_map(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}
