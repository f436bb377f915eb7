//! SDK hooks (`hooks: true` on create/resume): `hooks.invoke {sessionId, hookType, input}` is a
//! server→client request; its `output` may change what happens next (deny a tool, modify a
//! prompt or a result, keep the agent going).

use std::time::Duration;

use protocol::generated::methods::HooksInvoke;
use protocol::generated::types::{self as t, HookType};
use protocol::hooks::{HookInput, HookOutput};
use serde::Serialize;

use crate::handle::SessionHandle;

/// How long a hook may take before the loop goes on without its answer.
const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Invokes one hook. `None` when hooks are off, no client can answer, or the hook returned
/// nothing; the loop then behaves as if no hook were registered.
pub(crate) async fn invoke<I: Serialize>(session: &SessionHandle, hook_type: HookType, input: I) -> Option<HookOutput> {
    invoke_for(session, None, hook_type, input).await
}

/// Invokes one hook for a sub-agent's step (`agent`: its id) or the session's own (`None`). A
/// sub-agent is a session of its own in the original: its id is the input's `sessionId`, so a
/// host tells the two apart; the request itself names the session the host knows.
pub(crate) async fn invoke_for<I: Serialize>(
    session: &SessionHandle,
    agent: Option<&str>,
    hook_type: HookType,
    input: I,
) -> Option<HookOutput> {
    let view = session.view();
    if !view.settings.hooks {
        return None;
    }
    let client = session.emitter().requester()?;
    let input = HookInput {
        session_id: agent.unwrap_or(session.id()).to_string(),
        timestamp: chrono::Utc::now().timestamp_millis(),
        cwd: view.settings.cwd.to_string_lossy().into_owned(),
        input,
    };
    let input = match serde_json::to_value(&input) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(session = %session.id(), error = %e, "hook input not serializable");
            return None;
        }
    };
    let invocation_id = uuid::Uuid::new_v4().to_string();
    session.emitter().emit(t::HookStartData {
        hook_invocation_id: invocation_id.clone(),
        hook_type: hook_type.as_str().into(),
        input: Some(input.clone()),
        ..Default::default()
    });
    let request = t::HookInvokeRequest { session_id: session.id().to_string(), hook_type, input };
    let answer =
        match tokio::time::timeout(HOOK_TIMEOUT, crate::client::request::<HooksInvoke>(&*client, &request)).await {
            Ok(answer) => answer,
            Err(_) => Err("hook timed out".to_string()),
        };
    let (output, error) = match answer {
        Ok(r) => (r.output.filter(|o| !o.is_null()), None),
        Err(e) => (None, Some(t::HookEndError { message: e, ..Default::default() })),
    };
    session.emitter().emit(t::HookEndData {
        hook_invocation_id: invocation_id,
        hook_type: hook_type.as_str().into(),
        output: output.clone(),
        success: error.is_none(),
        error,
        ..Default::default()
    });
    let output = output?;
    match serde_json::from_value(output) {
        Ok(parsed) => Some(parsed),
        Err(e) => {
            tracing::warn!(session = %session.id(), hook = hook_type.as_str(), error = %e, "hook output ignored");
            None
        }
    }
}
