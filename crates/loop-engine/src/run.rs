//! One user message of a session: its hooks and `user.message`, then turns of the one loop
//! ([`crate::turns`]) until the model is done with it.

use std::collections::HashMap;

use llm_providers::{AssistantReply, ChatRequest, ContentPart, Initiator, Message, ProviderError, UserContent};
use protocol::generated::types::{self as t, HookType, SessionMode, UserMessageDelivery};
use protocol::hooks;
use protocol::methods::{SystemMessageTransform, TransformParams};

use crate::autopilot::{StopReason, NUDGE_TEXT};
use crate::conversation::Conversation;
use crate::handle::QueuedMessage;
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;
use crate::turns::{Driver, Flow, ToolsRan, TurnSettings};

/// How often an `agentStop` hook may keep the agent going for one message.
const MAX_STOP_BLOCKS: u32 = 5;

/// The mode an `agentMode` on a message switches the session to, if any.
fn requested_mode(mode: Option<t::UserMessageAgentMode>) -> Option<SessionMode> {
    match mode? {
        t::UserMessageAgentMode::Interactive => Some(SessionMode::Interactive),
        t::UserMessageAgentMode::Plan => Some(SessionMode::Plan),
        t::UserMessageAgentMode::Autopilot => Some(SessionMode::Autopilot),
        t::UserMessageAgentMode::Shell => None,
    }
}

pub(crate) async fn run_message(ctx: &RunCtx, conv: &mut Conversation, msg: QueuedMessage) -> StopReason {
    let Some(root) = crate::spans::agent_span(ctx) else { return run_traced(ctx, conv, msg).await };
    let traced = ctx.traced(root.clone());
    let stop = run_traced(&traced, conv, msg).await;
    crate::spans::end_agent_span(ctx, root, stop);
    stop
}

async fn run_traced(ctx: &RunCtx, conv: &mut Conversation, msg: QueuedMessage) -> StopReason {
    let interaction_id = uuid::Uuid::new_v4().to_string();
    if msg.delivery != UserMessageDelivery::Idle {
        ctx.emitter().emit(t::PendingMessagesModifiedData {});
    }
    if let Some(mode) = requested_mode(msg.agent_mode) {
        let _ = ctx.handle.set_mode(mode).await;
    }
    let mut msg = msg;
    if msg.no_message {
        // A batch of no messages: one turn over the history as it is.
        return drive(ctx, conv, msg, interaction_id).await;
    }
    if conv.title.is_none() {
        let source = if ctx.view().settings.resumed { "resume" } else { "new" };
        let input = hooks::SessionStartInput { source: source.into(), initial_prompt: msg.prompt.clone() };
        let start = crate::hooks::invoke(&ctx.handle, HookType::SessionStart, input).await.unwrap_or_default();
        if let Some(context) = start.additional_context.filter(|c| !c.is_empty()) {
            // The hook's context reaches the model as its own user message, before the prompt.
            conv.push(Message::User { content: UserContent::Text(context) });
        }
    }
    let input = hooks::UserPromptSubmittedInput { prompt: msg.prompt.clone() };
    let submitted = crate::hooks::invoke(&ctx.handle, HookType::UserPromptSubmitted, input).await.unwrap_or_default();
    if submitted.decision.as_deref() == Some("block") {
        let reason = submitted.reason.unwrap_or_else(|| "The prompt was blocked by a hook.".into());
        ctx.emitter().emit_ephemeral(t::WarningData {
            warning_type: "policy_blocked".into(),
            message: reason,
            ..Default::default()
        });
        return StopReason::Rejected;
    }
    if let Some(p) = submitted.modified_prompt {
        msg.prompt = p;
    }
    // A batch's earlier messages go in first, as the context of its last (not stamped); a
    // batch's messages cannot be withdrawn.
    let in_batch = !msg.earlier.is_empty();
    for earlier in std::mem::take(&mut msg.earlier) {
        push_user_message(ctx, conv, &earlier, &interaction_id, false).await;
    }
    let event_id = push_user_message(ctx, conv, &msg, &interaction_id, true).await;
    if ctx.scope.is_none() && !in_batch {
        ctx.handle.mark_turn(&msg.message_id, &event_id, &msg.prompt);
    }
    drive(ctx, conv, msg, interaction_id).await
}

