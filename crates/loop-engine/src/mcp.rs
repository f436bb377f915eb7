//! A session's MCP servers as the loop sees them: the host's reports become events, connected
//! servers' tools are offered as `<server>-<tool>`, and a call goes through permission (kind
//! `mcp`; read-only tools need none), the `preMcpToolCall` hook, then the server.

use std::sync::Arc;

use llm_providers::{ToolCall, ToolSpec};
use mcp_client::{CallError, HostEvent, McpHost, McpTool, ServerSummary, Status};
use protocol::generated::types::{self as t, HookType};
use serde_json::Value;
use tools::{PermissionDecision, ToolOutput};

use crate::emitter::Emitter;
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;

/// Makes the host's reports the session's events.
pub(crate) fn attach(host: &McpHost, emitter: Arc<Emitter>) {
    host.set_sink(move |event| match event {
        HostEvent::StatusChanged(s) => {
            let mut data = t::McpServerStatusChangedData::new(s.name.clone(), wire_status(s.status));
            data.error = s.error.clone();
            emitter.emit(data);
        }
        HostEvent::Loaded(servers) => {
            emitter.emit(t::McpServersLoadedData { servers: servers.iter().map(loaded_server).collect() });
        }
        HostEvent::ToolsChanged => {}
    });
}

pub(crate) fn wire_status(s: Status) -> t::McpServerStatus {
    match s {
        Status::Pending => t::McpServerStatus::Pending,
        Status::Connected => t::McpServerStatus::Connected,
        Status::Failed => t::McpServerStatus::Failed,
        Status::Disabled => t::McpServerStatus::Disabled,
        Status::Stopped => t::McpServerStatus::Stopped,
        Status::NeedsAuth => t::McpServerStatus::NeedsAuth,
    }
}

/// Where a server came from, as `source` says it on the wire.
pub fn wire_source(s: mcp_client::Source) -> t::McpServerSource {
    match s {
        mcp_client::Source::User => t::McpServerSource::User,
        mcp_client::Source::Builtin => t::McpServerSource::Builtin,
        mcp_client::Source::Workspace => t::McpServerSource::Workspace,
    }
}

pub(crate) fn wire_transport(s: &ServerSummary) -> Option<t::McpServerTransport> {
    match s.transport? {
        "stdio" => Some(t::McpServerTransport::Stdio),
        "http" => Some(t::McpServerTransport::Http),
        "sse" => Some(t::McpServerTransport::Sse),
        _ => None,
    }
}

fn loaded_server(s: &ServerSummary) -> t::McpServersLoadedServer {
    let mut out = t::McpServersLoadedServer::new(s.name.clone(), wire_status(s.status));
    out.error = s.error.clone();
    out.transport = wire_transport(s);
    out.source = Some(wire_source(s.source));
    out
}

