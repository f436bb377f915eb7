//! `plugins.*` and `mcp.config.*` / `mcp.discover`: the user's plugins, marketplaces and MCP
//! servers under `$COPILOT_HOME` (see `agent_config::plugins` and `agent_config::mcp_config`).
//! File work runs on the blocking pool.

use std::path::PathBuf;

use agent_config::mcp_config::McpConfigStore;
use agent_config::plugins::{InstallOutcome, PluginStore};
use agent_config::user_config::InstalledPlugin;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::NoParams;
use serde_json::Value;

use crate::ctx::Ctx;

fn home(ctx: &Ctx) -> PathBuf {
    ctx.config_home()
}

/// Runs file work off the async threads; its error is the request's.
async fn blocking<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    ctx: &Ctx,
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, RpcError> {
    ctx.blocking(f).await?.map_err(|e| ctx.failed(e))
}

/// Where a relative source is resolved: the request's directory, else the server's.
fn cwd(dir: Option<String>) -> PathBuf {
    dir.map(PathBuf::from).or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("/"))
}

/// A plugin's or marketplace's `source` and the directory a relative one is read from. On a
/// shared server a directory source, and that directory, must be in the caller's tenant's
/// workspace (the source is given back resolved); `name@marketplace` names the tenant's own
/// marketplaces.
fn local_source(ctx: &Ctx, dir: Option<String>, source: String) -> Result<(String, PathBuf), RpcError> {
    if ctx.tenant().is_none() {
        return Ok((source, cwd(dir)));
    }
    let base = ctx.request_path("workingDirectory", dir.as_deref().unwrap_or("."))?;
    if agent_config::plugins::is_marketplace_spec(&source) {
        return Ok((source, base));
    }
    let real = ctx.confine_path("source", &base, &source)?;
    Ok((real.to_string_lossy().into_owned(), base))
}

fn info(p: &InstalledPlugin) -> t::InstalledPluginInfo {
    t::InstalledPluginInfo {
        name: p.name.clone(),
        marketplace: p.marketplace.clone(),
        direct_source_id: p.direct_source_id(),
        version: p.version.clone(),
        enabled: p.enabled,
        installed_from: p.installed_from.clone(),
        // The schema's `source` is runtime provenance ("builtin" only); Skipper has no built-in plugins.
        source: None,
    }
}

pub async fn list(ctx: &Ctx, _p: NoParams) -> Result<t::PluginListResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let installed = blocking(ctx, move || store.installed()).await?;
    Ok(t::PluginListResult { plugins: installed.iter().map(info).collect() })
}

fn install_result(o: InstallOutcome) -> t::PluginInstallResult {
    t::PluginInstallResult {
        plugin: info(&o.plugin),
        skills_installed: o.skills as i64,
        staging_mode: None,
        post_install_message: None,
        deprecation_warning: o.deprecation.map(str::to_string),
    }
}

pub async fn install(ctx: &Ctx, p: t::PluginsInstallRequest) -> Result<t::PluginInstallResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let (source, dir) = local_source(ctx, p.working_directory, p.source)?;
    let out = blocking(ctx, move || store.install(&source, &dir)).await?;
    Ok(install_result(out))
}

pub async fn uninstall(ctx: &Ctx, p: t::PluginsUninstallRequest) -> Result<(), RpcError> {
    let store = PluginStore::new(home(ctx));
    blocking(ctx, move || store.uninstall(&p.name, p.direct_source_id.as_deref()).map(|_| ())).await
}

pub async fn update(ctx: &Ctx, p: t::PluginsUpdateRequest) -> Result<t::PluginUpdateResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let out = blocking(ctx, move || store.update_plugin(&p.name)).await?;
    Ok(t::PluginUpdateResult {
        previous_version: out.previous_version,
        new_version: out.plugin.version,
        skills_installed: out.skills as i64,
    })
}

pub async fn update_all(ctx: &Ctx, _p: NoParams) -> Result<t::PluginUpdateAllResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let all = blocking(ctx, move || store.update_all()).await?;
    let results = all
        .into_iter()
        .map(|(p, r)| match r {
            Ok(o) => t::PluginUpdateAllEntry {
                name: p.name,
                marketplace: p.marketplace,
                success: true,
                previous_version: o.previous_version,
                new_version: o.plugin.version,
                skills_installed: Some(o.skills as i64),
                error: None,
            },
            Err(e) => t::PluginUpdateAllEntry {
                name: p.name,
                marketplace: p.marketplace,
                success: false,
                previous_version: p.version,
                new_version: None,
                skills_installed: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    Ok(t::PluginUpdateAllResult { results })
}

pub async fn enable(ctx: &Ctx, p: t::PluginsEnableRequest) -> Result<(), RpcError> {
    let store = PluginStore::new(home(ctx));
    blocking(ctx, move || store.set_enabled(&p.names, true)).await
}

pub async fn disable(ctx: &Ctx, p: t::PluginsDisableRequest) -> Result<(), RpcError> {
    let store = PluginStore::new(home(ctx));
    blocking(ctx, move || store.set_enabled(&p.names, false)).await
}

pub async fn marketplaces_list(ctx: &Ctx, _p: NoParams) -> Result<t::MarketplaceListResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let all = blocking(ctx, move || store.marketplaces()).await?;
    Ok(t::MarketplaceListResult {
        marketplaces: all
            .into_iter()
            .map(|m| t::MarketplaceInfo { name: m.name, source: m.source, is_default: Some(m.is_default) })
            .collect(),
    })
}

pub async fn marketplaces_add(
    ctx: &Ctx,
    p: t::PluginsMarketplacesAddRequest,
) -> Result<t::MarketplaceAddResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let (source, dir) = local_source(ctx, p.working_directory, p.source)?;
    let name = blocking(ctx, move || store.add_marketplace(&source, &dir)).await?;
    Ok(t::MarketplaceAddResult { name })
}

