//! A session's own sandbox (its `sandboxConfig`) and the server's file tools. A write outside
//! the paths the session's commands may write is refused (an ephemeral `sandbox.decision`
//! `access_denied`), so `create` or `edit` cannot make a write the sandbox would stop in
//! `bash`. Where the config allows a bypass (`allowBypass`), the write's permission request
//! offers it (`requestSandboxBypass`, with a `sandboxPathGrant` where adding a folder would let
//! it), and is asked even where writes are approved for everything: the user approves this
//! one write, grants the folder (`session.sandbox.grantPathForRequest`; the session's commands
//! may then write there too) or turns the sandbox off for the session
//! (`session.sandbox.disableForSession`). Otherwise the tool fails with the policy to review.
//! Reads are held to what the session's commands could read the same way (`view` of a denied
//! or unseen path, a `grep` or `glob` of one; no folder grant for a read, as in the original).
//!
//! A team server's floor is not this: its file tools cannot open anything outside the
//! tenant's workspace at all, and nothing bypasses it.

use std::path::Path;
use std::sync::Arc;

use protocol::generated::types::{self as t, PermissionDecision as Answer};
use tools::{PermissionDecision as Decision, ToolOutput};

use crate::handle::SessionHandle;
use crate::pending::{PendingAnswer, PendingRequests, SandboxOffer};
use crate::permission::Gate;

/// What the model reads when the sandbox refused a write and nobody may let it past.
const BLOCKED_TEXT: &str = "The sandbox refused this write: the path is outside what this session may write. \
     Do not try to get around it (another path, a retry, another tool); if the write is needed, ask the user \
     to allow the path in the session's sandbox policy, and name the path.";

/// What the model reads when the sandbox refused a read.
const READ_BLOCKED_TEXT: &str = "The sandbox refused this read: the path is outside what this session may read. \
     Do not try to get around it (another path, a retry, another tool); if the file is needed, ask the user \
     to allow the path in the session's sandbox policy, and name the path.";

/// How a client lets a waiting write past the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// `session.sandbox.grantPathForRequest`: the offered folder becomes writable.
    Grant,
    /// `session.sandbox.disableForSession`: the session's commands run unsandboxed from now.
    Disable,
}

/// Why a client could not take an offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferRefusal {
    /// No permission request waits under that id.
    NotFound,
    /// The request waits but does not offer that.
    NotOffered,
}

impl SessionHandle {
    /// The sandbox of the session's own `sandboxConfig` its commands start under now (never
    /// the team server's floor).
    pub(crate) fn own_sandbox(&self) -> Option<Arc<sandbox::Policy>> {
        if self.sandbox_enforced() {
            return None;
        }
        self.shells().sandbox()
    }

    /// Takes what the waiting permission request `request_id` offers past the sandbox, and
    /// approves the request.
    pub async fn take_sandbox_offer(
        &self,
        request_id: &str,
        take: Take,
    ) -> Result<Result<(), OfferRefusal>, crate::EngineError> {
        self.ask(|reply| crate::handle::SessionInput::TakeSandboxOffer {
            request_id: request_id.to_string(),
            take,
            reply,
        })
        .await
    }

    /// The session's commands (and user shells) may write `path` from now on.
    fn grant_sandbox_path(&self, path: &Path) {
        let Some(policy) = self.own_sandbox() else { return };
        let mut widened = (*policy).clone();
        widened.writable.push(path.to_path_buf());
        let widened = Some(Arc::new(widened));
        self.shells().set_sandbox(widened.clone());
        self.user_shell().set_sandbox(widened);
    }

    /// The session's commands (and user shells) run unsandboxed from now on; MCP servers
    /// already running stay as they are.
    fn turn_sandbox_off(&self) {
        self.shells().set_sandbox(None);
        self.user_shell().set_sandbox(None);
    }
}

/// The actor's side of [`SessionHandle::take_sandbox_offer`]: one step, so the request cannot
/// be answered in between.
pub(crate) fn take_offer(
    handle: &SessionHandle,
    pending: &mut PendingRequests,
    request_id: &str,
    take: Take,
) -> Result<(), OfferRefusal> {
    match (pending.sandbox_offer(request_id), take) {
        (SandboxOffer::Missing, _) => return Err(OfferRefusal::NotFound),
        (SandboxOffer::None, _) | (SandboxOffer::Bypass { grant: None }, Take::Grant) => {
            return Err(OfferRefusal::NotOffered)
        }
        (SandboxOffer::Bypass { grant: Some(path) }, Take::Grant) => {
            let path = path.to_path_buf();
            handle.grant_sandbox_path(&path);
        }
        (SandboxOffer::Bypass { .. }, Take::Disable) => handle.turn_sandbox_off(),
    }
    pending.resolve(request_id, PendingAnswer::Permission(Answer::Approved));
    Ok(())
}

