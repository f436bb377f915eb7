//! `session.fleet.start`: fleet mode. The session gets one user message — the orchestration
//! instructions (dispatch sub-agents through `task`, in parallel, tracking work as todos in the
//! session's SQL database), then the user's request — and runs it as any other turn.

use loop_engine::QueuedMessage;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// The instructions the model reads first, as the original words them.
const INSTRUCTIONS: &str = include_str!("fleet_prompt.md");

/// The message fleet mode sends for `request` (none: the instructions alone).
pub fn fleet_prompt(request: Option<&str>) -> String {
    let instructions = INSTRUCTIONS.trim_end();
    match request.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("{instructions}\n\nUser request: {r}"),
        None => instructions.to_string(),
    }
}

pub async fn start(ctx: &Ctx, p: t::SessionFleetStartParams) -> Result<t::FleetStartResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if ctx.follower_of(&p.session_id).is_some() {
        return Err(ctx.failed("this node follows the session read-only; start fleet mode on the node running it"));
    }
    let msg = QueuedMessage {
        prompt: fleet_prompt(p.prompt.as_deref()),
        attachments: p.attachments.unwrap_or_default(),
        ..Default::default()
    };
    session.send(msg, false).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::FleetStartResult { started: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_follows_the_instructions() {
        let text = fleet_prompt(Some("Do X."));
        assert!(text.starts_with("You are now in fleet mode. Dispatch sub-agents (via the task tool)"), "{text}");
        assert!(
            text.ends_with("Now proceed with the user's request using fleet mode.\n\nUser request: Do X."),
            "{text}"
        );
        assert!(fleet_prompt(None).ends_with("using fleet mode."));
    }
}
