//! Per-session state methods: model, mode, plan.

use loop_engine::{PlanOp, PlanResult};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn model_get(ctx: &Ctx, p: t::SessionModelGetCurrentParams) -> Result<t::CurrentModel, RpcError> {
    let view = ctx.session(&p.session_id)?.view();
    Ok(t::CurrentModel {
        model_id: Some(view.settings.model.clone()),
        reasoning_effort: view.settings.reasoning_effort.clone(),
        ..Default::default()
    })
}

pub async fn model_switch(ctx: &Ctx, p: t::SessionModelSwitchToParams) -> Result<t::ModelSwitchToResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let previous = session
        .switch_model(
            &p.model_id,
            p.reasoning_effort.clone(),
            loop_engine::settings::vision_override(p.model_capabilities.as_ref()),
        )
        .await
        .map_err(|e| ctx.engine_error(&e))?;
    Ok(t::ModelSwitchToResult {
        status: Some("applied".into()),
        deferred: Some(false),
        model_id: Some(p.model_id.clone()),
        message: Some(format!("Model changed from {previous} to {}", p.model_id)),
        deprecation_warnings: Some(Vec::new()),
        model_state: Some(t::CurrentModel { model_id: Some(p.model_id), ..Default::default() }),
        ..Default::default()
    })
}

pub async fn mode_get(ctx: &Ctx, p: t::SessionModeGetParams) -> Result<t::SessionMode, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // A follower's own settings are as loaded; the owner's changes come as relayed events.
    if let Some((Some(mode), _)) = ctx.followed_state(&p.session_id) {
        return Ok(mode);
    }
    Ok(session.view().settings.mode)
}

pub async fn mode_set(ctx: &Ctx, p: t::SessionModeSetParams) -> Result<t::ModeSetResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.set_mode(p.mode).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::ModeSetResult {
        status: "applied".into(),
        model_changed: false,
        mode_applied: Some(true),
        ..Default::default()
    })
}

pub async fn plan_read(ctx: &Ctx, p: t::SessionPlanReadParams) -> Result<t::PlanReadResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    match session.plan(PlanOp::Read).await.map_err(|e| ctx.engine_error(&e))? {
        PlanResult::Read { content: Some(content), path } => Ok(t::PlanReadResult {
            exists: true,
            content: Some(content),
            path: Some(path.to_string_lossy().into_owned()),
        }),
        _ => Ok(t::PlanReadResult { exists: false, content: None, path: None }),
    }
}

pub async fn plan_update(ctx: &Ctx, p: t::SessionPlanUpdateParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.plan(PlanOp::Update(p.content)).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(())
}

pub async fn plan_delete(ctx: &Ctx, p: t::SessionPlanDeleteParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.plan(PlanOp::Delete).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(())
}

/// Applies the options Skipper has; the rest of the schema's long list (telemetry, LSP,
/// plugins, feature flags, ...) is accepted and has no effect here.
pub async fn options_update(
    ctx: &Ctx,
    p: t::SessionOptionsUpdateParams,
) -> Result<t::SessionUpdateOptionsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let working_directory = match &p.working_directory {
        Some(dir) => Some(crate::handlers::session::confine_cwd(ctx, dir)?),
        None => None,
    };
    let patch = loop_engine::OptionsPatch {
        model: p.model,
        reasoning_effort: p.reasoning_effort,
        client_name: p.client_name,
        working_directory,
        streaming: p.enable_streaming,
        available_tools: p.available_tools,
        excluded_tools: p.excluded_tools,
        ask_user_disabled: p.ask_user_disabled,
        skip_custom_instructions: p.skip_custom_instructions,
        max_ai_credits: p.session_limits.and_then(|l| l.max_ai_credits),
        // Not in the SDKs' schema (the original 1.0.102's `autopilot.maxContinues` is).
        autopilot_max_continues: None,
    };
    session.update_options(patch).await.map_err(|e| ctx.engine_error(&e))?;
    if let Some(config) = &p.sandbox_config {
        // Refused silently on a shared server, as other options a tenant cannot change: its
        // floor holds whatever the client sends.
        session.set_sandbox_config(config);
    }
    Ok(t::SessionUpdateOptionsResult { success: true, ..Default::default() })
}

