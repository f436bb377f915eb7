//! Client work a run is waiting for (permission prompts, SDK tool calls), keyed by request id.
//! Owned by the session actor: a run registers a request before it emits the event that
//! offers it, and a client's answer reaches the waiting run through the actor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use protocol::generated::types::{self as t, ExternalToolResult, PermissionDecision, PermissionPromptRequest};
use tokio::sync::oneshot;

/// What a pending request is waiting for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PendingKind {
    /// Carries the user-facing prompt, for `session.permissions.pendingRequests`.
    Permission(Option<Box<PermissionPromptRequest>>),
    /// A permission request that also offers to let the operation past the session's sandbox:
    /// approving it does, and so do `session.sandbox.disableForSession` and (where `grant` is
    /// set) `session.sandbox.grantPathForRequest`.
    SandboxBypass { prompt: Option<Box<PermissionPromptRequest>>, grant: Option<PathBuf> },
    /// What `session.tools.listPendingRequests` shows of the waiting call.
    ExternalTool(Box<t::PendingExternalToolRequest>),
}

/// What a waiting request offers past the sandbox.
#[derive(Debug, PartialEq)]
pub(crate) enum SandboxOffer<'a> {
    /// Nothing waits under that id.
    Missing,
    /// A request that offers nothing past the sandbox.
    None,
    Bypass {
        grant: Option<&'a Path>,
    },
}

/// A client's answer to a pending request, as the run consumes it.
#[derive(Debug, Clone, PartialEq)]
pub enum PendingAnswer {
    /// `session.permissions.handlePendingPermissionRequest {result}`.
    Permission(PermissionDecision),
    /// `session.tools.handlePendingToolCall {result?, error?}`.
    ToolCall { result: Option<ExternalToolResult>, error: Option<String> },
    /// Nobody is left to answer (the last client went away and did not come back).
    NoClient,
}

/// What clients have yet to answer, as listed to them.
#[derive(Debug, Default)]
pub struct Waiting {
    /// `(requestId, prompt)` of each permission prompt.
    pub permissions: Vec<(String, PermissionPromptRequest)>,
    pub tool_calls: Vec<t::PendingExternalToolRequest>,
}

#[derive(Default)]
pub(crate) struct PendingRequests {
    waiting: HashMap<String, (PendingKind, oneshot::Sender<PendingAnswer>)>,
}

impl PendingRequests {
    pub fn register(&mut self, request_id: String, kind: PendingKind, tx: oneshot::Sender<PendingAnswer>) {
        self.waiting.insert(request_id, (kind, tx));
    }

