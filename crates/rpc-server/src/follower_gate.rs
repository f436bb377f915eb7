//! Several nodes: a session loaded here as a read-only follower runs on another node, and its
//! state there is the truth. A send or an abort is forwarded to that node (`forwarding`); any
//! other request that would change it is refused here with an error naming that node, so
//! nothing a client changes is applied to a copy that is never persisted; reads answer from
//! what the follower holds (the session's files are on the volume the nodes share).

use protocol::jsonrpc::RpcError;
use serde::Deserialize;

use crate::table::Ctx;

/// Methods a follower answers: they read the log, the shared files or the settings the session
/// was loaded with, or concern only this connection (`detach`). Everything else that names a
/// followed session is refused — a method added later is safe until it is listed here.
const READS_ON_FOLLOWER: &[&str] = &[
    "session.create",
    "session.resume",
    "session.getMessages",
    "session.getMetadata",
    "session.detach",
    "session.destroy",
    "session.model.getCurrent",
    "session.model.list",
    "session.mode.get",
    "session.plan.read",
    "session.plan.readSqlTodos",
    "session.plan.readSqlTodosWithDependencies",
    "session.name.get",
    "session.agent.list",
    "session.agent.getCurrent",
    "session.skills.list",
    "session.skills.getInvoked",
    "session.provider.getEndpoint",
    "session.workspaces.listFiles",
    "session.workspaces.readFile",
    "session.workspaces.statFile",
    "session.workspaces.getWorkspace",
    "session.workspaces.listCheckpoints",
    "session.workspaces.readCheckpoint",
    "session.workspaces.diff",
    "session.metadata.isProcessing",
    "session.metadata.snapshot",
    "session.metadata.activity",
    "session.metadata.contextInfo",
    "session.metadata.getContextAttribution",
    "session.metadata.getContextHeaviestMessages",
    "session.eventLog.registerInterest",
    "session.eventLog.releaseInterest",
    "session.eventLog.read",
    "session.eventLog.tail",
    "session.completions.getTriggerCharacters",
    "session.visibility.get",
    "session.permissions.getMode",
    "session.permissions.pendingRequests",
    "session.permissions.paths.list",
    "session.permissions.paths.isPathWithinAllowedDirectories",
    "session.permissions.paths.isPathWithinWorkspace",
    "session.permissions.folderTrust.isTrusted",
    "session.queue.pendingItems",
    "session.tools.getCurrentMetadata",
    "session.telemetry.getEngagementId",
    "session.plugins.list",
    "session.schedule.list",
    "session.instructions.getSources",
    "session.gitHubAuth.getStatus",
    "session.usage.getMetrics",
    "session.mcp.list",
    "session.mcp.listTools",
    "session.mcp.isServerRunning",
    "session.extensions.list",
    "session.tasks.list",
    "session.tasks.getProgress",
    "session.tasks.getCurrentPromotable",
    "session.commands.list",
    "sessions.fork",
    "sessions.getMetadata",
    "sessions.checkInUse",
    "sessions.getSizes",
];

/// Changes whose handler refuses a session another node runs in the method's own answer shape
/// (`session.delete`: `success: false` naming the node).
const REFUSED_BY_HANDLER: &[&str] = &["session.delete"];

/// Whether `method` may run on a session another node runs.
pub fn reads_only(method: &str) -> bool {
    READS_ON_FOLLOWER.contains(&method)
}

/// Whether the gate lets `method` through on a followed session.
fn passes(method: &str) -> bool {
    reads_only(method) || REFUSED_BY_HANDLER.contains(&method)
}

#[derive(Deserialize)]
struct SessionParam {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// The session a request names, and for a request a follower forwards, its params.
pub struct Named {
    pub session_id: String,
    forward: Option<String>,
}

/// The session a request's params name (`sessionId`), on a server with several nodes only: a
/// single node has no followers, and skips the extra parse.
pub fn named_session(ctx_engine: &loop_engine::Engine, method: &str, params_text: Option<&str>) -> Option<Named> {
    if !ctx_engine.is_clustered() {
        return None;
    }
    let text = params_text?;
    let session_id = serde_json::from_str::<SessionParam>(text).ok()?.session_id?;
    let forward = crate::forwarding::forwarded(method).then(|| text.to_string());
    Some(Named { session_id, forward })
}

/// What happens to a request that would change a session this node follows (checked when the
/// request runs: a `session.resume` queued before it may just have made it a follower): a send
/// or an abort goes to the owner, whose answer it gets; anything else is refused.
pub async fn intercept(ctx: &Ctx, named: &Named) -> Option<Result<Vec<u8>, RpcError>> {
    let session_id = named.session_id.as_str();
    ctx.server.engine.settled(session_id).await;
    if passes(ctx.method) || !ctx.visible(session_id) {
        return None;
    }
    let node = ctx.server.engine.follower_of(session_id)?;
    Some(match &named.forward {
        Some(params) => crate::forwarding::forward(ctx, session_id, params, node).await,
        None => Err(refused(ctx, session_id, node)),
    })
}

/// "Session X is running on node N; …" as a failed request of `ctx.method`.
pub fn refused(ctx: &Ctx, session_id: &str, node: String) -> RpcError {
    let running = store::StoreError::LeasedElsewhere { session: session_id.to_string(), node };
    ctx.failed(format!("{running}; this node follows it read-only, send to that node"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_pass_on_a_follower() {
        assert!(reads_only("session.plan.read"));
        assert!(reads_only("session.getMessages"));
        for write in ["session.plan.update", "session.model.switchTo", "session.abort", "session.name.set"] {
            assert!(!reads_only(write), "{write}");
        }
        // Every listed name is a method the server answers.
        for name in READS_ON_FOLLOWER.iter().chain(REFUSED_BY_HANDLER) {
            assert!(crate::table::lookup(name).is_some(), "{name} is not in the method table");
        }
    }
}
