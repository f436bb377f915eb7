//! Server methods of features Skipper does not have — connector discovery, enterprise managed
//! settings, AHP hosts, extension launchers — answered as the original 1.0.102 answers them on a
//! machine where they are absent or turned off (probed against it in headless mode), so a client
//! that asks learns "not here" in the shape it expects rather than "unknown method".

use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INVALID_PARAMS};
use protocol::rpc::NoParams;

use crate::ctx::Ctx;

/// The original's connector discovery is off for SDK clients unless a feature flag turns it on.
pub async fn connectors_accounts(_ctx: &Ctx, _p: NoParams) -> Result<t::ConnectorDiscoveryAccountList, RpcError> {
    Ok(t::ConnectorDiscoveryAccountList { availability: t::ConnectorDiscoveryAvailability::Disabled, accounts: vec![] })
}

pub async fn connectors_capabilities(_ctx: &Ctx, _p: NoParams) -> Result<t::ConnectorDiscoveryCapabilities, RpcError> {
    Ok(t::ConnectorDiscoveryCapabilities {
        api_version: 1,
        availability: t::ConnectorDiscoveryAvailability::Disabled,
        opaque_account_selection: true,
        conditional_cache: true,
    })
}

fn connectors_disabled() -> RpcError {
    RpcError::new(INVALID_PARAMS, "Connector discovery is disabled for this client")
}

pub async fn connectors_list(
    _ctx: &Ctx,
    _p: t::ConnectorDiscoveryAccountRequest,
) -> Result<t::ConnectorDiscoveryCatalogResult, RpcError> {
    Err(connectors_disabled())
}

pub async fn connectors_refresh(
    _ctx: &Ctx,
    _p: t::ConnectorDiscoveryAccountRequest,
) -> Result<t::ConnectorDiscoveryCatalogResult, RpcError> {
    Err(connectors_disabled())
}

/// No device policy (MDM, managed files) is read: nothing is managed.
pub async fn managed_settings_read(_ctx: &Ctx, _p: NoParams) -> Result<t::ManagedSettingsReadResult, RpcError> {
    Ok(t::ManagedSettingsReadResult::default())
}

/// Neither a device nor a server policy applies: both layers empty, nothing managed, nothing
/// failing closed — so no managed rule ever narrows what a session's own settings allow.
pub async fn managed_settings_resolve(
    _ctx: &Ctx,
    _p: t::ManagedSettingsResolveRequest,
) -> Result<t::ManagedSettingsResolveResult, RpcError> {
    let layer = |source: &str| t::ManagedSettingsLayer { source: source.to_string(), settings: None };
    Ok(t::ManagedSettingsResolveResult {
        permissions_context: Some(t::ManagedPermissionsContext { permissions: None, fail_closed: false }),
        account: None,
        resolved: no_managed_settings(),
        values: None,
        meta: None,
        layers: vec![layer("device"), layer("server")],
        diagnostics: vec![],
    })
}

/// No enterprise policy reaches this runtime: nothing is managed.
fn no_managed_settings() -> t::ManagedSettingsResolvedData {
    t::ManagedSettingsResolvedData {
        source: t::ManagedSettingsResolvedSource::None,
        server_managed: false,
        device_managed: false,
        client_managed: Some(false),
        policy_helper_managed: Some(false),
        fail_closed: false,
        sandbox_enabled_by_undetermined_policy: Some(false),
        bypass_permissions_disabled: false,
        permissions_allow_intersected: None,
        managed_keys: vec![],
        settings: None,
    }
}

/// The session's effective managed settings: none, as for the server.
pub async fn session_managed_settings(
    ctx: &Ctx,
    p: t::SessionManagedSettingsGetParams,
) -> Result<t::ManagedSettingsResolvedData, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(no_managed_settings())
}

/// Content exclusion is not evaluated by this runtime (a policy a client passes with newer
/// options is not enforced), so no path can be vouched for: the answer is "unavailable", which
/// the schema tells callers to read as "every path excluded" — failing closed, as the original
/// answers before its policy service is ready.
pub async fn content_exclusion_check_paths(
    ctx: &Ctx,
    p: t::SessionContentExclusionCheckPathsParams,
) -> Result<t::ContentExclusionCheckPathsResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::ContentExclusionCheckPathsResult { available: false, checks: Vec::new() })
}

/// The model catalogue this runtime reads publishes multipliers, not token prices: no model
/// has a price unit.
pub async fn models_token_price_units(
    _ctx: &Ctx,
    _p: t::ModelsListRequest,
) -> Result<t::ModelTokenPriceUnitList, RpcError> {
    Ok(t::ModelTokenPriceUnitList { units: Vec::new() })
}

/// There is no policy cache to wipe.
pub async fn managed_settings_clear_cache(_ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    Ok(())
}

/// No AHP host is ever started on this server, so none is owned by the caller.
const NO_HOST: &str = "host is unavailable";

/// Without a host id the caller's hosts are listed: there are none. A named host does not exist.
pub async fn host_list_sessions(
    ctx: &Ctx,
    p: t::HostListSessionsRequest,
) -> Result<t::HostListSessionsResult, RpcError> {
    match p.host_id {
        None => Ok(t::HostListSessionsResult { sessions: vec![] }),
        Some(_) => Err(ctx.failed(NO_HOST)),
    }
}

/// Stopping a host that is not running is done already.
pub async fn host_dispose(_ctx: &Ctx, _p: t::HostDisposeRequest) -> Result<t::HostEmptyResult, RpcError> {
    Ok(t::HostEmptyResult {})
}

pub async fn host_publish_session(
    ctx: &Ctx,
    _p: t::HostPublishSessionRequest,
) -> Result<t::HostPublishSessionResult, RpcError> {
    Err(ctx.failed(NO_HOST))
}

pub async fn host_unpublish_session(
    ctx: &Ctx,
    _p: t::HostUnpublishSessionRequest,
) -> Result<t::HostUnpublishSessionResult, RpcError> {
    Err(ctx.failed(NO_HOST))
}

/// A headless Skipper launches no extensions, so the provider is never asked; registering is
/// accepted as the original accepts it.
pub async fn register_extension_launch_provider(_ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    Ok(())
}