/// The turns of one message, once it is in the conversation.
async fn drive(ctx: &RunCtx, conv: &mut Conversation, msg: QueuedMessage, interaction_id: String) -> StopReason {
    let transformed = transform_sections(ctx).await;
    let mut driver =
        SessionMessage { msg, transformed, interaction_id, system_recorded: false, nudges: 0, stop_blocks: 0 };
    let interaction_id = driver.interaction_id.clone();
    let reason = crate::turns::run(ctx, conv, &mut driver, &mut 0, &interaction_id).await.reason;
    if reason == StopReason::Rejected {
        // A call the user rejected without a word ends the run as the user's own abort does in
        // the original: `abort`, then a cancellation notice, then idle.
        ctx.emitter().emit(t::AbortData { reason: t::AbortReason::UserInitiated });
        ctx.emitter().emit_ephemeral(t::InfoData {
            info_type: "cancellation".into(),
            message: "Operation cancelled by user".into(),
            ..Default::default()
        });
    }
    reason
}

/// A user message of the session through the loop: steering messages join it between turns,
/// hooks may keep it going, autopilot nudges until `task_complete`.
struct SessionMessage {
    msg: QueuedMessage,
    /// System prompt sections the client rewrote for this message.
    transformed: HashMap<String, String>,
    interaction_id: String,
    /// Every message's first call shows its system prompt (see `system_prompt`).
    system_recorded: bool,
    nudges: u32,
    stop_blocks: u32,
}

#[async_trait::async_trait]
impl Driver for SessionMessage {
    fn settings(&self, ctx: &RunCtx) -> TurnSettings {
        TurnSettings::Session(ctx.view())
    }

    async fn take_incoming(&mut self, ctx: &RunCtx, conv: &mut Conversation) {
        for steer in ctx.take_steering().await {
            push_user_message(ctx, conv, &steer, &self.interaction_id, true).await;
        }
    }

    fn system_prompt(&mut self, ctx: &RunCtx, conv: &mut Conversation, settings: &SessionSettings) -> String {
        let cwd = settings.cwd.to_string_lossy();
        let system = crate::system_prompt::build_with(
            settings.system_message.as_ref(),
            settings.prompt_vars(&cwd),
            &self.transformed,
        );
        let system = settings.with_agent_skills(system);
        if !self.system_recorded {
            // As the original: every message's first model call shows its system prompt; the
            // log keeps it only when it differs from the one it last recorded.
            self.system_recorded = true;
            let data = t::SystemMessageData {
                content: system.clone(),
                role: t::SystemMessageRole::System,
                interaction_id: Some(self.interaction_id.clone()),
                name: None,
                metadata: None,
            };
            if conv.last_system.as_deref() == Some(system.as_str()) {
                ctx.emitter().emit_ephemeral(data);
            } else {
                conv.last_system = Some(system.clone());
                ctx.emitter().emit(data);
            }
        }
        system
    }

    fn initiator(&self, turn: u32) -> Initiator {
        if turn == 0 {
            Initiator::User
        } else {
            Initiator::Agent
        }
    }

    fn request_headers(&self) -> Vec<(String, String)> {
        self.msg.request_headers.clone()
    }

    fn originating_message_id(&self) -> Option<String> {
        (!self.msg.no_message).then(|| self.msg.message_id.clone())
    }

    /// `tokens` is an estimate, which is what clients need: positive and growing. The
    /// history's size is kept as it grows rather than summed again every turn.
    fn before_call(&self, ctx: &RunCtx, tokens: crate::compaction::Tokens, req: &ChatRequest, token_limit: u64) {
        ctx.emitter().emit(t::UsageInfoData {
            token_limit,
            current_tokens: tokens.current(),
            messages_length: (req.history.len() + 1) as u64,
            system_tokens: Some(tokens.system),
            conversation_tokens: Some(tokens.conversation),
            tool_definitions_tokens: Some(tokens.tools),
            is_initial: None,
        });
    }

