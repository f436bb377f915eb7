//! Per-session history methods: compaction, truncation, handoff summaries, checkpoints.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn compact(ctx: &Ctx, p: t::SessionHistoryCompactParams) -> Result<t::HistoryCompactResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let trigger = p.trigger.map(|tr| match tr {
        t::SessionHistoryCompactParamsTrigger::Manual => t::CompactionTrigger::Manual,
        t::SessionHistoryCompactParamsTrigger::ModelSwitch => t::CompactionTrigger::ModelSwitch,
    });
    session.compact(p.custom_instructions, trigger).await.map_err(|e| ctx.engine_error(&e))
}

pub async fn truncate(ctx: &Ctx, p: t::SessionHistoryTruncateParams) -> Result<t::HistoryTruncateResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.truncate(p.event_id).await.map_err(|e| ctx.engine_error(&e))
}

pub async fn summarize_for_handoff(
    ctx: &Ctx,
    p: t::SessionHistorySummarizeForHandoffParams,
) -> Result<t::HistorySummarizeForHandoffResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let summary = session.summarize_for_handoff().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::HistorySummarizeForHandoffResult { summary })
}

pub async fn cancel_background(
    ctx: &Ctx,
    p: t::SessionHistoryCancelBackgroundCompactionParams,
) -> Result<t::HistoryCancelBackgroundCompactionResult, RpcError> {
    let cancelled = ctx.session(&p.session_id)?.cancel_background_compaction();
    Ok(t::HistoryCancelBackgroundCompactionResult { cancelled })
}

pub async fn abort_manual(
    ctx: &Ctx,
    p: t::SessionHistoryAbortManualCompactionParams,
) -> Result<t::HistoryAbortManualCompactionResult, RpcError> {
    let aborted = ctx.session(&p.session_id)?.abort_manual_compaction();
    Ok(t::HistoryAbortManualCompactionResult { aborted })
}

pub async fn list_checkpoints(
    ctx: &Ctx,
    p: t::SessionWorkspacesListCheckpointsParams,
) -> Result<t::WorkspacesListCheckpointsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let rows = session.list_checkpoints().await.map_err(|e| ctx.failed(e))?;
    let checkpoints = rows
        .into_iter()
        .map(|c| t::WorkspacesCheckpoints { number: u64::from(c.number), title: c.title, filename: c.filename })
        .collect();
    Ok(t::WorkspacesListCheckpointsResult { checkpoints })
}

pub async fn read_checkpoint(
    ctx: &Ctx,
    p: t::SessionWorkspacesReadCheckpointParams,
) -> Result<t::WorkspacesReadCheckpointResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let content = session.read_checkpoint(p.number).await.map_err(|e| ctx.failed(e))?;
    Ok(t::WorkspacesReadCheckpointResult { content })
}
