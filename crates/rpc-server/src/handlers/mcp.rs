//! `session.mcp.*`: a session's MCP servers (status, tools, start/stop, resources). The host
//! does its own bookkeeping; nothing here waits for a server to start.

use mcp_client::{HostError, ServerSummary, Status};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::ctx::Ctx;

fn host_error(ctx: &Ctx, e: HostError) -> RpcError {
    ctx.failed(e)
}

/// A server's JSON-RPC error as the original words it (`MCP error -32602: …`).
fn mcp_said(said: &str) -> String {
    match said.strip_prefix("Mcp error: ") {
        Some(rest) => format!("MCP error {rest}"),
        None => said.to_string(),
    }
}

fn wire_status(s: Status) -> t::McpServerStatus {
    match s {
        Status::Pending => t::McpServerStatus::Pending,
        Status::Connected => t::McpServerStatus::Connected,
        Status::Failed => t::McpServerStatus::Failed,
        Status::Disabled => t::McpServerStatus::Disabled,
        Status::Stopped => t::McpServerStatus::Stopped,
        Status::NeedsAuth => t::McpServerStatus::NeedsAuth,
    }
}

fn server(s: ServerSummary) -> t::McpServer {
    let metadata = s
        .server_info
        .as_ref()
        .and_then(|i| i.get("instructions"))
        .and_then(Value::as_str)
        .map(|i| t::McpServerMetadata { instructions: Some(i.to_string()) });
    t::McpServer {
        name: s.name,
        status: wire_status(s.status),
        source: Some(loop_engine::mcp_server_source(s.source)),
        source_plugin: None,
        source_plugin_version: None,
        display_name: None,
        error: s.error,
        server_metadata: metadata,
    }
}

/// A call that names a server starts the lazily started ones first (the built-in GitHub server,
/// the user's), as the original loads its whole MCP configuration for it; it does not wait.
fn start_lazy(session: &loop_engine::SessionHandle) {
    session.mcp().start_deferred();
}

/// How long `session.mcp.list` waits for the servers it started to connect.
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn list(ctx: &Ctx, p: t::SessionMcpListParams) -> Result<t::McpServerList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // Listing starts the lazily started servers and waits (a few seconds at most) for them to
    // connect, as the original's listing does; one still starting is listed `pending`.
    let started = session.mcp().start_deferred();
    if !started.is_empty() {
        let _ = tokio::time::timeout(LIST_WAIT, session.mcp().wait_started(&started)).await;
    }
    Ok(t::McpServerList { servers: session.mcp().list().into_iter().map(server).collect(), host: None })
}

/// The session's configured servers, as configured (nothing is started for this): enabled
/// unless turned off, with what was last seen of each.
pub async fn list_configured(
    ctx: &Ctx,
    p: t::SessionMcpListConfiguredParams,
) -> Result<t::McpConfiguredServerList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // One registered to start when first needed has not been seen yet.
    let waiting = session.mcp().waiting().into_iter().map(|(name, source, disabled)| t::McpConfiguredServer {
        source: Some(loop_engine::mcp_server_source(source)),
        ..t::McpConfiguredServer::new(
            name,
            !disabled,
            t::McpConfiguredServerState::new(t::McpServerStatus::NotConfigured),
        )
    });
    let servers = session
        .mcp()
        .list()
        .into_iter()
        .map(|s| {
            let live =
                t::McpConfiguredServerState { status: wire_status(s.status), error: s.error, tools_loaded: None };
            t::McpConfiguredServer {
                enabled: s.status != Status::Disabled,
                source: Some(loop_engine::mcp_server_source(s.source)),
                ..t::McpConfiguredServer::new(s.name, true, live)
            }
        })
        .chain(waiting)
        .collect();
    Ok(t::McpConfiguredServerList { servers })
}

pub async fn list_tools(ctx: &Ctx, p: t::SessionMcpListToolsParams) -> Result<t::McpListToolsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tools = session.mcp().list_tools(&p.server_name).await.map_err(|e| host_error(ctx, e))?;
    let tools = tools
        .into_iter()
        .filter_map(|tool| {
            let name = tool.get("name")?.as_str()?.to_string();
            let description = tool.get("description").and_then(Value::as_str).map(str::to_string);
            Some(t::McpTools { name, description, ui: None })
        })
        .collect();
    Ok(t::McpListToolsResult { tools })
}

pub async fn is_running(
    ctx: &Ctx,
    p: t::SessionMcpIsServerRunningParams,
) -> Result<t::McpIsServerRunningResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::McpIsServerRunningResult { running: session.mcp().is_running(&p.server_name) })
}

