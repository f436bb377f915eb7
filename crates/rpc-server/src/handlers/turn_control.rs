//! Acting on the main loop's running turn: interrupt it (keeping what is queued or not),
//! withdraw a message from its queue or from the turn it started, add to a steering message,
//! send a batch of messages as one turn, and clear the context from inside a tool handler.

use loop_engine::{QueueOp, QueuedMessage, SteeringAppend};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;
use crate::handlers::session::{agent_mode, confine_attachments};

pub async fn interrupt_main_turn(
    ctx: &Ctx,
    p: t::SessionInterruptMainTurnParams,
) -> Result<t::InterruptMainTurnResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let flush = p.flush_queued.unwrap_or(false);
    let interrupted = session.interrupt(flush).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::InterruptMainTurnResult { interrupted })
}

/// Conditional: a message edited since it was sent (or unknown) stays, and says so.
pub async fn withdraw_message(
    ctx: &Ctx,
    p: t::SessionQueueWithdrawMessageParams,
) -> Result<t::QueueWithdrawMessageResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let w = session.withdraw(p.message_id, p.expected_prompt).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::QueueWithdrawMessageResult { removed: w.removed, interrupted: w.interrupted })
}

pub async fn append_steering(
    ctx: &Ctx,
    p: t::SessionQueueAppendSteeringParams,
) -> Result<t::QueueUpdateTextResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if ctx.tenant().is_some() {
        confine_attachments(ctx, &session, &p.attachments)?;
    }
    let add = SteeringAppend {
        message_id: p.message_id,
        expected: p.expected_prompt,
        agent_mode: agent_mode(p.agent_mode),
        prompt: p.prompt,
        display_prompt: p.display_prompt,
        attachments: p.attachments,
    };
    let state = session.queue(QueueOp::AppendSteering(add)).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::QueueUpdateTextResult { updated: state.is_ok_and(|s| s.changed) })
}

/// The batch's messages go into the conversation in order and one turn runs over them (with
/// none, one turn over the history as it is); `immediate` steers each into the running turn.
pub async fn send_messages(ctx: &Ctx, p: t::SessionSendMessagesParams) -> Result<t::SendMessagesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some(node) = ctx.follower_of(&p.session_id) {
        let running = store::StoreError::LeasedElsewhere { session: p.session_id.clone(), node };
        return Err(ctx.failed(format!("{running}; this node follows it read-only, send to that node")));
    }
    if ctx.tenant().is_some() {
        for m in &p.messages {
            confine_attachments(ctx, &session, m.attachments.as_deref().unwrap_or_default())?;
        }
    }
    let headers: Vec<(String, String)> = p.request_headers.unwrap_or_default().into_iter().collect();
    let mode = p.agent_mode.map(agent_mode);
    let mut msgs: Vec<QueuedMessage> = p
        .messages
        .into_iter()
        .map(|m| QueuedMessage {
            prompt: m.prompt,
            display_prompt: m.display_prompt,
            attachments: m.attachments.unwrap_or_default(),
            agent_mode: mode,
            request_headers: headers.clone(),
            ..Default::default()
        })
        .collect();
    let ids: Vec<String> = msgs.iter().map(|m| m.message_id.clone()).collect();
    let engine_error = |e: loop_engine::EngineError| ctx.engine_error(&e);
    if p.mode == Some(t::SendMode::Immediate) && !msgs.is_empty() {
        for m in msgs {
            session.send(m, true).await.map_err(engine_error)?;
        }
        return Ok(t::SendMessagesResult { message_ids: ids });
    }
    let batch = match msgs.pop() {
        Some(last) => QueuedMessage { earlier: msgs, ..last },
        None => QueuedMessage { no_message: true, agent_mode: mode, request_headers: headers, ..Default::default() },
    };
    if p.prepend == Some(true) {
        let state = session.queue(QueueOp::Insert { at: 0, msg: batch }).await.map_err(engine_error)?;
        state.map_err(|e| ctx.failed(e.to_string()))?;
    } else {
        session.send(batch, false).await.map_err(engine_error)?;
    }
    Ok(t::SendMessagesResult { message_ids: ids })
}

/// Refused (`-32603`, the original's text) unless one of the main loop's tool calls is in
/// flight: the clear happens when the calls are done, with the prompt as the new window's first
/// message.
pub async fn clear_context(
    ctx: &Ctx,
    p: t::SessionHistoryClearContextParams,
) -> Result<t::HistoryClearContextResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let cleared = session.clear_context(p.prompt).map_err(|e| ctx.failed(e.to_string()))?;
    Ok(t::HistoryClearContextResult { messages_cleared: cleared })
}
