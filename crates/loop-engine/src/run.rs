//! One user message through the loop: `user.message`, then turns (one model call each) until a
//! reply asks for no tools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use llm_providers::{
    AssistantReply, ChatRequest, ChatResponse, Initiator, Message, ModelEvent, ProviderError, ToolCall, ToolContent,
    UserContent,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tools::INTERRUPTED_TEXT;

use crate::autopilot::{StopReason, MAX_NUDGES, NUDGE_TEXT};
use crate::dispatch::{self, CallOutcome};
use crate::emitter::Emitter;
use crate::handle::{QueuedMessage, SessionHandle, SessionInput, SessionView};
use crate::Deps;

/// How often an `agentStop` hook may keep the agent going for one message.
const MAX_STOP_BLOCKS: u32 = 5;

/// The conversation a session's actor owns and lends to one run at a time.
pub(crate) struct Conversation {
    pub messages: Vec<Message>,
    pub title: Option<String>,
}

/// What one run may use: the session's handle (events, settings, the actor), the engine's
/// dependencies and the batch's cancellation.
pub(crate) struct RunCtx {
    pub handle: SessionHandle,
    pub deps: Arc<Deps>,
    pub cancel: CancellationToken,
    /// The user rejected a tool call in the current turn: the run ends after it.
    user_rejected: Arc<AtomicBool>,
}

impl RunCtx {
    pub fn new(handle: SessionHandle, deps: Arc<Deps>, cancel: CancellationToken) -> Self {
        Self { handle, deps, cancel, user_rejected: Arc::new(AtomicBool::new(false)) }
    }

    /// The permission gate of this run.
    pub fn gate(&self) -> crate::permission::Gate {
        crate::permission::Gate {
            handle: self.handle.clone(),
            cancel: self.cancel.clone(),
            user_rejected: self.user_rejected.clone(),
        }
    }

    pub fn emitter(&self) -> &Emitter {
        self.handle.emitter()
    }

    pub fn view(&self) -> Arc<SessionView> {
        self.handle.view()
    }

    /// Whether the user rejected a call since the last check (and clears it).
    fn take_user_rejection(&self) -> bool {
        self.user_rejected.swap(false, Ordering::AcqRel)
    }

    async fn take_steering(&self) -> Vec<QueuedMessage> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.handle.tell(SessionInput::RunTakeSteering { reply: tx }).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }
}

