//! The built-in GitHub MCP server, as the original runs it for SDK sessions that turn on config
//! discovery: the Copilot API's `/mcp` endpoint over streamable HTTP with the Copilot token,
//! registered deferred — nothing is contacted before the session's first turn or
//! `session.mcp.list`, and a session that disables it by name never contacts it. Its address and
//! token are asked of the engine's model client only when it starts; with no Copilot API (a
//! bring-your-own-key backend, not signed in) it quietly stays away.

use std::sync::Arc;

use futures::FutureExt;
use llm_providers::{CopilotApi, ModelClient};
use mcp_client::McpHost;
use protocol::generated::types::GitHubMcpToolConfig;
use protocol::methods::SessionConfigParams;
use serde_json::{json, Map, Value};

/// The name the original gives it (also what `disabledMcpServers` names).
pub(crate) const NAME: &str = "github-mcp-server";

/// The read-only tools asked for when the session asks for nothing more (the original's
/// default `X-MCP-Tools`, on the read-only endpoint).
const READ_ONLY_TOOLS: &[&str] = &[
    "get_file_contents",
    "search_code",
    "get_copilot_space",
    "list_copilot_spaces",
    "web_search",
    "search_users",
    "search_repositories",
    "list_branches",
    "list_commits",
    "get_commit",
    "issue_read",
    "list_issues",
    "search_issues",
    "pull_request_read",
    "list_pull_requests",
    "search_pull_requests",
    "actions_list",
    "actions_get",
    "get_job_logs",
    "list_workflow_runs",
    "get_workflow_run",
    "list_workflows",
    "get_workflow_run_logs",
    "get_workflow",
];

/// Whether a session made with `params` gets the built-in server: config discovery on, no
/// session GitHub token or bring-your-own-key provider of its own, and no server of that name
/// configured by the session.
pub(crate) fn wanted(params: &SessionConfigParams) -> bool {
    params.enable_config_discovery == Some(true)
        && params.git_hub_token.is_none()
        && params.provider.is_none()
        && !params.mcp_servers.as_ref().is_some_and(|m| m.contains_key(NAME))
}

/// Registers the built-in server with the session's host when the session wants it.
pub(crate) fn configure(host: &McpHost, model: &Arc<dyn ModelClient>, params: &SessionConfigParams) {
    if !wanted(params) {
        return;
    }
    let disabled = params.disabled_mcp_servers.iter().flatten().any(|n| n == NAME);
    let tools = params.github_mcp_tool_config.clone().unwrap_or_default();
    let model = model.clone();
    let resolve: mcp_client::Resolver = Arc::new(move || {
        let model = model.clone();
        let tools = tools.clone();
        async move {
            match model.copilot_api().await {
                Ok(Some(api)) => Ok(Some(server_config(&api, &tools))),
                Ok(None) => Ok(None),
                // Not signed in: the original adds no GitHub MCP server then.
                Err(llm_providers::ProviderError::Auth(_)) => Ok(None),
                Err(e) => Err(format!("Failed to connect to MCP server \"{NAME}\": {e}")),
            }
        }
        .boxed()
    });
    host.defer(NAME, resolve, disabled, mcp_client::Source::Builtin);
}

/// The server's `mcpServers` entry: the read-write endpoint when the session asks for all
/// tools or for toolsets/tools of its own, else the read-only one with its default tools.
pub(crate) fn server_config(api: &CopilotApi, tools: &GitHubMcpToolConfig) -> Value {
    let mut headers = Map::new();
    headers.insert("Authorization".into(), format!("Bearer {}", api.token.expose()).into());
    headers.insert("X-MCP-Host".into(), "copilot-cli".into());
    headers.insert("Copilot-Integration-Id".into(), api.integration_id.clone().into());
    headers.insert("Copilot-Harness-Id".into(), "copilot-sdk".into());
    let toolsets = tools.additional_toolsets.clone().unwrap_or_default();
    let extra_tools = tools.additional_tools.clone().unwrap_or_default();
    let path = if tools.enable_all_tools == Some(true) {
        headers.insert("X-MCP-Toolsets".into(), "all".into());
        "/mcp"
    } else if !toolsets.is_empty() || !extra_tools.is_empty() {
        if !toolsets.is_empty() {
            headers.insert("X-MCP-Toolsets".into(), toolsets.join(",").into());
        }
        if !extra_tools.is_empty() {
            headers.insert("X-MCP-Tools".into(), extra_tools.join(",").into());
        }
        "/mcp"
    } else {
        headers.insert("X-MCP-Tools".into(), READ_ONLY_TOOLS.join(",").into());
        "/mcp/readonly"
    };
    if tools.enable_insiders_mode == Some(true) {
        headers.insert("X-MCP-Insiders".into(), "true".into());
    }
    json!({
        "type": "http",
        "url": format!("{}{path}", api.base_url.trim_end_matches('/')),
        "headers": headers,
        "tools": ["*"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> CopilotApi {
        CopilotApi {
            base_url: "http://127.0.0.1:9/".into(),
            token: llm_providers::provider::Secret::new("tok"),
            integration_id: "copilot-developer-cli".into(),
        }
    }

    #[test]
    fn all_tools_use_the_read_write_endpoint() {
        let tools = GitHubMcpToolConfig {
            enable_all_tools: Some(true),
            additional_tools: Some(vec!["get_me".into()]),
            enable_insiders_mode: Some(true),
            ..Default::default()
        };
        let c = server_config(&api(), &tools);
        assert_eq!(c["url"], "http://127.0.0.1:9/mcp");
        assert_eq!(c["headers"]["X-MCP-Toolsets"], "all");
        assert_eq!(c["headers"]["X-MCP-Insiders"], "true");
        assert_eq!(c["headers"]["Authorization"], "Bearer tok");
        assert!(c["headers"].get("X-MCP-Tools").is_none());
    }

    #[test]
    fn own_toolsets_and_tools_are_sent_as_asked() {
        let tools = GitHubMcpToolConfig {
            additional_toolsets: Some(vec!["actions".into(), "x".into()]),
            additional_tools: Some(vec!["get_me".into()]),
            ..Default::default()
        };
        let c = server_config(&api(), &tools);
        assert_eq!(c["url"], "http://127.0.0.1:9/mcp");
        assert_eq!(c["headers"]["X-MCP-Toolsets"], "actions,x");
        assert_eq!(c["headers"]["X-MCP-Tools"], "get_me");
        assert!(c["headers"].get("X-MCP-Insiders").is_none());
    }

    #[test]
    fn nothing_asked_is_the_read_only_endpoint() {
        let c = server_config(&api(), &GitHubMcpToolConfig::default());
        assert_eq!(c["url"], "http://127.0.0.1:9/mcp/readonly");
        assert!(c["headers"]["X-MCP-Tools"].as_str().unwrap().starts_with("get_file_contents,search_code,"));
        assert!(c["headers"].get("X-MCP-Toolsets").is_none());
    }

    #[test]
    fn only_discovering_sessions_without_their_own_identity_get_it() {
        let mut p = SessionConfigParams { enable_config_discovery: Some(true), ..Default::default() };
        assert!(wanted(&p));
        p.mcp_servers = Some(serde_json::Map::from_iter([(NAME.to_string(), json!({"url": "http://x"}))]));
        assert!(!wanted(&p));
        let p = SessionConfigParams::default();
        assert!(!wanted(&p));
    }
}
