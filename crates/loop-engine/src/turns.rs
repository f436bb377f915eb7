//! The one turn loop. Every conversation runs here, a session's and each sub-agent's: a turn
//! is one model call (compacting first when the context nears the model's window, and once
//! more after the model refused it as too long; offering `auto` after a rate limit), then the
//! reply's tool calls run and their results go into the next call. What differs between a
//! session's message and a sub-agent is its [`Driver`]: what arrives between turns, the system
//! prompt, and what a reply without tool calls means.

use std::sync::Arc;

use llm_providers::{
    AssistantReply, ChatRequest, ContentPart, ImageUrl, Initiator, Message, ProviderError, SubAgent, ToolCall,
    ToolContent, UserContent,
};
use protocol::extensions::{UsageRecord, UsageRecordData};
use protocol::generated::types as t;
use serde_json::Value;
use tools::INTERRUPTED_TEXT;

use crate::autopilot::StopReason;
use crate::compaction::{self, CallShape, Tokens};
use crate::conversation::Conversation;
use crate::dispatch::{self, CallOutcome};
use crate::handle::SessionView;
use crate::run_ctx::{RunCtx, MCP_WAIT};
use crate::settings::SessionSettings;

/// The settings a turn runs with: the session's as published (they change while it runs: a
/// model switch, a mode), or a sub-agent's own, fixed when it started.
pub(crate) enum TurnSettings {
    Session(Arc<SessionView>),
    Agent(Arc<SessionSettings>),
}

impl std::ops::Deref for TurnSettings {
    type Target = SessionSettings;

    fn deref(&self) -> &SessionSettings {
        match self {
            TurnSettings::Session(view) => &view.settings,
            TurnSettings::Agent(settings) => settings,
        }
    }
}

/// After a reply without tool calls: another turn (`new_message`: a message the driver pushed
/// starts its turns from 0), or the end.
pub(crate) enum Flow {
    Continue { new_message: bool },
    Stop(StopReason),
}

/// What a turn's tool calls reported, beyond their results.
#[derive(Default)]
pub(crate) struct ToolsRan {
    /// The user rejected one of them.
    pub rejected: bool,
    /// `task_complete`'s summary.
    pub completed: Option<String>,
}

/// How a loop ended: why, the last reply's text (a sub-agent's answer), and the error that
/// ended it.
pub(crate) struct Ended {
    pub reason: StopReason,
    pub answer: String,
    pub error: Option<String>,
}

impl Ended {
    fn stop(reason: StopReason) -> Self {
        Self { reason, answer: String::new(), error: None }
    }
}

/// What one kind of conversation adds around the loop.
#[async_trait::async_trait]
pub(crate) trait Driver: Send {
    fn settings(&self, ctx: &RunCtx) -> TurnSettings;

    /// Before each turn: what arrived since the last (steering messages, a sibling's message).
    async fn take_incoming(&mut self, ctx: &RunCtx, conv: &mut Conversation);

    /// This turn's system prompt (and the log's record of it, which is the driver's business).
    fn system_prompt(&mut self, ctx: &RunCtx, conv: &mut Conversation, settings: &SessionSettings) -> String;

    /// Who the call is made for: the user on a message's first turn, the agent otherwise.
    fn initiator(&self, turn: u32) -> Initiator;