pub(crate) async fn run_message(ctx: &RunCtx, conv: &mut Conversation, msg: QueuedMessage) -> StopReason {
    let interaction_id = uuid::Uuid::new_v4().to_string();
    if msg.delivery != "idle" {
        ctx.emitter().emit("pending_messages.modified", json!({}), true);
    }
    if let Some(mode) = msg.agent_mode.as_deref().filter(|m| ["interactive", "plan", "autopilot"].contains(m)) {
        let _ = ctx.handle.set_mode(mode).await;
    }
    let mut msg = msg;
    if conv.title.is_none() {
        let source = if ctx.view().settings.resumed { "resume" } else { "new" };
        let start =
            crate::hooks::invoke(&ctx.handle, "sessionStart", json!({"source": source, "initialPrompt": msg.prompt}))
                .await;
        if let Some(context) = crate::hooks::str_field(&start, "additionalContext").filter(|c| !c.is_empty()) {
            // The hook's context reaches the model as its own user message, before the prompt.
            conv.messages.push(Message::User { content: UserContent::Text(context.to_string()) });
        }
    }
    let submitted = crate::hooks::invoke(&ctx.handle, "userPromptSubmitted", json!({"prompt": msg.prompt})).await;
    if crate::hooks::str_field(&submitted, "decision") == Some("block") {
        let reason = crate::hooks::str_field(&submitted, "reason").unwrap_or("The prompt was blocked by a hook.");
        ctx.emitter().emit("session.warning", json!({"warningType": "policy_blocked", "message": reason}), true);
        return StopReason::Rejected;
    }
    if let Some(p) = crate::hooks::str_field(&submitted, "modifiedPrompt") {
        msg.prompt = p.to_string();
    }
    push_user_message(ctx, conv, &msg, &interaction_id).await;

    let transformed = transform_sections(ctx).await;
    let mut turn: u32 = 0;
    let mut nudges: u32 = 0;
    let mut stop_blocks: u32 = 0;
    loop {
        for steer in ctx.take_steering().await {
            push_user_message(ctx, conv, &steer, &interaction_id).await;
        }
        let view = ctx.view();
        let settings = &view.settings;
        let turn_id = turn.to_string();
        ctx.emitter().emit(
            "assistant.turn_start",
            json!({"turnId": turn_id, "interactionId": interaction_id, "model": settings.model}),
            false,
        );
        let tool_specs = dispatch::tool_specs(&ctx.deps, settings);
        let offered: Vec<String> = tool_specs.iter().map(|t| t.name.clone()).collect();
        let mut messages = Vec::with_capacity(conv.messages.len() + 1);
        let cwd = settings.cwd.to_string_lossy().to_string();
        messages.push(Message::System {
            content: crate::system_prompt::build_with(settings.system_message.as_ref(), &cwd, &transformed),
        });
        messages.extend(conv.messages.iter().cloned());
        let req = ChatRequest {
            model: settings.model.clone(),
            messages,
            tools: tool_specs,
            stream: settings.streaming,
            initiator: if turn == 0 { Initiator::User } else { Initiator::Agent },
            interaction_id: interaction_id.clone(),
            session_id: ctx.handle.id().to_string(),
            extra_headers: msg.request_headers.clone(),
        };
        emit_usage_info(ctx, &req);

        let message_id = uuid::Uuid::new_v4().to_string();
        let result = call_model(ctx, req, &turn_id, &message_id, settings.streaming).await;
        let resp = match result {
            Ok(resp) => resp,
            Err(ProviderError::Cancelled) => {
                end_turn(ctx, &turn_id);
                return StopReason::Aborted;
            }
            Err(err) => {
                end_turn(ctx, &turn_id);
                let mut data = json!({"errorType": err.error_type(), "message": err.to_string()});
                if let Some(code) = err.status_code() {
                    data["statusCode"] = json!(code);
                }
                if let ProviderError::Http { provider_call_id: Some(id), .. } = &err {
                    data["providerCallId"] = json!(id);
                }
                ctx.emitter().emit("session.error", data, false);
                crate::hooks::invoke(
                    &ctx.handle,
                    "errorOccurred",
                    json!({"error": err.to_string(), "errorContext": "model_call", "recoverable": true}),
                )
                .await;
                return StopReason::Error;
            }
        };

        ctx.emitter().emit(
            "assistant.usage",
            json!({
                "model": resp.model.clone().unwrap_or_else(|| settings.model.clone()),
                "inputTokens": resp.usage.input_tokens,
                "outputTokens": resp.usage.output_tokens,
                "cacheReadTokens": resp.usage.cache_read_tokens,
                "cacheWriteTokens": resp.usage.cache_write_tokens,
                "cost": 0,
                "duration": resp.duration_ms,
                "initiator": if turn == 0 { "user" } else { "agent" },
                "apiCallId": resp.api_call_id,
                "providerCallId": resp.provider_call_id,
            }),
            true,
        );
        let reply = merge_replies(&resp);
        let tool_requests: Vec<Value> = reply
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "toolCallId": c.id,
                    "name": c.name,
                    "arguments": serde_json::from_str::<Value>(&c.arguments).unwrap_or(Value::String(c.arguments.clone())),
                    "type": "function",
                })
            })
            .collect();
        let mut data = json!({
            "messageId": message_id,
            "content": reply.content,
            "toolRequests": tool_requests,
            "originatingMessageId": msg.message_id,
            "model": settings.model,
            "interactionId": interaction_id,
            "turnId": turn_id,
            "outputTokens": resp.usage.output_tokens,
        });
        if let Some(id) = &resp.api_call_id {
            data["apiCallId"] = json!(id);
        }
        if let Some(r) = &reply.reasoning {
            data["reasoningText"] = json!(r);
            ctx.emitter().emit("assistant.reasoning", json!({"reasoningId": message_id, "content": r}), false);
        }
        ctx.emitter().emit("assistant.message", data, false);
        conv.messages.push(crate::history::assistant_message(reply.content.clone(), reply.tool_calls.clone()));

        if reply.tool_calls.is_empty() {
            end_turn(ctx, &turn_id);
            if ctx.view().settings.mode != "autopilot" {
                if stop_blocks < MAX_STOP_BLOCKS && !ctx.cancel.is_cancelled() {
                    let stop = crate::hooks::invoke(
                        &ctx.handle,
                        "agentStop",
                        json!({"stopReason": "end_turn", "stop_hook_active": stop_blocks > 0,
                               "transcriptPath": ctx.handle.workspace_path().join("events.jsonl").to_string_lossy()}),
                    )
                    .await;
                    if crate::hooks::str_field(&stop, "decision") == Some("block") {
                        stop_blocks += 1;
                        let reason = crate::hooks::str_field(&stop, "reason").unwrap_or("Continue.").to_string();
                        let follow = QueuedMessage { prompt: reason, attachments: Vec::new(), ..msg.clone() };
                        push_user_message(ctx, conv, &follow, &interaction_id).await;
                        turn = 0;
                        continue;
                    }
                }
                return StopReason::TaskComplete;
            }
            if nudges >= MAX_NUDGES || ctx.cancel.is_cancelled() {
                return StopReason::NudgeLimit;
            }
            nudges += 1;
            push_nudge(ctx, conv, &interaction_id);
            turn = 0;
            continue;
        }

        let outcomes = dispatch::run_calls(ctx, &reply.tool_calls, &turn_id, settings, &offered).await;
        let mut rejected = ctx.take_user_rejection();
        let mut completed: Option<String> = None;
        let mut image_messages = Vec::new(); // images and hook guidance, after the tool results
        let mut rewritten: Vec<(String, String)> = Vec::new();
        for (call, outcome) in reply.tool_calls.iter().zip(outcomes) {
            let text = match outcome {
                CallOutcome::Done { text, rejected: r, task_complete, images, modified_args, guidance } => {
                    if let Some(g) = guidance {
                        image_messages.push(Message::User { content: UserContent::Text(g) });
                    }
                    if let Some(a) = modified_args {
                        rewritten.push((call.id.clone(), a));
                    }
                    rejected |= r;
                    completed = completed.or(task_complete);
                    if !images.is_empty() {
                        image_messages.push(image_message(call, &settings.cwd, images));
                    }
                    text
                }
                CallOutcome::Interrupted => INTERRUPTED_TEXT.to_string(),
            };
            conv.messages.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text(text) });
        }
        // Images and hook guidance cannot ride in tool messages; they follow as user messages,
        // as the original does.
        conv.messages.extend(image_messages);
        if !rewritten.is_empty() {
            rewrite_call_arguments(&mut conv.messages, &rewritten);
        }
        if let Some(summary) = &completed {
            ctx.emitter().emit("session.task_complete", json!({"summary": summary, "success": true}), false);
        }
        end_turn(ctx, &turn_id);
        if ctx.cancel.is_cancelled() {
            return StopReason::Aborted;
        }
        if completed.is_some() {
            return StopReason::TaskComplete;
        }
        if rejected {
            return StopReason::Rejected;
        }
        turn += 1;
    }
}

