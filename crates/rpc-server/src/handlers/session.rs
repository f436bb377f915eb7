//! Session lifecycle and conversation methods.

use loop_engine::{LogLevel, PendingAnswer, QueuedMessage, SessionHandle};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::methods::{
    Capabilities, ExternalToolDef, ForegroundParams, ForegroundResult, GetMessagesResult, LastIdResult, ListParams,
    MetadataResult, ModelState, SessionConfigParams, SessionIdParams, SessionInfo, SessionListResult, SuccessResult,
};
use protocol::rpc::NoParams;

use crate::ctx::Ctx;

fn session_info(session: &SessionHandle) -> SessionInfo {
    let view = session.view();
    SessionInfo {
        session_id: session.id().to_string(),
        native_session_id: session.id().to_string(),
        start_time: session.start_time().to_string(),
        is_remote: false,
        mode: view.settings.mode.as_str().to_string(),
        workspace_path: session.workspace_path().to_string_lossy().into_owned(),
        capabilities: Capabilities {
            ui: protocol::methods::UiCapabilities {
                elicitation: session.clients().union().elicitation,
                ..Default::default()
            },
            ..Default::default()
        },
        model_state: ModelState { model_id: view.settings.model.clone() },
    }
}

pub async fn create(ctx: &Ctx, mut p: SessionConfigParams) -> Result<SessionInfo, RpcError> {
    loop_engine::canvases::validate(&p).map_err(|e| ctx.failed(e))?;
    if let Some(tenant) = ctx.tenant() {
        let creator = ctx.caller.principal().and_then(|p| p.user_name());
        crate::tenant_credentials::apply(tenant, creator, &mut p).map_err(|e| ctx.failed(e))?;
    }
    let identity = crate::handlers::auth::identity_for(ctx, p.git_hub_token.clone()).await?;
    let Some(tenant) = ctx.tenant().cloned() else {
        let session = ctx
            .server
            .engine
            .create_with(&p, Some(ctx.caller.subscriber()), fs(ctx))
            .await
            .map_err(|e| ctx.engine_error(&e))?;
        if let Some(identity) = identity {
            ctx.server.session_identities.set(session.id(), identity);
        }
        loop_engine::clients::join(&session, ctx.caller.id, &p, false).await;
        if p.enable_file_change_tracking == Some(true) {
            session.file_tracker().enable(Some(session.workspace_path().join("rewind")));
        }
        crate::handlers::telemetry::session_created(ctx, &session, &p);
        if p.request_extensions == Some(true) {
            let cwd = session.view().settings.cwd.clone();
            crate::extensions::start(
                &ctx.server,
                ctx.serve_trusted,
                session.id(),
                &cwd,
                p.extension_sdk_path.as_deref(),
            );
        }
        return Ok(session_info(&session));
    };
    // A tenant's session runs in its workspace, and is claimed before it exists so that its
    // `session.created` notification already reaches (only) its owner.
    let cwd = tenant.confine(p.working_directory.as_deref()).map_err(|e| RpcError::invalid_params(ctx.method, e))?;
    p.working_directory = Some(cwd.to_string_lossy().into_owned());
    confine_config_dirs(ctx, &mut p, &cwd)?;
    let id = p.session_id.get_or_insert_with(|| tenant.new_session_id()).clone();
    let claimed = ctx.tenancy_claim(&id).await?;
    let created = ctx.server.engine.create_with(&p, Some(ctx.caller.subscriber()), fs(ctx)).await;
    match created {
        Ok(session) => {
            if let Some(identity) = identity {
                ctx.server.session_identities.set(session.id(), identity);
            }
            loop_engine::clients::join(&session, ctx.caller.id, &p, false).await;
            if p.enable_file_change_tracking == Some(true) {
                session.file_tracker().enable(Some(session.workspace_path().join("rewind")));
            }
            crate::handlers::telemetry::session_created(ctx, &session, &p);
            ctx.audit("session.create", Some(session.id()), serde_json::json!({}));
            Ok(session_info(&session))
        }
        Err(e) => {
            if claimed {
                ctx.tenancy_release(&id).await;
            }
            Err(ctx.engine_error(&e))
        }
    }
}

