//! One user message through the loop: `user.message`, then turns (one model call each) until a
//! reply asks for no tools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use llm_providers::{
    AssistantReply, ChatRequest, ChatResponse, ContentPart, ImageUrl, Initiator, Message, ProviderError,
    ReasoningBlocks, ToolCall, ToolContent, UserContent,
};
use protocol::extensions::{UsageRecord, UsageRecordData};
use protocol::generated::types::{self as t, HookType, SessionMode, UserMessageDelivery};
use protocol::hooks;
use protocol::methods::{SystemMessageTransform, TransformParams};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tools::INTERRUPTED_TEXT;

use crate::autopilot::{StopReason, MAX_NUDGES, NUDGE_TEXT};
pub(crate) use crate::conversation::Conversation;
use crate::dispatch::{self, CallOutcome};
use crate::handle::{QueuedMessage, SessionHandle, SessionInput, SessionView};
use crate::Deps;

/// How long a model call waits for MCP servers that are still starting.
pub(crate) const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How often an `agentStop` hook may keep the agent going for one message.
const MAX_STOP_BLOCKS: u32 = 5;

/// What one run may use: the session's handle (events, settings, the actor), the engine's
/// dependencies and the batch's cancellation.
pub(crate) struct RunCtx {
    pub handle: SessionHandle,
    pub deps: Arc<Deps>,
    pub cancel: CancellationToken,
    /// The user rejected a tool call in the current turn: the run ends after it.
    user_rejected: Arc<AtomicBool>,
    /// Set when this run is a sub-agent's.
    pub scope: Option<Arc<crate::subagent::AgentScope>>,
    /// The `invoke_agent` span this run's spans belong under (file telemetry on).
    pub trace: Option<crate::telemetry::Span>,
    /// A custom agent's own MCP servers, beside the session's.
    pub agent_mcp: Option<mcp_client::McpHost>,
}

impl RunCtx {
    pub fn new(handle: SessionHandle, deps: Arc<Deps>, cancel: CancellationToken) -> Self {
        Self {
            handle,
            deps,
            cancel,
            user_rejected: Arc::new(AtomicBool::new(false)),
            scope: None,
            trace: None,
            agent_mcp: None,
        }
    }

    /// This context with an agent's own MCP servers.
    pub(crate) fn with_agent_mcp(&self, host: mcp_client::McpHost) -> Self {
        Self { agent_mcp: Some(host), ..self.traced_as(self.trace.clone()) }
    }

    /// The MCP tool a call names, and the host serving it: the agent's own servers first.
    pub(crate) fn mcp_tool(&self, name: &str) -> Option<(mcp_client::McpHost, mcp_client::McpTool)> {
        self.agent_mcp
            .iter()
            .chain(std::iter::once(self.handle.mcp()))
            .find_map(|host| host.tools().into_iter().find(|t| t.qualified == name).map(|tool| (host.clone(), tool)))
    }

    /// This context with the span its work is traced under.
    fn traced(&self, trace: crate::telemetry::Span) -> Self {
        self.traced_as(Some(trace))
    }

    fn traced_as(&self, trace: Option<crate::telemetry::Span>) -> Self {
        Self {
            handle: self.handle.clone(),
            deps: self.deps.clone(),
            cancel: self.cancel.clone(),
            user_rejected: self.user_rejected.clone(),
            scope: self.scope.clone(),
            trace,
            agent_mcp: self.agent_mcp.clone(),
        }
    }

    /// The context of a sub-agent started from this run: cancelled with it.
    pub fn for_subagent(&self, scope: crate::subagent::AgentScope) -> Self {
        Self {
            handle: self.handle.clone(),
            deps: self.deps.clone(),
            cancel: self.cancel.child_token(),
            user_rejected: Arc::new(AtomicBool::new(false)),
            scope: Some(Arc::new(scope)),
            trace: self.trace.clone(),
            agent_mcp: None,
        }
    }

    /// The permission gate of this run.
    pub fn gate(&self) -> crate::permission::Gate {
        crate::permission::Gate {
            handle: self.handle.clone(),
            cancel: self.cancel.clone(),
            user_rejected: self.user_rejected.clone(),
        }
    }

    /// The session's emitter, tagging a sub-agent's events.
    pub fn emitter(&self) -> crate::subagent::ScopedEmitter<'_> {
        crate::subagent::ScopedEmitter { emitter: self.handle.emitter(), scope: self.scope.as_deref() }
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
    let Some(root) = crate::telemetry::agent_span(ctx) else { return run_traced(ctx, conv, msg).await };
    let traced = ctx.traced(root.clone());
    let stop = run_traced(&traced, conv, msg).await;
    crate::telemetry::end_agent_span(ctx, root, stop);
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
    push_user_message(ctx, conv, &msg, &interaction_id).await;

