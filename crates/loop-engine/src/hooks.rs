//! SDK hooks (`hooks: true` on create/resume): `hooks.invoke {sessionId, hookType, input}` is a
//! server→client request; its `output` may change what happens next (deny a tool, modify a
//! prompt or a result, keep the agent going).

use std::time::Duration;

use serde_json::{json, Value};

use crate::handle::SessionHandle;

/// How long a hook may take before the loop goes on without its answer.
const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Invokes one hook. `None` when hooks are off, no client can answer, or the hook returned
/// nothing; the loop then behaves as if no hook were registered.
pub(crate) async fn invoke(session: &SessionHandle, hook_type: &str, mut input: Value) -> Option<Value> {
    let view = session.view();
    if !view.settings.hooks {
        return None;
    }
    let cwd = view.settings.cwd.to_string_lossy().to_string();
    let client = session.emitter().requester()?;
    if let Value::Object(map) = &mut input {
        map.insert("sessionId".into(), json!(session.id()));
        map.insert("timestamp".into(), json!(chrono::Utc::now().timestamp_millis()));
        map.insert("cwd".into(), json!(cwd));
    }
    let invocation_id = uuid::Uuid::new_v4().to_string();
    session.emitter().emit(
        "hook.start",
        json!({"hookInvocationId": invocation_id, "hookType": hook_type, "input": input}),
        false,
    );
    let params = json!({"sessionId": session.id(), "hookType": hook_type, "input": input});
    let result = tokio::time::timeout(HOOK_TIMEOUT, client.request("hooks.invoke", params)).await;
    let (output, success, error) = match result {
        Ok(Ok(v)) => (v.get("output").cloned().filter(|o| !o.is_null()), true, None),
        Ok(Err(e)) => (None, false, Some(e)),
        Err(_) => (None, false, Some("hook timed out".to_string())),
    };
    let mut end = json!({"hookInvocationId": invocation_id, "hookType": hook_type, "success": success});
    if let Some(o) = &output {
        end["output"] = o.clone();
    }
    if let Some(e) = error {
        end["error"] = json!({"message": e});
    }
    session.emitter().emit("hook.end", end, false);
    output
}

pub(crate) fn str_field<'a>(output: &'a Option<Value>, key: &str) -> Option<&'a str> {
    output.as_ref().and_then(|o| o.get(key)).and_then(Value::as_str)
}
