//! SDK-implemented tools (protocol v3): permission (`custom-tool`), then
//! `external_tool.requested`; a client answers with `session.tools.handlePendingToolCall`.

use llm_providers::ToolCall;
use protocol::generated::types::{self as t, ExternalToolResult};
use protocol::methods::ExternalToolDef;
use serde_json::Value;
use tools::{PermissionDecision, ToolOutput};

use crate::handle::SessionInput;
use crate::pending::{PendingAnswer, PendingKind};
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;

pub(crate) async fn run(
    ctx: &RunCtx,
    def: &ExternalToolDef,
    call: &ToolCall,
    args: Value,
    settings: &SessionSettings,
    preapproved: bool,
) -> ToolOutput {
    if !def.skip_permission && !preapproved {
        let req = t::PermissionRequest::CustomTool(t::PermissionRequestCustomTool {
            tool_call_id: Some(call.id.clone()),
            tool_name: def.name.clone(),
            tool_description: def.description.clone(),
            args: Some(args.clone()),
            skip_permission: None,
        });
        if let PermissionDecision::Denied { text_for_llm, code } = ctx.gate().ask(req, &call.id).await {
            return ToolOutput::fail_with(text_for_llm.clone(), text_for_llm, &code);
        }
    }
    let request_id = uuid::Uuid::new_v4().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let listed = t::PendingExternalToolRequest {
        request_id: request_id.clone(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: Some(args.clone()),
        provider_id: None,
        agent_id: ctx.scope.as_ref().map(|s| s.agent_id.clone()),
    };
    let kind = PendingKind::ExternalTool(Box::new(listed));
    let register = SessionInput::RunRegisterPending { request_id: request_id.clone(), kind, tx };
    if ctx.handle.tell(register).await.is_err() {
        return ToolOutput::interrupted();
    }
    ctx.emitter().emit(t::ExternalToolRequestedData {
        request_id: request_id.clone(),
        session_id: ctx.handle.id().to_string(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: Some(args.clone()),
        working_directory: Some(settings.cwd.to_string_lossy().into_owned()),
        ..Default::default()
    });
    let answer = tokio::select! {
        a = rx => a.ok(),
        _ = ctx.cancel.cancelled() => None,
    };
    ctx.emitter().emit(t::ExternalToolCompletedData { request_id: request_id.clone() });
    match answer {
        Some(PendingAnswer::ToolCall { result, error }) => interpret(&call.name, &args, result, error.as_deref()),
        Some(_) => interpret(&call.name, &args, None, Some("The client that handles this tool disconnected")),
        None => {
            let _ = ctx.handle.tell(SessionInput::RunForgetPending { request_id }).await;
            ToolOutput::interrupted()
        }
    }
}

/// Maps a `handlePendingToolCall` answer (`{result?, error?}`) to what the model sees.
pub(crate) fn interpret(
    tool_name: &str,
    args: &Value,
    result: Option<ExternalToolResult>,
    error: Option<&str>,
) -> ToolOutput {
    if let Some(err) = error {
        // The handler's own message goes to the client only: exception text can carry data
        // the app never meant the model to see.
        let compact = serde_json::to_string(args).unwrap_or_else(|_| "{}".into());
        return ToolOutput::fail_with(
            format!("Failed to execute `{tool_name}` tool with arguments: {compact} due to error: Error: Tool execution failed"),
            err,
            "failure",
        );
    }
    match result {
        None => ToolOutput::ok(""),
        Some(ExternalToolResult::String(s)) => ToolOutput::ok(s),
        Some(ExternalToolResult::ExternalToolTextResultForLlm(r)) => {
            let text = r.text_result_for_llm;
            let kind = r.result_type.as_deref().unwrap_or("success");
            let mut out = if kind == "success" {
                ToolOutput::ok(text)
            } else {
                let message = r.error.unwrap_or_else(|| text.clone());
                ToolOutput::fail_with(text, message, kind)
            };
            if let Some(telemetry) = r.tool_telemetry {
                out.telemetry = telemetry;
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> Option<ExternalToolResult> {
        Some(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn maps_sdk_results() {
        assert_eq!(interpret("t", &json!({}), result(json!("hi")), None).text_for_llm, "hi");
        let r = result(json!({"textResultForLlm":"T","resultType":"rejected"}));
        let out = interpret("t", &json!({}), r, None);
        assert_eq!(out.error_code.as_deref(), Some("rejected"));
        assert!(!out.success);
        let out = interpret("get_user_location", &json!({}), None, Some("Melbourne"));
        assert_eq!(
            out.text_for_llm,
            "Failed to execute `get_user_location` tool with arguments: {} due to error: Error: Tool execution failed"
        );
        assert_eq!(out.error_message.as_deref(), Some("Melbourne"));
    }
}