    async fn on_answer(&mut self, ctx: &RunCtx, conv: &mut Conversation, _reply: &AssistantReply) -> Flow {
        if ctx.view().settings.mode != SessionMode::Autopilot {
            if self.stop_blocks < MAX_STOP_BLOCKS && !ctx.cancel.is_cancelled() {
                let input = hooks::AgentStopInput {
                    stop_reason: "end_turn".into(),
                    stop_hook_active: self.stop_blocks > 0,
                    transcript_path: ctx.handle.workspace_path().join("events.jsonl").to_string_lossy().into(),
                };
                let stop = crate::hooks::invoke(&ctx.handle, HookType::AgentStop, input).await.unwrap_or_default();
                if stop.decision.as_deref() == Some("block") {
                    self.stop_blocks += 1;
                    let reason = stop.reason.unwrap_or_else(|| "Continue.".into());
                    let follow = QueuedMessage {
                        prompt: reason,
                        attachments: Vec::new(),
                        display_prompt: None,
                        ..self.msg.clone()
                    };
                    push_user_message(ctx, conv, &follow, &self.interaction_id, true).await;
                    return Flow::Continue { new_message: true };
                }
            }
            return Flow::Stop(StopReason::TaskComplete);
        }
        if self.nudges >= ctx.handle.view().settings.autopilot_max_continues || ctx.cancel.is_cancelled() {
            return Flow::Stop(StopReason::NudgeLimit);
        }
        self.nudges += 1;
        push_nudge(ctx, conv, &self.interaction_id);
        Flow::Continue { new_message: true }
    }

    fn after_tools(&mut self, ctx: &RunCtx, ran: &ToolsRan) -> Option<StopReason> {
        if let Some(summary) = &ran.completed {
            ctx.emitter().emit(t::TaskCompleteData {
                summary: Some(summary.clone()),
                success: Some(true),
                ..Default::default()
            });
            return Some(StopReason::TaskComplete);
        }
        ran.rejected.then_some(StopReason::Rejected)
    }

    /// `session.error`, then the `errorOccurred` hook.
    async fn on_failure(&mut self, ctx: &RunCtx, err: &ProviderError) {
        let provider_call_id = match err {
            ProviderError::Http { provider_call_id, .. } => provider_call_id.clone(),
            _ => None,
        };
        ctx.emitter().emit(t::ErrorData {
            error_type: err.error_type().into(),
            message: err.to_string(),
            status_code: err.status_code().map(u64::from),
            provider_call_id,
            ..Default::default()
        });
        let input =
            hooks::ErrorOccurredInput { error: err.to_string(), error_context: "model_call".into(), recoverable: true };
        crate::hooks::invoke(&ctx.handle, HookType::ErrorOccurred, input).await;
    }
}

/// Asks the client to rewrite the sections configured with `transform` (one request per
/// message). A client that fails or does not answer leaves the sections as rendered.
async fn transform_sections(ctx: &RunCtx) -> HashMap<String, String> {
    let view = ctx.view();
    let cwd = view.settings.cwd.to_string_lossy().to_string();
    let sections = crate::system_prompt::transform_requests(
        view.settings.system_message.as_ref(),
        view.settings.prompt_vars(&cwd),
    );
    let mut out = HashMap::new();
    if sections.is_empty() {
        return out;
    }
    let Some(client) = ctx.emitter().requester() else { return out };
    let params = TransformParams { session_id: ctx.handle.id().to_string(), sections };
    match crate::client::request::<SystemMessageTransform>(&*client, &params).await {
        Ok(result) => out.extend(result.sections.into_iter().map(|(id, s)| (id, s.content))),
        Err(e) => tracing::warn!(session = %ctx.handle.id(), error = %e, "systemMessage.transform failed"),
    }
    out
}

/// Autopilot: the model stopped without calling `task_complete`; tell it to keep going.
fn push_nudge(ctx: &RunCtx, conv: &mut Conversation, interaction_id: &str) {
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
    let transformed = format!("<current_datetime>{now}</current_datetime>\n\n{}", NUDGE_TEXT.trim_end());
    // A rewind point of its own, as the original lists it: later writes belong to it.
    let event_id = ctx.emitter().emit(t::UserMessageData {
        content: String::new(),
        transformed_content: Some(transformed.clone()),
        message_id: Some(uuid::Uuid::new_v4().to_string()),
        interaction_id: Some(interaction_id.to_string()),
        turn_id: Some("0".into()),
        agent_mode: Some(t::UserMessageAgentMode::Autopilot),
        is_autopilot_continuation: Some(true),
        ..Default::default()
    });
    if ctx.scope.is_none() {
        ctx.handle.file_tracker().begin_point(event_id);
    }
    conv.push(Message::User { content: UserContent::Text(transformed) });
}

