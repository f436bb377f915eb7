//! The `exit_plan_mode` tool: offered in plan mode when the client handles
//! `exitPlanMode.request` (`requestExitPlanMode` on create/resume). The model hands in its plan
//! summary; the client approves it with an action (`interactive`, `autopilot`, ...) or turns it
//! down with feedback. Approved, the session leaves plan mode for the chosen mode.

use llm_providers::ToolSpec;
use protocol::generated::types::{self as t, SessionMode};
use protocol::rpc::{RpcMethod, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tools::ToolOutput;

use crate::handle::{PlanOp, PlanResult};
use crate::run_ctx::RunCtx;

pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// The actions offered when the model names none, in the original's order.
const DEFAULT_ACTIONS: [&str; 3] = ["autopilot", "interactive", "exit_only"];

/// Server→client: asks the user to approve the plan.
pub struct ExitPlanModeRequest;

impl RpcMethod for ExitPlanModeRequest {
    const NAME: &'static str = "exitPlanMode.request";
    const SCOPE: Scope = Scope::Client;
    type Params = ExitPlanModeParams;
    type Result = ExitPlanModeAnswer;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExitPlanModeParams {
    pub session_id: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_content: Option<String>,
    pub actions: Vec<String>,
    pub recommended_action: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExitPlanModeAnswer {
    pub approved: bool,
    #[serde(default)]
    pub selected_action: Option<String>,
    #[serde(default)]
    pub feedback: Option<String>,
}

pub fn spec() -> ToolSpec {
    let parameters = json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "A short markdown summary of the plan for the user to review: the approach, the files or components to change, key decisions."},
            "actions": {
                "type": "array",
                "items": {"type": "string", "enum": ["exit_only", "interactive", "autopilot", "autopilot_fleet"]},
                "description": "The actions to offer the user (default: autopilot, interactive, exit_only)."
            },
            "recommendedAction": {
                "type": "string",
                "enum": ["exit_only", "interactive", "autopilot", "autopilot_fleet"],
                "description": "The action to recommend; it is shown first."
            },
        },
        "required": ["summary"],
    });
    ToolSpec {
        name: EXIT_PLAN_MODE.into(),
        description:
            "Leave plan mode once the plan is written: the user reviews its summary and approves it (choosing \
                      how to go on) or asks for changes."
                .into(),
        parameters: std::sync::Arc::new(parameters),
    }
}

fn action_of(name: &str) -> Option<t::ExitPlanModeAction> {
    t::ExitPlanModeAction::ALL.iter().copied().find(|a| a.as_str() == name)
}

/// The mode an approved action leaves the session in.
fn mode_after(action: Option<t::ExitPlanModeAction>) -> SessionMode {
    match action {
        Some(t::ExitPlanModeAction::Autopilot | t::ExitPlanModeAction::AutopilotFleet) => SessionMode::Autopilot,
        _ => SessionMode::Interactive,
    }
}

/// A `handlePendingExitPlanMode` answer; without an action, `autoApproveEdits` means autopilot
/// (the schema's default).
fn from_pending(answer: t::UIExitPlanModeResponse) -> ExitPlanModeAnswer {
    let action = answer.selected_action.unwrap_or(if answer.auto_approve_edits == Some(true) {
        t::UIExitPlanModeAction::Autopilot
    } else {
        t::UIExitPlanModeAction::Interactive
    });
    ExitPlanModeAnswer {
        approved: answer.approved,
        selected_action: Some(action.as_str().to_string()),
        feedback: answer.feedback,
    }
}

/// What the model is told about the user's decision.
fn result_text(answer: &ExitPlanModeAnswer, mode: SessionMode, action: Option<t::ExitPlanModeAction>) -> String {
    if !answer.approved {
        return match answer.feedback.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
            Some(feedback) => format!("Plan not approved. User feedback: {feedback}"),
            None => "Plan not approved.".to_string(),
        };
    }
    let mode_name = match mode {
        SessionMode::Autopilot => "autopilot",
        SessionMode::Plan => "plan",
        _ => "interactive",
    };
    let mut text = format!("Plan approved! Exited plan mode.\n\nYou are now in {mode_name} mode.");
    if action != Some(t::ExitPlanModeAction::ExitOnly) {
        text.push_str(
            " Start implementing the plan now, in this same response. Approving the plan is your go-signal, so do not \
             stop to ask whether to proceed or wait for another message.",
        );
    }
    text
}