/// Starts (or re-points) the session's servers from create/resume params. Never waits.
/// The session's `pluginDirectories` servers, then its own `mcpServers` (a later source wins a
/// name), start now. The user's — the enabled installed plugins', then `mcp-config.json`'s —
/// and the work tree's `.mcp.json` (with `enableConfigDiscovery`, in a trusted folder; it wins
/// a name over the user's) start lazily, as the original starts them: with the first turn or
/// `session.mcp.list` (`McpHost::defer_config`), and never when the session configures that
/// name itself. The
/// session's `disabledMcpServers` and the user's (`config.json`) are listed but not started,
/// except that a server the session configures itself is never disabled by the user's list.
pub(crate) fn configure(
    host: &McpHost,
    deps: &crate::deps::Deps,
    settings: &SessionSettings,
    params: &protocol::methods::SessionConfigParams,
) {
    host.set_cwd(settings.cwd.clone());
    let user = agent_config::user_mcp::UserServers::read(&settings.config.home);
    let mut servers = serde_json::Map::new();
    settings.config.reading(|| {
        for dir in params.plugin_directories.iter().flatten() {
            let dir = settings.cwd.join(dir);
            servers.extend(agent_config::plugins::manifest::mcp_servers(&dir));
        }
    });
    // The session's own servers win over a plugin's of the same name.
    servers.extend(params.mcp_servers.iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    let mut disabled = params.disabled_mcp_servers.clone().unwrap_or_default();
    for name in user.disabled {
        let configured_here = params.mcp_servers.as_ref().is_some_and(|m| m.contains_key(&name));
        if !configured_here && !disabled.contains(&name) {
            disabled.push(name);
        }
    }
    if params.mcp_servers.is_some() || !servers.is_empty() {
        host.configure(&servers, &disabled);
    }
    let workspace = workspace_servers(deps, settings);
    let lazy: Vec<String> =
        user.servers.keys().filter(|n| !servers.contains_key(*n) && !workspace.contains_key(*n)).cloned().collect();
    let lazy_workspace: Vec<String> = workspace.keys().filter(|n| !servers.contains_key(*n)).cloned().collect();
    host.undefer_except(mcp_client::Source::User, &lazy);
    host.undefer_except(mcp_client::Source::Workspace, &lazy_workspace);
    for name in &lazy {
        let off = disabled.contains(name);
        host.defer_config(name, user.servers[name].clone(), off, mcp_client::Source::User);
    }
    for name in &lazy_workspace {
        let off = disabled.contains(name);
        host.defer_config(name, workspace[name].clone(), off, mcp_client::Source::Workspace);
    }
    let mut github = std::borrow::Cow::Borrowed(params);
    if disabled.iter().any(|n| n == crate::github_mcp::NAME)
        && !params.disabled_mcp_servers.iter().flatten().any(|n| n == crate::github_mcp::NAME)
    {
        github.to_mut().disabled_mcp_servers = Some(disabled.clone());
    }
    crate::github_mcp::configure(host, &deps.model, &github);
}

/// The work tree's own servers (`.mcp.json`, else `.github/mcp.json`) when the session reads the
/// project's configuration and the user trusts the folder (`trustedFolders`, or this process's
/// `--trust-folder`): a checkout does not start programs of its own choosing unasked. A file
/// that cannot be read starts nothing and is logged.
fn workspace_servers(deps: &crate::deps::Deps, settings: &SessionSettings) -> serde_json::Map<String, Value> {
    if !settings.config_discovery {
        return serde_json::Map::new();
    }
    let found = settings
        .config
        .reading(|| agent_config::workspace_mcp::trusted(&settings.cwd, &settings.config.home, &deps.trusted_folders));
    match found {
        Ok(found) => found.map(|f| f.servers).unwrap_or_default(),
        Err(e) => {
            tracing::warn!(error = %e, "the work tree's MCP configuration was not read");
            serde_json::Map::new()
        }
    }
}

/// The MCP tools offered to the model, after `availableTools` / `excludedTools`.
pub(crate) fn specs(host: &McpHost, s: &SessionSettings) -> Vec<ToolSpec> {
    host.tools()
        .into_iter()
        .filter(|t| s.tool_allowed_from(crate::tool_filter::ToolSource::Mcp, &t.qualified))
        .map(|t| ToolSpec { name: t.qualified, description: t.description, parameters: t.input_schema })
        .collect()
}

/// Calls an MCP tool for the model.
pub(crate) async fn run(
    ctx: &RunCtx,
    host: &McpHost,
    tool: &McpTool,
    call: &ToolCall,
    args: Value,
    settings: &SessionSettings,
    preapproved: bool,
) -> ToolOutput {
    if !preapproved && !tool.read_only {
        let req = t::PermissionRequest::Mcp(t::PermissionRequestMcp {
            tool_call_id: Some(call.id.clone()),
            server_name: tool.server.clone(),
            tool_name: tool.tool.clone(),
            tool_title: tool.title.clone().unwrap_or_else(|| tool.tool.clone()),
            args: Some(args.clone()),
            read_only: tool.read_only,
            ..Default::default()
        });
        if let PermissionDecision::Denied { text_for_llm, code } = ctx.gate().ask(req, &call.id).await {
            return ToolOutput::fail_with(text_for_llm.clone(), text_for_llm, &code);
        }
    }
    let input = protocol::hooks::PreMcpToolCallInput {
        tool_call_id: call.id.clone(),
        server_name: tool.server.clone(),
        tool_name: tool.tool.clone(),
        arguments: args.clone(),
        working_directory: settings.cwd.to_string_lossy().into_owned(),
    };
    let hook = crate::hooks::invoke(&ctx.handle, HookType::PreMcpToolCall, input).await;
    // Absent: no `_meta` of our own; `null`: none; an object: that one.
    let meta = hook.and_then(|h| h.meta_to_use).filter(Value::is_object);
    let result = host.call(&tool.server, &tool.tool, args, meta, &ctx.cancel).await;
    match result {
        Ok(v) => {
            let r = mcp_client::render(&v);
            if r.is_error {
                let mut out = ToolOutput::fail_with(r.text.clone(), r.text, "failure");
                out.image_data_urls = r.images;
                return out;
            }
            let mut out = ToolOutput::ok(r.text);
            out.image_data_urls = r.images;
            out
        }
        Err(CallError::Cancelled) => ToolOutput::interrupted(),
        Err(e) => {
            let text = e.to_string();
            ToolOutput::fail_with(text.clone(), text, "failure")
        }
    }
}

/// `tool.execution_start` fields naming the server and tool of an MCP call.
pub(crate) fn start_fields(host: &McpHost, name: &str, data: &mut t::ToolExecutionStartData) {
    if let Some(tool) = host.tools().into_iter().find(|t| t.qualified == name) {
        data.mcp_server_name = Some(tool.server.clone());
        data.mcp_tool_name = Some(tool.tool.clone());
        let summary = host.list().into_iter().find(|s| s.name == tool.server);
        data.mcp_transport = summary.as_ref().and_then(wire_transport);
    }
}
