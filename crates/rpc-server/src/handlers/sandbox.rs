//! `sandbox.*` and `session.sandbox.*`: whether this host can sandbox commands, the `sandbox`
//! settings slice with its defaults and an administrator's floor, and a session's sandbox —
//! answered as the original CLI answers them on Linux.
//!
//! A write of the server's file tools outside a session's own sandbox is put to the user with
//! an offer to bypass it or widen it (`loop_engine`'s `sandbox_bypass`); the two methods that
//! take such an offer answer that request. A command blocked by the sandbox fails inside it, as
//! the original's does. On the team server the sandbox is the server's floor, which no client
//! turns off or widens.
//!
//! Skipper's sandbox filters the network through a proxy of its own (`sandbox::net`), but it
//! injects no credentials: no certificate authority to install, and no proxy password kept in
//! a keychain. Those methods say so.

use loop_engine::{OfferRefusal, SandboxTake};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::NoParams;

use crate::ctx::Ctx;

const DOCS_URL: &str = "https://docs.github.com/en/copilot/concepts/about-cloud-and-local-sandboxes";

const REQUIREMENT: &str =
    "Command sandboxing requires bubblewrap (bwrap) 0.5.0 or later on PATH; install or upgrade it to enable sandboxing.";

pub async fn host_support(_ctx: &Ctx, _p: NoParams) -> Result<t::SandboxHostSupport, RpcError> {
    let host = sandbox::host_support();
    if !host.supported() {
        return Ok(t::SandboxHostSupport { supported: false, reason: host.reason.clone(), capabilities: Vec::new() });
    }
    let capability = |name: &str, reason: Option<&str>| t::SandboxHostCapability {
        name: name.to_string(),
        supported: reason.is_none(),
        reason: reason.map(str::to_string),
    };
    let capabilities = vec![
        capability("network", None),
        // Host rules, an upstream proxy and local addresses blocked: the filtering proxy.
        capability("network_filtering", None),
        capability("denied_paths", None),
        capability("shell", None),
        capability("filesystem_enumeration", None),
    ];
    Ok(t::SandboxHostSupport { supported: true, reason: None, capabilities })
}

pub async fn platform_support(_ctx: &Ctx, _p: NoParams) -> Result<bool, RpcError> {
    Ok(sandbox::host_support().supported())
}

/// Windows only: never on this host.
pub async fn windows_loopback_support(_ctx: &Ctx, _p: NoParams) -> Result<bool, RpcError> {
    Ok(false)
}

pub async fn unsupported_message(_ctx: &Ctx, _p: NoParams) -> Result<String, RpcError> {
    Ok(format!("{REQUIREMENT} See {DOCS_URL}"))
}

pub async fn docs_url(_ctx: &Ctx, _p: NoParams) -> Result<t::SandboxDocsUrlResult, RpcError> {
    Ok(t::SandboxDocsUrlResult { url: DOCS_URL.to_string() })
}

pub async fn unsupported_setting_disabled_notice(_ctx: &Ctx, _p: NoParams) -> Result<String, RpcError> {
    Ok(format!(
        "Sandboxing is disabled for this session because this host does not support it. Shell commands and \
         sandboxed services will run unsandboxed. Your saved sandbox setting remains unchanged. {REQUIREMENT}"
    ))
}

/// What to tell a user at start whose sandbox is on where the host cannot run it: nothing on a
/// host that can; what to do, depending on whether a managed policy holds it on.
pub async fn unsupported_startup_notice(
    _ctx: &Ctx,
    p: t::SandboxUnsupportedStartupNoticeParams,
) -> Result<t::SandboxUnsupportedStartupNoticeResult, RpcError> {
    if sandbox::host_support().supported() {
        return Ok(t::SandboxUnsupportedStartupNoticeResult { notice: None });
    }
    let floor = p.managed_sandbox.as_ref();
    let set = |key: &str| floor.and_then(|f| f.get(key)).and_then(serde_json::Value::as_bool) == Some(true);
    let remedy = match (set("enabled") && set("failIfUnavailable"), p.enabled_by_undetermined_policy == Some(true)) {
        (false, _) => "or turn off the sandbox",
        (true, false) => {
            "or contact your administrator — your organization's managed policy enforces sandboxing, so it can't be \
             turned off here"
        }
        (true, true) => {
            "or wait for your enterprise policy to resolve — the sandbox stayed on because the policy could not be \
             determined, so it can't be turned off here meanwhile"
        }
    };
    let notice = format!(
        "Sandboxing is enabled but is not supported on this host, so shell commands and sandboxed services will \
         fail. Install or upgrade bubblewrap (bwrap) to 0.5.0 or later on PATH, {remedy}. See {DOCS_URL}"
    );
    Ok(t::SandboxUnsupportedStartupNoticeResult { notice: Some(notice) })
}

