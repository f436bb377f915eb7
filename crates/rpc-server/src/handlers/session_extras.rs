//! Per-session methods about what the session holds and does: its queue, activity, permission
//! mode, offered tools, and the features this runtime answers for without a service behind them
//! (visibility sync, remote steering, schedules, completions, plugins): each says truthfully
//! that nothing is there, in the shape the schema gives.

use loop_engine::{QueueError, QueueOp, QueueState};
use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INVALID_PARAMS};

use crate::ctx::Ctx;

pub async fn activity(ctx: &Ctx, p: t::SessionMetadataActivityParams) -> Result<t::SessionActivity, RpcError> {
    let a = ctx.session(&p.session_id)?.activity().await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::SessionActivity { abortable: a.abortable, has_active_work: a.has_active_work })
}

// Queue --------------------------------------------------------------------------------------

async fn queue(ctx: &Ctx, session_id: &str, op: QueueOp) -> Result<QueueState, RpcError> {
    let state = ctx.session(session_id)?.queue(op).await.map_err(|e| ctx.engine_error(&e))?;
    // The original's refusals: -32602 with its text, and a code a client can match.
    state.map_err(|e| {
        let code = match e {
            QueueError::UnknownId(_) => "unknown_id",
            QueueError::AlreadyPaused => "queue_already_paused",
        };
        RpcError { code: INVALID_PARAMS, message: e.to_string(), data: Some(serde_json::json!({ "code": code })) }
    })
}

pub async fn queue_pending(
    ctx: &Ctx,
    p: t::SessionQueuePendingItemsParams,
) -> Result<t::QueuePendingItemsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let mode = session.view().settings.mode;
    let state = queue(ctx, &p.session_id, QueueOp::Snapshot).await?;
    let items = state
        .items
        .into_iter()
        .map(|m| t::QueuePendingItems {
            id: m.message_id.clone(),
            display_text: m.shown().to_string(),
            message_id: Some(m.message_id),
            kind: t::QueuePendingItemsKind::Message,
            agent_mode: send_agent_mode(m.agent_mode, mode),
        })
        .chain(session.ui().waiting_commands().into_iter().map(|c| t::QueuePendingItems {
            id: c.request_id,
            message_id: None,
            kind: t::QueuePendingItemsKind::Command,
            display_text: c.command,
            agent_mode: send_agent_mode(None, mode),
        }))
        .collect::<Vec<_>>();
    // Steering is taken into the turn whole at a model call, so none is ever half-delivered.
    Ok(t::QueuePendingItemsResult {
        items,
        steering_messages: state.steering,
        in_flight_steering_count: Some(0),
        withdrawable_turn_message_id: session.withdrawable_turn_message(),
    })
}

pub async fn queue_remove_most_recent(
    ctx: &Ctx,
    p: t::SessionQueueRemoveMostRecentParams,
) -> Result<t::QueueRemoveMostRecentResult, RpcError> {
    // Slash commands queued behind a running one go first: they were queued while busy.
    if ctx.session(&p.session_id)?.ui().remove_most_recent_command() {
        return Ok(t::QueueRemoveMostRecentResult { removed: true });
    }
    let state = queue(ctx, &p.session_id, QueueOp::RemoveMostRecent).await?;
    Ok(t::QueueRemoveMostRecentResult { removed: state.changed })
}

pub async fn queue_clear(ctx: &Ctx, p: t::SessionQueueClearParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?.ui().clear_waiting_commands();
    queue(ctx, &p.session_id, QueueOp::Clear).await.map(|_| ())
}

pub async fn queue_move_item(ctx: &Ctx, p: t::SessionQueueMoveItemParams) -> Result<t::QueueMoveItemResult, RpcError> {
    let state = queue(ctx, &p.session_id, QueueOp::Move { id: p.id, to: p.to_position }).await?;
    Ok(t::QueueMoveItemResult { changed: state.changed })
}

pub async fn queue_remove_at(ctx: &Ctx, p: t::SessionQueueRemoveAtParams) -> Result<t::QueueRemoveAtResult, RpcError> {
    let state = queue(ctx, &p.session_id, QueueOp::Remove { id: p.id }).await?;
    Ok(t::QueueRemoveAtResult { removed: state.changed })
}

/// A queued message's new text, and the text shown for it (`displayPrompt`, else the text).
pub async fn queue_update_text(
    ctx: &Ctx,
    p: t::SessionQueueUpdateTextParams,
) -> Result<t::QueueUpdateTextResult, RpcError> {
    let op = QueueOp::UpdateText { id: p.id, prompt: p.prompt, display_prompt: p.display_prompt };
    let state = queue(ctx, &p.session_id, op).await?;
    Ok(t::QueueUpdateTextResult { updated: state.changed })
}

