//! One model call, with its progress turned into ephemeral events as it streams: deltas of
//! text, reasoning and tool calls, response size, and retries; `model.call_start` before it and
//! `model.call_finished` after it, as the original marks each logical dispatch.

use std::collections::HashMap;

use llm_providers::{ChatRequest, ChatResponse, ModelClient, ModelEvent, ProviderError};
use protocol::generated::types as t;

use crate::run_ctx::RunCtx;

/// Calls the model. Events go out as they arrive, before the call returns.
/// `model` is the session's name for the model (what events show); `req.model` is the name the
/// provider knows it by.
pub(crate) async fn call_model(
    ctx: &RunCtx,
    client: &dyn ModelClient,
    req: ChatRequest,
    model: &str,
    turn_id: &str,
    message_id: &str,
    streaming: bool,
) -> Result<ChatResponse, ProviderError> {
    if let Some(meter) = ctx.deps.meter.get() {
        tokio::select! {
            admitted = meter.admit_model_call(ctx.handle.id()) => admitted?,
            _ = ctx.cancel.cancelled() => return Err(ProviderError::Cancelled),
        }
    }
    let span = crate::spans::chat_span(ctx, &req, model);
    let interaction_id = req.interaction_id.clone();
    ctx.emitter().emit(t::ModelCallStartData {
        turn_id: turn_id.to_string(),
        model: Some(model.to_string()),
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let result = stream_call(ctx, client, req, model, turn_id, message_id, streaming).await;
    let (outcome, edits) = match &result {
        Ok(resp) => (t::ModelCallFinishedOutcome::Success, Some(asks_for_file_edit(resp))),
        Err(ProviderError::Cancelled) => (t::ModelCallFinishedOutcome::Cancelled, None),
        Err(_) => (t::ModelCallFinishedOutcome::Error, None),
    };
    let mut finished = t::ModelCallFinishedData::new(
        turn_id.to_string(),
        started.elapsed().as_secs_f64() * 1000.0,
        outcome,
        FILE_EDIT_CLASSIFIER_VERSION,
    );
    finished.interaction_id = (!interaction_id.is_empty()).then_some(interaction_id);
    finished.contains_built_in_file_edit_request = edits;
    ctx.emitter().emit(finished);
    crate::spans::end_chat_span(ctx, span, &result);
    result
}

/// The built-in tools that edit files, by the names the model calls them. Version 1 of the
/// classification is by name alone, as the original's (`editClassifierVersion: 1`).
const FILE_EDIT_TOOLS: &[&str] = &["edit", "create", "apply_patch"];
const FILE_EDIT_CLASSIFIER_VERSION: u64 = 1;

fn asks_for_file_edit(resp: &ChatResponse) -> bool {
    resp.replies.iter().flat_map(|r| &r.tool_calls).any(|c| FILE_EDIT_TOOLS.contains(&c.name.as_str()))
}

async fn stream_call(
    ctx: &RunCtx,
    client: &dyn ModelClient,
    req: ChatRequest,
    model: &str,
    turn_id: &str,
    message_id: &str,
    streaming: bool,
) -> Result<ChatResponse, ProviderError> {
    let model = model.to_string();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = client.chat(req, tx, ctx.cancel.clone());
    tokio::pin!(call);
    let mut started = false;
    // Only a tool call's first fragment names it; later ones carry just its position.
    let mut call_ids: HashMap<(usize, usize), String> = HashMap::new();
    let emitter = ctx.emitter();
    let mut on_event = |ev: ModelEvent| match ev {
        ModelEvent::Retry { status, reason, message, .. } => {
            let mut failure = t::ModelCallFailureData::new(t::ModelCallFailureSource::TopLevel);
            failure.model = Some(model.clone());
            failure.failure_kind =
                Some(if status.is_some() { t::ModelCallFailureKind::Api } else { t::ModelCallFailureKind::Transport });
            failure.error_message = Some(message);
            failure.status_code = status.map(u64::from);
            emitter.emit(failure);
            emitter.emit(t::AssistantTurnRetryData {
                turn_id: turn_id.to_string(),
                model: Some(model.clone()),
                reason: Some(reason.as_str().to_string()),
            });
        }
        _ if !streaming => {}
        ModelEvent::TextDelta { text, .. } => {
            if !started {
                started = true;
                emitter.emit(t::AssistantMessageStartData { message_id: message_id.to_string(), phase: None });
            }
            emitter.emit(t::AssistantMessageDeltaData {
                message_id: message_id.to_string(),
                delta_content: text,
                parent_tool_call_id: None,
            });
        }
        ModelEvent::ReasoningDelta { text } => {
            emitter.emit(t::AssistantReasoningDeltaData { reasoning_id: message_id.to_string(), delta_content: text });
        }
        ModelEvent::ToolCallDelta { choice, index, id, name, arguments } => {
            if let Some(id) = id {
                call_ids.insert((choice, index), id);
            }
            // A fragment of a call whose id never came cannot be attributed; the assembled
            // call still reaches `assistant.message`.
            if let Some(id) = call_ids.get(&(choice, index)) {
                emitter.emit(t::AssistantToolCallDeltaData {
                    tool_call_id: id.clone(),
                    tool_name: name,
                    tool_type: Some(t::AssistantMessageToolRequestType::Function),
                    input_delta: arguments,
                });
            }
        }
        ModelEvent::Bytes { total } => {
            emitter.emit(t::AssistantStreamingDeltaData { total_response_size_bytes: total });
        }
    };
    let result = loop {
        tokio::select! {
            biased;
            Some(ev) = rx.recv() => on_event(ev),
            res = &mut call => break res,
        }
    };
    while let Ok(ev) = rx.try_recv() {
        on_event(ev);
    }
    if ctx.cancel.is_cancelled() {
        return Err(ProviderError::Cancelled);
    }
    result
}
