//! The rest of `session.mcp.*` (env-value mode, the auto-managed GitHub server, sampling — run by
//! the session, see loop-engine's `mcp_sampling` — MCP Apps, OAuth login) and `session.extensions.*`, answered as the original answers them when
//! the feature behind them is absent: a session whose host has no server has "no MCP host", a
//! stdio server has no OAuth, and a headless server runs no extensions.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::ctx::Ctx;

/// Tools an MCP App guest can render carry UI metadata (`_meta.ui` or `_meta["ui/resourceUri"]`).
fn has_ui_meta(tool: &Value) -> bool {
    tool.get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.keys().any(|k| k == "ui" || k.starts_with("ui/") || k.starts_with("ui.")))
}

/// A session's host exists once it has a server (from the session, a plugin or the user).
fn require_host(ctx: &Ctx, session: &loop_engine::SessionHandle, message: &str) -> Result<(), RpcError> {
    if session.mcp().list().is_empty() {
        return Err(ctx.failed(message.to_string()));
    }
    Ok(())
}

/// `session.mcp.enable` / `disable` / `reload` refuse a session without MCP servers.
pub(crate) fn no_host(ctx: &Ctx, session: &loop_engine::SessionHandle) -> Result<(), RpcError> {
    require_host(ctx, session, "No MCP host initialized")
}

pub async fn set_env_value_mode(
    ctx: &Ctx,
    p: t::SessionMcpSetEnvValueModeParams,
) -> Result<t::McpSetEnvValueModeResult, RpcError> {
    // Local servers get their `env` values as given either way: Skipper resolves no
    // indirection, so the mode is only recorded for the caller.
    ctx.session(&p.session_id)?;
    Ok(t::McpSetEnvValueModeResult { mode: p.mode })
}

pub async fn remove_github(
    ctx: &Ctx,
    p: t::SessionMcpRemoveGitHubParams,
) -> Result<t::McpRemoveGitHubResult, RpcError> {
    // Only the built-in GitHub server goes; one the session configured itself stays.
    let session = ctx.session(&p.session_id)?;
    Ok(t::McpRemoveGitHubResult { removed: session.mcp().undefer("github-mcp-server") })
}

pub async fn execute_sampling(
    ctx: &Ctx,
    p: t::SessionMcpExecuteSamplingParams,
) -> Result<t::McpSamplingExecutionResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(session.execute_sampling(p).await)
}

pub async fn cancel_sampling(
    ctx: &Ctx,
    p: t::SessionMcpCancelSamplingExecutionParams,
) -> Result<t::McpCancelSamplingExecutionResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::McpCancelSamplingExecutionResult { cancelled: session.cancel_sampling(&p.request_id) })
}

pub async fn apps_set_host_context(ctx: &Ctx, p: t::SessionMcpAppsSetHostContextParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    let context = serde_json::to_value(&p.context).map_err(|e| ctx.failed(e))?;
    session.mcp().set_app_context(context);
    Ok(())
}

pub async fn apps_get_host_context(
    ctx: &Ctx,
    p: t::SessionMcpAppsGetHostContextParams,
) -> Result<t::McpAppsHostContext, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let context = session.mcp().app_context().unwrap_or_else(|| Value::Object(Default::default()));
    let context = serde_json::from_value(context).map_err(|e| ctx.failed(e))?;
    Ok(t::McpAppsHostContext { context })
}

fn apps_enabled() -> bool {
    ["COPILOT_MCP_APPS", "MCP_APPS"]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1"))
}

pub async fn apps_diagnose(
    ctx: &Ctx,
    p: t::SessionMcpAppsDiagnoseParams,
) -> Result<t::McpAppsDiagnoseResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // An unknown server is diagnosed as what it is: not connected, no tools.
    let host = session.mcp();
    let connected = host.is_running(&p.server_name);
    let tools = if connected { host.list_tools(&p.server_name).await.unwrap_or_default() } else { Vec::new() };
    let ui: Vec<String> = tools
        .iter()
        .filter(|t| has_ui_meta(t))
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let enabled = apps_enabled();
    Ok(t::McpAppsDiagnoseResult {
        capability: t::McpAppsDiagnoseCapability {
            session_has_mcp_apps: enabled,
            feature_flag_enabled: enabled,
            advertised: enabled,
        },
        server: t::McpAppsDiagnoseServer {
            connected,
            tool_count: tools.len() as f64,
            tools_with_ui_meta: ui.len() as f64,
            sample_tool_names: ui.into_iter().take(5).collect(),
        },
    })
}

