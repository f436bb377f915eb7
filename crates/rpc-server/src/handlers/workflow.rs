//! `session.workflow.*`: running the workflows extensions declare. The session keeps the runs
//! (`loop_engine::workflows`); here a run's attempt is sent to the declaring client
//! (`workflow.execute`, or `factory.execute` to an extension that declared `factories`), its
//! answer settles the run, and the clients are told: `workflow.run_started` / `run_updated` /
//! `run_settled` (ephemeral, in the run's family's names), and — unless the caller turned it
//! off — a `system.notification` and a `<system_notification>` message that starts a turn,
//! as the original tells the session a run ended. Pausing or cancelling ends the attempt at
//! once and asks the client to abort its body (`workflow.abort`).
//!
//! A run started from the SDKs' names (`session.factory.*`, `handlers/factory.rs`) is the same
//! run; only the names differ.

use loop_engine::subagent::workflow_agent;
use loop_engine::workflows::{Attempt, Family, Outcome, Settled, WorkflowError};
use loop_engine::{QueuedMessage, SessionHandle};
use protocol::event::SessionEvent;
use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INVALID_PARAMS};
use serde_json::{json, Value};

use crate::ctx::Ctx;

/// Pages hold 200 entries unless asked for fewer, and never more than 500.
fn page_size(limit: Option<u64>) -> usize {
    limit.unwrap_or(200).clamp(1, 500) as usize
}

fn refused(e: WorkflowError) -> RpcError {
    RpcError { code: INVALID_PARAMS, message: e.to_string(), data: Some(e.data()) }
}

pub async fn run(ctx: &Ctx, p: t::SessionWorkflowRunParams) -> Result<t::WorkflowRunResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let options = p.options.unwrap_or_default();
    if let Some(previous) = options.resume_from_run_id {
        let resumed = resume_run(&session, &previous)?;
        return Ok(resumed.run);
    }
    let notify = options.notify_on_complete.unwrap_or(true);
    let (envelope, attempt) = session.workflows().start(&p.name, p.args, notify).map_err(refused)?;
    launch(&session, attempt);
    Ok(envelope)
}

pub async fn resume(ctx: &Ctx, p: t::SessionWorkflowResumeParams) -> Result<t::WorkflowResumeResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    resume_run(&session, &p.run_id)
}

fn resume_run(session: &SessionHandle, run_id: &str) -> Result<t::WorkflowResumeResult, RpcError> {
    let (name, _, envelope, attempt) = session.workflows().resume(run_id).map_err(refused)?;
    launch(session, attempt);
    Ok(t::WorkflowResumeResult::new(name, envelope))
}

pub async fn get_run(ctx: &Ctx, p: t::SessionWorkflowGetRunParams) -> Result<t::WorkflowRunResult, RpcError> {
    ctx.session(&p.session_id)?.workflows().envelope(&p.run_id).map_err(refused)
}

pub async fn list_runs(ctx: &Ctx, p: t::SessionWorkflowListRunsParams) -> Result<t::WorkflowListRunsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(session.workflows().list(p.after_seq, p.before_seq, page_size(p.limit)))
}

pub async fn get_run_detail(
    ctx: &Ctx,
    p: t::SessionWorkflowGetRunDetailParams,
) -> Result<t::WorkflowRunDetail, RpcError> {
    ctx.session(&p.session_id)?.workflows().detail(&p.run_id).map_err(refused)
}

pub async fn get_run_progress(
    ctx: &Ctx,
    p: t::SessionWorkflowGetRunProgressParams,
) -> Result<t::WorkflowProgressPage, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let limit = page_size(p.limit);
    session.workflows().progress(&p.run_id, p.phase_id.as_deref(), p.after_seq, p.before_seq, limit).map_err(refused)
}

pub async fn cancel(ctx: &Ctx, p: t::SessionWorkflowCancelParams) -> Result<t::WorkflowRunResult, RpcError> {
    stop(ctx, &p.session_id, &p.run_id, false).await
}