    let transformed = transform_sections(ctx).await;
    let mut turn: u32 = 0;
    let mut nudges: u32 = 0;
    let mut stop_blocks: u32 = 0;
    let mut system_recorded = false;
    // A context overflow is answered with one compaction per message, not a loop of them.
    let mut overflow_compacted = false;
    // A rate limit is offered one switch to `auto` per message.
    let mut rate_limit_offered = false;
    loop {
        for steer in ctx.take_steering().await {
            push_user_message(ctx, conv, &steer, &interaction_id).await;
        }
        let view = ctx.view();
        let settings = &view.settings;
        let cwd = settings.cwd.to_string_lossy().to_string();
        let system = crate::system_prompt::build_with(
            settings.system_message.as_ref(),
            settings.prompt_vars(&cwd),
            &transformed,
        );
        let system = crate::agents::with_agent_skills(system, settings);
        if !system_recorded {
            // As the original: every message's first model call shows its system prompt; the
            // log keeps it only when it differs from the one it last recorded.
            system_recorded = true;
            let data = t::SystemMessageData {
                content: system.clone(),
                role: t::SystemMessageRole::System,
                interaction_id: Some(interaction_id.clone()),
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
        let turn_id = turn.to_string();
        ctx.emitter().emit(t::AssistantTurnStartData {
            turn_id: turn_id.clone(),
            model: Some(settings.model.clone()),
            interaction_id: Some(interaction_id.clone()),
        });
        // The original waits for the session's MCP servers before a call, so their tools are there.
        // Bounded: a server that neither starts nor fails does not hold the turn for long.
        // Built-in servers start with the first turn (or listing), not with the session.
        ctx.handle.mcp().start_deferred();
        let _ = tokio::time::timeout(MCP_WAIT, ctx.handle.mcp().wait_settled(&ctx.cancel)).await;
        if let Some(host) = &ctx.agent_mcp {
            let _ = tokio::time::timeout(MCP_WAIT, host.wait_settled(&ctx.cancel)).await;
        }
        let tool_specs = conv.offer(dispatch::run_tool_specs(ctx, settings));
        let offered: Vec<String> = tool_specs.iter().map(|t| t.name.clone()).collect();
        let route = crate::byok::route(
            &settings.providers,
            &settings.model,
            &crate::byok::RouteCtx {
                default_client: &ctx.deps.model,
                http: &ctx.deps.http,
                emitter: ctx.handle.emitter_arc(),
                session_id: ctx.handle.id(),
            },
        );
        let token_limit = route.prompt_limit.unwrap_or_else(|| ctx.deps.context_window(&settings.model));
        let shape = crate::compaction::CallShape {
            system: &system,
            tools: &tool_specs,
            route: &route,
            token_limit,
            model: &settings.model,
            interaction_id: &interaction_id,
        };
        let tokens =
            crate::compaction::before_call(&ctx.deps, &ctx.handle, conv, &shape, settings.infinite, &ctx.cancel).await;
        let req = ChatRequest {
            model: route.model.clone(),
            system: conv.system_text(system),
            history: settings.history_for_model(&conv.history),
            tools: tool_specs,
            stream: settings.streaming,
            initiator: if turn == 0 { Initiator::User } else { Initiator::Agent },
            interaction_id: interaction_id.clone(),
            session_id: ctx.handle.id().to_string(),
            extra_headers: msg.request_headers.clone(),
            purpose: Default::default(),
            reasoning_effort: settings.reasoning_effort.clone(),
            client_name: Some(settings.client_name.clone()),
            sub_agent: None,
            sampling: Default::default(),
        };
        emit_usage_info(ctx, tokens, &req, token_limit);

        let message_id = uuid::Uuid::new_v4().to_string();
        let result = crate::model_call::call_model(
            ctx,
            route.client.as_ref(),
            req,
            &settings.model,
            &turn_id,
            &message_id,
            settings.streaming,
        )
        .await;
        let resp = match result {
            Ok(resp) => resp,
            Err(ProviderError::Cancelled) => {
                end_turn(ctx, &turn_id);
                return StopReason::Aborted;
            }
            Err(err) if err.is_context_overflow() && !overflow_compacted && settings.infinite.enabled => {
                // Too big for the model: summarize now and send the smaller context once more.
                overflow_compacted = true;
                end_turn(ctx, &turn_id);
                let system = crate::system_prompt::build_with(
                    settings.system_message.as_ref(),
                    settings.prompt_vars(&cwd),
                    &transformed,
                );
                let tools = conv.offer(dispatch::run_tool_specs(ctx, settings));
                let shape = crate::compaction::CallShape {
                    system: &system,
                    tools: &tools,
                    route: &route,
                    token_limit,
                    model: &settings.model,
                    interaction_id: &interaction_id,
                };
                crate::compaction::compact_now(&ctx.deps, &ctx.handle, conv, &shape, &ctx.cancel).await;
                continue;
            }
            Err(err) if !rate_limit_offered && crate::auto_mode::offered(ctx, &err) => {
                rate_limit_offered = true;
                let switched = crate::auto_mode::ask_and_switch(ctx, &err).await;
                if !switched {
                    return model_call_failed(ctx, &turn_id, err).await;
                }
                // The same context once more, now with `auto`.
                end_turn(ctx, &turn_id);
                continue;
            }
            Err(err) => return model_call_failed(ctx, &turn_id, err).await,
        };

        let initiator = if turn == 0 { "user" } else { "agent" };
        let reply = merge_replies(&resp);
        ctx.emitter().record(UsageRecordData {
            usage: UsageRecord {
                model: resp.model.clone().unwrap_or_else(|| settings.model.clone()),
                input_tokens: resp.usage.input_tokens,
                output_tokens: resp.usage.output_tokens,
                cache_read_tokens: resp.usage.cache_read_tokens,
                cache_write_tokens: resp.usage.cache_write_tokens,
                duration: resp.duration_ms,
                initiator: initiator.into(),
                request_body_bytes: resp.request_bytes,
                api_call_id: resp.api_call_id.clone(),
                provider_call_id: resp.provider_call_id.clone(),
                finish_reason: reply.finish_reason.clone(),
            },
        });
        ctx.emitter().emit(t::AssistantUsageData {
            model: resp.model.clone().unwrap_or_else(|| settings.model.clone()),
            input_tokens: Some(resp.usage.input_tokens),
            output_tokens: Some(resp.usage.output_tokens),
            cache_read_tokens: Some(resp.usage.cache_read_tokens),
            cache_write_tokens: Some(resp.usage.cache_write_tokens),
            cost: Some(0.0),
            duration: Some(resp.duration_ms),
            initiator: Some(initiator.into()),
            api_call_id: resp.api_call_id.clone(),
            provider_call_id: resp.provider_call_id.clone(),
            ..Default::default()
        });
        let tool_requests = reply
            .tool_calls
            .iter()
            .map(|c| t::AssistantMessageToolRequest {
                tool_call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: Some(
                    serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| Value::String(c.arguments.clone())),
                ),
                r#type: Some(t::AssistantMessageToolRequestType::Function),
                ..Default::default()
            })
            .collect();
        if let Some(r) = &reply.reasoning {
            ctx.emitter().emit(t::AssistantReasoningData {
                reasoning_id: message_id.clone(),
                content: r.clone(),
                rte: None,
            });
        }
        ctx.emitter().emit(t::AssistantMessageData {
            message_id: message_id.clone(),
            content: reply.content.clone(),
            tool_requests: Some(tool_requests),
            originating_message_id: Some(msg.message_id.clone()),
            model: Some(settings.model.clone()),
            interaction_id: Some(interaction_id.clone()),
            turn_id: Some(turn_id.clone()),
            output_tokens: Some(resp.usage.output_tokens),
            api_call_id: resp.api_call_id.clone(),
            reasoning_text: reply.reasoning.clone(),
            reasoning_blocks: reply.reasoning_blocks.as_ref().map(|b| t::AssistantMessageReasoningBlocks {
                provider: b.provider.clone(),
                blocks: Some(b.blocks.clone()),
            }),
            ..Default::default()
        });
        conv.push(crate::history::assistant_message(
            reply.content.clone(),
            reply.tool_calls.clone(),
            reply.reasoning_blocks.clone(),
        ));

        if reply.tool_calls.is_empty() {
            end_turn(ctx, &turn_id);
            if ctx.view().settings.mode != SessionMode::Autopilot {
                if stop_blocks < MAX_STOP_BLOCKS && !ctx.cancel.is_cancelled() {
                    let input = hooks::AgentStopInput {
                        stop_reason: "end_turn".into(),
                        stop_hook_active: stop_blocks > 0,
                        transcript_path: ctx.handle.workspace_path().join("events.jsonl").to_string_lossy().into(),
                    };
                    let stop = crate::hooks::invoke(&ctx.handle, HookType::AgentStop, input).await.unwrap_or_default();
                    if stop.decision.as_deref() == Some("block") {
                        stop_blocks += 1;
                        let reason = stop.reason.unwrap_or_else(|| "Continue.".into());
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
                CallOutcome::Done { text, rejected: r, task_complete, images, modified_args, guidance, file_edit } => {
                    if let Some(g) = guidance {
                        image_messages.push(Message::User { content: UserContent::Text(g) });
                    }
                    if let Some(a) = modified_args {
                        rewritten.push((call.id.clone(), a));
                    }
                    if let Some(path) = file_edit {
                        conv.files_modified.push(path);
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
            conv.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text(text) });
        }
        // Images and hook guidance cannot ride in tool messages; they follow as user messages,
        // as the original does.
        for m in image_messages {
            conv.push(m);
        }
        if !rewritten.is_empty() {
            conv.rewrite_call_arguments(&rewritten);
        }
        if let Some(summary) = &completed {
            ctx.emitter().emit(t::TaskCompleteData {
                summary: Some(summary.clone()),
                success: Some(true),
                ..Default::default()
            });
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
    let mut parts = vec![ContentPart::Text { text: format!("{}{path}", llm_providers::TOOL_IMAGE_CAPTION) }];
    parts.extend(images.into_iter().map(|url| ContentPart::ImageUrl { image_url: ImageUrl { url } }));
    Message::User { content: UserContent::Parts(parts) }
}

/// Asks the client to rewrite the sections configured with `transform` (one request per
/// message). A client that fails or does not answer leaves the sections as rendered.
async fn transform_sections(ctx: &RunCtx) -> std::collections::HashMap<String, String> {
    let view = ctx.view();
    let cwd = view.settings.cwd.to_string_lossy().to_string();
    let sections = crate::system_prompt::transform_requests(
        view.settings.system_message.as_ref(),
        view.settings.prompt_vars(&cwd),
    );
    let mut out = std::collections::HashMap::new();
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

fn end_turn(ctx: &RunCtx, turn_id: &str) {
    ctx.emitter().emit(t::AssistantTurnEndData { turn_id: turn_id.to_string(), model: None });
}

async fn push_user_message(ctx: &RunCtx, conv: &mut Conversation, msg: &QueuedMessage, interaction_id: &str) {
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
    let view = ctx.view();
    let rendered =
        crate::attachments::render(&msg.prompt, &msg.attachments, &view.settings.cwd, view.settings.enable_citations);
    // A selected agent's instructions ride with every prompt.
    let instructions = view.settings.selected_agent.as_ref().and_then(crate::agents::instructions_block);
    // Tools a departed client took with it are announced once, before the prompt.
    let notice = ctx.handle.clients().take_tools_changed_notice();
    let text = match notice {
        Some(notice) => format!("{notice}\n\n{}", rendered.text),
        None => rendered.text,
    };
    let mut transformed = match instructions {
        Some(block) => format!("<current_datetime>{now}</current_datetime>\n\n{block}\n\n{text}"),
        None => format!("<current_datetime>{now}</current_datetime>\n\n{text}"),
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
        crate::write_workspace_yaml_named(&ctx.deps, &ctx.handle, &view.settings, Some(&shown), view.user_named).await;
    }
    let event_id = ctx.emitter().emit(t::UserMessageData {
        content: msg.prompt.clone(),
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
        ctx.handle.file_tracker().begin_point(event_id);
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

/// Ends the turn on a model call that failed for good: `session.error`, then the
/// `errorOccurred` hook.
async fn model_call_failed(ctx: &RunCtx, turn_id: &str, err: ProviderError) -> StopReason {
    end_turn(ctx, turn_id);
    let provider_call_id = match &err {
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
    StopReason::Error
}

/// `tokens` is an estimate, which is what clients need: positive and growing. The history's
/// size is kept as it grows rather than summed again every turn.
fn emit_usage_info(ctx: &RunCtx, tokens: crate::compaction::Tokens, req: &ChatRequest, token_limit: u64) {
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

/// Several choices in one reply are sequential assistant messages of one turn; the client sends
/// them back as one message (text concatenated, tool calls in order).
pub(crate) fn merge_replies(resp: &ChatResponse) -> AssistantReply {
    let mut out = AssistantReply::default();
    for r in &resp.replies {
        out.content.push_str(&r.content);
        out.tool_calls.extend(r.tool_calls.iter().cloned());
        if let Some(reason) = &r.reasoning {
            out.reasoning.get_or_insert_with(String::new).push_str(reason);
        }
        if let Some(blocks) = &r.reasoning_blocks {
            let merged = out
                .reasoning_blocks
                .get_or_insert_with(|| ReasoningBlocks { provider: blocks.provider.clone(), blocks: Vec::new() });
            merged.blocks.extend(blocks.blocks.iter().cloned());
        }
        out.finish_reason = r.finish_reason.clone().or(out.finish_reason.take());
    }
    out
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
