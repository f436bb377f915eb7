//! The work of one compaction, on its own task: ask the model for the summary, then write the
//! checkpoint. Nothing here touches the session's state; the result is applied by its owner.

use std::sync::Arc;
use std::time::Instant;

use llm_providers::{ChatRequest, Initiator, Message, ModelClient, ProviderError, Purpose, ToolSet, UserContent};
use store::Layout;
use tokio_util::sync::CancellationToken;

use super::in_flight::{Failure, Summary};
use super::text;
use crate::byok::Route;
use crate::conversation::Conversation;

/// What a compaction needs to know about the call it summarizes for.
pub(crate) struct CallShape<'a> {
    pub system: &'a str,
    pub tools: &'a ToolSet,
    pub route: &'a Route,
    pub token_limit: u64,
    /// The session's name for the model (events show it).
    pub model: &'a str,
    pub interaction_id: &'a str,
}

pub(crate) struct Params {
    pub client: Arc<dyn ModelClient>,
    /// Where the checkpoint goes (`None`: a sub-agent's summary, which is no checkpoint).
    pub checkpoints: Option<Layout>,
    pub session_id: String,
    pub request: ChatRequest,
    /// The request's size in tokens, as estimated: what usage shows when the service reports
    /// none (some compatible servers and proxies don't).
    pub estimated_input: u64,
    pub cancel: CancellationToken,
}

/// The model call that asks for the summary: the conversation so far as the model last saw it
/// (same system prompt and tools, so the prompt cache still applies), then the request.
pub(crate) fn summary_request(
    conv: &Conversation,
    call: &CallShape<'_>,
    session_id: &str,
    custom_instructions: Option<&str>,
) -> ChatRequest {
    let mut history = conv.history.clone();
    history.push(Message::User { content: UserContent::Text(text::summary_request(custom_instructions)) });
    ChatRequest {
        model: call.route.model.clone(),
        github_token: None,
        system: call.system.into(),
        history,
        tools: call.tools.clone(),
        stream: false,
        initiator: Initiator::User,
        interaction_id: call.interaction_id.to_string(),
        session_id: session_id.to_string(),
        extra_headers: Vec::new(),
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
        reasoning_effort: None,
        purpose: Purpose::Compaction,
    }
}

pub(crate) fn spawn(p: Params) -> tokio::task::JoinHandle<Result<Summary, Failure>> {
    tokio::spawn(run(p))
}

/// A job that panicked or was dropped is a failure like any other.
pub(crate) fn joined(r: Result<Result<Summary, Failure>, tokio::task::JoinError>) -> Result<Summary, Failure> {
    r.unwrap_or_else(|e| Err(Failure::new(format!("compaction task failed: {e}"))))
}

async fn run(p: Params) -> Result<Summary, Failure> {
    let started = Instant::now();
    // Progress events of a summary call are nobody's business; the receiver just drains.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let resp = p.client.chat(p.request, tx, p.cancel.clone()).await.map_err(|e| match e {
        ProviderError::Cancelled => Failure::new("Compaction was cancelled."),
        e => Failure { status: e.status_code(), message: format!("compaction model call failed: {e}") },
    })?;
    let text: String = resp.replies.iter().map(|r| r.content.as_str()).collect();
    if text.trim().is_empty() {
        return Err(Failure::new("compaction model call returned no summary"));
    }
    let (title, body) = text::checkpoint_parts(&text, &p.session_id);
    let checkpoint = match &p.checkpoints {
        None => None,
        Some(layout) => match layout.write_checkpoint(&p.session_id, &title, &body).await {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(session = %p.session_id, error = %e, "checkpoint not written");
                None
            }
        },
    };
    let mut usage = resp.usage;
    if usage.input_tokens == 0 {
        usage.input_tokens = p.estimated_input;
    }
    if usage.output_tokens == 0 {
        usage.output_tokens = (text.len() / 4) as u64;
    }
    Ok(Summary {
        text,
        checkpoint,
        usage,
        duration_ms: started.elapsed().as_millis() as u64,
        model: resp.model,
        api_call_id: resp.api_call_id,
    })
}