pub async fn pause(ctx: &Ctx, p: t::SessionWorkflowPauseParams) -> Result<t::WorkflowRunResult, RpcError> {
    stop(ctx, &p.session_id, &p.run_id, true).await
}

async fn stop(ctx: &Ctx, session_id: &str, run_id: &str, pause: bool) -> Result<t::WorkflowRunResult, RpcError> {
    let session = ctx.session(session_id)?;
    let (envelope, stopped) = session.workflows().stop(run_id, pause).map_err(refused)?;
    if let Some((attempt, settled)) = stopped {
        // The body is asked to stop; its answer, whenever it comes, changes nothing now.
        if let Some(client) = session.requester_of(attempt.client) {
            let params = json!({"sessionId": session.id(), "runId": attempt.run_id, "executionToken": attempt.token});
            let method = attempt.family.abort_method();
            tokio::spawn(async move {
                if let Err(e) = client.request(method, params).await {
                    tracing::debug!(error = %e, "{method} failed");
                }
            });
        }
        announce(&session, settled).await;
    }
    Ok(envelope)
}

pub async fn log(ctx: &Ctx, p: t::SessionWorkflowLogParams) -> Result<t::WorkflowAckResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let revision = session.workflows().log(&p.run_id, &p.execution_token, &p.lines).map_err(refused)?;
    updated(&session, &p.run_id, revision);
    Ok(t::WorkflowAckResult {})
}

pub async fn journal_get(
    ctx: &Ctx,
    p: t::SessionWorkflowJournalGetParams,
) -> Result<t::WorkflowJournalGetResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let cached = session.workflows().journal_get(&p.run_id, &p.execution_token, &p.key).map_err(refused)?;
    Ok(t::WorkflowJournalGetResult { hit: cached.is_some(), result_json: cached })
}

pub async fn journal_put(ctx: &Ctx, p: t::SessionWorkflowJournalPutParams) -> Result<t::WorkflowAckResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let revision =
        session.workflows().journal_put(&p.run_id, &p.execution_token, &p.key, p.result_json).map_err(refused)?;
    updated(&session, &p.run_id, revision);
    Ok(t::WorkflowAckResult {})
}

pub async fn agent(ctx: &Ctx, p: t::SessionWorkflowAgentParams) -> Result<t::WorkflowAgentResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let plan = workflow_agent::plan(&session, p.opts.agent, p.opts.label, p.opts.model);
    let run_id = p.workflow_run_id;
    let (agent_id, cancel, revision) =
        session.workflows().agent_started(&run_id, &p.execution_token, &plan).map_err(refused)?;
    updated(&session, &run_id, revision);
    let request = workflow_agent::Request {
        run_id: run_id.clone(),
        agent_id: agent_id.clone(),
        prompt: p.prompt,
        schema: p.opts.schema,
        cancel,
    };
    let outcome = workflow_agent::run(&session, plan, request).await;
    if let Some(revision) = session.workflows().agent_finished(&run_id, &agent_id, outcome.is_ok()) {
        updated(&session, &run_id, revision);
    }
    // A failed agent is a `null` result to the body, which decides what that means.
    Ok(t::WorkflowAgentResult { result: outcome.unwrap_or_default() })
}

/// Sends an attempt to the declaring client and settles the run with its answer, on a task of
/// its own: the caller has its envelope at once, as the original answers.
fn launch(session: &SessionHandle, attempt: Attempt) {
    let data = json!({"runId": attempt.run_id, name_key(attempt.family): attempt.name, "attempt": attempt.attempt});
    emit(session, attempt.family, "run_started", data);
    updated(session, &attempt.run_id, attempt.revision);
    let session = session.clone();
    tokio::spawn(async move {
        let outcome = tokio::select! {
            outcome = execute(&session, &attempt) => outcome,
            // Paused or cancelled: the run was settled by whoever stopped it.
            _ = attempt.cancel.cancelled() => return,
        };
        if let Some(settled) = session.workflows().settle(&attempt.run_id, &attempt.token, outcome) {
            announce(&session, settled).await;
        }
    });
}

