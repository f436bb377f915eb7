//! Permission requests (protocol v3): `permission.requested` → a client answers with
//! `session.permissions.handlePendingPermissionRequest` → `permission.completed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use protocol::generated::types::PermissionDecision;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tools::{PermissionDecision as Decision, INTERRUPTED_TEXT};

use crate::handle::{SessionHandle, SessionInput};
use crate::pending::{PendingAnswer, PendingKind};

pub const NO_APPROVER_TEXT: &str = "Permission denied and could not request permission from user";

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
    /// Asks the session's clients to approve `request` (a `permissionRequest` object with
    /// `kind` and `toolCallId`).
    pub async fn ask(&self, request: Value, tool_call_id: &str) -> Decision {
        let view = self.handle.view();
        if view.settings.approve_all {
            return Decision::Approved;
        }
        let keys = approval_keys(&request);
        if !keys.is_empty() && keys.iter().all(|k| view.approvals.contains(k)) {
            return Decision::Approved;
        }
        if !view.settings.request_permission {
            return denied(NO_APPROVER_TEXT);
        }
        let request_id = uuid::Uuid::new_v4().to_string();
        let prompt = prompt_request(&request);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let kind = PendingKind::Permission(prompt.clone());
        let registered =
            self.handle.tell(SessionInput::RunRegisterPending { request_id: request_id.clone(), kind, tx }).await;
        if registered.is_err() {
            return denied(INTERRUPTED_TEXT);
        }
        self.handle.emitter().emit(
            "permission.requested",
            json!({
                "requestId": request_id,
                "permissionRequest": request,
                "promptRequest": prompt,
                "agentMode": view.settings.mode,
            }),
            false,
        );
        let answer = tokio::select! {
            a = rx => a.ok(),
            _ = self.cancel.cancelled() => None,
        };
        let answer = match answer {
            Some(PendingAnswer::Permission(decision)) => decision,
            Some(_) => PermissionDecision::UserNotAvailable,
            None => {
                let _ = self.handle.tell(SessionInput::RunForgetPending { request_id: request_id.clone() }).await;
                self.handle.emitter().emit(
                    "permission.completed",
                    json!({"requestId": request_id, "toolCallId": tool_call_id, "result": {"kind": "cancelled"}}),
                    false,
                );
                return denied(INTERRUPTED_TEXT);
            }
        };
        let (decision, recorded) = interpret(&answer);
        if recorded.get("kind").and_then(Value::as_str) == Some("denied-interactively-by-user") {
            // The recordings end at a call the user rejected: no further model call.
            self.user_rejected.store(true, Ordering::Release);
        }
        let for_session =
            matches!(answer, PermissionDecision::ApproveForSession(_) | PermissionDecision::ApprovedForSession(_));
        if decision == Decision::Approved && for_session {
            let _ = self.handle.tell(SessionInput::RunApproveForSession { keys }).await;
        }
        self.handle.emitter().emit(
            "permission.completed",
            json!({"requestId": request_id, "toolCallId": tool_call_id, "result": recorded}),
            false,
        );
        decision
    }
}

/// What an approval "for the session" covers: each shell command name, or the tool kind.
pub(crate) fn approval_keys(req: &Value) -> Vec<String> {
    let kind = req.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "shell" => req
            .get("commands")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.get("identifier").and_then(Value::as_str))
                    .map(|id| format!("shell:{id}"))
                    .collect()
            })
            .unwrap_or_default(),
        "custom-tool" => vec![format!("custom-tool:{}", req.get("toolName").and_then(Value::as_str).unwrap_or(""))],
        "url" => vec![format!("url:{}", req.get("url").and_then(Value::as_str).unwrap_or(""))],
        other => vec![other.to_string()],
    }
}

/// The user-facing prompt derived from a permission request (schema `PermissionPromptRequest`:
/// shell requests become `commands` prompts; others keep their kind with fewer fields).
pub(crate) fn prompt_request(req: &Value) -> Value {
    let kind = req.get("kind").and_then(Value::as_str).unwrap_or("");
    let (prompt_kind, keep): (&str, &[&str]) = match kind {
        "shell" => ("commands", &["toolCallId", "fullCommandText", "intention", "canOfferSessionApproval", "warning"]),
        "write" => {
            ("write", &["toolCallId", "intention", "fileName", "diff", "newFileContents", "canOfferSessionApproval"])
        }
        "read" => ("read", &["toolCallId", "intention", "path"]),
        "url" => ("url", &["toolCallId", "intention", "url"]),
        "mcp" => ("mcp", &["toolCallId", "serverName", "toolName", "toolTitle", "args"]),
        "custom-tool" => ("custom-tool", &["toolCallId", "toolName", "toolDescription", "args"]),
        other => (other, &["toolCallId"]),
    };
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), json!(prompt_kind));
    for key in keep {
        if let Some(v) = req.get(*key) {
            out.insert((*key).to_string(), v.clone());
        }
    }
    if kind == "shell" {
        let ids: Vec<Value> = req
            .get("commands")
            .and_then(Value::as_array)
            .map(|cs| cs.iter().filter_map(|c| c.get("identifier").cloned()).collect())
            .unwrap_or_default();
        out.insert("commandIdentifiers".into(), Value::Array(ids));
    }
    Value::Object(out)
}

fn denied(text: &str) -> Decision {
    Decision::Denied { text_for_llm: text.to_string(), code: "denied".to_string() }
}

/// Maps a client's decision (today's kinds and the legacy result kinds) to what the tool sees
/// and the normalised result recorded in `permission.completed`.
pub(crate) fn interpret(answer: &PermissionDecision) -> (Decision, Value) {
    use PermissionDecision as D;
    let rejected = |feedback: Option<&str>| {
        let feedback = feedback.filter(|f| !f.is_empty());
        let text = match feedback {
            Some(fb) => format!("The user rejected this tool call. User feedback: {fb}"),
            None => "The user rejected this tool call.".to_string(),
        };
        let mut recorded = json!({"kind": "denied-interactively-by-user"});
        if let Some(fb) = feedback {
            recorded["feedback"] = json!(fb);
        }
        (denied(&text), recorded)
    };
    match answer {
        D::ApproveOnce(_)
        | D::Approved
        | D::ApproveForSession(_)
        | D::ApprovedForSession(_)
        | D::ApproveForLocation(_)
        | D::ApprovedForLocation(_)
        | D::ApprovePermanently(_) => (Decision::Approved, json!({"kind": "approved"})),
        D::Reject(r) => rejected(r.feedback.as_deref()),
        D::DeniedInteractivelyByUser(d) => rejected(d.feedback.as_deref()),
        D::DeniedByRules(_) => (denied("Permission denied by rules"), json!({"kind": "denied-by-rules"})),
        D::DeniedByContentExclusionPolicy(_) => (
            denied("Permission denied by content exclusion policy"),
            json!({"kind": "denied-by-content-exclusion-policy"}),
        ),
        _ => (denied(NO_APPROVER_TEXT), json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(rec, json!({"kind":"denied-interactively-by-user","feedback":"no way"}));
        let (d, rec) = interpret(&decision(json!({"kind":"user-not-available"})));
        assert_eq!(d, Decision::Denied { text_for_llm: NO_APPROVER_TEXT.into(), code: "denied".into() });
        assert_eq!(rec["kind"], "denied-no-approval-rule-and-could-not-request-from-user");
    }
}