/// A `preToolUse` hook changed a call's arguments: the model sees the call as it ran.
fn rewrite_call_arguments(messages: &mut [Message], rewritten: &[(String, String)]) {
    for m in messages.iter_mut().rev() {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls.iter_mut() {
                if let Some((_, args)) = rewritten.iter().find(|(id, _)| *id == c.id) {
                    c.arguments = args.clone();
                }
            }
            return;
        }
    }
}

/// `Image file at path <p>` plus the image, for a tool call that produced one.
fn image_message(call: &ToolCall, cwd: &std::path::Path, images: Vec<String>) -> Message {
    let arg_path = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .and_then(|a| a.get("path").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    let path = if std::path::Path::new(&arg_path).is_absolute() {
        arg_path
    } else {
        cwd.join(&arg_path).to_string_lossy().to_string()
    };
    let mut parts = vec![llm_providers::ContentPart::Text { text: format!("Image file at path {path}") }];
    parts.extend(
        images
            .into_iter()
            .map(|url| llm_providers::ContentPart::ImageUrl { image_url: llm_providers::ImageUrl { url } }),
    );
    Message::User { content: UserContent::Parts(parts) }
}

/// Asks the client to rewrite the sections configured with `transform` (one request per
/// message). A client that fails or does not answer leaves the sections as rendered.
async fn transform_sections(ctx: &RunCtx) -> std::collections::HashMap<String, String> {
    let view = ctx.view();
    let cwd = view.settings.cwd.to_string_lossy().to_string();
    let sections = crate::system_prompt::transform_requests(view.settings.system_message.as_ref(), &cwd);
    let mut out = std::collections::HashMap::new();
    if sections.is_empty() {
        return out;
    }
    let Some(client) = ctx.emitter().requester() else { return out };
    let params = json!({"sessionId": ctx.handle.id(), "sections": sections});
    match client.request("systemMessage.transform", params).await {
        Ok(result) => {
            if let Some(map) = result.get("sections").and_then(Value::as_object) {
                for (id, v) in map {
                    if let Some(c) = v.get("content").and_then(Value::as_str) {
                        out.insert(id.clone(), c.to_string());
                    }
                }
            }
        }
        Err(e) => tracing::warn!(session = %ctx.handle.id(), error = %e, "systemMessage.transform failed"),
    }
    out
}

/// Autopilot: the model stopped without calling `task_complete`; tell it to keep going.
fn push_nudge(ctx: &RunCtx, conv: &mut Conversation, interaction_id: &str) {
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
    let transformed = format!("<current_datetime>{now}</current_datetime>\n\n{}", NUDGE_TEXT.trim_end());
    ctx.emitter().emit(
        "user.message",
        json!({
            "content": "",
            "transformedContent": transformed,
            "messageId": uuid::Uuid::new_v4().to_string(),
            "interactionId": interaction_id,
            "turnId": "0",
            "agentMode": "autopilot",
            "isAutopilotContinuation": true,
        }),
        false,
    );
    conv.messages.push(Message::User { content: UserContent::Text(transformed) });
}

fn end_turn(ctx: &RunCtx, turn_id: &str) {
    ctx.emitter().emit("assistant.turn_end", json!({"turnId": turn_id}), false);
}

async fn push_user_message(ctx: &RunCtx, conv: &mut Conversation, msg: &QueuedMessage, interaction_id: &str) {
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
    let view = ctx.view();
    let rendered = crate::attachments::render(&msg.prompt, &msg.attachments, &view.settings.cwd);
    let mut transformed = format!("<current_datetime>{now}</current_datetime>\n\n{}", rendered.text);
    let hook = crate::hooks::invoke(
        &ctx.handle,
        "userPromptTransformed",
        json!({"prompt": msg.prompt, "transformedPrompt": transformed}),
    )
    .await;
    if let Some(t) = crate::hooks::str_field(&hook, "modifiedTransformedPrompt") {
        transformed = t.to_string();
    }
    if conv.title.is_none() {
        let title: String = msg.prompt.chars().take(80).collect();
        conv.title = Some(title.clone());
        ctx.emitter().emit("session.title_changed", json!({"title": title}), true);
        if let Err(e) = ctx.deps.index.mark_user_message(ctx.handle.id(), &title).await {
            tracing::warn!(session = %ctx.handle.id(), error = %e, "index update failed");
        }
        crate::write_workspace_yaml(&ctx.deps, &ctx.handle, &view.settings, Some(&title)).await;
    }
    let mut data = json!({
        "content": msg.prompt,
        "transformedContent": transformed,
        "messageId": msg.message_id,
        "delivery": msg.delivery,
        "interactionId": interaction_id,
        "turnId": "0",
    });
    if !msg.attachments.is_empty() {
        data["attachments"] = json!(msg.attachments);
    }
    if let Some(mode) = &msg.agent_mode {
        data["agentMode"] = json!(mode);
    }
    ctx.emitter().emit("user.message", data, false);
    let content = if rendered.extra_parts.is_empty() {
        UserContent::Text(transformed)
    } else {
        let mut parts = vec![llm_providers::ContentPart::Text { text: transformed }];
        parts.extend(rendered.extra_parts);
        UserContent::Parts(parts)
    };
    conv.messages.push(Message::User { content });
}

fn emit_usage_info(ctx: &RunCtx, req: &ChatRequest) {
    // An estimate (4 bytes per token) is what clients need: positive and growing. It is summed
    // from the texts instead of serialising the whole history a second time every turn.
    let bytes: usize = req.messages.iter().map(message_bytes).sum();
    let tool_bytes: usize =
        req.tools.iter().map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len()).sum();
    let system_bytes = match req.messages.first() {
        Some(Message::System { content }) => content.len(),
        _ => 0,
    };
    ctx.emitter().emit(
        "session.usage_info",
        json!({
            "tokenLimit": ctx.deps.context_window(&req.model),
            "currentTokens": (bytes + tool_bytes) / 4,
            "messagesLength": req.messages.len(),
            "systemTokens": system_bytes / 4,
            "conversationTokens": bytes.saturating_sub(system_bytes) / 4,
            "toolDefinitionsTokens": tool_bytes / 4,
        }),
        true,
    );
}

