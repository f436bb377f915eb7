//! Permission requests (protocol v3): `permission.requested` → a client answers with
//! `session.permissions.handlePendingPermissionRequest` → `permission.completed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use protocol::generated::types::{self as t, PermissionDecision, PermissionPromptRequest, PermissionRequest};
use tokio_util::sync::CancellationToken;
use tools::{PermissionDecision as Decision, INTERRUPTED_TEXT};

use crate::handle::{SessionHandle, SessionInput};
use crate::pending::{PendingAnswer, PendingKind};
use crate::permission_rules::Verdict;

pub const NO_APPROVER_TEXT: &str = "Permission denied and could not request permission from user";
/// The original's words when nobody at all could be asked (a `-p` run).
pub const NO_USER_TEXT: &str = "Permission denied because no interactive user response was available. Retry in an interactive session so the user can approve it, or try an alternative that does not require this permission.";

/// What asking for a permission needs from the run; owned, because built-in tools ask from
/// tasks of their own.
#[derive(Clone)]
pub(crate) struct Gate {
    pub handle: SessionHandle,
    pub cancel: CancellationToken,
    /// Set when the user rejects a call: the run ends after the current turn.
    pub user_rejected: Arc<AtomicBool>,
}

impl Gate {
    /// Asks the session's clients to approve `request`.
    pub async fn ask(&self, request: PermissionRequest, tool_call_id: &str) -> Decision {
        let view = self.handle.view();
        let nobody_asks = self.nobody_asks(view.settings.request_permission);
        let verdict = self.handle.with_permissions(|p| {
            crate::permission_rules::evaluate(p, view.settings.approve_all, nobody_asks, &request)
        });
        match verdict {
            Verdict::Denied(text) => return denied(&text),
            Verdict::Approved => return Decision::Approved,
            Verdict::Ask => {}
        }
        let keys = approval_keys(&request);
        if !keys.is_empty() && keys.iter().all(|k| view.approvals.contains(k)) {
            return Decision::Approved;
        }
        self.prompt(request, tool_call_id, None).await
    }