/// The sandbox's say on a built-in tool's request: `None` where it has none (no own sandbox,
/// neither a read nor a write, or one the sandbox allows), otherwise the decision.
pub(crate) async fn guard(gate: &Gate, req: &tools::PermissionRequest, tool_call_id: &str) -> Option<Decision> {
    match req {
        tools::PermissionRequest::Write { file_name, .. } => guard_write(gate, req, file_name, tool_call_id).await,
        tools::PermissionRequest::Read { intention, path } => {
            guard_read(gate, req, intention, path, tool_call_id).await
        }
        _ => None,
    }
}

async fn guard_write(
    gate: &Gate,
    req: &tools::PermissionRequest,
    file_name: &str,
    tool_call_id: &str,
) -> Option<Decision> {
    let handle = &gate.handle;
    let policy = handle.own_sandbox()?;
    let path = Path::new(file_name);
    let cwd = handle.view().settings.cwd.clone();
    let refusal = policy.write_refusal(path, &cwd)?;
    emit_denied(handle, t::SandboxDenialClass::FilesystemWrite, tool_call_id);
    // The request's reason, the failed tool's message, and the folder a grant would add.
    let (reason, message, grant) = match refusal {
        sandbox::WriteRefusal::Outside { grant } => (
            format!("{file_name} is outside the sandbox's writable paths."),
            "Outside the sandbox's writable paths.",
            Some(grant),
        ),
        sandbox::WriteRefusal::Denied => {
            (format!("{file_name} is a sandbox denied path."), "Inside the sandbox's denied paths.", None)
        }
    };
    if !policy.bypass {
        return Some(Decision::Blocked(Box::new(blocked(BLOCKED_TEXT, &reason, message))));
    }
    let mut request = crate::permission::wire_request(req.clone(), tool_call_id);
    if let t::PermissionRequest::Write(w) = &mut request {
        w.request_sandbox_bypass = Some(true);
        w.request_sandbox_bypass_reason = Some(reason);
        w.sandbox_path_grant = grant.as_ref().map(|g| path_grant(g, path));
    }
    let decision = gate.prompt(request, tool_call_id, Some(grant)).await;
    // A grant makes the write one the sandbox allows; an approval, or the sandbox turned off,
    // lets it past the sandbox.
    let past = handle.own_sandbox().is_none_or(|p| p.write_refusal(path, &cwd).is_some());
    if decision == Decision::Approved && past {
        emit_bypassed(handle, t::SandboxDenialClass::FilesystemWrite, tool_call_id);
    }
    Some(decision)
}

/// A read by `view`, or the folder `grep` or `glob` search (their intention says which: the
/// original words a refused search differently). What they find beneath an allowed folder is
/// filtered by the tools themselves (`Files::hiding`).
async fn guard_read(
    gate: &Gate,
    req: &tools::PermissionRequest,
    intention: &str,
    path: &str,
    tool_call_id: &str,
) -> Option<Decision> {
    let handle = &gate.handle;
    let policy = handle.own_sandbox()?;
    let cwd = handle.view().settings.cwd.clone();
    let refusal = policy.read_refusal(Path::new(path), &cwd)?;
    emit_denied(handle, t::SandboxDenialClass::FilesystemRead, tool_call_id);
    let (reason, message) = match refusal {
        sandbox::ReadRefusal::Outside => {
            (format!("{path} is outside the sandbox's readable paths."), "Outside the sandbox's readable paths.")
        }
        sandbox::ReadRefusal::Denied => (format!("{path} is a sandbox denied path."), "Is a sandbox denied path."),
    };
    if !policy.bypass {
        let mut out = blocked(READ_BLOCKED_TEXT, &reason, message);
        if intention.starts_with("Search") {
            out.error_message = Some("sandbox policy denied the search path".into());
            out.remediation = None;
        }
        return Some(Decision::Blocked(Box::new(out)));
    }
    let mut request = crate::permission::wire_request(req.clone(), tool_call_id);
    if let t::PermissionRequest::Read(r) = &mut request {
        r.request_sandbox_bypass = Some(true);
        r.request_sandbox_bypass_reason = Some(reason);
    }
    // No folder to grant (a read request has no `sandboxPathGrant`): this read, or the
    // sandbox off for the session.
    let decision = gate.prompt(request, tool_call_id, Some(None)).await;
    if decision == Decision::Approved {
        emit_bypassed(handle, t::SandboxDenialClass::FilesystemRead, tool_call_id);
    }
    Some(decision)
}

