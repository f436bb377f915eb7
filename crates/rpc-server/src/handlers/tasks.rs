//! `session.tasks.*`: the session's background agents (see `loop_engine::subagent::background`):
//! listed, started, messaged while they run, waited for, cancelled and removed. Foreground `task`
//! calls are not tasks here, so nothing is promotable.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn list(ctx: &Ctx, p: t::SessionTasksListParams) -> Result<t::TaskList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::TaskList { tasks: session.tasks().list().into_iter().map(t::TaskInfo::Agent).collect() })
}

pub async fn start_agent(ctx: &Ctx, p: t::SessionTasksStartAgentParams) -> Result<t::TasksStartAgentResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let known = agent_config::agents::builtin::BUILTIN_AGENTS.iter().any(|a| a.name == p.agent_type)
        || session.view().settings.agents.get(&p.agent_type).is_some();
    if !known {
        return Err(ctx.failed(format!("Agent type \"{}\" not found", p.agent_type)));
    }
    if let Some(model) = &p.model {
        let models = ctx.server.engine.list_models().await.map_err(|e| ctx.engine_error(&e))?;
        if !models.iter().any(|m| &m.id == model) {
            return Err(ctx.failed(format!("Model \"{model}\" is not available")));
        }
    }
    let agent_id = loop_engine::subagent::start_background(
        &session,
        &p.agent_type,
        p.prompt,
        Some(p.name),
        p.description,
        p.model,
    )
    .map_err(|e| ctx.failed(e))?;
    Ok(t::TasksStartAgentResult { agent_id })
}

pub async fn refresh(ctx: &Ctx, p: t::SessionTasksRefreshParams) -> Result<t::TasksRefreshResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::TasksRefreshResult {})
}

pub async fn wait_for_pending(
    ctx: &Ctx,
    p: t::SessionTasksWaitForPendingParams,
) -> Result<t::TasksWaitForPendingResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.tasks().wait_all().await;
    Ok(t::TasksWaitForPendingResult {})
}

pub async fn get_progress(
    ctx: &Ctx,
    p: t::SessionTasksGetProgressParams,
) -> Result<t::TasksGetProgressResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::TasksGetProgressResult { progress: None })
}

pub async fn get_current_promotable(
    ctx: &Ctx,
    p: t::SessionTasksGetCurrentPromotableParams,
) -> Result<t::TasksGetCurrentPromotableResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::TasksGetCurrentPromotableResult { task: None })
}

pub async fn promote(
    ctx: &Ctx,
    p: t::SessionTasksPromoteToBackgroundParams,
) -> Result<t::TasksPromoteToBackgroundResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::TasksPromoteToBackgroundResult { promoted: false })
}

pub async fn promote_current(
    ctx: &Ctx,
    p: t::SessionTasksPromoteCurrentToBackgroundParams,
) -> Result<t::TasksPromoteCurrentToBackgroundResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::TasksPromoteCurrentToBackgroundResult { task: None })
}

pub async fn cancel(ctx: &Ctx, p: t::SessionTasksCancelParams) -> Result<t::TasksCancelResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::TasksCancelResult { cancelled: session.tasks().cancel(&p.id) })
}

/// `session.cancelAllBackgroundAgents`: stops every background agent, not the main turn; the
/// number stopped.
pub async fn cancel_all(ctx: &Ctx, p: t::SessionCancelAllBackgroundAgentsParams) -> Result<i64, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(i64::try_from(session.tasks().cancel_all()).unwrap_or(i64::MAX))
}

pub async fn remove(ctx: &Ctx, p: t::SessionTasksRemoveParams) -> Result<t::TasksRemoveResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::TasksRemoveResult { removed: session.tasks().remove(&p.id) })
}

pub async fn send_message(
    ctx: &Ctx,
    p: t::SessionTasksSendMessageParams,
) -> Result<t::TasksSendMessageResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(match session.tasks().send_message(&p.id, &p.message) {
        Ok(()) => t::TasksSendMessageResult { sent: true, error: None },
        Err(error) => t::TasksSendMessageResult { sent: false, error: Some(error) },
    })
}