pub async fn name_get(ctx: &Ctx, p: t::SessionNameGetParams) -> Result<t::NameGetResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some((_, Some(title))) = ctx.followed_state(&p.session_id) {
        return Ok(t::NameGetResult { name: Some(title) });
    }
    match session.name(loop_engine::NameOp::Get).await.map_err(|e| ctx.engine_error(&e))? {
        loop_engine::NameResult::Name(name) => Ok(t::NameGetResult { name }),
        loop_engine::NameResult::Applied(_) => Ok(t::NameGetResult { name: None }),
    }
}

pub async fn name_set(ctx: &Ctx, p: t::SessionNameSetParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.name(loop_engine::NameOp::Set(p.name)).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(())
}

pub async fn name_set_auto(ctx: &Ctx, p: t::SessionNameSetAutoParams) -> Result<t::NameSetAutoResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let applied = session.name(loop_engine::NameOp::SetAuto(p.summary)).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::NameSetAutoResult { applied: matches!(applied, loop_engine::NameResult::Applied(true)) })
}

pub async fn suspend(ctx: &Ctx, p: t::SessionSuspendParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?.suspend().await.map_err(|e| ctx.engine_error(&e))
}

pub async fn shutdown(ctx: &Ctx, p: t::SessionShutdownParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    let kind = p.r#type.unwrap_or(t::ShutdownType::Routine);
    ctx.server.engine.shutdown_session(&p.session_id, kind).await.map_err(|e| ctx.engine_error(&e))
}

pub async fn set_reasoning_effort(
    ctx: &Ctx,
    p: t::SessionModelSetReasoningEffortParams,
) -> Result<t::ModelSetReasoningEffortResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let patch = loop_engine::OptionsPatch { reasoning_effort: Some(p.reasoning_effort.clone()), ..Default::default() };
    session.update_options(patch).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::ModelSetReasoningEffortResult { reasoning_effort: p.reasoning_effort })
}

pub async fn is_processing(
    ctx: &Ctx,
    p: t::SessionMetadataIsProcessingParams,
) -> Result<t::MetadataIsProcessingResult, RpcError> {
    Ok(t::MetadataIsProcessingResult { processing: ctx.session(&p.session_id)?.view().running })
}

pub async fn register_interest(
    ctx: &Ctx,
    p: t::SessionEventLogRegisterInterestParams,
) -> Result<t::RegisterEventInterestResult, RpcError> {
    Ok(t::RegisterEventInterestResult { handle: ctx.session(&p.session_id)?.register_interest(p.event_type) })
}

pub async fn release_interest(
    ctx: &Ctx,
    p: t::SessionEventLogReleaseInterestParams,
) -> Result<t::EventLogReleaseInterestResult, RpcError> {
    ctx.session(&p.session_id)?.release_interest(&p.handle);
    Ok(t::EventLogReleaseInterestResult { success: true })
}

pub async fn event_log_tail(ctx: &Ctx, p: t::SessionEventLogTailParams) -> Result<t::EventLogTailResult, RpcError> {
    Ok(t::EventLogTailResult { cursor: ctx.session(&p.session_id)?.event_tail() })
}