    /// Hands the answer to the waiting run. `false` when nothing waits under that id (unknown,
    /// already answered by another client, or given up by the run), or the answer is of the
    /// wrong kind (a permission answer for a tool call).
    pub fn resolve(&mut self, request_id: &str, answer: PendingAnswer) -> bool {
        let fits = matches!(
            (self.waiting.get(request_id), &answer),
            (Some((PendingKind::Permission(_) | PendingKind::SandboxBypass { .. }, _)), PendingAnswer::Permission(_))
                | (Some((PendingKind::ExternalTool(_), _)), PendingAnswer::ToolCall { .. })
                | (Some(_), PendingAnswer::NoClient)
        );
        if !fits {
            return false;
        }
        match self.waiting.remove(request_id) {
            Some((_, tx)) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    pub fn sandbox_offer(&self, request_id: &str) -> SandboxOffer<'_> {
        match self.waiting.get(request_id) {
            None => SandboxOffer::Missing,
            Some((PendingKind::SandboxBypass { grant, .. }, _)) => SandboxOffer::Bypass { grant: grant.as_deref() },
            Some(_) => SandboxOffer::None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The run stopped waiting (abort): forget the request.
    pub fn forget(&mut self, request_id: &str) {
        self.waiting.remove(request_id);
    }

    /// Answers everything as "no client": the run must not wait forever.
    pub fn fail_all(&mut self) {
        for (_, (_, tx)) in self.waiting.drain() {
            let _ = tx.send(PendingAnswer::NoClient);
        }
    }

    /// Permission prompts still waiting: `(requestId, prompt)`.
    pub fn permission_prompts(&self) -> Vec<(String, PermissionPromptRequest)> {
        let mut out: Vec<(String, PermissionPromptRequest)> = self
            .waiting
            .iter()
            .filter_map(|(id, (kind, _))| match kind {
                PendingKind::Permission(prompt) | PendingKind::SandboxBypass { prompt, .. } => {
                    prompt.as_deref().map(|p| (id.clone(), p.clone()))
                }
                PendingKind::ExternalTool(_) => None,
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn waiting(&self) -> Waiting {
        Waiting { permissions: self.permission_prompts(), tool_calls: self.tool_calls() }
    }

    /// SDK tool calls still waiting for `session.tools.handlePendingToolCall`, by request id.
    pub fn tool_calls(&self) -> Vec<t::PendingExternalToolRequest> {
        let mut out: Vec<t::PendingExternalToolRequest> = self
            .waiting
            .values()
            .filter_map(|(kind, _)| match kind {
                PendingKind::ExternalTool(call) => Some(call.as_ref().clone()),
                _ => None,
            })
            .collect();
        out.sort_by(|a, b| a.request_id.cmp(&b.request_id));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_reach_the_waiting_request_once_and_only_of_the_right_kind() {
        let mut p = PendingRequests::default();
        let (tx, mut rx) = oneshot::channel();
        p.register("r1".into(), PendingKind::ExternalTool(Box::default()), tx);
        assert!(!p.resolve("r1", PendingAnswer::Permission(PermissionDecision::Approved)));
        assert!(p.resolve("r1", PendingAnswer::ToolCall { result: None, error: None }));
        assert!(!p.resolve("r1", PendingAnswer::ToolCall { result: None, error: None }));
        assert_eq!(rx.try_recv().ok(), Some(PendingAnswer::ToolCall { result: None, error: None }));
    }

    #[test]
    fn a_sandbox_bypass_is_a_permission_request_that_says_what_it_offers() {
        let mut p = PendingRequests::default();
        let (tx, mut rx) = oneshot::channel();
        let grant = PathBuf::from("/outside");
        p.register("r".into(), PendingKind::SandboxBypass { prompt: None, grant: Some(grant.clone()) }, tx);
        let (plain, _keep) = oneshot::channel();
        p.register("plain".into(), PendingKind::Permission(None), plain);
        assert_eq!(p.sandbox_offer("r"), SandboxOffer::Bypass { grant: Some(grant.as_path()) });
        assert_eq!(p.sandbox_offer("plain"), SandboxOffer::None);
        assert_eq!(p.sandbox_offer("gone"), SandboxOffer::Missing);
        assert!(p.resolve("r", PendingAnswer::Permission(PermissionDecision::Approved)));
        assert_eq!(rx.try_recv().ok(), Some(PendingAnswer::Permission(PermissionDecision::Approved)));
        assert_eq!(p.sandbox_offer("r"), SandboxOffer::Missing);
    }

    #[test]
    fn fail_all_answers_no_client() {
        let mut p = PendingRequests::default();
        let (tx, mut rx) = oneshot::channel();
        let prompt = PermissionPromptRequest::Read(protocol::generated::types::PermissionPromptRequestRead {
            intention: "i".into(),
            path: "p".into(),
            ..Default::default()
        });
        p.register("r".into(), PendingKind::Permission(Some(Box::new(prompt))), tx);
        assert_eq!(p.permission_prompts().len(), 1);
        p.fail_all();
        assert_eq!(rx.try_recv().ok(), Some(PendingAnswer::NoClient));
        assert!(p.permission_prompts().is_empty());
    }
}