pub async fn resume(ctx: &Ctx, mut p: SessionConfigParams) -> Result<SessionInfo, RpcError> {
    let Some(id) = p.session_id.clone() else {
        return Err(RpcError::invalid_params(ctx.method, "sessionId: missing field `sessionId`"));
    };
    loop_engine::canvases::validate(&p).map_err(|e| ctx.failed(e))?;
    if let Some(tenant) = ctx.tenant().cloned() {
        ctx.learn_owners(Some(&id)).await?;
        if !ctx.visible(&id) {
            // What the engine answers for an id it has no log of, checks in the same order.
            loop_engine::settings::providers_from_params(&p)
                .map_err(|e| ctx.engine_error(&loop_engine::EngineError::InvalidProviders(e)))?;
            let unknown = loop_engine::EngineError::Load(store::StoreError::NotFound(id));
            return Err(ctx.engine_error(&unknown));
        }
        if p.working_directory.is_some() {
            let cwd =
                tenant.confine(p.working_directory.as_deref()).map_err(|e| RpcError::invalid_params(ctx.method, e))?;
            p.working_directory = Some(cwd.to_string_lossy().into_owned());
        }
        // Relative ones against the directory the session will run in: the one asked for, or
        // the one it ran in (inside the workspace either way; the workspace when not loaded).
        let cwd = match &p.working_directory {
            Some(dir) => std::path::PathBuf::from(dir),
            None => match ctx.server.engine.get(&id) {
                Some(session) => session.view().settings.cwd.clone(),
                None => tenant.workspace.clone(),
            },
        };
        confine_config_dirs(ctx, &mut p, &cwd)?;
        let creator = match &ctx.server.tenancy {
            Some(tenancy) => tenancy.creator(&id).await.map_err(|e| ctx.failed(e))?,
            None => None,
        };
        crate::tenant_credentials::apply(&tenant, creator.as_deref(), &mut p).map_err(|e| ctx.failed(e))?;
        if let Some(meter) = ctx.server.meter.get() {
            meter.attribute(&id, &tenant, creator.as_deref());
        }
    }
    let identity = crate::handlers::auth::identity_for(ctx, p.git_hub_token.clone()).await?;
    let session = ctx
        .server
        .engine
        .resume_with(&p, Some(ctx.caller.subscriber()), fs(ctx))
        .await
        .map_err(|e| ctx.engine_error(&e))?;
    if let Some(identity) = identity {
        ctx.server.session_identities.set(session.id(), identity);
    }
    loop_engine::clients::join(&session, ctx.caller.id, &p, true).await;
    ctx.audit("session.resume", Some(session.id()), serde_json::json!({}));
    if p.enable_file_change_tracking == Some(true) {
        session.file_tracker().enable(Some(session.workspace_path().join("rewind")));
    }
    Ok(session_info(&session))
}

/// A tenant's session reads skills, instructions and plugins from inside its tenant's
/// workspace only (relative directories against `cwd`).
fn confine_config_dirs(ctx: &Ctx, p: &mut SessionConfigParams, cwd: &std::path::Path) -> Result<(), RpcError> {
    let lists = [
        ("skillDirectories", &mut p.skill_directories),
        ("instructionDirectories", &mut p.instruction_directories),
        ("pluginDirectories", &mut p.plugin_directories),
    ];
    for (what, list) in lists {
        for dir in list.iter_mut().flatten() {
            *dir = ctx.confine_path(what, cwd, dir)?.to_string_lossy().into_owned();
        }
    }
    Ok(())
}

/// The sessionFs provider the calling connection declared: it keeps the session's state.
fn fs(ctx: &Ctx) -> Option<loop_engine::session_fs::FsProvider> {
    ctx.caller.session_fs().cloned()
}

/// A working directory a client moves a session to. On a shared server it must stay in the
/// caller's workspace (file tools are confined to the workspace holding the cwd, so a cwd in
/// another tenant's would reach that tenant's files).
pub(crate) fn confine_cwd(ctx: &Ctx, dir: &str) -> Result<std::path::PathBuf, RpcError> {
    match ctx.tenant() {
        Some(tenant) => tenant.confine(Some(dir)).map_err(|e| ctx.failed(e)),
        None => Ok(std::path::PathBuf::from(dir)),
    }
}

