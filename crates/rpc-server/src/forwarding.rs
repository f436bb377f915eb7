//! Several nodes: a `session.send` or `session.abort` (the method table's `follower Forward`
//! rows) made on a node that only follows the session goes to the node running it, through
//! the database's inbox (`cluster::Cluster::forward_request`). The
//! owner runs it as it runs a local one (same events, same answer) and the follower's client
//! gets that answer — or, when no answer comes in time (the owner is stuck or gone), the
//! refusal naming the owner.

use std::time::Duration;

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;
use crate::Server;

/// How long a follower waits for the owner's answer.
const WAIT: Duration = Duration::from_secs(10);

/// The owner's answer to a request made here on a session another node runs; `None` when none
/// came (in time, or at all), which the caller (`follower_gate`, which imports this file, not
/// the other way round) answers with its refusal naming the owner.
pub async fn forward(
    ctx: &Ctx,
    cluster: &cluster::Cluster,
    session_id: &str,
    params: &str,
) -> Option<Result<Vec<u8>, RpcError>> {
    match cluster.forward_request(session_id, ctx.method, params, WAIT).await {
        Ok(Some(Ok(result))) => Some(Ok(result.into_bytes())),
        Ok(Some(Err(error))) => {
            Some(Err(serde_json::from_str::<RpcError>(&error).unwrap_or_else(|_| ctx.failed(error))))
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(session = %session_id, error = %e, "forwarding a request to the session's node failed");
            None
        }
    }
}

/// Runs the requests other nodes forwarded to sessions run here (to `only`, or to any), in
/// the order they were made, and writes their answers back.
pub async fn serve_inbox(server: &Server, only: Option<&str>) {
    let Some(cluster) = &server.cluster else { return };
    for item in cluster.claim_forwarded(&server.engine, only).await {
        let answer = run(server, &item).await;
        cluster.answer_forwarded(item.id, answer).await;
    }
}

/// One forwarded request: the result's JSON, or the error's (as `RpcError`).
async fn run(server: &Server, item: &cluster::InboxItem) -> Result<String, String> {
    let method = item.method.as_str();
    let failed = |e: RpcError| serde_json::to_string(&e).unwrap_or_default();
    let engine_failed = |e: loop_engine::EngineError| failed(crate::errors::engine_error(method, &e));
    let session = server
        .engine
        .get(&item.session_id)
        .ok_or_else(|| engine_failed(loop_engine::EngineError::SessionNotFound(item.session_id.clone())))?;
    let result = match method {
        "session.send" => {
            let p: t::SessionSendParams = parse(method, &item.params).map_err(failed)?;
            let r = crate::handlers::session::enqueue(&session, p).await.map_err(engine_failed)?;
            serde_json::to_string(&r)
        }
        "session.abort" => {
            let p: t::SessionAbortParams = parse(method, &item.params).map_err(failed)?;
            let r = crate::handlers::session::abort_here(&session, p).await.map_err(engine_failed)?;
            serde_json::to_string(&r)
        }
        other => return Err(failed(RpcError::method_not_found(other))),
    };
    result.map_err(|e| failed(RpcError::handler_failed(method, e)))
}

fn parse<T: serde::de::DeserializeOwned>(method: &str, params: &str) -> Result<T, RpcError> {
    serde_json::from_str(params).map_err(|e| RpcError::invalid_params(method, e))
}