/// A user message into the conversation and the log (its `user.message` event's id). `stamped`:
/// the model sees the time before it (a batch's earlier messages go without).
async fn push_user_message(
    ctx: &RunCtx,
    conv: &mut Conversation,
    msg: &QueuedMessage,
    interaction_id: &str,
    stamped: bool,
) -> String {
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
    let view = ctx.view();
    let files = ctx.deps.files(&view.settings.cwd);
    let rendered = crate::attachments::render(
        &msg.prompt,
        &msg.attachments,
        &view.settings.cwd,
        view.settings.enable_citations,
        &files,
    );
    // A selected agent's instructions ride with every prompt.
    let instructions = view.settings.selected_agent.as_ref().and_then(agent_config::agents::instructions_block);
    // Tools a departed client took with it are announced once, before the prompt.
    let notice = ctx.handle.clients().take_tools_changed_notice();
    let text = match notice {
        Some(notice) => format!("{notice}\n\n{}", rendered.text),
        None => rendered.text,
    };
    let mut transformed = match (stamped, instructions) {
        (false, _) => text,
        (true, Some(block)) => format!("<current_datetime>{now}</current_datetime>\n\n{block}\n\n{text}"),
        (true, None) => format!("<current_datetime>{now}</current_datetime>\n\n{text}"),
    };
    let input =
        hooks::UserPromptTransformedInput { prompt: msg.prompt.clone(), transformed_prompt: transformed.clone() };
    let hook = crate::hooks::invoke(&ctx.handle, HookType::UserPromptTransformed, input).await.unwrap_or_default();
    if let Some(t) = hook.modified_transformed_prompt {
        transformed = t;
    }
    if conv.title.is_none() {
        let title: String = msg.prompt.chars().take(80).collect();
        conv.title = Some(title.clone());
        // A session a client already named keeps its name.
        let named = view.name.clone();
        let shown = named.clone().unwrap_or_else(|| title.clone());
        if named.is_none() {
            ctx.emitter().emit(t::TitleChangedData { title: title.clone() });
        }
        if let Err(e) = ctx.deps.index.mark_user_message(ctx.handle.id(), &shown).await {
            tracing::warn!(session = %ctx.handle.id(), error = %e, "index update failed");
        }
        crate::workspace_yaml::write_workspace_yaml_named(
            &ctx.deps,
            &ctx.handle,
            &view.settings,
            Some(&shown),
            view.user_named,
        )
        .await;
    }
    let event_id = ctx.emitter().emit(t::UserMessageData {
        content: msg.shown().to_string(),
        transformed_content: Some(transformed.clone()),
        message_id: Some(msg.message_id.clone()),
        delivery: Some(msg.delivery),
        interaction_id: Some(interaction_id.to_string()),
        turn_id: Some("0".into()),
        attachments: (!msg.attachments.is_empty()).then(|| msg.attachments.clone()),
        agent_mode: msg.agent_mode,
        ..Default::default()
    });
    if ctx.scope.is_none() {
        ctx.handle.file_tracker().begin_point(event_id.clone());
    }
    if !msg.prompt.is_empty() {
        conv.prompts.push(msg.prompt.clone());
    }
    let content = if rendered.extra_parts.is_empty() {
        UserContent::Text(transformed)
    } else {
        let mut parts = vec![ContentPart::Text { text: transformed }];
        parts.extend(rendered.extra_parts);
        UserContent::Parts(parts)
    };
    conv.push(Message::User { content });
    if let Some(max) = view.settings.max_ai_credits {
        conv.push(Message::User { content: UserContent::Text(session_limits_status(max)) });
    }
    event_id
}

/// What the model hears after each prompt of a session with `sessionLimits`. Skipper has no
/// credit accounting of its own yet, so the whole budget remains.
fn session_limits_status(max_ai_credits: f64) -> String {
    let remaining = max_ai_credits.max(0.0);
    format!(
        "<session_limits_status>\nRemaining session limits: {} AI credits. Later session_limits_status messages \
         supersede earlier ones. Be frugal; avoid optional exploration and unnecessary tool calls.\n</session_limits_status>",
        format_credits(remaining)
    )
}

/// `30`, `29.5`: no trailing zeros.
fn format_credits(n: f64) -> String {
    let s = format!("{n:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_limits_status_reads_as_the_original_s() {
        assert_eq!(
            session_limits_status(30.0),
            "<session_limits_status>\nRemaining session limits: 30 AI credits. Later session_limits_status messages \
             supersede earlier ones. Be frugal; avoid optional exploration and unnecessary tool calls.\n\
             </session_limits_status>"
        );
        assert_eq!(format_credits(29.5), "29.5");
        assert_eq!(format_credits(0.25), "0.25");
        assert_eq!(format_credits(1.0 / 3.0), "0.33");
        assert_eq!(format_credits(100.0), "100");
    }
}