/// Forward reads (the default direction); waits are capped at the schema's 30 s.
pub async fn event_log_read(ctx: &Ctx, p: t::SessionEventLogReadParams) -> Result<t::EventsReadResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let types = match p.types {
        Some(t::EventLogTypes::Array(list)) => Some(list),
        Some(t::EventLogTypes::String(s)) if s != "*" => Some(vec![s]),
        _ => None,
    };
    let req = loop_engine::event_reader::ReadRequest {
        cursor: p.cursor,
        max: p.max.unwrap_or(200).clamp(1, 1000) as usize,
        wait: std::time::Duration::from_millis(p.wait_ms.unwrap_or(0).min(30_000)),
        types,
        include_ephemeral: p.include_ephemeral.unwrap_or(true),
    };
    let batch = session.read_events(req).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::EventsReadResult {
        events: batch.events,
        cursor: batch.cursor,
        has_more: batch.has_more,
        cursor_status: if batch.expired { t::EventsCursorStatus::Expired } else { t::EventsCursorStatus::Ok },
    })
}

pub async fn metadata_snapshot(
    ctx: &Ctx,
    p: t::SessionMetadataSnapshotParams,
) -> Result<t::SessionMetadataSnapshot, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let view = session.view();
    let meta = ctx.server.engine.workspace_meta(session.id()).await;
    let modified = meta.as_ref().map(|m| m.updated_at.clone()).filter(|u| !u.is_empty());
    let mode = match view.settings.mode {
        t::SessionMode::Interactive => t::MetadataSnapshotCurrentMode::Interactive,
        t::SessionMode::Plan => t::MetadataSnapshotCurrentMode::Plan,
        t::SessionMode::Autopilot => t::MetadataSnapshotCurrentMode::Autopilot,
    };
    let workspace = t::WorkspaceSummary {
        id: session.id().to_string(),
        cwd: meta.as_ref().map(|m| m.cwd.clone()),
        name: view.name.clone(),
        user_named: Some(view.user_named),
        created_at: Some(session.start_time().to_string()),
        updated_at: modified.clone(),
        ..Default::default()
    };
    let mut snapshot = t::SessionMetadataSnapshot::new(
        session.id().to_string(),
        session.start_time().to_string(),
        modified.unwrap_or_else(|| session.start_time().to_string()),
        false,
        false,
        Some(session.workspace_path().to_string_lossy().into_owned()),
        view.settings.cwd.to_string_lossy().into_owned(),
        mode,
        None,
        Some(workspace),
    );
    snapshot.client_name = Some(view.settings.client_name.clone());
    snapshot.summary = view.name.clone();
    snapshot.selected_model = Some(view.settings.model.clone());
    Ok(snapshot)
}

/// The path must be absolute and exist; nothing changes otherwise.
pub async fn set_working_directory(
    ctx: &Ctx,
    p: t::SessionMetadataSetWorkingDirectoryParams,
) -> Result<t::MetadataSetWorkingDirectoryResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if !std::path::Path::new(&p.working_directory).is_absolute() {
        return Err(ctx.failed(format!("Working directory must be an existing absolute path: {}", p.working_directory)));
    }
    let dir = crate::handlers::session::confine_cwd(ctx, &p.working_directory)?;
    if !dir.is_absolute() || !tokio::fs::metadata(&dir).await.map(|m| m.is_dir()).unwrap_or(false) {
        return Err(ctx.failed(format!("Working directory must be an existing absolute path: {}", p.working_directory)));
    }
    let patch = loop_engine::OptionsPatch { working_directory: Some(dir), ..Default::default() };
    session.update_options(patch).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::MetadataSetWorkingDirectoryResult { working_directory: p.working_directory })
}

/// A report whose cwd is not the session's is ignored: the session's cwd is authoritative.
pub async fn record_context_change(
    ctx: &Ctx,
    p: t::SessionMetadataRecordContextChangeParams,
) -> Result<t::MetadataRecordContextChangeResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if std::path::Path::new(&p.context.cwd) == session.view().settings.cwd {
        let context = serde_json::to_value(&p.context)
            .and_then(serde_json::from_value::<t::WorkingDirectoryContext>)
            .map_err(|e| RpcError::invalid_params(ctx.method, e))?;
        session.record_context(context);
    }
    Ok(t::MetadataRecordContextChangeResult {})
}
