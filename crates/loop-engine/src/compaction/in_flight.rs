//! A compaction's state as the session keeps it: the job under way ([`InFlight`]), its outcome,
//! the context's size. Apart from `mod.rs` so that the conversation and the handle can hold it
//! without depending on how a compaction runs.

use std::path::PathBuf;

use llm_providers::{ToolSet, Usage};
use protocol::generated::types as t;
use tokio::sync::oneshot;

/// The context's size in tokens, estimated from its bytes (about four per token) as the
/// original does before a model has reported usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub system: u64,
    pub conversation: u64,
    pub tools: u64,
}

impl Tokens {
    pub fn estimate(system: &str, conversation_bytes: usize, tools: &ToolSet) -> Self {
        // Kept by the set: a session offers the same tools call after call.
        let tool_bytes = tools.text_bytes();
        Self {
            system: (system.len() / 4) as u64,
            conversation: (conversation_bytes / 4) as u64,
            tools: (tool_bytes / 4) as u64,
        }
    }

    /// The same context with its conversation at `bytes`.
    pub fn with_conversation(self, bytes: usize) -> Self {
        Self { conversation: (bytes / 4) as u64, ..self }
    }

    pub fn current(&self) -> u64 {
        self.system + self.conversation + self.tools
    }

    pub fn over(&self, fraction: f64, limit: u64) -> bool {
        self.current() as f64 >= fraction * limit as f64
    }
}

/// A summary, and where its checkpoint went.
#[derive(Debug)]
pub(crate) struct Summary {
    pub text: String,
    /// `None` when the checkpoint could not be written (logged; the summary still applies).
    pub checkpoint: Option<(u32, PathBuf)>,
    pub usage: Usage,
    pub duration_ms: u64,
    pub model: Option<String>,
    pub api_call_id: Option<String>,
}

/// Why a compaction produced no summary.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub message: String,
    pub status: Option<u16>,
}

impl Failure {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), status: None }
    }
}

/// Who gets a manual compaction's outcome.
pub(crate) type ManualReply = oneshot::Sender<Result<t::HistoryCompactResult, String>>;

/// A compaction under way.
pub(crate) struct InFlight {
    /// Set for a compaction a client asked for (it waits for the outcome).
    pub(super) manual: Option<ManualReply>,
    pub(super) trigger: Option<t::CompactionTrigger>,
    pub(super) custom_instructions: Option<String>,
    /// How many history messages the summary covers (the history's length when it started).
    pub(super) mark: usize,
    /// How many of the user's prompts were sent by then.
    pub(super) prompts: usize,
    pub(super) pre: Tokens,
    pub(super) token_limit: u64,
    pub(super) model: String,
    pub(super) job: tokio::task::JoinHandle<Result<Summary, Failure>>,
}

impl InFlight {
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    pub fn is_finished(&self) -> bool {
        self.job.is_finished()
    }

    /// The session is going away: the work stops, a client waiting for it is told.
    pub fn abandon(self) {
        self.job.abort();
        if let Some(reply) = self.manual {
            let _ = reply.send(Err("The session ended before the compaction finished.".into()));
        }
    }
}
