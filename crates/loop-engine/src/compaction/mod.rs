//! Compaction: when the conversation nears the model's context window (infinite sessions), or
//! when a client asks, the model summarizes the conversation; the summary replaces the messages
//! it covers in the model's context, and is kept as a checkpoint in the session's workspace.
//! The event log keeps everything: only what the model is sent shrinks.
//!
//! A compaction runs beside the session as a task ([`InFlight`]) over a snapshot of the
//! history; turns go on meanwhile. It travels with the [`Conversation`]: the run applies it
//! before a model call once it is done (or waits for it when the context is nearly full, or
//! when a client asked for it), the actor applies it when the session is idle.

pub(crate) mod control;
pub(crate) mod in_flight;
mod job;
pub(crate) mod text;

use std::sync::Arc;

use llm_providers::{Message, UserContent};
use protocol::generated::types as t;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::deps::Deps;
use crate::handle::SessionHandle;
use crate::subagent::scope::{AgentScope, ScopedEmitter};

pub use crate::settings::InfiniteSessions;
pub(crate) use control::Control;
pub(crate) use in_flight::{Failure, InFlight, ManualReply, Summary, Tokens};
pub(crate) use job::CallShape;

/// Fewer messages than this are not worth summarizing in the background.
const MIN_MESSAGES: usize = 3;

/// Whose conversation a compaction summarizes: the session's own, or a sub-agent's. A
/// sub-agent's compaction is announced under its id (so replaying the log leaves the main
/// conversation alone), writes no checkpoint (checkpoints are the session's conversation) and
/// is not the one a client's `session.history.*` cancels.
#[derive(Clone, Copy)]
pub(crate) struct Owner<'a> {
    pub handle: &'a SessionHandle,
    pub scope: Option<&'a AgentScope>,
}

impl<'a> Owner<'a> {
    pub fn session(handle: &'a SessionHandle) -> Self {
        Self { handle, scope: None }
    }

    fn emitter(&self) -> ScopedEmitter<'a> {
        ScopedEmitter { emitter: self.handle.emitter(), scope: self.scope }
    }

    /// The session's cancellation control, for the session's own conversation only.
    fn control(&self) -> Option<&'a Control> {
        self.scope.is_none().then(|| self.handle.compaction())
    }
}

/// The model call of a handoff summary: the conversation under the handoff instructions, no
/// tools.
pub(crate) fn handoff_request(
    mut history: llm_providers::History,
    model: &str,
    session_id: &str,
) -> llm_providers::ChatRequest {
    history.push(Message::User { content: UserContent::Text(text::handoff_request().to_string()) });
    llm_providers::ChatRequest {
        model: model.to_string(),
        github_token: None,
        system: text::handoff_system().into(),
        history,
        tools: Default::default(),
        stream: true,
        initiator: llm_providers::Initiator::Agent,
        interaction_id: uuid::Uuid::new_v4().to_string(),
        session_id: session_id.to_string(),
        extra_headers: Vec::new(),
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
        reasoning_effort: None,
        purpose: llm_providers::Purpose::Turn,
    }
}

/// Runs a handoff summary call; its answer's text is the summary.
pub(crate) async fn handoff(
    client: Arc<dyn llm_providers::ModelClient>,
    req: llm_providers::ChatRequest,
) -> Result<String, String> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let resp = client.chat(req, tx, CancellationToken::new()).await.map_err(|e| e.to_string())?;
    Ok(resp.replies.iter().map(|r| r.content.as_str()).collect())
}

/// Why a compaction starts.
pub(crate) struct Request {
    pub trigger: Option<t::CompactionTrigger>,
    pub custom_instructions: Option<String>,
    pub manual: Option<ManualReply>,
}

/// Whether the history holds anything a summary would replace.
pub(crate) fn nothing_to_compact(conv: &Conversation) -> bool {
    let mut messages = conv.history.messages();
    match (messages.next(), messages.next()) {
        (None, _) => true,
        (Some(Message::User { content: UserContent::Text(first) }), None) => text::is_wrapper(first),
        _ => false,
    }
}

/// Starts a compaction of everything in the history so far. Emits `session.compaction_start`.
pub(crate) fn start(deps: &Arc<Deps>, owner: Owner<'_>, conv: &mut Conversation, call: &CallShape<'_>, req: Request) {
    let handle = owner.handle;
    let pre = Tokens::estimate(call.system, conv.bytes, call.tools);
    owner.emitter().emit(t::CompactionStartData {
        model: Some(call.model.to_string()),
        system_tokens: Some(pre.system),
        conversation_tokens: Some(pre.conversation),
        tool_definitions_tokens: Some(pre.tools),
        current_tokens: Some(pre.current()),
        token_limit: Some(call.token_limit),
        trigger: req.trigger,
    });
    let cancel = CancellationToken::new();
    if let Some(control) = owner.control() {
        control.started(req.manual.is_some(), cancel.clone());
    }
    let job = job::spawn(job::Params {
        client: call.route.client.clone(),
        checkpoints: owner.control().is_some().then(|| deps.layout.clone()),
        session_id: handle.id().to_string(),
        request: job::summary_request(conv, call, handle.id(), req.custom_instructions.as_deref()),
        estimated_input: pre.current() + (text::summary_request(req.custom_instructions.as_deref()).len() / 4) as u64,
        cancel,
    });
    conv.compaction = Some(InFlight {
        manual: req.manual,
        trigger: req.trigger,
        custom_instructions: req.custom_instructions,
        mark: conv.history.len(),
        prompts: conv.prompts.len(),
        pre,
        token_limit: call.token_limit,
        model: call.model.to_string(),
        job,
    });
}