    /// Headers the client asked to send with the model calls.
    fn request_headers(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The user message a reply answers (`assistant.message.originatingMessageId`).
    fn originating_message_id(&self) -> Option<String> {
        None
    }

    /// Just before the call: the context's size as it is sent.
    fn before_call(&self, _ctx: &RunCtx, _tokens: Tokens, _req: &ChatRequest, _token_limit: u64) {}

    /// The reply asked for no tools (its turn has ended).
    async fn on_answer(&mut self, ctx: &RunCtx, conv: &mut Conversation, reply: &AssistantReply) -> Flow;

    /// After a turn's tools ran, before its end: `Some` ends the loop once the turn has ended.
    fn after_tools(&mut self, _ctx: &RunCtx, _ran: &ToolsRan) -> Option<StopReason> {
        None
    }

    /// The model call failed for good (its turn has ended).
    async fn on_failure(&mut self, _ctx: &RunCtx, _err: &ProviderError) {}
}

/// Runs turns until the driver stops them. `turn` counts this conversation's turns (a
/// sub-agent's go on across its runs); `interaction_id` ties the calls to what started them.
pub(crate) async fn run(
    ctx: &RunCtx,
    conv: &mut Conversation,
    driver: &mut dyn Driver,
    turn: &mut u32,
    interaction_id: &str,
) -> Ended {
    // A context overflow is answered with one compaction per run, not a loop of them.
    let mut overflow_compacted = false;
    // A rate limit is offered one switch to `auto` per run.
    let mut rate_limit_offered = false;
    loop {
        if ctx.cancel.is_cancelled() {
            return Ended::stop(StopReason::Aborted);
        }
        if let Some(stopped) = unpersisted(ctx) {
            return stopped;
        }
        driver.take_incoming(ctx, conv).await;
        let settings = driver.settings(ctx);
        // Kept by the conversation: an unchanged prompt reuses its text and its JSON.
        let prompt = driver.system_prompt(ctx, conv, &settings);
        let system = conv.system_text(prompt);
        let turn_id = turn.to_string();
        ctx.emitter().emit(t::AssistantTurnStartData {
            turn_id: turn_id.clone(),
            model: Some(settings.model.clone()),
            interaction_id: Some(interaction_id.to_string()),
        });
        // The original waits for the session's MCP servers before a call, so their tools are
        // there. Bounded: a server that neither starts nor fails does not hold the turn for
        // long. Built-in servers start with the first turn (or listing), not with the session.
        ctx.handle.mcp().start_deferred();
        let _ = tokio::time::timeout(MCP_WAIT, ctx.handle.mcp().wait_settled(&ctx.cancel)).await;
        if let Some(host) = &ctx.agent_mcp {
            let _ = tokio::time::timeout(MCP_WAIT, host.wait_settled(&ctx.cancel)).await;
        }
        let (tool_specs, tools_changed) = conv.offer(&settings.model, dispatch::run_tool_specs(ctx, &settings));
        // The main agent's tools as resolved for its model; CI tools read the model from it.
        if tools_changed && ctx.scope.is_none() {
            ctx.emitter().emit(t::ToolsUpdatedData { model: settings.model.clone() });
        }
        let offered: Vec<String> = tool_specs.iter().map(|t| t.name.clone()).collect();
        let route = crate::byok::route(
            &settings.providers,
            &settings.model,
            &crate::byok::RouteCtx {
                default_client: &ctx.deps.model,
                http: &ctx.deps.http,
                emitter: ctx.handle.emitter_arc(),
                session_id: ctx.handle.id(),
                github_token: settings.github_token.as_ref(),
            },
        );
        let token_limit = route.prompt_limit.unwrap_or_else(|| ctx.deps.context_window(&settings.model));
        let shape = CallShape {
            system: &system,
            tools: &tool_specs,
            route: &route,
            token_limit,
            model: &settings.model,
            interaction_id,
        };
        let owner = compaction::Owner { handle: &ctx.handle, scope: ctx.scope.as_deref() };
        let tokens = compaction::before_call(&ctx.deps, owner, conv, &shape, settings.infinite, &ctx.cancel).await;
        let req = ChatRequest {
            model: route.model.clone(),
            github_token: None,
            system: system.clone(),
            history: settings.history_for_model(&conv.history),
            tools: tool_specs.clone(),
            stream: settings.streaming,
            initiator: driver.initiator(*turn),
            interaction_id: interaction_id.to_string(),
            session_id: ctx.handle.id().to_string(),
            extra_headers: driver.request_headers(),
            purpose: Default::default(),
            reasoning_effort: settings.reasoning_effort.clone(),
            client_name: Some(settings.client_name.clone()),
            sub_agent: ctx
                .scope
                .as_deref()
                .map(|scope| SubAgent { id: scope.agent_id.clone(), parent_id: ctx.handle.id().to_string() }),
            sampling: Default::default(),
        };
        let initiator = req.initiator;
        driver.before_call(ctx, tokens, &req, token_limit);

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
                return Ended::stop(StopReason::Aborted);
            }
            Err(err) if err.is_context_overflow() && !overflow_compacted && settings.infinite.enabled => {
                // Too big for the model: summarize now and send the smaller context once more.
                overflow_compacted = true;
                end_turn(ctx, &turn_id);
                compaction::compact_now(&ctx.deps, owner, conv, &shape, &ctx.cancel).await;
                continue;
            }
            Err(err) if !rate_limit_offered && crate::auto_mode::offered(ctx, &err) => {
                rate_limit_offered = true;
                if !crate::auto_mode::ask_and_switch(ctx, &err).await {
                    return failed(ctx, driver, &turn_id, err).await;
                }
                // The same context once more, now with `auto`.
                end_turn(ctx, &turn_id);
                continue;
            }
            Err(err) => return failed(ctx, driver, &turn_id, err).await,
        };

