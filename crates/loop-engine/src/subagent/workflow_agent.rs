//! A workflow body's sub-agent (`session.workflow.agent`): one agent run to its answer, started
//! by the body rather than by a `task` call, so no turn waits on it and no notice follows it.
//! Its events carry the run's id (`workflowRunId`), as the original's do; it stops when the
//! run's attempt ends. With a `schema`, the agent is asked for a JSON value of that shape and
//! an answer that is not one resolves to `null`, as the original's does.

use protocol::generated::types as t;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{resolve, run, AgentScope, Resolved};
use crate::handle::SessionHandle;
use crate::run_ctx::RunCtx;

/// Which agent a body's call runs, the names it goes by and its model: worked out once, for
/// the run's record of the agent and for the agent itself.
pub struct Plan {
    agent: Option<Resolved>,
    /// A built-in agent type or a custom agent; `general-purpose` when not given.
    pub agent_type: String,
    /// The body's label for the call; the agent type when it gave none.
    pub label: String,
    /// What clients show: the label given, else the agent's display name.
    pub display_name: String,
    pub model: String,
}

/// The plan for a call asking for `agent_type`, `label` and `model` (each optional). An agent
/// type the session does not offer is kept, and fails when run.
pub fn plan(handle: &SessionHandle, agent_type: Option<String>, label: Option<String>, model: Option<String>) -> Plan {
    let settings = handle.view().settings.clone();
    let agent_type = agent_type.unwrap_or_else(|| "general-purpose".into());
    let agent = resolve(&settings, &agent_type);
    let model =
        model.or_else(|| agent.as_ref().and_then(|a| a.model.clone())).unwrap_or_else(|| settings.model.clone());
    let display_name = label.clone().or_else(|| agent.as_ref().map(|a| a.display_name.clone()));
    let label = label.unwrap_or_else(|| agent_type.clone());
    Plan { display_name: display_name.unwrap_or_else(|| label.clone()), agent, agent_type, label, model }
}

/// What the body asked for, beside its plan.
pub struct Request {
    pub run_id: String,
    /// The id the run recorded the agent under (also its made-up tool call id).
    pub agent_id: String,
    pub prompt: String,
    pub schema: Option<Value>,
    /// The run's attempt: the agent stops when it ends.
    pub cancel: CancellationToken,
}

/// Runs the agent; its answer (a string, or the JSON value a `schema` asked for).
pub async fn run(handle: &SessionHandle, plan: Plan, request: Request) -> Result<Option<Value>, String> {
    let settings = handle.view().settings.clone();
    let Plan { agent, agent_type, display_name: label, model, .. } = plan;
    let agent = agent.ok_or_else(|| format!("Agent type \"{agent_type}\" not found"))?;
    let Some(deps) = handle.tasks().lock().deps.clone() else { return Err("sub-agents are unavailable".into()) };
    let base = RunCtx::new(handle.clone(), deps, request.cancel.clone());
    base.emitter().emit(t::SubagentStartedData {
        tool_call_id: request.agent_id.clone(),
        agent_name: agent.name.clone(),
        agent_display_name: label.clone(),
        agent_description: label.clone(),
        model: Some(model.clone()),
        agent_type: Some(agent_type.clone()),
        execution_mode: Some("background".into()),
        workflow_run_id: Some(request.run_id.clone()),
        ..Default::default()
    });
    let prompt = match &request.schema {
        Some(schema) => format!(
            "{}\n\nEnd your answer with only a JSON value matching this JSON Schema, nothing after it:\n{schema}",
            request.prompt
        ),
        None => request.prompt.clone(),
    };
    let call_id = request.agent_id.clone();
    let sub = base.for_subagent(AgentScope { agent_id: request.agent_id, parent_tool_call_id: call_id.clone() });
    let outcome = run::run_agent(&sub, &agent, &prompt, &model, &settings).await;
    match &outcome {
        Ok(_) => base.emitter().emit(t::SubagentCompletedData {
            tool_call_id: call_id.clone(),
            agent_name: agent.name.clone(),
            agent_display_name: label,
            model: Some(model),
            ..Default::default()
        }),
        Err(error) => base.emitter().emit(t::SubagentFailedData {
            tool_call_id: call_id.clone(),
            agent_name: agent.name.clone(),
            agent_display_name: label,
            error: error.clone(),
            model: Some(model),
            ..Default::default()
        }),
    };
    let answer = outcome?;
    Ok(match &request.schema {
        Some(schema) => structured(&answer, schema),
        None => Some(Value::String(answer)),
    })
}

/// The JSON value at the end of an answer, if it has the asked-for shape.
fn structured(answer: &str, schema: &Value) -> Option<Value> {
    let text = answer.trim().trim_end_matches("```").trim();
    // The answer is the value, or ends with it: the first bracket it parses from.
    let value = std::iter::once(text)
        .chain(text.char_indices().filter(|(_, c)| *c == '{' || *c == '[').map(|(i, _)| &text[i..]))
        .find_map(|candidate| serde_json::from_str::<Value>(candidate).ok())?;
    crate::workflows::shape::check(schema, &value).ok().map(|_| value)
}

#[cfg(test)]
mod tests {
    use super::structured;
    use serde_json::json;

    #[test]
    fn a_structured_answer_is_the_json_value_it_ends_with_if_it_fits() {
        let schema = json!({"type": "object", "required": ["n"]});
        assert_eq!(structured("Here:\n```json\n{\"n\": 1}\n```", &schema), Some(json!({"n": 1})));
        assert_eq!(structured("{\"n\": {\"m\": 2}}", &schema), Some(json!({"n": {"m": 2}})));
        assert_eq!(structured("no json here", &schema), None);
        assert_eq!(structured("{\"x\": 1}", &schema), None, "the wrong shape resolves to null");
    }
}
