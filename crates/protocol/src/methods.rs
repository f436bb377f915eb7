//! Typed params of the client→server methods Skipper implements. Unknown fields are accepted
//! and ignored (SDKs send many optional settings); wrong types are errors naming the field.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Parses params, producing an error message that names the offending field
/// (e.g. `model: invalid type: integer `123`, expected a string`).
pub fn parse_params<T: DeserializeOwned>(params: &Value) -> Result<T, String> {
    match serde_path_to_error::deserialize::<_, T>(params) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." || path.is_empty() {
                Err(inner.to_string())
            } else {
                Err(format!("{path}: {inner}"))
            }
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectParams {
    pub token: Option<String>,
    pub supported_task_kinds: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PingParams {
    pub message: Option<String>,
}

/// An SDK-implemented tool (`session.create.tools[]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalToolDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub overrides_built_in_tool: bool,
    #[serde(default)]
    pub skip_permission: bool,
}

/// `session.create` and `session.resume` configuration (the fields Skipper acts on).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigParams {
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub client_name: Option<String>,
    pub working_directory: Option<String>,
    pub streaming: Option<bool>,
    pub tools: Option<Vec<ExternalToolDef>>,
    pub available_tools: Option<Vec<String>>,
    pub excluded_tools: Option<Vec<String>>,
    /// `{excludedTools?: [..], ...}`: settings of the default agent.
    pub default_agent: Option<Value>,
    pub system_message: Option<SystemMessageConfig>,
    pub request_permission: Option<bool>,
    pub request_user_input: Option<bool>,
    pub hooks: Option<bool>,
    /// resume only: do not emit `session.resume`.
    pub disable_resume: Option<bool>,
    pub continue_pending_work: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessageConfig {
    pub mode: Option<String>,
    pub content: Option<String>,
    #[serde(default)]
    pub sections: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdParams {
    pub session_id: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub session_id: String,
    pub prompt: String,
    pub display_prompt: Option<String>,
    #[serde(default)]
    pub attachments: Option<Vec<Value>>,
    pub mode: Option<String>,
    pub agent_mode: Option<String>,
    #[serde(default)]
    pub request_headers: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortParams {
    pub session_id: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogParams {
    pub session_id: String,
    pub message: String,
    pub level: Option<String>,
    /// Domain category (`infoType` / `warningType`); defaults to `notification`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub ephemeral: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    pub filter: Option<ListFilterParams>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListFilterParams {
    pub cwd: Option<String>,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResponseParams {
    pub session_id: String,
    pub request_id: String,
    pub result: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResponseParams {
    pub session_id: String,
    pub request_id: String,
    pub result: Option<Value>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSwitchParams {
    pub session_id: String,
    pub model_id: String,
    pub reasoning_effort: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeSetParams {
    pub session_id: String,
    pub mode: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsSetParams {
    pub session_id: String,
    pub tools: Vec<ExternalToolDef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveAllParams {
    pub session_id: String,
    pub enabled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_type_names_the_field() {
        let err = parse_params::<SessionConfigParams>(&json!({"model": 123})).unwrap_err();
        assert!(err.starts_with("model: invalid type: integer `123`, expected a string"), "{err}");
    }

    #[test]
    fn missing_required_field_is_reported() {
        let err = parse_params::<SendParams>(&json!({"sessionId": "x"})).unwrap_err();
        assert!(err.contains("prompt"), "{err}");
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let p: SessionConfigParams =
            parse_params(&json!({"model": "m", "envValueMode": "direct", "infiniteSessions": {}})).unwrap();
        assert_eq!(p.model.as_deref(), Some("m"));
    }
}
