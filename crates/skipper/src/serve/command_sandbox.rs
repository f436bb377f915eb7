//! The team server's command sandbox: every tenant's commands, user shells and local MCP
//! servers run under it, and no client can lower it. Each process sees the system read-only,
//! its tenant's workspace and its session's directory writable, nothing of the server's home
//! or other tenants, only the environment variables in [`sandbox::SAFE_ENV`], and (unless the
//! operator allows it) no network. A host that cannot sandbox does not serve.

use std::path::PathBuf;

use anyhow::bail;

use super::config::SandboxConfig;

pub fn floor(config: &SandboxConfig, workspaces: Vec<PathBuf>) -> anyhow::Result<sandbox::Policy> {
    let support = sandbox::host_support();
    if !support.supported() {
        let reason = support.reason.as_deref().unwrap_or("no sandbox backend");
        bail!("skipper serve runs every tenant's commands in a sandbox, and this host cannot: {reason}");
    }
    Ok(sandbox::Policy {
        workspaces,
        readable: config.readonly_paths.clone(),
        network: config.network,
        internal_network: config.internal_network,
        env_allow: Some(sandbox::SAFE_ENV.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    })
}