pub async fn send(ctx: &Ctx, p: t::SessionSendParams) -> Result<t::SendResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some(node) = ctx.follower_of(&p.session_id) {
        // Followed read-only from here: only the node holding the lease may run a turn.
        let running = store::StoreError::LeasedElsewhere { session: p.session_id.clone(), node };
        return Err(ctx.failed(format!("{running}; this node follows it read-only, send to that node")));
    }
    if ctx.tenant().is_some() {
        confine_attachments(ctx, &session, p.attachments.as_deref().unwrap_or_default())?;
    }
    refuse_past_tokens_per_day(ctx)?;
    let id = p.session_id.clone();
    let queued = enqueue(&session, p).await.map_err(|e| ctx.engine_error(&e))?;
    // Which user's client sent it; never what it says.
    ctx.audit("message", Some(&id), serde_json::json!({}));
    Ok(queued)
}

/// A tenant that used its tokens for today sends no more messages until tomorrow (UTC): told
/// at once, rather than with a turn that fails at its first model call.
fn refuse_past_tokens_per_day(ctx: &Ctx) -> Result<(), RpcError> {
    let (Some(tenant), Some(meter)) = (ctx.tenant(), ctx.server.meter.get()) else { return Ok(()) };
    let Some((max, text)) = meter.out_of_tokens(tenant) else { return Ok(()) };
    meter.refused(tenant, "tokens_per_day");
    Err(ctx.limit_reached("tokens_per_day", max, text))
}

/// The model is told of attached files and directories (their paths, a directory's size): on
/// a shared server a tenant names only its own.
pub(crate) fn confine_attachments(
    ctx: &Ctx,
    session: &loop_engine::SessionHandle,
    attachments: &[t::Attachment],
) -> Result<(), RpcError> {
    let cwd = session.view().settings.cwd.clone();
    for a in attachments {
        match a {
            t::Attachment::File(f) => drop(ctx.confine_path("attachment", &cwd, &f.path)?),
            t::Attachment::Directory(d) => drop(ctx.confine_path("attachment", &cwd, &d.path)?),
            _ => {}
        }
    }
    Ok(())
}

/// Queues a message on a session run here: for a local `session.send`, and for one another
/// node forwarded (`crate::forwarding`).
pub(crate) async fn enqueue(
    session: &loop_engine::SessionHandle,
    p: t::SessionSendParams,
) -> Result<t::SendResult, loop_engine::EngineError> {
    let message_id = uuid::Uuid::new_v4().to_string();
    let msg = QueuedMessage {
        message_id: message_id.clone(),
        prompt: p.prompt,
        display_prompt: p.display_prompt,
        attachments: p.attachments.unwrap_or_default(),
        agent_mode: p.agent_mode.map(agent_mode),
        request_headers: p.request_headers.unwrap_or_default().into_iter().collect(),
        ..Default::default()
    };
    let immediate = p.mode == Some(t::SendMode::Immediate);
    session.send(msg, immediate).await?;
    Ok(t::SendResult { message_id })
}

/// The mode `session.send {agentMode}` asks for, as `user.message` records it.
pub(crate) fn agent_mode(mode: t::SendAgentMode) -> t::UserMessageAgentMode {
    match mode {
        t::SendAgentMode::Interactive => t::UserMessageAgentMode::Interactive,
        t::SendAgentMode::Plan => t::UserMessageAgentMode::Plan,
        t::SendAgentMode::Autopilot => t::UserMessageAgentMode::Autopilot,
        t::SendAgentMode::Shell => t::UserMessageAgentMode::Shell,
    }
}

pub async fn abort(ctx: &Ctx, p: t::SessionAbortParams) -> Result<t::AbortResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    abort_here(&session, p).await.map_err(|e| ctx.engine_error(&e))
}

/// Aborts a session run here (a local `session.abort`, or one another node forwarded).
pub(crate) async fn abort_here(
    session: &loop_engine::SessionHandle,
    p: t::SessionAbortParams,
) -> Result<t::AbortResult, loop_engine::EngineError> {
    let reason = p.reason.unwrap_or(t::AbortReason::UserInitiated);
    session.abort(reason).await?;
    Ok(t::AbortResult { success: true, error: None })
}

