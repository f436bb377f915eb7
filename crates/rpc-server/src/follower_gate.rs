//! Several nodes: a session loaded here as a read-only follower runs on another node, and its
//! state there is the truth. What happens to a request naming it is the method table's
//! follower column ([`OnFollower`]): a send or an abort is forwarded to that node
//! (`forwarding`), reads answer from what the follower holds (the session's files are on the
//! volume the nodes share), and anything else is refused here with an error naming that node,
//! so nothing a client changes is applied to a copy that is never persisted.

use std::sync::Arc;

use protocol::jsonrpc::RpcError;
use serde::Deserialize;

use crate::ctx::Ctx;
use crate::table::{Entry, OnFollower};

#[derive(Deserialize)]
struct SessionParam {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// The session a request names, what a follower does with it, and for a request a follower
/// forwards, its params.
pub struct Named {
    pub session_id: String,
    rule: OnFollower,
    forward: Option<String>,
}

/// The session a request's params name (`sessionId`), on a server with several nodes only: a
/// single node has no followers, and skips the extra parse.
pub fn named_session<C>(
    cluster: Option<&Arc<cluster::Cluster>>,
    entry: &Entry<C>,
    params_text: Option<&str>,
) -> Option<Named> {
    cluster?;
    let text = params_text?;
    let session_id = serde_json::from_str::<SessionParam>(text).ok()?.session_id?;
    let forward = (entry.follower == OnFollower::Forward).then(|| text.to_string());
    Some(Named { session_id, rule: entry.follower, forward })
}

/// What happens to a request that would change a session this node follows (checked when the
/// request runs: a `session.resume` queued before it may just have made it a follower): a send
/// or an abort goes to the owner, whose answer it gets; anything else is refused.
pub async fn intercept(ctx: &Ctx, named: &Named) -> Option<Result<Vec<u8>, RpcError>> {
    let cluster = ctx.server.cluster.as_ref()?;
    let session_id = named.session_id.as_str();
    cluster.settled(session_id).await;
    if matches!(named.rule, OnFollower::Read | OnFollower::Handler) || !ctx.visible(session_id) {
        return None;
    }
    let node = cluster.follower_of(session_id)?;
    Some(match &named.forward {
        Some(params) => match crate::forwarding::forward(ctx, cluster, session_id, params).await {
            Some(answer) => answer,
            None => Err(refused(ctx, session_id, node)),
        },
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
    use crate::methods::lookup;

    fn rule(method: &str) -> OnFollower {
        lookup(method).map(|e| e.follower).unwrap_or_else(|| panic!("{method} is not in the method table"))
    }

    #[test]
    fn a_follower_answers_reads_forwards_sends_and_refuses_the_rest() {
        for read in ["session.plan.read", "session.getMessages", "session.resume", "session.destroy", "sessions.fork"] {
            assert_eq!(rule(read), OnFollower::Read, "{read}");
        }
        for forwarded in ["session.send", "session.abort"] {
            assert_eq!(rule(forwarded), OnFollower::Forward, "{forwarded}");
        }
        assert_eq!(rule("session.delete"), OnFollower::Handler);
        for write in ["session.plan.update", "session.model.switchTo", "session.name.set", "session.mode.set"] {
            assert_eq!(rule(write), OnFollower::Refuse, "{write}");
        }
    }

    #[test]
    fn a_request_is_named_only_on_several_nodes() {
        let entry = lookup("session.send").unwrap();
        assert!(named_session(None, entry, Some(r#"{"sessionId":"s"}"#)).is_none());
    }
}