        let reply = merge_replies(&resp);
        let initiator = match initiator {
            Initiator::User => "user",
            Initiator::Agent => "agent",
        };
        // The model's multiplier, as the original reports it on every call; a run's premium
        // requests count the user-initiated ones.
        let cost = if route.billed { ctx.deps.multiplier(&settings.model) } else { 0.0 };
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
                cost: Some(cost),
            },
        });
        ctx.emitter().emit(t::AssistantUsageData {
            model: resp.model.clone().unwrap_or_else(|| settings.model.clone()),
            input_tokens: Some(resp.usage.input_tokens),
            output_tokens: Some(resp.usage.output_tokens),
            cache_read_tokens: Some(resp.usage.cache_read_tokens),
            cache_write_tokens: Some(resp.usage.cache_write_tokens),
            cost: Some(cost),
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
            originating_message_id: driver.originating_message_id(),
            model: Some(settings.model.clone()),
            interaction_id: Some(interaction_id.to_string()),
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
        let main_loop = ctx.scope.is_none();
        if main_loop {
            ctx.handle.mark_answered();
        }
        *turn += 1;
        // No tool runs for a reply the log does not hold.
        if let Some(stopped) = unpersisted(ctx) {
            end_turn(ctx, &turn_id);
            return stopped;
        }

        if reply.tool_calls.is_empty() {
            end_turn(ctx, &turn_id);
            match driver.on_answer(ctx, conv, &reply).await {
                Flow::Continue { new_message } => {
                    if new_message {
                        *turn = 0;
                    }
                    continue;
                }
                Flow::Stop(reason) => return Ended { reason, answer: reply.content, error: None },
            }
        }

        if main_loop {
            ctx.handle.open_tool_batch(conv.non_system_messages());
        }
        let outcomes = dispatch::run_calls(ctx, &reply.tool_calls, &turn_id, &settings, &offered).await;
        let ran = push_results(ctx, conv, &reply.tool_calls, outcomes, &settings.cwd);
        // A tool handler cleared the context: the calls' results go with everything else, and
        // the seed prompts open the fresh window.
        if let Some(seeds) = main_loop.then(|| ctx.handle.close_tool_batch()).flatten() {
            conv.clear_to_system(&ctx.handle);
            for seed in seeds {
                push_seed(ctx, conv, seed, &turn_id, interaction_id);
            }
        }
        let stop = driver.after_tools(ctx, &ran);
        end_turn(ctx, &turn_id);
        if ctx.cancel.is_cancelled() {
            return Ended::stop(StopReason::Aborted);
        }
        if let Some(reason) = stop {
            return Ended { reason, answer: reply.content, error: None };
        }
    }
}