pub async fn marketplaces_remove(
    ctx: &Ctx,
    p: t::PluginsMarketplacesRemoveRequest,
) -> Result<t::MarketplaceRemoveResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let (removed, dependents) =
        blocking(ctx, move || store.remove_marketplace(&p.name, p.force.unwrap_or(false))).await?;
    Ok(t::MarketplaceRemoveResult { removed, dependent_plugins: (!dependents.is_empty()).then_some(dependents) })
}

pub async fn marketplaces_browse(
    ctx: &Ctx,
    p: t::PluginsMarketplacesBrowseRequest,
) -> Result<t::MarketplaceBrowseResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let plugins = blocking(ctx, move || store.browse(&p.name)).await?;
    Ok(t::MarketplaceBrowseResult {
        plugins: plugins
            .into_iter()
            .map(|a| t::MarketplacePluginInfo { name: a.name, description: a.description })
            .collect(),
    })
}

pub async fn marketplaces_refresh(
    ctx: &Ctx,
    p: t::PluginsMarketplacesRefreshRequest,
) -> Result<t::MarketplaceRefreshResult, RpcError> {
    let store = PluginStore::new(home(ctx));
    let all = blocking(ctx, move || store.refresh(p.name.as_deref())).await?;
    Ok(t::MarketplaceRefreshResult {
        results: all
            .into_iter()
            .map(|(name, r)| t::MarketplaceRefreshEntry {
                name,
                success: r.is_ok(),
                error: r.err().map(|e| e.to_string()),
            })
            .collect(),
    })
}

fn config_value(ctx: &Ctx, c: &t::McpSerializableServerConfig) -> Result<Value, RpcError> {
    serde_json::to_value(c).map_err(|e| ctx.failed(e))
}

pub async fn config_list(ctx: &Ctx, _p: NoParams) -> Result<t::McpConfigList, RpcError> {
    let store = McpConfigStore::new(home(ctx));
    let servers = blocking(ctx, move || store.list()).await?;
    // An entry the schema cannot read (hand-edited) is left out rather than failing the list.
    let servers = servers.into_iter().filter_map(|(k, v)| Some((k, serde_json::from_value(v).ok()?))).collect();
    Ok(t::McpConfigList { servers })
}

pub async fn config_add(ctx: &Ctx, p: t::McpConfigAddRequest) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    let config = config_value(ctx, &p.config)?;
    blocking(ctx, move || store.add(&p.name, config)).await
}

pub async fn config_update(ctx: &Ctx, p: t::McpConfigUpdateRequest) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    let config = config_value(ctx, &p.config)?;
    blocking(ctx, move || store.update(&p.name, config)).await
}

pub async fn config_remove(ctx: &Ctx, p: t::McpConfigRemoveRequest) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    blocking(ctx, move || store.remove(&p.name)).await
}

pub async fn config_enable(ctx: &Ctx, p: t::McpConfigEnableRequest) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    blocking(ctx, move || store.set_disabled(&p.names, false)).await
}

pub async fn config_disable(ctx: &Ctx, p: t::McpConfigDisableRequest) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    blocking(ctx, move || store.set_disabled(&p.names, true)).await
}

/// The file is read afresh on every use: nothing is cached to drop. A broken file is reported.
pub async fn config_reload(ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    let store = McpConfigStore::new(home(ctx));
    blocking(ctx, move || store.list().map(|_| ())).await
}

fn server_type(v: &Value) -> Option<t::DiscoveredMcpServerType> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or(if v.get("url").is_some() { "http" } else { "stdio" });
    serde_json::from_value(Value::String(if kind == "local" { "stdio".into() } else { kind.into() })).ok()
}

/// The user's servers and those of enabled installed plugins.
pub async fn discover(ctx: &Ctx, _p: t::McpDiscoverRequest) -> Result<t::McpDiscoverResult, RpcError> {
    let config = McpConfigStore::new(home(ctx));
    let plugins = PluginStore::new(home(ctx));
    let found = blocking(ctx, move || {
        let disabled = config.disabled().map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for (name, v) in config.list().map_err(|e| e.to_string())? {
            let enabled = !disabled.contains(&name);
            out.push(t::DiscoveredMcpServer {
                r#type: server_type(&v),
                name,
                source: t::McpServerSource::User,
                source_plugin: None,
                source_plugin_version: None,
                effective_source: None,
                enabled,
            });
        }
        for p in plugins.installed().map_err(|e| e.to_string())? {
            for (name, v) in agent_config::plugins::manifest::mcp_servers(std::path::Path::new(&p.cache_path)) {
                out.push(t::DiscoveredMcpServer {
                    r#type: server_type(&v),
                    enabled: p.enabled && !disabled.contains(&name),
                    name,
                    source: t::McpServerSource::Plugin,
                    source_plugin: Some(p.name.clone()),
                    source_plugin_version: p.version.clone(),
                    effective_source: None,
                });
            }
        }
        Ok::<_, String>(out)
    })
    .await?;
    Ok(t::McpDiscoverResult { servers: found })
}