pub async fn queue_duplicate_at(
    ctx: &Ctx,
    p: t::SessionQueueDuplicateAtParams,
) -> Result<t::QueueDuplicateAtResult, RpcError> {
    let state = queue(ctx, &p.session_id, QueueOp::Duplicate { id: p.id }).await?;
    Ok(t::QueueDuplicateAtResult { id: state.id.unwrap_or_default() })
}

/// A new queued message; `source: "system"` is refused (it would hide the item), as in the
/// original.
pub async fn queue_insert_at(ctx: &Ctx, p: t::SessionQueueInsertAtParams) -> Result<t::QueueInsertAtResult, RpcError> {
    let m = p.message;
    if m.source.as_deref() == Some("system") {
        return Err(RpcError::new(
            INVALID_PARAMS,
            "invalid queue request: message.source must not be \"system\": inserted items must stay visible and addressable",
        ));
    }
    let session = ctx.session(&p.session_id)?;
    if ctx.tenant().is_some() {
        crate::handlers::session::confine_attachments(ctx, &session, m.attachments.as_deref().unwrap_or_default())?;
    }
    let msg = loop_engine::QueuedMessage {
        prompt: m.prompt,
        display_prompt: m.display_prompt,
        attachments: m.attachments.unwrap_or_default(),
        agent_mode: m.agent_mode.map(crate::handlers::session::agent_mode),
        request_headers: m.request_headers.unwrap_or_default().into_iter().collect(),
        delivery: t::UserMessageDelivery::Queued,
        ..Default::default()
    };
    let state = queue(ctx, &p.session_id, QueueOp::Insert { at: p.position, msg }).await?;
    Ok(t::QueueInsertAtResult { id: state.id.unwrap_or_default() })
}

pub async fn queue_send_now(ctx: &Ctx, p: t::SessionQueueSendNowParams) -> Result<t::QueueSendNowResult, RpcError> {
    let state = queue(ctx, &p.session_id, QueueOp::SendNow { id: p.id }).await?;
    Ok(t::QueueSendNowResult { steered: state.changed })
}

pub async fn queue_set_drain_paused(ctx: &Ctx, p: t::SessionQueueSetDrainPausedParams) -> Result<(), RpcError> {
    queue(ctx, &p.session_id, QueueOp::SetDrainPaused(p.paused)).await.map(|_| ())
}

/// The mode a queued message will run in: its own, else the session's.
fn send_agent_mode(own: Option<t::UserMessageAgentMode>, session: t::SessionMode) -> t::SendAgentMode {
    match loop_engine::message_mode(own, session) {
        t::UserMessageAgentMode::Interactive => t::SendAgentMode::Interactive,
        t::UserMessageAgentMode::Plan => t::SendAgentMode::Plan,
        t::UserMessageAgentMode::Autopilot => t::SendAgentMode::Autopilot,
        t::UserMessageAgentMode::Shell => t::SendAgentMode::Shell,
    }
}

// Permissions --------------------------------------------------------------------------------

pub async fn permissions_get_mode(
    ctx: &Ctx,
    p: t::SessionPermissionsGetModeParams,
) -> Result<t::PermissionsGetModeResult, RpcError> {
    let approve_all = ctx.session(&p.session_id)?.view().settings.approve_all;
    Ok(t::PermissionsGetModeResult { mode: permission_mode(approve_all) })
}

/// `manual` and `allow-all` are the session's approve-all switch. `assisted` (a model judging
/// each request) is not offered by this runtime: refused, the mode stays as it was.
pub async fn permissions_set_mode(
    ctx: &Ctx,
    p: t::SessionPermissionsSetModeParams,
) -> Result<t::PermissionsSetModeResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let enable = match p.mode {
        t::PermissionMode::Manual => false,
        t::PermissionMode::AllowAll => true,
        t::PermissionMode::Assisted => {
            let current = session.view().settings.approve_all;
            return Ok(t::PermissionsSetModeResult { success: false, mode: permission_mode(current) });
        }
    };
    session.set_approve_all(enable).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::PermissionsSetModeResult { success: true, mode: p.mode })
}

fn permission_mode(approve_all: bool) -> t::PermissionMode {
    if approve_all {
        t::PermissionMode::AllowAll
    } else {
        t::PermissionMode::Manual
    }
}

// Tools --------------------------------------------------------------------------------------

pub async fn tools_current_metadata(
    ctx: &Ctx,
    p: t::SessionToolsGetCurrentMetadataParams,
) -> Result<t::ToolsGetCurrentMetadataResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tools = ctx
        .server
        .engine
        .session_tools(&session)
        .into_iter()
        .map(|spec| t::CurrentToolMetadata {
            name: spec.name,
            description: spec.description,
            input_schema: spec.parameters.as_object().cloned(),
            ..Default::default()
        })
        .collect();
    Ok(t::ToolsGetCurrentMetadataResult { tools: Some(tools) })
}

pub async fn tools_update_subagent_settings(
    ctx: &Ctx,
    p: t::SessionToolsUpdateSubagentSettingsParams,
) -> Result<t::ToolsUpdateSubagentSettingsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.set_subagent_settings(p.subagents).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::ToolsUpdateSubagentSettingsResult {})
}