async fn execute(session: &SessionHandle, attempt: &Attempt) -> Outcome {
    let Some(client) = session.requester_of(attempt.client) else { return Outcome::Disconnected };
    let params = json!({
        "sessionId": session.id(),
        "name": attempt.name,
        "runId": attempt.run_id,
        "executionToken": attempt.token,
        "args": attempt.args,
    });
    match client.request(attempt.family.execute_method(), params).await {
        Ok(answer) => Outcome::Completed(answer.get("result").cloned()),
        Err(_) if session.requester_of(attempt.client).is_none() => Outcome::Disconnected,
        Err(error) => Outcome::Failed(error),
    }
}

/// The key a run's workflow name goes under in the family's names.
fn name_key(family: Family) -> &'static str {
    match family {
        Family::Workflow => "workflowName",
        Family::Factory => "factoryName",
    }
}

fn emit(session: &SessionHandle, family: Family, what: &str, data: Value) {
    let kind = format!("{}.{what}", family.event_prefix());
    session.emit_ephemeral(SessionEvent::from_parts(kind, data));
}

fn updated(session: &SessionHandle, run_id: &str, revision: u64) {
    if let Some(family) = session.workflows().family_of(run_id) {
        emit(session, family, "run_updated", json!({"runId": run_id, "revision": revision}));
    }
}

/// A run settled: the `run_settled` and `run_updated` events, then the session's notice.
async fn announce(session: &SessionHandle, settled: Settled) {
    let mut data = json!({
        "runId": settled.run_id,
        "status": settled.status.as_str(),
        "consumedSubagents": settled.subagents,
        "consumedNanoAiu": 0,
        "elapsedMs": settled.elapsed_ms,
    });
    if let Some(failure) = &settled.failure_type {
        data["failureType"] = json!(failure);
    }
    emit(session, settled.family, "run_settled", data);
    emit(session, settled.family, "run_updated", json!({"runId": settled.run_id, "revision": settled.revision}));
    if !settled.notify {
        return;
    }
    let noun = match settled.family {
        Family::Workflow => "Workflow",
        Family::Factory => "Factory",
    };
    let text = format!(
        "<system_notification>\n{noun} \"{}\" run {} reached terminal status {}. Spent 0 AI credits across {} \
         subagents. Result preview: {}.\n</system_notification>",
        settled.name,
        settled.run_id,
        settled.status.as_str(),
        settled.subagents,
        settled.result_preview.as_deref().unwrap_or("<none>"),
    );
    let mut kind = json!({
        "type": format!("{}_completed", settled.family.event_prefix()),
        "runId": settled.run_id,
        name_key(settled.family): settled.name,
        "status": settled.status.as_str(),
        "consumedSubagents": settled.subagents,
        "elapsedMs": settled.elapsed_ms,
        "consumedNanoAiu": 0,
        "attempt": settled.attempt,
    });
    if let Some(preview) = &settled.result_preview {
        kind["resultPreview"] = json!(preview);
    }
    if let Some(pause) = &settled.pause_info {
        kind["pauseInfo"] = serde_json::to_value(pause).unwrap_or(Value::Null);
    }
    session.emit(SessionEvent::from_parts("system.notification".into(), json!({"content": text, "kind": kind})));
    let msg = QueuedMessage { prompt: text, ..Default::default() };
    if let Err(e) = session.send(msg, false).await {
        tracing::debug!(session = %session.id(), error = %e, "workflow notice not delivered");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pages_are_bounded() {
        assert_eq!(super::page_size(None), 200);
        assert_eq!(super::page_size(Some(0)), 1);
        assert_eq!(super::page_size(Some(10_000)), 500);
    }
}
