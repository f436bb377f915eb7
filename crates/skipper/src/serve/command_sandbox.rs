//! The team server's command sandbox: every tenant's commands, user shells and local MCP
//! servers run under it, and no client can lower it. Each process sees the system read-only,
//! its tenant's workspace and its session's `files/` writable, nothing of the server's home
//! or other tenants, only the environment variables in [`sandbox::SAFE_ENV`], (unless the
//! operator allows it) no network, and a seccomp filter over the system calls that reach past
//! its namespaces. With the network, it gets only what its tenant's filtering proxy lets
//! through, never the host's network (where the server's own services are). A host that
//! cannot sandbox does not serve.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use rpc_server::tenancy::Tenancy;

use super::config::SandboxConfig;

/// The floor; the seccomp filter's compiled form is kept under `home` (the server's own).
pub fn floor(config: &SandboxConfig, workspaces: Vec<PathBuf>, home: &Path) -> anyhow::Result<sandbox::Policy> {
    let support = sandbox::host_support();
    if !support.supported() {
        let reason = support.reason.as_deref().unwrap_or("no sandbox backend");
        bail!("skipper serve runs every tenant's commands in a sandbox, and this host cannot: {reason}");
    }
    // A layer on top of the namespaces, not the floor itself: where it cannot be made (an
    // architecture without a filter), the sandbox goes on without it and says so.
    let seccomp = match sandbox::Seccomp::install(&home.join("sandbox")) {
        Ok(s) => Some(Arc::new(s)),
        Err(e) => {
            tracing::warn!(error = %e, "tenants' commands run without a seccomp filter");
            None
        }
    };
    Ok(sandbox::Policy {
        seccomp,
        workspaces,
        readable: config.readonly_paths.clone(),
        // The network is each tenant's (`tenant_scopes`), set per session from its scope.
        internal_network: config.internal_network,
        env_allow: Some(sandbox::SAFE_ENV.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    })
}

/// Each tenant as the engine sees it: its workspace (and file access beneath it), its
/// configuration home, the proxy its processes reach the network through (where the config
/// gives it the network: its own `network` or `[sandbox]`'s), and (when the config sets
/// per-tenant limits) its resource group. Limits the host cannot enforce stop the server:
/// they are never dropped.
pub fn tenant_scopes(
    config: &SandboxConfig,
    tenancy: &Tenancy,
    configs: &[super::config::TenantConfig],
) -> anyhow::Result<Vec<loop_engine::TenantScope>> {
    let limits = sandbox::Limits {
        max_processes: config.max_processes,
        max_memory_bytes: config.max_memory_mb.map(|mb| mb.saturating_mul(1024 * 1024)),
        cpu_weight: config.cpu_weight,
    };
    tenancy
        .tenants()
        .map(|t| {
            let cgroup = match limits.any() {
                true => Some(Arc::new(
                    sandbox::Cgroup::create(&t.name, &limits).map_err(anyhow::Error::msg).with_context(|| {
                        format!(
                            "[sandbox] max_processes / max_memory_mb / cpu_weight for tenant {}: this host cannot enforce them",
                            t.name
                        )
                    })?,
                )),
                false => None,
            };
            let beneath = tools::Beneath::open(&t.workspace)
                .with_context(|| format!("opening tenant {}'s workspace {}", t.name, t.workspace.display()))?;
            Ok(loop_engine::TenantScope {
                workspace: t.workspace.clone(),
                config_home: t.config_home.clone(),
                cgroup,
                network: network(config, configs.iter().find(|c| c.name == t.name))
                    .with_context(|| format!("the network of tenant {}", t.name))?,
                files: tools::Files::beneath(Arc::new(beneath)),
            })
        })
        .collect()
}

/// The proxy one tenant's processes reach the network through, with its host rules (its own
/// or `[sandbox]`'s); none without the network. One per tenant, shared by its sessions.
fn network(
    config: &SandboxConfig,
    tenant: Option<&super::config::TenantConfig>,
) -> anyhow::Result<Option<Arc<sandbox::net::Proxy>>> {
    if !tenant.and_then(|t| t.network).unwrap_or(config.network) {
        return Ok(None);
    }
    let allowed = tenant.and_then(|t| t.allowed_hosts.as_ref()).unwrap_or(&config.allowed_hosts);
    let blocked = tenant.and_then(|t| t.blocked_hosts.as_ref()).unwrap_or(&config.blocked_hosts);
    let rules = sandbox::net::HostRules::new(allowed, blocked, config.internal_network).map_err(anyhow::Error::msg)?;
    Ok(Some(sandbox::net::Proxy::start(rules, None).context("starting its network proxy")?))
}
