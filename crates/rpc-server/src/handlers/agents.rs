//! `session.agent.*` (custom agents: list, the selected one, select, deselect, reload) and
//! `session.skills.*` (list, enable, disable, reload, ensureLoaded, getInvoked).

use loop_engine::agent_control::{AgentOp, AgentOpResult};
use protocol::event::SessionEvent;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn list(ctx: &Ctx, p: t::SessionAgentListParams) -> Result<t::AgentList, RpcError> {
    let view = ctx.session(&p.session_id)?.view();
    let include_prompt = p.include_prompt.unwrap_or(false);
    let mut agents: Vec<t::AgentInfo> = view.settings.agents.all().iter().map(|a| a.info(include_prompt)).collect();
    if p.include_built_in_agents.unwrap_or(false) {
        agents.extend(agent_config::agents::builtin::BUILTIN_AGENTS.iter().map(|b| t::AgentInfo {
            name: b.name.into(),
            display_name: b.display_name.into(),
            description: b.description.into(),
            id: b.name.into(),
            source: Some(t::AgentInfoSource::Builtin),
            tools: b.tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            prompt: include_prompt.then(|| b.prompt.to_string()),
            ..Default::default()
        }));
    }
    Ok(t::AgentList { agents })
}

pub async fn get_current(ctx: &Ctx, p: t::SessionAgentGetCurrentParams) -> Result<t::AgentGetCurrentResult, RpcError> {
    let view = ctx.session(&p.session_id)?.view();
    Ok(t::AgentGetCurrentResult { agent: view.settings.selected_agent.as_ref().map(|a| a.info(false)) })
}

async fn apply(ctx: &Ctx, session_id: &str, op: AgentOp) -> Result<AgentOpResult, RpcError> {
    ctx.session(session_id)?.agents(op).await.map_err(|e| ctx.engine_error(&e))
}

pub async fn select(ctx: &Ctx, p: t::SessionAgentSelectParams) -> Result<t::AgentSelectResult, RpcError> {
    match apply(ctx, &p.session_id, AgentOp::Select(p.name)).await? {
        AgentOpResult::Selected(agent) => Ok(t::AgentSelectResult { agent: *agent }),
        _ => Err(RpcError::handler_failed(ctx.method, "the agent was not selected")),
    }
}

pub async fn deselect(ctx: &Ctx, p: t::SessionAgentDeselectParams) -> Result<(), RpcError> {
    apply(ctx, &p.session_id, AgentOp::Deselect).await.map(|_| ())
}

pub async fn reload(ctx: &Ctx, p: t::SessionAgentReloadParams) -> Result<t::AgentReloadResult, RpcError> {
    match apply(ctx, &p.session_id, AgentOp::Reload).await? {
        AgentOpResult::Agents(agents) => Ok(t::AgentReloadResult { agents }),
        _ => Err(RpcError::handler_failed(ctx.method, "the agents were not reloaded")),
    }
}

pub async fn skills_list(ctx: &Ctx, p: t::SessionSkillsListParams) -> Result<t::SkillList, RpcError> {
    Ok(t::SkillList { skills: ctx.session(&p.session_id)?.view().settings.skills.list() })
}

pub async fn skills_enable(ctx: &Ctx, p: t::SessionSkillsEnableParams) -> Result<(), RpcError> {
    apply(ctx, &p.session_id, AgentOp::EnableSkill(p.name)).await.map(|_| ())
}

pub async fn skills_disable(ctx: &Ctx, p: t::SessionSkillsDisableParams) -> Result<(), RpcError> {
    apply(ctx, &p.session_id, AgentOp::DisableSkill(p.name)).await.map(|_| ())
}

pub async fn skills_reload(ctx: &Ctx, p: t::SessionSkillsReloadParams) -> Result<t::SkillsLoadDiagnostics, RpcError> {
    apply(ctx, &p.session_id, AgentOp::Reload).await?;
    let warnings = ctx.session(&p.session_id)?.view().settings.skills.warnings.as_ref().clone();
    Ok(t::SkillsLoadDiagnostics { warnings, errors: Vec::new() })
}

/// Skills are read when the session starts (and on reload): they are loaded by now.
pub async fn skills_ensure_loaded(ctx: &Ctx, p: t::SessionSkillsEnsureLoadedParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Ok(())
}

/// The skills the model loaded, from the session's `skill.invoked` events.
pub async fn skills_get_invoked(
    ctx: &Ctx,
    p: t::SessionSkillsGetInvokedParams,
) -> Result<t::SkillsGetInvokedResult, RpcError> {
    ctx.session(&p.session_id)?;
    let events = ctx.server.engine.messages(&p.session_id).await.map_err(|e| ctx.engine_error(&e))?;
    let mut turns = 0u64;
    let mut skills = Vec::new();
    for e in &events {
        match &e.payload {
            SessionEvent::AssistantTurnStart(_) if e.agent_id.is_none() => turns += 1,
            SessionEvent::SkillInvoked(d) => skills.push(t::SkillsInvokedSkill {
                name: d.name.clone(),
                path: d.path.clone(),
                content: d.content.clone(),
                allowed_tools: d.allowed_tools.clone(),
                disable_model_invocation: d.disable_model_invocation,
                invoked_at_turn: turns.saturating_sub(1),
            }),
            _ => {}
        }
    }
    Ok(t::SkillsGetInvokedResult { skills })
}