pub async fn get_messages(ctx: &Ctx, p: SessionIdParams) -> Result<GetMessagesResult, RpcError> {
    ctx.learn_owners(Some(&p.session_id)).await?;
    if !ctx.visible(&p.session_id) {
        return Err(ctx.not_found(&p.session_id));
    }
    let events = ctx.server.engine.messages(&p.session_id).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(GetMessagesResult { events })
}

pub async fn detach(ctx: &Ctx, p: SessionIdParams) -> Result<SuccessResult, RpcError> {
    if !ctx.visible(&p.session_id) {
        return Ok(SuccessResult { success: true, error: None }); // as for a session not loaded
    }
    let ok = ctx.server.engine.detach(&p.session_id, ctx.caller.id).await;
    Ok(SuccessResult { success: ok, error: None })
}

pub async fn delete(ctx: &Ctx, p: SessionIdParams) -> Result<SuccessResult, RpcError> {
    ctx.learn_owners(Some(&p.session_id)).await?;
    let deleted = if ctx.visible(&p.session_id) {
        ctx.server.engine.delete(&p.session_id).await
    } else {
        Err(loop_engine::EngineError::SessionNotFound(p.session_id.clone()))
    };
    match deleted {
        Ok(()) => {
            ctx.audit("session.delete", Some(&p.session_id), serde_json::json!({}));
            if ctx.tenant().is_some() {
                ctx.tenancy_release(&p.session_id).await;
            }
            Ok(SuccessResult { success: true, error: None })
        }
        Err(e) => Ok(SuccessResult { success: false, error: Some(e.to_string()) }),
    }
}

pub async fn list(ctx: &Ctx, p: ListParams) -> Result<SessionListResult, RpcError> {
    let f = p.filter.unwrap_or_default();
    let filter = store::ListFilter { cwd: f.cwd, git_root: f.git_root, repository: f.repository, branch: f.branch };
    ctx.learn_owners(None).await?;
    let mut sessions = ctx.server.engine.list(&filter).await.map_err(|e| ctx.engine_error(&e))?;
    sessions.retain(|s| ctx.visible(&s.session_id));
    Ok(SessionListResult { sessions })
}

pub async fn last_id(ctx: &Ctx, _p: NoParams) -> Result<LastIdResult, RpcError> {
    if ctx.server.tenancy.is_some() {
        // The most recent of the caller's own: the list is ordered by recency.
        ctx.learn_owners(None).await?;
        let sessions = ctx.server.engine.list(&store::ListFilter::default()).await.map_err(|e| ctx.engine_error(&e))?;
        let session_id = sessions.into_iter().map(|s| s.session_id).find(|id| ctx.visible(id));
        return Ok(LastIdResult { session_id });
    }
    let session_id = ctx.server.engine.last_id().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(LastIdResult { session_id })
}

pub async fn metadata(ctx: &Ctx, p: SessionIdParams) -> Result<MetadataResult, RpcError> {
    ctx.learn_owners(Some(&p.session_id)).await?;
    if !ctx.visible(&p.session_id) {
        return Ok(MetadataResult { session: None });
    }
    let session = ctx.server.engine.metadata(&p.session_id).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(MetadataResult { session })
}

pub async fn get_foreground(_ctx: &Ctx, _p: NoParams) -> Result<ForegroundResult, RpcError> {
    Ok(ForegroundResult {})
}

pub async fn set_foreground(_ctx: &Ctx, _p: ForegroundParams) -> Result<SuccessResult, RpcError> {
    Ok(SuccessResult {
        success: false,
        error: Some("Not running in TUI+server mode - no foreground session change handler registered".into()),
    })
}

