//! The team server's command sandbox: every tenant's commands, user shells and local MCP
//! servers run under it, and no client can lower it. Each process sees the system read-only,
//! its tenant's workspace and its session's `files/` writable, nothing of the server's home
//! or other tenants, only the environment variables in [`sandbox::SAFE_ENV`], (unless the
//! operator allows it) no network, and a seccomp filter over the system calls that reach past
//! its namespaces. A host that cannot sandbox does not serve.

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
/// configuration home, whether its processes have the network (`network`: the tenants the
/// config says this of; the others have `[sandbox] network`), and (when the config sets
/// per-tenant limits) its resource group. Limits the host cannot enforce stop the server:
/// they are never dropped.
pub fn tenant_scopes(
    config: &SandboxConfig,
    tenancy: &Tenancy,
    network: &std::collections::HashMap<String, bool>,
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
                network: network.get(&t.name).copied().unwrap_or(config.network),
                files: tools::Files::beneath(Arc::new(beneath)),
            })
        })
        .collect()
}
