//! The `[[agents]]` and `[extensions]` tables of `skipper serve`'s configuration.

use std::path::PathBuf;

use anyhow::bail;
use serde::Deserialize;

/// One agent served at `POST /agents/{name}` and as model `name` of `/v1/chat/completions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    /// The tenant whose workspace and sessions the agent uses.
    pub tenant: String,
    /// The model of the agent's sessions; the server's default when unset.
    pub model: Option<String>,
    /// Appended to the system message.
    pub instructions: Option<String>,
    /// Tools that run without asking; any other tool asks the user through a confirmation.
    #[serde(default)]
    pub allow_tools: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionsConfig {
    /// JSON in the shape of GitHub's `/meta/public_keys/copilot_api`.
    pub public_keys_file: Option<PathBuf>,
    /// Off only for local debugging (gh-debug-cli signs nothing).
    #[serde(default = "yes")]
    pub verify_signatures: bool,
}

impl Default for ExtensionsConfig {
    fn default() -> Self {
        Self { public_keys_file: None, verify_signatures: true }
    }
}

fn yes() -> bool {
    true
}

/// Checks the agents against each other and the tenants' names.
pub fn check(agents: &[AgentConfig], extensions: &ExtensionsConfig, tenants: &[&str]) -> anyhow::Result<()> {
    let mut seen = std::collections::HashSet::new();
    for a in agents {
        super::super::config::check_name(&a.name).map_err(|e| anyhow::anyhow!("agent: {e}"))?;
        if !seen.insert(a.name.as_str()) {
            bail!("agent {} is configured twice", a.name);
        }
        if !tenants.contains(&a.tenant.as_str()) {
            bail!("agent {}: no tenant named {:?}", a.name, a.tenant);
        }
    }
    if !agents.is_empty() && extensions.verify_signatures && extensions.public_keys_file.is_none() {
        bail!("[extensions] public_keys_file is required while verify_signatures is on");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, tenant: &str) -> AgentConfig {
        AgentConfig { name: name.into(), tenant: tenant.into(), model: None, instructions: None, allow_tools: vec![] }
    }

    #[test]
    fn agents_name_existing_tenants_once() {
        let keys = ExtensionsConfig { public_keys_file: Some("k.json".into()), verify_signatures: true };
        assert!(check(&[agent("helper", "alpha")], &keys, &["alpha"]).is_ok());
        assert!(check(&[agent("helper", "beta")], &keys, &["alpha"]).is_err());
        assert!(check(&[agent("helper", "alpha"), agent("helper", "alpha")], &keys, &["alpha"]).is_err());
        assert!(check(&[agent("a/b", "alpha")], &keys, &["alpha"]).is_err());
        let unsigned = ExtensionsConfig { public_keys_file: None, verify_signatures: true };
        assert!(check(&[agent("helper", "alpha")], &unsigned, &["alpha"]).is_err(), "keys are required");
        let debug = ExtensionsConfig { public_keys_file: None, verify_signatures: false };
        assert!(check(&[agent("helper", "alpha")], &debug, &["alpha"]).is_ok());
    }
}