pub async fn log(ctx: &Ctx, p: t::SessionLogParams) -> Result<t::LogResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let level = match p.level.unwrap_or(t::SessionLogLevel::Info) {
        t::SessionLogLevel::Info => LogLevel::Info,
        t::SessionLogLevel::Warning => LogLevel::Warning,
        t::SessionLogLevel::Error => LogLevel::Error,
    };
    let category = p.r#type.unwrap_or_else(|| "notification".to_string());
    let event_id = session
        .log(level, category, p.message, p.ephemeral.unwrap_or(false))
        .await
        .map_err(|e| ctx.engine_error(&e))?;
    Ok(t::LogResult { event_id })
}

pub async fn answer_permission(
    ctx: &Ctx,
    p: t::SessionPermissionsHandlePendingPermissionRequestParams,
) -> Result<t::PermissionRequestResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let answer = PendingAnswer::Permission(p.result);
    let success = session.answer(&p.request_id, answer).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::PermissionRequestResult { success })
}

pub async fn pending_permissions(
    ctx: &Ctx,
    p: t::SessionPermissionsPendingRequestsParams,
) -> Result<t::PendingPermissionRequestList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let items = session.pending_permissions().await.map_err(|e| ctx.engine_error(&e))?;
    let items =
        items.into_iter().map(|(request_id, request)| t::PendingPermissionRequest { request_id, request }).collect();
    Ok(t::PendingPermissionRequestList { items })
}

/// SDK tool calls of the session and its sub-agents that wait for `handlePendingToolCall`.
pub async fn pending_tool_calls(
    ctx: &Ctx,
    p: t::SessionToolsListPendingRequestsParams,
) -> Result<t::PendingExternalToolRequestList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let items = session.pending_tool_calls().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::PendingExternalToolRequestList { items })
}

pub async fn set_approve_all(
    ctx: &Ctx,
    p: t::SessionPermissionsSetApproveAllParams,
) -> Result<t::PermissionsSetApproveAllResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.set_approve_all(p.enabled).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::PermissionsSetApproveAllResult { success: true })
}

/// Replaces the session's SDK-implemented tools; the model sees them from its next request.
pub async fn set_tools(ctx: &Ctx, p: t::SessionToolsSetParams) -> Result<t::ToolsSetResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tools = p
        .tools
        .into_iter()
        .map(|d| ExternalToolDef {
            name: d.name,
            description: d.description,
            parameters: d.parameters.map(|p| std::sync::Arc::new(serde_json::Value::Object(p))),
            overrides_built_in_tool: d.overrides_built_in_tool.unwrap_or(false),
            skip_permission: d.skip_permission.unwrap_or(false),
        })
        .collect();
    session.set_tools(tools).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::ToolsSetResult {})
}

pub async fn answer_tool_call(
    ctx: &Ctx,
    p: t::SessionToolsHandlePendingToolCallParams,
) -> Result<t::HandlePendingToolCallResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let answer = PendingAnswer::ToolCall { result: p.result, error: p.error };
    let success = session.answer(&p.request_id, answer).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::HandlePendingToolCallResult { success })
}

/// `sessions.fork`: on a shared server the source must be the caller's, and the fork is theirs.
pub async fn fork(ctx: &Ctx, p: t::SessionsForkRequest) -> Result<t::SessionsForkResult, RpcError> {
    let tenant = ctx.tenant().cloned();
    ctx.learn_owners(Some(&p.session_id)).await?;
    if tenant.is_some() && !ctx.visible(&p.session_id) {
        let unknown = format!("Session {} not found or has no persisted events", p.session_id);
        return Err(ctx.engine_error(&loop_engine::EngineError::Compaction(unknown)));
    }
    let id = tenant.as_ref().map_or_else(|| uuid::Uuid::new_v4().to_string(), |t| t.new_session_id());
    let claimed = match &tenant {
        Some(_) => ctx.tenancy_claim(&id).await?,
        None => false,
    };
    let forked =
        ctx.server.engine.fork(&p.session_id, p.to_event_id.as_deref(), Some(id.clone()), p.name.clone()).await;
    match forked {
        Ok(session_id) => {
            ctx.audit("session.fork", Some(&session_id), serde_json::json!({"from": p.session_id}));
            Ok(t::SessionsForkResult { session_id, name: p.name })
        }
        Err(e) => {
            if claimed {
                ctx.tenancy_release(&id).await;
            }
            Err(ctx.engine_error(&e))
        }
    }
}