/// Rough size of a message as the model sees it (text, call names and arguments).
fn message_bytes(m: &Message) -> usize {
    let parts = |p: &[llm_providers::ContentPart]| -> usize {
        p.iter()
            .map(|c| match c {
                llm_providers::ContentPart::Text { text } => text.len(),
                llm_providers::ContentPart::ImageUrl { image_url } => image_url.url.len(),
            })
            .sum()
    };
    match m {
        Message::System { content } => content.len(),
        Message::User { content: UserContent::Text(t) } => t.len(),
        Message::User { content: UserContent::Parts(p) } => parts(p),
        Message::Assistant { content, tool_calls } => {
            content.as_ref().map_or(0, String::len)
                + tool_calls.iter().map(|c| c.id.len() + c.name.len() + c.arguments.len()).sum::<usize>()
        }
        Message::Tool { content: ToolContent::Text(t), tool_call_id } => t.len() + tool_call_id.len(),
        Message::Tool { content: ToolContent::Parts(p), tool_call_id } => parts(p) + tool_call_id.len(),
    }
}

/// Calls the model, turning its progress into ephemeral events as it streams.
async fn call_model(
    ctx: &RunCtx,
    req: ChatRequest,
    turn_id: &str,
    message_id: &str,
    streaming: bool,
) -> Result<ChatResponse, ProviderError> {
    let model = req.model.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = ctx.deps.model.chat(req, tx, ctx.cancel.clone());
    tokio::pin!(call);
    let mut started = false;
    let mut on_event = |ev: ModelEvent| match ev {
        ModelEvent::Retry { status, reason, message, .. } => {
            let mut failure = json!({
                "source": "top_level",
                "model": model,
                "failureKind": if status.is_some() { "api" } else { "transport" },
                "errorMessage": message,
            });
            if let Some(code) = status {
                failure["statusCode"] = json!(code);
            }
            ctx.emitter().emit("model.call_failure", failure, true);
            ctx.emitter().emit(
                "assistant.turn_retry",
                json!({"turnId": turn_id, "model": model, "reason": reason.as_str()}),
                true,
            );
        }
        _ if !streaming => {}
        ModelEvent::TextDelta { text, .. } => {
            if !started {
                started = true;
                ctx.emitter().emit("assistant.message_start", json!({"messageId": message_id}), true);
            }
            ctx.emitter().emit("assistant.message_delta", json!({"messageId": message_id, "deltaContent": text}), true);
        }
        ModelEvent::ReasoningDelta { text } => {
            ctx.emitter().emit(
                "assistant.reasoning_delta",
                json!({"reasoningId": message_id, "deltaContent": text}),
                true,
            );
        }
        ModelEvent::ToolCallDelta { id, name, arguments, .. } => {
            let mut d = json!({"toolType": "function", "inputDelta": arguments});
            if let Some(id) = id {
                d["toolCallId"] = json!(id);
            }
            if let Some(name) = name {
                d["toolName"] = json!(name);
            }
            ctx.emitter().emit("assistant.tool_call_delta", d, true);
        }
        ModelEvent::Bytes { total } => {
            ctx.emitter().emit("assistant.streaming_delta", json!({"totalResponseSizeBytes": total}), true);
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

/// Several choices in one reply are sequential assistant messages of one turn; the client sends
/// them back as one message (text concatenated, tool calls in order).
fn merge_replies(resp: &ChatResponse) -> AssistantReply {
    let mut out = AssistantReply::default();
    for r in &resp.replies {
        out.content.push_str(&r.content);
        out.tool_calls.extend(r.tool_calls.iter().cloned());
        if let Some(reason) = &r.reasoning {
            out.reasoning.get_or_insert_with(String::new).push_str(reason);
        }
        out.finish_reason = r.finish_reason.clone().or(out.finish_reason.take());
    }
    out
}

/// After a panic mid-run: every tool call in history must have exactly one result.
pub(crate) fn repair(messages: &mut Vec<Message>) {
    let Some(pos) = messages.iter().rposition(|m| matches!(m, Message::Assistant { .. })) else { return };
    let Message::Assistant { tool_calls, .. } = &messages[pos] else { return };
    let calls: Vec<ToolCall> = tool_calls.clone();
    let answered: Vec<String> = messages[pos + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    for c in calls {
        if !answered.contains(&c.id) {
            messages.push(Message::Tool { tool_call_id: c.id, content: ToolContent::Text(INTERRUPTED_TEXT.into()) });
        }
    }
}