pub async fn apply_defaults(
    ctx: &Ctx,
    p: t::SandboxApplyDefaultsRequest,
) -> Result<serde_json::Map<String, serde_json::Value>, RpcError> {
    agent_config::sandbox_settings::apply_defaults(&p.stored).map_err(|e| ctx.failed(e))
}

pub async fn resolve_floored(
    ctx: &Ctx,
    p: t::SandboxResolveFlooredConfigParams,
) -> Result<t::SandboxResolveFlooredConfigResult, RpcError> {
    let resolved = agent_config::sandbox_settings::resolve_floored(p.user_sandbox.as_ref(), p.managed_sandbox.as_ref());
    Ok(t::SandboxResolveFlooredConfigResult { sandbox_json: resolved.map_err(|e| ctx.failed(e))? })
}

/// Required where the server's floor holds; never blocked (a host that cannot sandbox does not
/// serve with a floor, and a session's own sandbox that cannot start fails its commands).
pub async fn enforcement_status(
    ctx: &Ctx,
    p: t::SessionSandboxGetEnforcementStatusParams,
) -> Result<t::SandboxEnforcementStatus, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::SandboxEnforcementStatus { required: session.sandbox_enforced(), blocked: false, reason: None })
}

pub async fn credential_suggestions(
    ctx: &Ctx,
    p: t::SessionSandboxGetCredentialSuggestionsParams,
) -> Result<t::SandboxCredentialSuggestionsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let suggestions = session
        .sandbox_credential_suggestions()
        .into_iter()
        .map(|(name, suggested_inject_hosts)| t::SandboxCredentialSuggestion { name, suggested_inject_hosts })
        .collect();
    Ok(t::SandboxCredentialSuggestionsResult { suggestions })
}

pub async fn disable_for_session(
    ctx: &Ctx,
    p: t::SessionSandboxDisableForSessionParams,
) -> Result<t::SandboxDisableForSessionResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if session.sandbox_enforced() {
        return Err(ctx.failed("this server's sandbox cannot be turned off for a session"));
    }
    take(ctx, &session, &p.request_id, SandboxTake::Disable, "a sandbox bypass").await?;
    Ok(t::SandboxDisableForSessionResult { success: true, enabled: false })
}

pub async fn grant_path_for_request(
    ctx: &Ctx,
    p: t::SessionSandboxGrantPathForRequestParams,
) -> Result<t::SandboxGrantPathForRequestResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    take(ctx, &session, &p.request_id, SandboxTake::Grant, "a sandbox path grant").await?;
    Ok(t::SandboxGrantPathForRequestResult { success: true })
}

/// Lets the write waiting on `request_id` past the session's sandbox as `how` says.
async fn take(
    ctx: &Ctx,
    session: &loop_engine::SessionHandle,
    request_id: &str,
    how: SandboxTake,
    offer: &str,
) -> Result<(), RpcError> {
    match session.take_sandbox_offer(request_id, how).await.map_err(|e| ctx.engine_error(&e))? {
        Ok(()) => Ok(()),
        Err(OfferRefusal::NotOffered) => {
            Err(ctx.failed(format!("permission request '{request_id}' does not offer {offer}")))
        }
        Err(OfferRefusal::NotFound) => {
            Err(ctx.failed(format!("pending permission request '{request_id}' was not found")))
        }
    }
}

/// The sandbox a feature that may opt out of it (MCP or LSP servers) starts under.
pub async fn resolve_for_optional(
    _ctx: &Ctx,
    p: t::SandboxEffectiveForOptionalParams,
) -> Result<t::SandboxEffectiveForOptionalResult, RpcError> {
    let sandbox_json = agent_config::sandbox_features::resolve_for_optional(p.sandbox.as_ref(), &p.routing_flag);
    Ok(t::SandboxEffectiveForOptionalResult { sandbox_json })
}

