//! Server-level methods: handshake, status, auth, catalogues, shutdown.

use protocol::generated::types as t;
use protocol::jsonrpc::{self, RpcError};
use protocol::methods::{AuthStatus, StatusResult};
use protocol::rpc::NoParams;
use protocol::PROTOCOL_VERSION;

use crate::ctx::Ctx;

pub async fn connect(ctx: &Ctx, p: t::ConnectRequest) -> Result<t::ConnectResult, RpcError> {
    if let Some(tenancy) = &ctx.server.tenancy {
        // The token selects the tenant. A connection that authenticated at the transport (a
        // WebSocket's header) may connect without one, or with its own; never as another.
        let selected = p.token.as_deref().and_then(|token| tenancy.authenticate(token));
        // A WebSocket authenticated at its upgrade (and audited there).
        let already = ctx.caller.tenant().is_some();
        let ok = match (selected, ctx.caller.tenant()) {
            (Some(tenant), _) => match ctx.caller.join_tenant(tenant) {
                Ok(()) => true,
                Err(true) => {
                    return Err(RpcError::new(
                        jsonrpc::SERVER_OVERLOADED,
                        "too many connections for this tenant; retry later",
                    ))
                }
                Err(false) => false,
            },
            (None, Some(_)) => p.token.is_none(),
            (None, None) => {
                if p.token.is_none() {
                    tenancy.record_auth_failure();
                }
                false
            }
        };
        if !ok {
            ctx.server.audit().record("connect.refused", None, None, serde_json::json!({"transport": "tcp"}));
            return Err(RpcError::new(jsonrpc::AUTHENTICATION_FAILED, "AUTHENTICATION_FAILED"));
        }
        if !already {
            ctx.audit("connect", None, serde_json::json!({"transport": "tcp"}));
        }
    } else if let Some(expected) = &ctx.server.connection_token {
        if p.token.as_deref() != Some(expected.as_str()) {
            return Err(RpcError::new(jsonrpc::AUTHENTICATION_FAILED, "AUTHENTICATION_FAILED"));
        }
    }
    ctx.caller.set_authenticated();
    if p.enable_git_hub_telemetry_forwarding == Some(true) {
        ctx.caller.set_wants_github_telemetry();
    }
    let kinds = p.supported_task_kinds.unwrap_or_else(|| vec![t::TaskKind::Agent, t::TaskKind::Shell]);
    Ok(t::ConnectResult {
        ok: true,
        protocol_version: PROTOCOL_VERSION.into(),
        version: ctx.server.engine.version().to_string(),
        task_kinds: Some(kinds),
    })
}

pub async fn ping(_ctx: &Ctx, p: t::PingRequest) -> Result<t::PingResult, RpcError> {
    let message = match p.message {
        Some(m) => format!("pong: {m}"),
        None => "pong".to_string(),
    };
    Ok(t::PingResult {
        message,
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
        protocol_version: PROTOCOL_VERSION.into(),
    })
}

pub async fn status(ctx: &Ctx, _p: NoParams) -> Result<StatusResult, RpcError> {
    Ok(StatusResult { version: ctx.server.engine.version().to_string(), protocol_version: PROTOCOL_VERSION })
}

pub async fn auth_status(ctx: &Ctx, _p: NoParams) -> Result<AuthStatus, RpcError> {
    let auth = &ctx.server.auth;
    if !auth.token_present {
        return Ok(AuthStatus { status_message: "Not authenticated".into(), ..Default::default() });
    }
    Ok(AuthStatus {
        is_authenticated: true,
        auth_type: Some(auth.auth_type.clone()),
        host: Some(auth.host.clone()),
        status_message: format!("{} (via {})", auth.host, auth.auth_type),
    })
}

pub async fn models_list(ctx: &Ctx, _p: t::ModelsListRequest) -> Result<t::ModelList, RpcError> {
    let models = ctx.server.engine.list_models().await.map_err(|e| ctx.failed(e))?;
    // The provider's catalogue entry carries free-form capabilities; the wire type is the
    // schema's. An entry that does not fit is left out (and logged) rather than failing the list.
    let models = models
        .iter()
        .filter_map(|m| match serde_json::to_value(m).and_then(serde_json::from_value::<t::Model>) {
            Ok(model) => Some(model),
            Err(e) => {
                tracing::warn!(model = %m.id, error = %e, "model entry does not fit the schema; left out");
                None
            }
        })
        .collect();
    Ok(t::ModelList { models })
}

pub async fn tools_list(ctx: &Ctx, _p: t::ToolsListRequest) -> Result<t::ToolList, RpcError> {
    let tools = ctx
        .server
        .engine
        .builtins()
        .tools()
        .iter()
        .map(|tool| t::Tool {
            name: tool.name().to_string(),
            namespaced_name: None,
            description: tool.description().to_string(),
            parameters: tool.parameters().as_object().cloned(),
            instructions: None,
        })
        .collect();
    Ok(t::ToolList { tools })
}

pub async fn runtime_shutdown(ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    if ctx.server.tenancy.is_some() {
        // One tenant must not stop everyone's server; operators use SIGTERM.
        return Err(ctx.failed("a shared server is not shut down by its clients"));
    }
    ctx.server.stopping.store(true, std::sync::atomic::Ordering::Release);
    ctx.server.engine.shutdown_all();
    // Let the response reach the client before the transports stop.
    let shutdown = ctx.server.shutdown.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        shutdown.cancel();
    });
    Ok(())
}