/// The tool calls' results into the conversation, then what cannot ride in a tool message
/// (images, hook guidance) as user messages after them, as the original does.
fn push_results(
    ctx: &RunCtx,
    conv: &mut Conversation,
    calls: &[ToolCall],
    outcomes: Vec<CallOutcome>,
    cwd: &std::path::Path,
) -> ToolsRan {
    let mut ran = ToolsRan { rejected: ctx.take_user_rejection(), completed: None };
    let mut after = Vec::new();
    let mut rewritten: Vec<(String, String)> = Vec::new();
    for (call, outcome) in calls.iter().zip(outcomes) {
        let text = match outcome {
            CallOutcome::Done { text, rejected, task_complete, images, modified_args, guidance, file_edit } => {
                if let Some(g) = guidance {
                    after.push(Message::User { content: UserContent::Text(g) });
                }
                if let Some(a) = modified_args {
                    rewritten.push((call.id.clone(), a));
                }
                if let Some(path) = file_edit {
                    conv.files_modified.push(path);
                }
                ran.rejected |= rejected;
                ran.completed = ran.completed.take().or(task_complete);
                if !images.is_empty() {
                    after.push(image_message(call, cwd, images));
                }
                text
            }
            CallOutcome::Interrupted => INTERRUPTED_TEXT.to_string(),
        };
        conv.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text(text) });
    }
    for m in after {
        conv.push(m);
    }
    if !rewritten.is_empty() {
        conv.rewrite_call_arguments(&rewritten);
    }
    ran
}

/// A cleared context's first user message: recorded with no text of its own to show, as the
/// original records it.
fn push_seed(ctx: &RunCtx, conv: &mut Conversation, prompt: String, turn_id: &str, interaction_id: &str) {
    ctx.emitter().emit(t::UserMessageData {
        content: String::new(),
        transformed_content: Some(prompt.clone()),
        source: Some(CONTEXT_SEED_SOURCE.into()),
        delivery: Some(t::UserMessageDelivery::Steering),
        interaction_id: Some(interaction_id.to_string()),
        turn_id: Some(turn_id.to_string()),
        ..Default::default()
    });
    conv.push(Message::User { content: UserContent::Text(prompt) });
}

/// `user.message.source` of a cleared context's seed prompt (the original's).
const CONTEXT_SEED_SOURCE: &str = "session-memory-rollover";

/// An event of this run could not be written (clients were told with `session.error`): the
/// run stops there.
fn unpersisted(ctx: &RunCtx) -> Option<Ended> {
    let failure = ctx.handle.emitter().persist_failure()?;
    Some(Ended { reason: StopReason::Error, answer: String::new(), error: Some(failure) })
}

async fn failed(ctx: &RunCtx, driver: &mut dyn Driver, turn_id: &str, err: ProviderError) -> Ended {
    end_turn(ctx, turn_id);
    driver.on_failure(ctx, &err).await;
    Ended { reason: StopReason::Error, answer: String::new(), error: Some(err.to_string()) }
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

pub(crate) fn end_turn(ctx: &RunCtx, turn_id: &str) {
    ctx.emitter().emit(t::AssistantTurnEndData { turn_id: turn_id.to_string(), model: None });
}

/// Several choices in one reply are sequential assistant messages of one turn; the client sends
/// them back as one message (text concatenated, tool calls in order).
pub(crate) fn merge_replies(resp: &llm_providers::ChatResponse) -> AssistantReply {
    let mut out = AssistantReply::default();
    for r in &resp.replies {
        out.content.push_str(&r.content);
        out.tool_calls.extend(r.tool_calls.iter().cloned());
        if let Some(reason) = &r.reasoning {
            out.reasoning.get_or_insert_with(String::new).push_str(reason);
        }
        if let Some(blocks) = &r.reasoning_blocks {
            let merged = out.reasoning_blocks.get_or_insert_with(|| llm_providers::ReasoningBlocks {
                provider: blocks.provider.clone(),
                blocks: Vec::new(),
            });
            merged.blocks.extend(blocks.blocks.iter().cloned());
        }
        out.finish_reason = r.finish_reason.clone().or(out.finish_reason.take());
    }
    out
}