/// The server's tools an App guest may see; an error when the server offers none (the session
/// has no `mcp-apps` capability to speak of).
async fn app_tools(ctx: &Ctx, session: &loop_engine::SessionHandle, server: &str) -> Result<Vec<Value>, RpcError> {
    let tools = session.mcp().list_tools(server).await.map_err(|e| ctx.failed(e))?;
    let ui: Vec<Value> = tools.into_iter().filter(has_ui_meta).collect();
    if ui.is_empty() {
        return Err(ctx.failed("The \"mcp-apps\" capability is not available in this session"));
    }
    Ok(ui)
}

pub async fn apps_list_tools(
    ctx: &Ctx,
    p: t::SessionMcpAppsListToolsParams,
) -> Result<t::McpAppsListToolsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tools = app_tools(ctx, &session, &p.server_name).await?;
    Ok(t::McpAppsListToolsResult { tools: tools.into_iter().filter_map(|t| t.as_object().cloned()).collect() })
}

pub async fn apps_call_tool(
    ctx: &Ctx,
    p: t::SessionMcpAppsCallToolParams,
) -> Result<serde_json::Map<String, Value>, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tools = app_tools(ctx, &session, &p.server_name).await?;
    if !tools.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(p.tool_name.as_str())) {
        return Err(ctx.failed(format!(
            "Tool \"{}\" of MCP server \"{}\" is not available to mcp-apps guests",
            p.tool_name, p.server_name
        )));
    }
    let args = Value::Object(p.arguments.unwrap_or_default());
    let cancel = tokio_util::sync::CancellationToken::new();
    let result =
        session.mcp().call(&p.server_name, &p.tool_name, args, None, &cancel).await.map_err(|e| ctx.failed(e))?;
    Ok(result.as_object().cloned().unwrap_or_default())
}

pub async fn apps_read_resource(
    ctx: &Ctx,
    p: t::SessionMcpAppsReadResourceParams,
) -> Result<t::McpAppsReadResourceResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let read = session
        .mcp()
        .read_resource(&p.server_name, &p.uri)
        .await
        .map_err(|e| ctx.failed(format!("Failed to read MCP App resource {}: {e}", p.uri)))?;
    let contents = read
        .get("contents")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect())
        .unwrap_or_default();
    Ok(t::McpAppsReadResourceResult { contents })
}

pub async fn oauth_login(ctx: &Ctx, p: t::SessionMcpOauthLoginParams) -> Result<t::McpOauthLoginResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    require_host(ctx, &session, "MCP host is not available on this session")?;
    let host = session.mcp();
    let Some(summary) = host.list().into_iter().find(|s| s.name == p.server_name) else {
        return Err(ctx.failed(format!("MCP server '{}' is not configured", p.server_name)));
    };
    if !matches!(summary.transport, Some("http" | "sse")) {
        return Err(ctx.failed(format!("MCP server '{}' is not a remote server", p.server_name)));
    }
    if summary.status == mcp_client::Status::Connected && !p.force_reauth.unwrap_or(false) {
        // Already authenticated (or needing no authentication): nothing to open.
        return Ok(t::McpOauthLoginResult { authorization_url: None });
    }
    Err(ctx.failed(format!(
        "MCP server \"{}\" offers no OAuth authorization this runtime can start; provide its token through the MCP OAuth handler",
        p.server_name
    )))
}

pub async fn oauth_handle_pending(
    ctx: &Ctx,
    p: t::SessionMcpOauthHandlePendingRequestParams,
) -> Result<t::McpOauthHandlePendingResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::McpOauthHandlePendingResult { success: session.resolve_mcp_oauth(&p.request_id, p.result) })
}

pub async fn extensions_list(ctx: &Ctx, p: t::SessionExtensionsListParams) -> Result<t::ExtensionList, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::ExtensionList { extensions: Vec::new() })
}

const NO_EXTENSIONS: &str = "Extensions not available";

pub async fn extensions_enable(ctx: &Ctx, p: t::SessionExtensionsEnableParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Err(ctx.failed(NO_EXTENSIONS))
}

pub async fn extensions_disable(ctx: &Ctx, p: t::SessionExtensionsDisableParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Err(ctx.failed(NO_EXTENSIONS))
}

pub async fn extensions_reload(ctx: &Ctx, p: t::SessionExtensionsReloadParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Err(ctx.failed(NO_EXTENSIONS))
}