pub(crate) async fn run(ctx: &RunCtx, args: &Value) -> ToolOutput {
    let Some(summary) = args.get("summary").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
        return ToolOutput::fail("The `summary` argument is required.");
    };
    let mut actions: Vec<String> = args
        .get("actions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).filter(|n| action_of(n).is_some()).map(String::from).collect())
        .unwrap_or_default();
    if actions.is_empty() {
        actions = DEFAULT_ACTIONS.map(String::from).to_vec();
    }
    let recommended = args
        .get("recommendedAction")
        .and_then(Value::as_str)
        .filter(|n| action_of(n).is_some())
        .map(String::from)
        .unwrap_or_else(|| actions[0].clone());
    if !actions.contains(&recommended) {
        actions.insert(0, recommended.clone());
    }
    let Some(client) = ctx.emitter().requester() else {
        return ToolOutput::fail("No user is available to review the plan.");
    };
    let plan_content = match ctx.handle.plan(PlanOp::Read).await {
        Ok(PlanResult::Read { content, .. }) => content.unwrap_or_default(),
        _ => String::new(),
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let view = ctx.view();
    ctx.emitter().emit(t::ExitPlanModeRequestedData {
        request_id: request_id.clone(),
        summary: summary.to_string(),
        plan_content: plan_content.clone(),
        actions: actions.iter().filter_map(|a| action_of(a)).collect(),
        recommended_action: action_of(&recommended).unwrap_or(t::ExitPlanModeAction::Interactive),
        model: Some(view.settings.model.clone()),
    });
    let params = ExitPlanModeParams {
        session_id: ctx.handle.id().to_string(),
        summary: summary.to_string(),
        plan_content: Some(plan_content),
        actions,
        recommended_action: recommended,
    };
    // The handler's answer to `exitPlanMode.request`, or any client's through
    // `session.ui.handlePendingExitPlanMode` under the announced id: the first one decides.
    let pending = ctx.handle.ui().register_exit_plan(&request_id);
    let asked = crate::client::request::<ExitPlanModeRequest>(&*client, &params);
    let answer = tokio::select! {
        asked = asked => asked,
        Ok(answer) = pending => Ok(from_pending(answer)),
    };
    ctx.handle.ui().forget_exit_plan(&request_id);
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            ctx.emitter().emit(t::ExitPlanModeCompletedData { request_id, ..Default::default() });
            return ToolOutput::fail(format!("Failed to get the plan reviewed: {e}"));
        }
    };
    let action = answer.selected_action.as_deref().and_then(action_of);
    ctx.emitter().emit(t::ExitPlanModeCompletedData {
        request_id,
        approved: Some(answer.approved),
        selected_action: action,
        feedback: answer.feedback.clone(),
        ..Default::default()
    });
    let mode = if answer.approved { mode_after(action) } else { SessionMode::Plan };
    if answer.approved {
        let _ = ctx.handle.set_mode(mode).await;
    }
    ToolOutput::ok(result_text(&answer, mode, action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_told_the_decision() {
        let yes = ExitPlanModeAnswer { approved: true, selected_action: Some("interactive".into()), feedback: None };
        let action = Some(t::ExitPlanModeAction::Interactive);
        assert_eq!(
            result_text(&yes, mode_after(action), action),
            "Plan approved! Exited plan mode.\n\nYou are now in interactive mode. Start implementing the plan now, in \
             this same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait \
             for another message."
        );
        assert_eq!(mode_after(Some(t::ExitPlanModeAction::AutopilotFleet)), SessionMode::Autopilot);
        let no = ExitPlanModeAnswer { approved: false, selected_action: None, feedback: Some("Add tests".into()) };
        assert_eq!(result_text(&no, SessionMode::Plan, None), "Plan not approved. User feedback: Add tests");
    }
}