pub async fn enforcement_command(_ctx: &Ctx, p: t::SandboxEnforcementCommandAllowedParams) -> Result<bool, RpcError> {
    Ok(agent_config::sandbox_features::command_allowed_while_blocked(&p.command_name, &p.args))
}

/// The process's own environment names the tools' directories a picker may offer.
fn process_env() -> Vec<(String, String)> {
    std::env::vars().collect()
}

pub async fn prepare_picker(
    ctx: &Ctx,
    p: t::SandboxPreparePickerPolicyParams,
) -> Result<t::SandboxPreparePickerPolicyResult, RpcError> {
    let prepared =
        loop_engine::sandbox_picker::prepare(p.sandbox.as_ref(), std::path::Path::new(&p.cwd), &process_env());
    Ok(t::SandboxPreparePickerPolicyResult { sandbox_json: prepared.map_err(|e| ctx.failed(e))? })
}

pub async fn filter_picker(
    ctx: &Ctx,
    p: t::SandboxFilterPickerCandidatesParams,
) -> Result<t::SandboxFilterPickerCandidatesResult, RpcError> {
    let paths: Vec<String> = p.candidates.iter().map(|c| c.path.clone()).collect();
    let cwd = std::path::Path::new(&p.cwd);
    let allowed = loop_engine::sandbox_picker::filter(&paths, p.sandbox.as_ref(), cwd, &process_env());
    Ok(t::SandboxFilterPickerCandidatesResult { allowed: allowed.map_err(|e| ctx.failed(e))? })
}

const NO_PROXY_CA: &str = "Skipper's sandbox runs no credential proxy, so there is no certificate authority to install";

/// Nothing to install: no credential proxy. (The original says `true` here and then fails
/// every installation on Linux.)
pub async fn proxy_ca_installable(_ctx: &Ctx, _p: NoParams) -> Result<bool, RpcError> {
    Ok(false)
}

/// Whether the config asks for what the original's credential proxy does (which Skipper's
/// sandbox refuses to start without).
pub async fn proxy_ca_relevant(_ctx: &Ctx, p: t::SandboxProxyCaRequest) -> Result<bool, RpcError> {
    let config = p.sandbox_config.as_ref().and_then(|c| serde_json::to_value(c).ok());
    Ok(agent_config::sandbox_features::uses_credential_proxy(config.as_ref()))
}

pub async fn proxy_ca_status(_ctx: &Ctx, _p: t::SandboxProxyCaRequest) -> Result<t::SandboxProxyCaStatus, RpcError> {
    Ok(t::SandboxProxyCaStatus {
        state: t::SandboxProxyCaState::Unsupported,
        detail: Some(format!("{NO_PROXY_CA}.")),
        can_install: false,
    })
}

pub async fn proxy_ca_create(
    ctx: &Ctx,
    _p: t::SandboxProxyCaRequest,
) -> Result<t::SandboxProxyCaCreateResult, RpcError> {
    Err(ctx.failed(NO_PROXY_CA))
}

pub async fn proxy_ca_change(ctx: &Ctx, _p: t::SandboxProxyCaRequest) -> Result<t::SandboxProxyCaStatus, RpcError> {
    Err(ctx.failed(NO_PROXY_CA))
}

pub async fn proxy_ca_remove(ctx: &Ctx, _p: NoParams) -> Result<t::SandboxProxyCaStatus, RpcError> {
    Err(ctx.failed(NO_PROXY_CA))
}

const NO_PROXY_SECRET: &str = "Skipper's sandbox runs no proxy, so it keeps no proxy password";

pub async fn proxy_secret_location(ctx: &Ctx, _p: NoParams) -> Result<t::SandboxProxySecretLocation, RpcError> {
    Err(ctx.failed(NO_PROXY_SECRET))
}

pub async fn proxy_secret_get(ctx: &Ctx, _p: NoParams) -> Result<t::SandboxProxySecretGetResult, RpcError> {
    Err(ctx.failed(NO_PROXY_SECRET))
}

pub async fn proxy_secret_save(
    ctx: &Ctx,
    _p: t::SandboxProxySecretSaveRequest,
) -> Result<t::SandboxProxySecretSaveResult, RpcError> {
    Err(ctx.failed(NO_PROXY_SECRET))
}

pub async fn proxy_secret_delete(ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    Err(ctx.failed(NO_PROXY_SECRET))
}
