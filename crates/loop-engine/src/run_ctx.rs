//! [`RunCtx`]: what one run (a user message, or a sub-agent's task) may use. Its own file so
//! that the tools, the model call and the sub-agents can take a run's context without depending
//! on the message driver in `run.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::deps::Deps;
use crate::handle::{QueuedMessage, SessionHandle, SessionInput, SessionView};
use crate::subagent::scope::{AgentScope, ScopedEmitter};
use crate::telemetry::Span;

/// How long a model call waits for MCP servers that are still starting.
pub(crate) const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What one run may use: the session's handle (events, settings, the actor), the engine's
/// dependencies and the batch's cancellation.
pub(crate) struct RunCtx {
    pub handle: SessionHandle,
    pub deps: Arc<Deps>,
    pub cancel: CancellationToken,
    /// The user rejected a tool call in the current turn: the run ends after it.
    user_rejected: Arc<AtomicBool>,
    /// Set when this run is a sub-agent's.
    pub scope: Option<Arc<AgentScope>>,
    /// The `invoke_agent` span this run's spans belong under (file telemetry on).
    pub trace: Option<Span>,
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
    pub(crate) fn traced(&self, trace: Span) -> Self {
        self.traced_as(Some(trace))
    }

    pub(crate) fn traced_as(&self, trace: Option<Span>) -> Self {
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
    pub fn for_subagent(&self, scope: AgentScope) -> Self {
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
    pub fn emitter(&self) -> ScopedEmitter<'_> {
        ScopedEmitter { emitter: self.handle.emitter(), scope: self.scope.as_deref() }
    }

    pub fn view(&self) -> Arc<SessionView> {
        self.handle.view()
    }

    /// Whether the user rejected a call since the last check (and clears it).
    pub(crate) fn take_user_rejection(&self) -> bool {
        self.user_rejected.swap(false, Ordering::AcqRel)
    }

    pub(crate) async fn take_steering(&self) -> Vec<QueuedMessage> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.handle.tell(SessionInput::RunTakeSteering { reply: tx }).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }
}