    /// Asks the session's clients, whatever was approved before. `bypass`: the request also
    /// offers to let the operation past the session's sandbox, with the folder whose grant
    /// would let it, if any.
    pub async fn prompt(
        &self,
        request: PermissionRequest,
        tool_call_id: &str,
        bypass: Option<Option<std::path::PathBuf>>,
    ) -> Decision {
        let view = self.handle.view();
        let keys = approval_keys(&request);
        let answers = self.handle.clients().answers_permissions();
        if !answers.unwrap_or(view.settings.request_permission) {
            // No client at all, and the session made not to ask: nobody ever could (`-p`).
            return denied(if answers.is_none() { NO_USER_TEXT } else { NO_APPROVER_TEXT });
        }
        let request_id = uuid::Uuid::new_v4().to_string();
        let prompt = prompt_request(&request).map(Box::new);
        // A preToolUse hook's "ask": its own words when the user says no, and the run goes on.
        let hook_message = match &request {
            PermissionRequest::Hook(h) => Some(h.hook_message.clone().unwrap_or_default()),
            _ => None,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let kind = match bypass {
            Some(grant) => PendingKind::SandboxBypass { prompt: prompt.clone(), grant },
            None => PendingKind::Permission(prompt.clone()),
        };
        let register = SessionInput::RunRegisterPending { request_id: request_id.clone(), kind, tx };
        if self.handle.tell(register).await.is_err() {
            return denied(INTERRUPTED_TEXT);
        }
        self.handle.emitter().emit(t::PermissionRequestedData {
            request_id: request_id.clone(),
            permission_request: request,
            prompt_request: prompt.map(|p| *p),
            agent_mode: Some(view.settings.mode),
            risk_assessment: None,
            resolved_by_hook: None,
            // Left out: an owner's id would name the session as the server does, not as a
            // tenant's client knows it.
            owner_session_id: None,
            permission_mode: None,
        });
        let answer = tokio::select! {
            a = rx => a.ok(),
            _ = self.cancel.cancelled() => None,
        };
        let answer = match answer {
            Some(PendingAnswer::Permission(decision)) => decision,
            Some(_) => PermissionDecision::UserNotAvailable,
            None => {
                let _ = self.handle.tell(SessionInput::RunForgetPending { request_id: request_id.clone() }).await;
                self.completed(request_id, tool_call_id, t::PermissionResult::Cancelled(Default::default()));
                return denied(INTERRUPTED_TEXT);
            }
        };
        let (decision, recorded) = interpret(&answer);
        let decision = match (&hook_message, &recorded) {
            (Some(message), t::PermissionResult::DeniedInteractivelyByUser(d)) => {
                hook_denial(message, d.feedback.as_deref())
            }
            _ => decision,
        };
        let bare = matches!(&recorded, t::PermissionResult::DeniedInteractivelyByUser(d) if d.feedback.is_none());
        if bare && hook_message.is_none() {
            // The recordings end at a call the user rejected without a word: no further model
            // call. With feedback the original hands it to the model and the turn goes on.
            self.user_rejected.store(true, Ordering::Release);
        }
        let for_session =
            matches!(answer, PermissionDecision::ApproveForSession(_) | PermissionDecision::ApprovedForSession(_));
        if decision == Decision::Approved && for_session {
            let _ = self.handle.tell(SessionInput::RunApproveForSession { keys }).await;
        }
        self.completed(request_id, tool_call_id, recorded);
        decision
    }

    /// No client is attached and the session was made not to ask (the headless runner).
    fn nobody_asks(&self, request_permission: bool) -> bool {
        !request_permission && self.handle.clients().answers_permissions().is_none()
    }

    fn completed(&self, request_id: String, tool_call_id: &str, result: t::PermissionResult) {
        self.handle.emitter().emit(t::PermissionCompletedData {
            request_id,
            tool_call_id: Some(tool_call_id.to_string()),
            result,
            decision_source: None,
        });
    }
}

/// The wire request for what a built-in tool asks.
pub(crate) fn wire_request(req: tools::PermissionRequest, tool_call_id: &str) -> PermissionRequest {
    let tool_call_id = Some(tool_call_id.to_string());
    match req {
        tools::PermissionRequest::Shell {
            full_command_text,
            intention,
            commands,
            possible_paths,
            possible_urls,
            has_write_file_redirection,
        } => PermissionRequest::Shell(t::PermissionRequestShell {
            tool_call_id,
            full_command_text,
            intention,
            commands: commands
                .into_iter()
                .map(|c| t::PermissionRequestShellCommand { identifier: c.identifier, read_only: c.read_only })
                .collect(),
            possible_paths,
            possible_urls: possible_urls.into_iter().map(|url| t::PermissionRequestShellPossibleUrl { url }).collect(),
            has_write_file_redirection,
            can_offer_session_approval: true,
            ..Default::default()
        }),
        tools::PermissionRequest::Write { intention, file_name, diff, new_file_contents, old_file_contents } => {
            // The whole text before and after, as the original shows a write to approve.
            let side = |content: String| t::PermissionWriteFileContent { path: file_name.clone(), content };
            let edit = t::PermissionWriteFileEdit {
                before: old_file_contents.map(side),
                after: Some(side(new_file_contents.clone())),
            };
            PermissionRequest::Write(t::PermissionRequestWrite {
                tool_call_id,
                intention,
                file_name,
                diff,
                new_file_contents: Some(new_file_contents),
                file_edits: Some(vec![edit]),
                can_offer_session_approval: true,
                ..Default::default()
            })
        }
        tools::PermissionRequest::Read { intention, path } => {
            PermissionRequest::Read(t::PermissionRequestRead { tool_call_id, intention, path, ..Default::default() })
        }
        tools::PermissionRequest::Url { intention, url } => {
            PermissionRequest::Url(t::PermissionRequestUrl { tool_call_id, intention, url, ..Default::default() })
        }
    }
}

/// What an approval "for the session" covers: each shell command name, or the tool kind.
pub(crate) fn approval_keys(req: &PermissionRequest) -> Vec<String> {
    match req {
        PermissionRequest::Shell(s) => s.commands.iter().map(|c| format!("shell:{}", c.identifier)).collect(),
        PermissionRequest::CustomTool(c) => vec![format!("custom-tool:{}", c.tool_name)],
        PermissionRequest::Url(u) => vec![format!("url:{}", u.url)],
        other => vec![other.tag().to_string()],
    }
}

/// The user-facing prompt for a request (schema `PermissionPromptRequest`: shell requests
/// become `commands` prompts; the others keep their kind with fewer fields). `None` for kinds
/// Skipper never asks about.
pub(crate) fn prompt_request(req: &PermissionRequest) -> Option<PermissionPromptRequest> {
    Some(match req {
        PermissionRequest::Shell(s) => PermissionPromptRequest::Commands(t::PermissionPromptRequestCommands {
            tool_call_id: s.tool_call_id.clone(),
            full_command_text: s.full_command_text.clone(),
            intention: s.intention.clone(),
            command_identifiers: s.commands.iter().map(|c| c.identifier.clone()).collect(),
            can_offer_session_approval: s.can_offer_session_approval,
            warning: s.warning.clone(),
            ..Default::default()
        }),
        PermissionRequest::Write(w) => PermissionPromptRequest::Write(t::PermissionPromptRequestWrite {
            tool_call_id: w.tool_call_id.clone(),
            intention: w.intention.clone(),
            file_name: w.file_name.clone(),
            diff: w.diff.clone(),
            new_file_contents: w.new_file_contents.clone(),
            file_edits: w.file_edits.clone(),
            can_offer_session_approval: w.can_offer_session_approval,
            ..Default::default()
        }),
        PermissionRequest::Read(r) => PermissionPromptRequest::Read(t::PermissionPromptRequestRead {
            tool_call_id: r.tool_call_id.clone(),
            intention: r.intention.clone(),
            path: r.path.clone(),
            ..Default::default()
        }),
        PermissionRequest::Url(u) => PermissionPromptRequest::Url(t::PermissionPromptRequestUrl {
            tool_call_id: u.tool_call_id.clone(),
            intention: u.intention.clone(),
            url: u.url.clone(),
            ..Default::default()
        }),
        PermissionRequest::Hook(h) => PermissionPromptRequest::Hook(t::PermissionPromptRequestHook {
            tool_call_id: h.tool_call_id.clone(),
            tool_name: h.tool_name.clone(),
            tool_args: h.tool_args.clone(),
            hook_message: h.hook_message.clone(),
            ..Default::default()
        }),
        PermissionRequest::CustomTool(c) => PermissionPromptRequest::CustomTool(t::PermissionPromptRequestCustomTool {
            tool_call_id: c.tool_call_id.clone(),
            tool_name: c.tool_name.clone(),
            tool_description: c.tool_description.clone(),
            args: c.args.clone(),
            ..Default::default()
        }),
        _ => return None,
    })
}

/// The original's words for a preToolUse hook's question the user said no to.
fn hook_denial(message: &str, feedback: Option<&str>) -> Decision {
    let mut text = format!("Denied by user via preToolUse hook prompt: {message}");
    if let Some(fb) = feedback.filter(|f| !f.is_empty()) {
        text.push_str(&format!(". The user provided the following feedback: {fb}"));
    }
    denied(&text)
}

fn denied(text: &str) -> Decision {
    Decision::Denied { text_for_llm: text.to_string(), code: "denied".to_string() }
}

/// Maps a client's decision (today's kinds and the legacy result kinds) to what the tool sees
/// and the result recorded in `permission.completed`.
pub(crate) fn interpret(answer: &PermissionDecision) -> (Decision, t::PermissionResult) {
    use PermissionDecision as D;
    let rejected = |feedback: Option<&String>| {
        let feedback = feedback.filter(|f| !f.is_empty());
        // The original's codes: `denied` for a rejection with the user's reasons, `rejected`
        // for a bare one (which ends the run).
        let decision = match feedback {
            Some(fb) => denied(&format!("The user rejected this tool call. User feedback: {fb}")),
            None => {
                Decision::Denied { text_for_llm: "The user rejected this tool call.".into(), code: "rejected".into() }
            }
        };
        let recorded = t::PermissionDeniedInteractivelyByUser { feedback: feedback.cloned(), force_reject: None };
        (decision, t::PermissionResult::DeniedInteractivelyByUser(recorded))
    };
    match answer {
        D::ApproveOnce(_)
        | D::Approved
        | D::ApproveForSession(_)
        | D::ApprovedForSession(_)
        | D::ApproveForLocation(_)
        | D::ApprovedForLocation(_)
        | D::ApprovePermanently(_) => (Decision::Approved, t::PermissionResult::Approved(Default::default())),
        D::Reject(r) => rejected(r.feedback.as_ref()),
        D::DeniedInteractivelyByUser(d) => rejected(d.feedback.as_ref()),
        D::DeniedByRules(d) => (
            denied("Permission denied by rules"),
            t::PermissionResult::DeniedByRules(t::PermissionDeniedByRules { rules: d.rules.clone() }),
        ),
        D::DeniedByContentExclusionPolicy(d) => (
            denied("Permission denied by content exclusion policy"),
            t::PermissionResult::DeniedByContentExclusionPolicy(t::PermissionDeniedByContentExclusionPolicy {
                path: d.path.clone(),
                message: d.message.clone(),
            }),
        ),
        _ => (denied(NO_APPROVER_TEXT), t::PermissionResult::DeniedNoApprovalRuleAndCouldNotRequestFromUser),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn decision(v: Value) -> PermissionDecision {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn maps_decisions() {
        assert_eq!(interpret(&decision(json!({"kind":"approve-once"}))).0, Decision::Approved);
        let (d, rec) = interpret(&decision(json!({"kind":"reject","feedback":"no way"})));
        assert_eq!(
            d,
            Decision::Denied {
                text_for_llm: "The user rejected this tool call. User feedback: no way".into(),
                code: "denied".into()
            }
        );
        assert_eq!(
            serde_json::to_value(rec).unwrap(),
            json!({"kind":"denied-interactively-by-user","feedback":"no way"})
        );
        let (d, _) = interpret(&decision(json!({"kind":"reject","feedback":""})));
        let bare =
            Decision::Denied { text_for_llm: "The user rejected this tool call.".into(), code: "rejected".into() };
        assert_eq!(d, bare, "empty feedback is none");
        let (d, rec) = interpret(&decision(json!({"kind":"user-not-available"})));
        assert_eq!(d, Decision::Denied { text_for_llm: NO_APPROVER_TEXT.into(), code: "denied".into() });
        assert_eq!(
            serde_json::to_value(rec).unwrap()["kind"],
            "denied-no-approval-rule-and-could-not-request-from-user"
        );
    }

    #[test]
    fn a_hooks_question_is_prompted_as_a_hook_and_refused_in_its_words() {
        let req = PermissionRequest::Hook(t::PermissionRequestHook {
            tool_call_id: Some("c1".into()),
            tool_name: "bash".into(),
            tool_args: Some(json!({"command": "ls"})),
            hook_message: Some("list?".into()),
        });
        let prompt = serde_json::to_value(prompt_request(&req).unwrap()).unwrap();
        assert_eq!(
            prompt,
            json!({"kind": "hook", "toolCallId": "c1", "toolName": "bash", "toolArgs": {"command": "ls"}, "hookMessage": "list?"})
        );
        let refused = |text: &str| Decision::Denied { text_for_llm: text.into(), code: "denied".into() };
        assert_eq!(hook_denial("list?", None), refused("Denied by user via preToolUse hook prompt: list?"));
        assert_eq!(
            hook_denial("list?", Some("no")),
            refused("Denied by user via preToolUse hook prompt: list?. The user provided the following feedback: no")
        );
    }

    #[test]
    fn shell_requests_prompt_with_their_command_identifiers() {
        let req = wire_request(
            tools::PermissionRequest::Shell {
                full_command_text: "ls && rm x".into(),
                intention: "i".into(),
                commands: vec![
                    tools::ShellCommand { identifier: "ls".into(), read_only: true },
                    tools::ShellCommand { identifier: "rm".into(), read_only: false },
                ],
                possible_paths: vec![],
                possible_urls: vec![],
                has_write_file_redirection: false,
            },
            "c1",
        );
        assert_eq!(approval_keys(&req), vec!["shell:ls", "shell:rm"]);
        let prompt = serde_json::to_value(prompt_request(&req).unwrap()).unwrap();
        assert_eq!(prompt["kind"], "commands");
        assert_eq!(prompt["commandIdentifiers"], json!(["ls", "rm"]));
        assert_eq!(prompt["toolCallId"], "c1");
    }
}