fn config_value(ctx: &Ctx, config: Option<t::McpSerializableServerConfig>) -> Result<Option<Value>, RpcError> {
    config.map(|c| serde_json::to_value(c).map_err(|e| ctx.failed(e))).transpose()
}

pub async fn start(ctx: &Ctx, p: t::SessionMcpStartServerParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    let result = match config_value(ctx, p.config)? {
        Some(config) => session.mcp().upsert(&p.server_name, config),
        None => session.mcp().start(&p.server_name),
    };
    result.map_err(|e| host_error(ctx, e))
}

pub async fn restart(ctx: &Ctx, p: t::SessionMcpRestartServerParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    let result = match config_value(ctx, p.config)? {
        Some(config) => session.mcp().upsert(&p.server_name, config),
        None => session.mcp().start(&p.server_name),
    };
    result.map_err(|e| host_error(ctx, e))
}

pub async fn stop(ctx: &Ctx, p: t::SessionMcpStopServerParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    session.mcp().stop(&p.server_name).map_err(|e| host_error(ctx, e))
}

pub async fn enable(ctx: &Ctx, p: t::SessionMcpEnableParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    super::mcp_extras::no_host(ctx, &session)?;
    session.mcp().start(&p.server_name).map_err(|e| host_error(ctx, e))
}

pub async fn disable(ctx: &Ctx, p: t::SessionMcpDisableParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    super::mcp_extras::no_host(ctx, &session)?;
    session.mcp().disable(&p.server_name).map_err(|e| host_error(ctx, e))
}

pub async fn reload(ctx: &Ctx, p: t::SessionMcpReloadParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    start_lazy(&session);
    if session.mcp().list().is_empty() {
        return Err(ctx.failed("MCP config reload not available"));
    }
    session.mcp().reload();
    Ok(())
}

pub async fn resources_list(
    ctx: &Ctx,
    p: t::SessionMcpResourcesListParams,
) -> Result<t::McpResourcesListResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let list = session.mcp().list_resources(&p.server_name).await.map_err(|e| host_error(ctx, e))?;
    let resources = list.into_iter().filter_map(|r| serde_json::from_value(r).ok()).collect();
    Ok(t::McpResourcesListResult { resources, next_cursor: None })
}

/// One page of a server's resource templates, as it sent them (the cursor is its own).
pub async fn resources_list_templates(
    ctx: &Ctx,
    p: t::SessionMcpResourcesListTemplatesParams,
) -> Result<t::McpResourcesListTemplatesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let page = session.mcp().list_resource_templates(&p.server_name, p.cursor).await.map_err(|e| host_error(ctx, e))?;
    serde_json::from_value(page).map_err(|e| ctx.failed(format!("invalid resources/templates/list result: {e}")))
}

/// One page of a server's prompts, as it sent them (the cursor is its own).
pub async fn prompts_list(ctx: &Ctx, p: t::SessionMcpPromptsListParams) -> Result<t::McpPromptsListResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let page = session.mcp().list_prompts(&p.server_name, p.cursor).await.map_err(|e| host_error(ctx, e))?;
    serde_json::from_value(page).map_err(|e| ctx.failed(format!("invalid prompts/list result: {e}")))
}

/// A prompt's messages from its server, not sent to the model.
pub async fn prompts_get(ctx: &Ctx, p: t::SessionMcpPromptsGetParams) -> Result<t::McpPromptsGetResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let arguments = p.arguments.map(|a| serde_json::json!(a));
    let got = session.mcp().get_prompt(&p.server_name, &p.prompt_name, arguments).await.map_err(|e| match e {
        // The server answered with an error: said as the original says it.
        HostError::Server(said) => {
            ctx.failed(format!("MCP prompts/get failed for {}: {}", p.server_name, mcp_said(&said)))
        }
        e => host_error(ctx, e),
    })?;
    serde_json::from_value(got).map_err(|e| ctx.failed(format!("invalid prompts/get result: {e}")))
}

pub async fn resources_read(
    ctx: &Ctx,
    p: t::SessionMcpResourcesReadParams,
) -> Result<t::McpResourcesReadResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let read = session.mcp().read_resource(&p.server_name, &p.uri).await.map_err(|e| host_error(ctx, e))?;
    let contents = read
        .get("contents")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect())
        .unwrap_or_default();
    Ok(t::McpResourcesReadResult { contents })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_servers_error_is_worded_as_the_originals() {
        assert_eq!(super::mcp_said("Mcp error: -32602: no prompt nope"), "MCP error -32602: no prompt nope");
        assert_eq!(super::mcp_said("Transport closed"), "Transport closed");
    }
}