// Features without a service behind them here -----------------------------------------------

/// Sessions are local: never synced to GitHub, so never shared.
pub async fn visibility_get(ctx: &Ctx, p: t::SessionVisibilityGetParams) -> Result<t::VisibilityGetResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::VisibilityGetResult { synced: false, status: None, share_url: None })
}

pub async fn visibility_set(ctx: &Ctx, p: t::SessionVisibilitySetParams) -> Result<t::VisibilitySetResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::VisibilitySetResult { synced: false, status: None, share_url: None })
}

pub async fn completions_trigger_characters(
    ctx: &Ctx,
    p: t::SessionCompletionsGetTriggerCharactersParams,
) -> Result<t::CompletionsGetTriggerCharactersResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::CompletionsGetTriggerCharactersResult { trigger_characters: Vec::new() })
}

pub async fn completions_request(
    ctx: &Ctx,
    p: t::SessionCompletionsRequestParams,
) -> Result<t::CompletionsRequestResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::CompletionsRequestResult { items: Vec::new() })
}

/// No telemetry is sent, so there is no engagement to name.
pub async fn telemetry_engagement_id(
    ctx: &Ctx,
    p: t::SessionTelemetryGetEngagementIdParams,
) -> Result<t::SessionTelemetryEngagement, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::SessionTelemetryEngagement { engagement_id: None })
}

pub async fn plugins_list(ctx: &Ctx, p: t::SessionPluginsListParams) -> Result<t::PluginList, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::PluginList { plugins: Vec::new() })
}

pub async fn plugins_reload(ctx: &Ctx, p: t::SessionPluginsReloadParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Ok(())
}

pub async fn schedule_list(ctx: &Ctx, p: t::SessionScheduleListParams) -> Result<t::ScheduleList, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::ScheduleList { entries: Vec::new() })
}

/// No schedule exists, so stopping one finds nothing.
pub async fn schedule_stop(ctx: &Ctx, p: t::SessionScheduleStopParams) -> Result<t::ScheduleStopResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::ScheduleStopResult { entry: None })
}

/// Remote sessions need GitHub's service: `off` is answered as done; exporting or steering
/// from GitHub is refused with the reason.
pub async fn remote_enable(ctx: &Ctx, p: t::SessionRemoteEnableParams) -> Result<t::RemoteEnableResult, RpcError> {
    ctx.session(&p.session_id)?;
    match p.mode {
        None | Some(t::RemoteSessionMode::Off) => Ok(t::RemoteEnableResult { url: None, remote_steerable: false }),
        Some(_) => Err(ctx.failed("remote sessions are not available: this runtime is not connected to GitHub")),
    }
}

pub async fn remote_disable(ctx: &Ctx, p: t::SessionRemoteDisableParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Ok(())
}

pub async fn remote_notify_steerable(
    ctx: &Ctx,
    p: t::SessionRemoteNotifySteerableChangedParams,
) -> Result<t::RemoteNotifySteerableChangedResult, RpcError> {
    ctx.session(&p.session_id)?.notify_remote_steerable(p.remote_steerable);
    Ok(t::RemoteNotifySteerableChangedResult {})
}

// Server-wide remote control: never connected here ------------------------------------------

pub async fn remote_control_status(
    _ctx: &Ctx,
    _p: protocol::rpc::NoParams,
) -> Result<t::RemoteControlStatusResult, RpcError> {
    Ok(t::RemoteControlStatusResult { status: t::RemoteControlStatus::Off })
}

pub async fn remote_control_steering(
    _ctx: &Ctx,
    _p: t::SessionsSetRemoteControlSteeringRequest,
) -> Result<t::RemoteControlStatusResult, RpcError> {
    Ok(t::RemoteControlStatusResult { status: t::RemoteControlStatus::Off })
}

pub async fn remote_control_stop(
    _ctx: &Ctx,
    _p: t::SessionsStopRemoteControlRequest,
) -> Result<t::RemoteControlStopResult, RpcError> {
    Ok(t::RemoteControlStopResult { status: t::RemoteControlStatus::Off, stopped: false })
}

pub async fn remote_control_transfer(
    _ctx: &Ctx,
    _p: t::SessionsTransferRemoteControlRequest,
) -> Result<t::RemoteControlTransferResult, RpcError> {
    Ok(t::RemoteControlTransferResult { status: t::RemoteControlStatus::Off, transferred: false })
}

pub async fn remote_control_start(
    ctx: &Ctx,
    p: t::SessionsStartRemoteControlRequest,
) -> Result<t::RemoteControlStatusResult, RpcError> {
    if !ctx.visible(&p.session_id) || ctx.server.engine.get(&p.session_id).is_none() {
        return Err(ctx.not_found(&p.session_id));
    }
    Err(ctx.failed("remote control is not available: this runtime is not connected to GitHub"))
}