/// The ephemeral `sandbox.decision` that the built-in file tools' check refused an access.
fn emit_denied(handle: &SessionHandle, class: t::SandboxDenialClass, tool_call_id: &str) {
    let mut denied = t::SandboxDecisionDataAccessDenied::new(
        t::SandboxControl::Filesystem,
        t::SandboxOutcome::Denied,
        t::SandboxPlatform::Linux,
        t::SandboxEnforcementPoint::BuiltinFilesystem,
        class,
        t::SandboxAttestation::BuiltinPolicyChecked,
    );
    denied.tool_call_id = Some(tool_call_id.to_string());
    denied.confidence = Some(t::SandboxDenialConfidence::PolicyCorroborated);
    handle.emit_ephemeral(t::SandboxDecisionData::AccessDenied(denied));
}

/// The ephemeral `sandbox.decision` that a user let one access past the sandbox.
fn emit_bypassed(handle: &SessionHandle, class: t::SandboxDenialClass, tool_call_id: &str) {
    let mut bypass = t::SandboxDecisionDataBypassDecided::new(
        t::SandboxControl::Bypass,
        t::SandboxOutcome::Approved,
        t::SandboxPlatform::Linux,
        t::SandboxEnforcementPoint::BuiltinFilesystem,
        // What the original reports for an answered prompt too.
        t::SandboxBypassSource::PromptUnavailable,
    );
    bypass.tool_call_id = Some(tool_call_id.to_string());
    bypass.denial_class = Some(class);
    bypass.confidence = Some(t::SandboxDenialConfidence::PolicyCorroborated);
    handle.emit_ephemeral(t::SandboxDecisionData::BypassDecided(bypass));
}

/// The offer of `grant` for a write of `path`: `deniedPath` only where they differ.
fn path_grant(grant: &Path, path: &Path) -> t::PermissionSandboxPathGrant {
    let mut offer =
        t::PermissionSandboxPathGrant::new(grant.display().to_string(), t::PermissionSandboxPathGrantAccess::ReadWrite);
    offer.denied_path = (grant != path).then(|| path.display().to_string());
    offer
}

/// The failed result of an access the sandbox refused with no bypass allowed.
fn blocked(text: &str, reason: &str, message: &str) -> ToolOutput {
    let mut out = ToolOutput::fail_with(format!("{text}\n{reason}"), message, "failure");
    out.remediation = Some("review_sandbox_policy".into());
    out.sandboxed = true;
    out.telemetry.insert("sandbox_denied".into(), "true".into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_the_refused_path_only_where_it_differs() {
        let file = Path::new("/outside/new.txt");
        let g = path_grant(Path::new("/outside"), file);
        assert_eq!(g.path, "/outside");
        assert_eq!(g.denied_path.as_deref(), Some("/outside/new.txt"));
        assert_eq!(path_grant(file, file).denied_path, None);
    }

    #[test]
    fn a_refusal_tells_the_model_not_to_work_around_it_and_the_user_what_to_review() {
        let out = blocked(
            BLOCKED_TEXT,
            "/x is outside the sandbox's writable paths.",
            "Outside the sandbox's writable paths.",
        );
        assert!(!out.success && out.sandboxed);
        assert_eq!(out.error_message.as_deref(), Some("Outside the sandbox's writable paths."));
        assert_eq!(out.remediation.as_deref(), Some("review_sandbox_policy"));
        assert!(out.text_for_llm.contains("/x is outside") && out.text_for_llm.contains("Do not try to get around it"));
        assert_eq!(
            blocked(BLOCKED_TEXT, "/d is a sandbox denied path.", "Inside the sandbox's denied paths.")
                .error_message
                .as_deref(),
            Some("Inside the sandbox's denied paths.")
        );
    }
}
