//! `session.factory.*`: the SDKs' names for workflows (`handlers/workflow.rs`). The same runs,
//! the same behaviour; only names differ on the wire — `factoryName` for `workflowName`,
//! `factoryRunId` for `workflowRunId`, `factory_*` failure types for `workflow_*` — so each
//! method translates its params, calls the workflow handler and translates the answer back.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::workflow;
use crate::ctx::Ctx;

/// Keys that differ, as (SDKs' name, original's name).
const KEYS: &[(&str, &str)] = &[("factoryName", "workflowName"), ("factoryRunId", "workflowRunId")];

/// Values the caller or a body wrote, never renamed.
const OPAQUE: &[&str] = &["args", "result", "resultJson", "snapshot", "schema", "argsSchema"];

/// Renames keys (and `type` tags) of `value` from one family's names to the other's.
fn rename(value: &mut Value, to_workflow: bool) {
    match value {
        Value::Object(map) => {
            for (factory, workflow) in KEYS {
                let (from, to) = if to_workflow { (*factory, *workflow) } else { (*workflow, *factory) };
                if let Some(v) = map.remove(from) {
                    map.insert(to.to_string(), v);
                }
            }
            if let Some(Value::String(tag)) = map.get_mut("type") {
                let (from, to) = if to_workflow { ("factory_", "workflow_") } else { ("workflow_", "factory_") };
                if let Some(rest) = tag.strip_prefix(from) {
                    *tag = format!("{to}{rest}");
                }
            }
            map.iter_mut().filter(|(k, _)| !OPAQUE.contains(&k.as_str())).for_each(|(_, v)| rename(v, to_workflow));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename(v, to_workflow)),
        _ => {}
    }
}

fn translate<A: Serialize, B: DeserializeOwned>(ctx: &Ctx, from: &A, to_workflow: bool) -> Result<B, RpcError> {
    let mut value = serde_json::to_value(from).map_err(|e| ctx.failed(e))?;
    rename(&mut value, to_workflow);
    serde_json::from_value(value).map_err(|e| ctx.failed(e))
}

/// A refusal in the SDKs' words: "factory" for "workflow", in the text and the codes.
fn refusal(mut e: RpcError) -> RpcError {
    e.message = e.message.replace("Workflow ", "Factory ").replace("workflow ", "factory ");
    if let Some(Value::Object(data)) = e.data.as_mut() {
        if let Some(Value::String(code)) = data.get_mut("code") {
            if let Some(rest) = code.strip_prefix("workflow_") {
                *code = format!("factory_{rest}");
            }
        }
    }
    e
}

/// Declares `name(params) -> result` as the workflow handler `inner` under the SDKs' names.
macro_rules! factory_method {
    ($name:ident, $params:ty, $result:ty, $inner:path) => {
        pub async fn $name(ctx: &Ctx, p: $params) -> Result<$result, RpcError> {
            let answer = $inner(ctx, translate(ctx, &p, true)?).await.map_err(refusal)?;
            translate(ctx, &answer, false)
        }
    };
}

factory_method!(run, t::SessionFactoryRunParams, t::FactoryRunResult, workflow::run);
factory_method!(resume, t::SessionFactoryResumeParams, t::FactoryResumeResult, workflow::resume);
factory_method!(get_run, t::SessionFactoryGetRunParams, t::FactoryRunResult, workflow::get_run);
factory_method!(list_runs, t::SessionFactoryListRunsParams, t::FactoryListRunsResult, workflow::list_runs);
factory_method!(get_run_detail, t::SessionFactoryGetRunDetailParams, t::FactoryRunDetail, workflow::get_run_detail);
factory_method!(
    get_run_progress,
    t::SessionFactoryGetRunProgressParams,
    t::FactoryProgressPage,
    workflow::get_run_progress
);
factory_method!(cancel, t::SessionFactoryCancelParams, t::FactoryRunResult, workflow::cancel);
factory_method!(pause, t::SessionFactoryPauseParams, t::FactoryRunResult, workflow::pause);
factory_method!(log, t::SessionFactoryLogParams, t::FactoryAckResult, workflow::log);
factory_method!(agent, t::SessionFactoryAgentParams, t::FactoryAgentResult, workflow::agent);
factory_method!(journal_get, t::SessionFactoryJournalGetParams, t::FactoryJournalGetResult, workflow::journal_get);
factory_method!(journal_put, t::SessionFactoryJournalPutParams, t::FactoryAckResult, workflow::journal_put);

#[cfg(test)]
mod tests {
    use super::rename;
    use serde_json::json;

    #[test]
    fn names_go_both_ways_and_nothing_else_changes() {
        let mut v = json!({"runs": [{"workflowName": "w", "terminal": {"failure": {"type": "workflow_provider_disconnected"}}}],
                           "text": "workflowName"});
        rename(&mut v, false);
        assert_eq!(
            v,
            json!({"runs": [{"factoryName": "w", "terminal": {"failure": {"type": "factory_provider_disconnected"}}}],
                   "text": "workflowName"})
        );
        rename(&mut v, true);
        assert_eq!(v["runs"][0]["workflowName"], "w");
        let mut mine = json!({"runId": "r", "result": {"workflowName": "kept", "type": "workflow_x"}});
        let before = mine.clone();
        rename(&mut mine, false);
        assert_eq!(mine, before, "a body's result is its own");
        let mut p = json!({"factoryRunId": "r", "opts": {}});
        rename(&mut p, true);
        assert_eq!(p, json!({"workflowRunId": "r", "opts": {}}));
    }

    #[test]
    fn refusals_speak_of_factories() {
        let e = protocol::jsonrpc::RpcError {
            code: -32602,
            message: "No workflow registered with name \"x\"".into(),
            data: Some(json!({"name": "x", "code": "workflow_not_found"})),
        };
        let e = super::refusal(e);
        assert_eq!(e.message, "No factory registered with name \"x\"");
        assert_eq!(e.data, Some(json!({"name": "x", "code": "factory_not_found"})));
    }
}