/// Before a model call of a run: applies a compaction that is done (or must be waited for),
/// and starts one when the context passed the session's threshold. Returns the context's size
/// as it will be sent (the tool schemas are measured once per call).
pub(crate) async fn before_call(
    deps: &Arc<Deps>,
    owner: Owner<'_>,
    conv: &mut Conversation,
    call: &CallShape<'_>,
    limits: InfiniteSessions,
    cancel: &CancellationToken,
) -> Tokens {
    let measured = Tokens::estimate(call.system, conv.bytes, call.tools);
    if let Some(f) = &conv.compaction {
        let full = limits.enabled && measured.over(limits.buffer_threshold, call.token_limit);
        if f.is_finished() || f.is_manual() || full {
            wait_and_apply(owner, conv, cancel).await;
        }
    }
    let tokens = measured.with_conversation(conv.bytes);
    let grown = conv.history.len() >= conv.failed_mark.map_or(MIN_MESSAGES, |m| m + MIN_MESSAGES);
    if limits.enabled
        && conv.compaction.is_none()
        && grown
        && tokens.over(limits.background_threshold, call.token_limit)
    {
        let req = Request { trigger: Some(t::CompactionTrigger::Threshold), custom_instructions: None, manual: None };
        start(deps, owner, conv, call, req);
    }
    tokens
}

/// The model refused the context as too long: compact everything now (or finish the compaction
/// under way) before the call is sent again.
pub(crate) async fn compact_now(
    deps: &Arc<Deps>,
    owner: Owner<'_>,
    conv: &mut Conversation,
    call: &CallShape<'_>,
    cancel: &CancellationToken,
) {
    if conv.compaction.is_none() && !nothing_to_compact(conv) {
        let req =
            Request { trigger: Some(t::CompactionTrigger::ContextLimitRetry), custom_instructions: None, manual: None };
        start(deps, owner, conv, call, req);
    }
    wait_and_apply(owner, conv, cancel).await;
}

/// Waits for the compaction under way (unless `cancel` fires first: it then stays under way)
/// and applies it.
async fn wait_and_apply(owner: Owner<'_>, conv: &mut Conversation, cancel: &CancellationToken) {
    let Some(mut f) = conv.compaction.take() else { return };
    let result = tokio::select! {
        r = &mut f.job => r,
        _ = cancel.cancelled() => {
            conv.compaction = Some(f);
            return;
        }
    };
    apply(owner, conv, f, job::joined(result));
}

/// The compaction under way, once it is done (never, when there is none): for the actor, which
/// applies it while the session is idle.
pub(crate) async fn finished(conv: &mut Option<Conversation>) -> Result<Summary, Failure> {
    match conv.as_mut().and_then(|c| c.compaction.as_mut()) {
        Some(f) => job::joined((&mut f.job).await),
        None => std::future::pending().await,
    }
}

