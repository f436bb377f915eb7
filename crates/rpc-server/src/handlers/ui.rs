//! `session.ui.*`: questions for the user that a client answers. An elicitation is offered to
//! every client as `elicitation.requested` and answered by one through
//! `handlePendingElicitation`; an `exit_plan_mode` review through `handlePendingExitPlanMode`
//! (or the handler's `exitPlanMode.request`). The other `handlePending*` answers match requests this runtime
//! does not raise (user input goes out as a `userInput.request` call, not a pending event), so
//! nothing waits under any id and they answer `success: false`, as for an unknown id.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn elicitation(ctx: &Ctx, p: t::UiElicitationRequest) -> Result<t::UIElicitationResponse, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if !session.clients().union().elicitation {
        return Err(ctx.failed("Elicitation is not supported: no connected client handles elicitation requests"));
    }
    let (request_id, rx) = session.ui().register_elicitation();
    let schema = t::ElicitationRequestedSchema {
        r#type: p.requested_schema.r#type,
        properties: p.requested_schema.properties.into_iter().collect(),
        required: p.requested_schema.required,
    };
    session.emit_ephemeral(t::ElicitationRequestedData {
        request_id: request_id.clone(),
        message: p.message,
        mode: Some(t::ElicitationRequestedMode::Form),
        requested_schema: Some(schema),
        ..Default::default()
    });
    // Every elicitation-capable client leaving drops the request: that reads as a cancel.
    let answer = rx.await.unwrap_or_else(|_| t::UIElicitationResponse::new(t::UIElicitationResponseAction::Cancel));
    session.ui().forget_elicitation(&request_id);
    session.emit_ephemeral(t::ElicitationCompletedData {
        request_id,
        action: Some(completed_action(answer.action)),
        content: answer
            .content
            .clone()
            .map(|c| c.into_iter().map(|(k, v)| (k, serde_json::to_value(v).unwrap_or_default())).collect()),
    });
    Ok(answer)
}

fn completed_action(action: t::UIElicitationResponseAction) -> t::ElicitationCompletedAction {
    match action {
        t::UIElicitationResponseAction::Accept => t::ElicitationCompletedAction::Accept,
        t::UIElicitationResponseAction::Decline => t::ElicitationCompletedAction::Decline,
        t::UIElicitationResponseAction::Cancel => t::ElicitationCompletedAction::Cancel,
    }
}

pub async fn handle_pending_elicitation(
    ctx: &Ctx,
    p: t::UiHandlePendingElicitationRequest,
) -> Result<t::UIElicitationResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIElicitationResult { success: session.ui().answer_elicitation(&p.request_id, p.result) })
}

/// No request of this kind is ever pending here (see the module's note).
fn nothing_pending(ctx: &Ctx, session_id: &str) -> Result<t::UIHandlePendingResult, RpcError> {
    ctx.session(session_id)?;
    Ok(t::UIHandlePendingResult { success: false })
}

pub async fn handle_pending_user_input(
    ctx: &Ctx,
    p: t::UiHandlePendingUserInputRequest,
) -> Result<t::UIHandlePendingResult, RpcError> {
    nothing_pending(ctx, &p.session_id)
}

pub async fn handle_pending_sampling(
    ctx: &Ctx,
    p: t::UiHandlePendingSamplingRequest,
) -> Result<t::UIHandlePendingResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIHandlePendingResult { success: session.resolve_sampling(&p.request_id, p.response) })
}

/// Answers a rate-limit prompt announced by `auto_mode_switch.requested`.
pub async fn handle_pending_auto_mode_switch(
    ctx: &Ctx,
    p: t::UiHandlePendingAutoModeSwitchRequest,
) -> Result<t::UIHandlePendingResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIHandlePendingResult { success: session.ui().answer_auto_mode_switch(&p.request_id, p.response) })
}

/// Answers an `exit_plan_mode` review announced by `exit_plan_mode.requested`.
pub async fn handle_pending_exit_plan_mode(
    ctx: &Ctx,
    p: t::UiHandlePendingExitPlanModeRequest,
) -> Result<t::UIHandlePendingResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIHandlePendingResult { success: session.ui().answer_exit_plan(&p.request_id, p.response) })
}

pub async fn handle_pending_session_limits(
    ctx: &Ctx,
    p: t::UiHandlePendingSessionLimitsExhaustedRequest,
) -> Result<t::UIHandlePendingResult, RpcError> {
    nothing_pending(ctx, &p.session_id)
}

/// MCP servers' header refreshes are never asked for here (remote servers take their headers
/// from the config), so no refresh waits under any id.
pub async fn handle_pending_headers_refresh(
    ctx: &Ctx,
    p: t::SessionMcpHeadersHandlePendingHeadersRefreshRequestParams,
) -> Result<t::McpHeadersHandlePendingHeadersRefreshRequestResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::McpHeadersHandlePendingHeadersRefreshRequestResult { success: false })
}

pub async fn register_auto_mode_switch_handler(
    ctx: &Ctx,
    p: t::SessionUiRegisterDirectAutoModeSwitchHandlerParams,
) -> Result<t::UIRegisterDirectAutoModeSwitchHandlerResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIRegisterDirectAutoModeSwitchHandlerResult { handle: session.ui().register_auto_mode_handler() })
}

pub async fn unregister_auto_mode_switch_handler(
    ctx: &Ctx,
    p: t::UiUnregisterDirectAutoModeSwitchHandlerRequest,
) -> Result<t::UIUnregisterDirectAutoModeSwitchHandlerResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::UIUnregisterDirectAutoModeSwitchHandlerResult {
        unregistered: session.ui().unregister_auto_mode_handler(&p.handle),
    })
}

pub async fn ephemeral_query(ctx: &Ctx, p: t::UiEphemeralQueryRequest) -> Result<t::UIEphemeralQueryResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let answer = session.ephemeral_query(p.question).await.map_err(|e| ctx.failed(e))?;
    Ok(t::UIEphemeralQueryResult { answer })
}
