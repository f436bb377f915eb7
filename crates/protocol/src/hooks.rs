//! What the loop sends in `hooks.invoke {input}` and reads back from `{output}`. The schema
//! types both as free-form JSON; these are the shapes the SDKs' hook handlers receive and
//! return (their `*HookInput` / `*HookOutput` types), one input struct per hook.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields every hook input carries, around the hook's own input.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInput<I> {
    pub session_id: String,
    /// Epoch milliseconds.
    pub timestamp: i64,
    pub cwd: String,
    #[serde(flatten)]
    pub input: I,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartInput {
    /// `new` or `resume`.
    pub source: String,
    pub initial_prompt: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionEndInput {
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct UserPromptSubmittedInput {
    pub prompt: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPromptTransformedInput {
    pub prompt: String,
    pub transformed_prompt: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreToolUseInput {
    pub tool_name: String,
    pub tool_args: Value,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PostToolUseInput {
    pub tool_name: String,
    pub tool_args: Value,
    pub tool_result: HookToolResult,
}

/// A successful tool result as `postToolUse` sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookToolResult {
    pub result_type: String,
    pub text_result_for_llm: String,
    pub tool_telemetry: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PostToolUseFailureInput {
    pub tool_name: String,
    pub tool_args: Value,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStopInput {
    pub stop_reason: String,
    /// Spelled as the SDKs' Claude-compatible stop hook expects it.
    #[serde(rename = "stop_hook_active")]
    pub stop_hook_active: bool,
    pub transcript_path: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorOccurredInput {
    pub error: String,
    pub error_context: String,
    pub recoverable: bool,
}

/// Every field a hook's output may carry; each hook reads the ones that concern it. Fields of
/// the wrong type are ignored, as if absent: a hook's mistake must not stop the agent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `preToolUse`: `allow`, `deny` or `ask`.
    #[serde(default, deserialize_with = "lenient")]
    pub permission_decision: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub permission_decision_reason: Option<String>,
    /// `preToolUse`: arguments to run the tool with instead.
    #[serde(default)]
    pub modified_args: Option<Value>,
    /// `postToolUse`: a text, or `{textResultForLlm}`, the model sees instead.
    #[serde(default)]
    pub modified_result: Option<Value>,
    /// `sessionStart`, `postToolUseFailure`: text for the model.
    #[serde(default, deserialize_with = "lenient")]
    pub additional_context: Option<String>,
    /// `userPromptSubmitted`, `agentStop`: `block`.
    #[serde(default, deserialize_with = "lenient")]
    pub decision: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub modified_prompt: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub modified_transformed_prompt: Option<String>,
    /// `preMcpToolCall`: the request's `_meta` (absent: keep; `null`: none; object: this).
    #[serde(default, deserialize_with = "present")]
    pub meta_to_use: Option<Value>,
}

/// A field that is present, `null` included (absent stays `None` through `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Some(Value::deserialize(d)?))
}

/// `preMcpToolCall` input (besides the common fields).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreMcpToolCallInput {
    pub tool_call_id: String,
    pub server_name: String,
    pub tool_name: String,
    pub arguments: Value,
    pub working_directory: String,
}

fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

impl HookOutput {
    /// `modifiedResult` as text, whichever of its two forms the hook used.
    pub fn modified_result_text(&self) -> Option<&str> {
        match self.modified_result.as_ref()? {
            Value::String(s) => Some(s),
            Value::Object(o) => o.get("textResultForLlm").and_then(Value::as_str),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_carry_the_common_fields() {
        let input = HookInput {
            session_id: "s".into(),
            timestamp: 5,
            cwd: "/w".into(),
            input: PreToolUseInput { tool_name: "bash".into(), tool_args: json!({"command": "ls"}) },
        };
        assert_eq!(
            serde_json::to_value(input).unwrap(),
            json!({"sessionId": "s", "timestamp": 5, "cwd": "/w", "toolName": "bash", "toolArgs": {"command": "ls"}})
        );
    }

    #[test]
    fn outputs_ignore_wrong_types_field_by_field() {
        let out: HookOutput = serde_json::from_value(
            json!({"decision": "block", "reason": 7, "modifiedResult": {"textResultForLlm": "t"}}),
        )
        .unwrap();
        assert_eq!(out.decision.as_deref(), Some("block"));
        assert_eq!(out.reason, None);
        assert_eq!(out.modified_result_text(), Some("t"));
    }
}