/// Replaces the summarized messages with the summary (or records the failure), emits
/// `session.compaction_complete` and answers a client waiting for it.
pub(crate) fn apply(owner: Owner<'_>, conv: &mut Conversation, f: InFlight, result: Result<Summary, Failure>) {
    if let Some(control) = owner.control() {
        control.finished();
    }
    let emitter = owner.emitter();
    let summary = match result {
        Ok(s) => s,
        Err(failure) => {
            if f.manual.is_none() {
                conv.failed_mark = Some(f.mark);
            }
            emitter.emit(t::CompactionCompleteData {
                success: false,
                error: Some(failure.message.clone()),
                custom_instructions: f.custom_instructions.clone(),
                token_limit: Some(f.token_limit),
                trigger: f.trigger,
                status_code: failure.status.map(u64::from),
                ..Default::default()
            });
            if let Some(reply) = f.manual {
                let _ = reply.send(Err(failure.message));
            }
            return;
        }
    };
    conv.failed_mark = None;
    let pre_len = conv.history.len();
    // Measured now: the history may have grown while the summary was being written.
    let pre_tokens = f.pre.with_conversation(conv.bytes).current();
    let partial = pre_len > f.mark;
    let prompts = &conv.prompts[..f.prompts.min(conv.prompts.len())];
    let wrapper = text::wrapper(partial, prompts, &summary.text);
    conv.replace_front(f.mark, Message::User { content: UserContent::Text(wrapper) });
    let post = f.pre.with_conversation(conv.bytes);
    let messages_removed = pre_len.saturating_sub(conv.history.len()) as u64;
    let tokens_removed = pre_tokens.saturating_sub(post.current());
    emitter.emit(t::CompactionCompleteData {
        success: true,
        pre_compaction_tokens: Some(pre_tokens),
        post_compaction_tokens: Some(post.current()),
        pre_compaction_messages_length: Some(pre_len as u64),
        messages_removed: Some(messages_removed),
        tokens_removed: Some(tokens_removed),
        custom_instructions: f.custom_instructions.clone(),
        summary_content: Some(summary.text.clone()),
        behavior_model_id: Some(f.model.clone()),
        checkpoint_number: summary.checkpoint.as_ref().map(|(n, _)| u64::from(*n)),
        checkpoint_path: summary.checkpoint.as_ref().map(|(_, p)| p.to_string_lossy().into_owned()),
        compaction_tokens_used: Some(t::CompactionCompleteCompactionTokensUsed {
            input_tokens: Some(summary.usage.input_tokens),
            output_tokens: Some(summary.usage.output_tokens),
            cache_read_tokens: Some(summary.usage.cache_read_tokens),
            cache_write_tokens: Some(summary.usage.cache_write_tokens),
            duration: Some(summary.duration_ms),
            model: Some(summary.model.clone().unwrap_or_else(|| f.model.clone())),
            ..Default::default()
        }),
        request_id: summary.api_call_id.clone(),
        system_tokens: Some(post.system),
        conversation_tokens: Some(post.conversation),
        tool_definitions_tokens: Some(post.tools),
        token_limit: Some(f.token_limit),
        trigger: f.trigger,
        ..Default::default()
    });
    if let Some(reply) = f.manual {
        let _ = reply.send(Ok(t::HistoryCompactResult {
            success: true,
            tokens_removed,
            messages_removed,
            summary_content: Some(summary.text),
            context_window: Some(t::HistoryCompactContextWindow {
                token_limit: f.token_limit,
                current_tokens: post.current(),
                messages_length: conv.history.len() as u64,
                system_tokens: Some(post.system),
                conversation_tokens: Some(post.conversation),
                tool_definitions_tokens: Some(post.tools),
            }),
        }));
    }
}

/// A manual compaction that found nothing to summarize: the events the original emits, and
/// the error the client gets.
pub(crate) fn nothing(handle: &SessionHandle, call: &CallShape<'_>, conv: &Conversation, req: Request) {
    let tokens = Tokens::estimate(call.system, conv.bytes, call.tools);
    let emitter = handle.emitter();
    emitter.emit(t::CompactionStartData {
        model: Some(call.model.to_string()),
        system_tokens: Some(tokens.system),
        conversation_tokens: Some(tokens.conversation),
        tool_definitions_tokens: Some(tokens.tools),
        current_tokens: Some(tokens.current()),
        token_limit: Some(call.token_limit),
        trigger: req.trigger,
    });
    emitter.emit(t::CompactionCompleteData {
        success: false,
        error: Some(NOTHING.into()),
        custom_instructions: req.custom_instructions,
        token_limit: Some(call.token_limit),
        trigger: req.trigger,
        ..Default::default()
    });
    if let Some(reply) = req.manual {
        let _ = reply.send(Err(NOTHING.into()));
    }
}

pub(crate) const NOTHING: &str = "Nothing to compact.";

#[cfg(test)]
mod tests {
    use super::*;
    use llm_providers::ToolSet;
    use protocol::methods::InfiniteSessionsConfig;

    #[test]
    fn thresholds_default_to_the_originals_and_ignore_nonsense() {
        assert_eq!(InfiniteSessions::from_params(None), InfiniteSessions::default());
        let p = InfiniteSessionsConfig {
            enabled: Some(false),
            background_compaction_threshold: Some(0.5),
            buffer_exhaustion_threshold: Some(f64::NAN),
        };
        let s = InfiniteSessions::from_params(Some(&p));
        assert!(!s.enabled);
        assert_eq!((s.background_threshold, s.buffer_threshold), (0.5, 0.95));
    }

    #[test]
    fn only_a_lone_summary_is_nothing_to_compact() {
        let user = |t: &str| Message::User { content: UserContent::Text(t.into()) };
        assert!(nothing_to_compact(&Conversation::new(vec![], None)));
        assert!(nothing_to_compact(&Conversation::new(vec![user(&text::wrapper(false, &[], "s"))], None)));
        assert!(!nothing_to_compact(&Conversation::new(vec![user("hi")], None)));
        let two = vec![user(&text::wrapper(false, &[], "s")), user("hi")];
        assert!(!nothing_to_compact(&Conversation::new(two, None)));
    }

    #[test]
    fn tokens_are_estimated_from_bytes() {
        let tools = ToolSet::new(vec![llm_providers::ToolSpec {
            name: "ab".into(),
            description: "cd".into(),
            parameters: serde_json::json!({}).into(),
        }]);
        let t = Tokens::estimate(&"x".repeat(40), 400, &tools);
        assert_eq!((t.system, t.conversation, t.tools, t.current()), (10, 100, 1, 111));
        assert!(t.over(0.5, 200) && !t.over(0.6, 200));
    }
}
