//! The sandbox a session's processes (its commands, user shells and local MCP servers) run
//! under. Two sources, never both:
//! - the engine's policy (the team server's floor): its tenants' workspaces, plus the
//!   session's own directory, writable, and a `/tmp` of its own there that lasts between its
//!   commands and goes with the session. No client can change it.
//! - otherwise the session's `sandboxConfig` (`session.create`, `session.options.update`), as
//!   the original reads it: off unless `enabled`; the working directory writable unless
//!   `addCurrentWorkingDirectory` is false; `userPolicy.filesystem` paths (relative ones against
//!   the working directory, `~/` against `HOME`); the directories on `PATH` and the toolchains
//!   named by the environment readable unless `allowDevToolAccess` is false; the session's
//!   `files/` writable; the host's temporary directory; the network, none with
//!   `allowOutbound: false`, or with host rules, an upstream proxy or local addresses blocked
//!   only what a filtering proxy lets through (`sandbox::net`). A rule that cannot be enforced
//!   makes every start fail with the reason, as the original fails closed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::generated::types as t;

use crate::handle::SessionHandle;

/// `base` (the engine's floor) for one session of `tenant`: of the floor's workspaces only its
/// tenant's (none for a session outside every tenant's), no process started outside it, and
/// its tenant's resource group; its directory writable, its own `/tmp` there.
fn for_session(
    base: &sandbox::Policy,
    tenant: Option<&crate::TenantScope>,
    session_dir: &Path,
) -> Arc<sandbox::Policy> {
    let mut policy = base.clone();
    policy.workspaces = tenant.map(|t| t.workspace.clone()).into_iter().collect();
    policy.cgroup = tenant.and_then(|t| t.cgroup.clone());
    // Never the host's network: the server's own services (its database) are on it.
    policy.network = false;
    policy.proxy = tenant.and_then(|t| t.network.clone());
    policy.within_workspaces = true;
    // Of the session's directory only its `files/` (as the original shares it) and its `/tmp`:
    // the rest (the log, the rewind store, the plan) is the server's, read and written
    // in-process, where a link planted by a command would lead the server elsewhere.
    let files = session_dir.join("files");
    if let Err(e) = std::fs::create_dir_all(&files) {
        tracing::warn!(dir = %files.display(), error = %e, "creating the session's files directory failed");
    }
    policy.writable.push(files);
    policy.tmp = Some(session_dir.join("tmp"));
    Arc::new(policy)
}

/// Variables naming toolchains whose directories a sandboxed command may read.
const TOOLCHAIN_VARS: &[&str] = &[
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "NVM_DIR",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_INSTALL",
    "SDKMAN_DIR",
];

/// Tokens and endpoints the host keeps from sandboxed commands (as the original drops them).
const HOST_TOKENS: &[&str] =
    &["GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_API_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Parts of a variable's name that say it holds a secret (`session.sandbox.getCredentialSuggestions`).
const SECRET_NAME_PARTS: &[&str] =
    &["TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"];

/// Hosts a well-known credential is for, where a proxy could add it instead of the command.
const CREDENTIAL_HOSTS: &[(&str, &str)] = &[("HF_TOKEN", "huggingface.co"), ("NPM_TOKEN", "registry.npmjs.org")];

fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p)) || upper.ends_with("_KEY")
}

/// The network a sandbox config gives its processes: the host's, none, or (with host rules, an
/// upstream proxy or local addresses blocked) only what its filtering proxy lets through. A
/// proxy that cannot be set up is the reason every start fails: never less filtering than
/// asked.
fn network(net: &t::SandboxConfigUserPolicyNetwork, env: &[(String, String)]) -> Result<Network, String> {
    if net.allow_outbound == Some(false) {
        return Ok(Network::None);
    }
    let listed = |l: &Option<Vec<String>>| l.as_ref().is_some_and(|h| !h.is_empty());
    let local = net.allow_local_network != Some(false);
    if local && !listed(&net.allowed_hosts) && !listed(&net.blocked_hosts) && net.proxy.is_none() {
        return Ok(Network::Host);
    }
    let rules = sandbox::net::HostRules::new(
        net.allowed_hosts.as_deref().unwrap_or_default(),
        net.blocked_hosts.as_deref().unwrap_or_default(),
        local,
    )
    .map_err(|e| format!("The sandbox's network rules cannot be applied: {e}"))?;
    let upstream = match &net.proxy {
        Some(p) => {
            let password = p.password.as_deref().map(|v| resolve_reference(v, env)).transpose()?;
            Some(sandbox::net::Upstream::parse(&p.url, p.username.as_deref(), password.as_deref())?)
        }
        None => None,
    };
    let proxy = sandbox::net::Proxy::start(rules, upstream)
        .map_err(|e| format!("The sandbox's network proxy could not start: {e}"))?;
    Ok(Network::Proxied(proxy))
}

enum Network {
    Host,
    None,
    Proxied(Arc<sandbox::net::Proxy>),
}

/// A proxy password as the config holds it: literal, or `${VAR}` / `$VAR` from the session's
/// environment. A keychain reference (`${secret:…}`) has no keychain to resolve it here.
fn resolve_reference(value: &str, env: &[(String, String)]) -> Result<String, String> {
    let name = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')).or_else(|| value.strip_prefix('$'));
    let Some(name) = name else { return Ok(value.to_string()) };
    if name.starts_with("secret:") {
        return Err("The sandbox proxy's password names a keychain secret, and Skipper has no keychain: \
            use ${VAR} or a literal password"
            .into());
    }
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("The sandbox proxy's password names ${{{name}}}, which is not set"))
}

/// The paths a sandbox config names for a session in `cwd`, with environment `env`: what it
/// may write (beyond the working directory), read (beyond the system) and never see.
pub(crate) struct ConfigPaths {
    pub writable: Vec<PathBuf>,
    pub readable: Vec<PathBuf>,
    pub denied: Vec<PathBuf>,
}

/// Its `userPolicy.filesystem` paths (relative ones against `cwd`, `~/` against `HOME`), and
/// the directories of the tools on `PATH` and of the toolchains unless `allowDevToolAccess`
/// is false.
pub(crate) fn config_paths(config: &t::SandboxConfig, cwd: &Path, env: &[(String, String)]) -> ConfigPaths {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let home = var("HOME").map(PathBuf::from);
    let resolve = |p: &String| -> PathBuf {
        match (p.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => cwd.join(p),
        }
    };
    let fs = config.user_policy.as_ref().and_then(|u| u.filesystem.clone()).unwrap_or_default();
    let mut readable: Vec<PathBuf> = fs.readonly_paths.iter().flatten().map(resolve).collect();
    if config.allow_dev_tool_access != Some(false) {
        let on_path = var("PATH").map(|p| std::env::split_paths(p).collect::<Vec<_>>()).unwrap_or_default();
        let toolchains = TOOLCHAIN_VARS.iter().filter_map(|v| var(v)).map(PathBuf::from);
        readable.extend(on_path.into_iter().chain(toolchains).filter(|p| p.is_absolute() && p.exists()));
    }
    ConfigPaths {
        writable: fs.readwrite_paths.iter().flatten().map(resolve).collect(),
        readable,
        denied: fs.denied_paths.iter().flatten().map(resolve).collect(),
    }
}

/// The policy `config` asks for (`None`: off), for a session in `cwd` whose directory is
/// `session_dir`, with environment `env`.
pub(crate) fn from_config(
    config: &t::SandboxConfig,
    cwd: &Path,
    session_dir: &Path,
    env: &[(String, String)],
) -> Option<sandbox::Policy> {
    if !config.enabled {
        return None;
    }
    let ConfigPaths { mut writable, readable, denied } = config_paths(config, cwd, env);
    writable.push(session_dir.join("files"));
    let empty = t::SandboxConfigUserPolicy::default();
    let user = config.user_policy.as_ref().unwrap_or(&empty);
    let (network, proxy, refusal) = match network(&user.network.clone().unwrap_or_default(), env) {
        Ok(Network::Host) => (true, None, None),
        Ok(Network::None) => (false, None, None),
        Ok(Network::Proxied(p)) => (false, Some(p), None),
        Err(why) => (false, None, Some(why)),
    };
    Some(sandbox::Policy {
        workspaces: Vec::new(),
        within_workspaces: false,
        cwd_writable: config.add_current_working_directory != Some(false),
        writable,
        readable,
        denied,
        tmp: Some(std::env::temp_dir()),
        network,
        proxy,
        cgroup: None,
        seccomp: None,
        // In-process requests of a single user's session go where the user's own would.
        internal_network: true,
        env_allow: None,
        // Variables the config masks reach a command only as the original's credential proxy
        // would put them in its HTTPS requests; Skipper's proxy injects none (no certificate
        // authority of its own), so they do not reach the command at all.
        env_deny: HOST_TOKENS
            .iter()
            .map(|s| s.to_string())
            .chain(config.credentials.iter().flat_map(|c| c.env_vars.keys().cloned()))
            .collect(),
        refusal,
        // Only where the config says so: a config that leaves it out offers none (as the
        // original, whose defaults say otherwise).
        bypass: config.allow_bypass == Some(true),
    })
}

impl SessionHandle {
    /// A new session starts under the engine's floor, when it has one.
    pub(crate) fn apply_sandbox_floor(&self) {
        if let Some(base) = &self.deps().sandbox {
            let cwd = self.view().settings.cwd.clone();
            let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
            let policy = for_session(base, self.deps().tenant(&cwd), self.workspace_path());
            self.confine_processes(Some(policy.clone()), Some(policy));
        }
    }

    /// Applies a client's `sandboxConfig` to the processes the session starts from now on (MCP
    /// servers already running stay as they are, as in the original). Ignored where the
    /// engine's own policy holds: no client lowers the team server's floor.
    pub fn set_sandbox_config(&self, config: &t::SandboxConfig) {
        if self.deps().sandbox.is_some() {
            return;
        }
        let cwd = self.view().settings.cwd.clone();
        let policy = from_config(config, &cwd, self.workspace_path(), &self.deps().tool_env).map(Arc::new);
        let mcp = policy.clone().filter(|_| config.sandbox_mcp_servers != Some(false));
        self.confine_processes(policy, mcp);
    }

    /// Whether the engine's own policy (the team server's floor) confines this session: no
    /// client can turn it off.
    pub fn sandbox_enforced(&self) -> bool {
        self.deps().sandbox.is_some()
    }

    /// Whether the session's commands run sandboxed now.
    pub fn sandboxed(&self) -> bool {
        self.shells().sandbox().is_some()
    }

    /// Variables with secret-looking names that a new sandboxed command of this session would
    /// get, sorted by name, each with the hosts it is known to be for; none while the session
    /// is not sandboxed. Never their values.
    pub fn sandbox_credential_suggestions(&self) -> Vec<(String, Vec<String>)> {
        let Some(policy) = self.shells().sandbox() else { return Vec::new() };
        let passes = |name: &str| {
            policy.env_allow.as_ref().is_none_or(|allow| allow.iter().any(|a| a == name))
                && !policy.env_deny.iter().any(|d| d == name)
        };
        let mut found: Vec<(String, Vec<String>)> = self
            .deps()
            .tool_env
            .iter()
            .map(|(name, _)| name)
            .filter(|name| passes(name) && looks_secret(name))
            .map(|name| {
                let hosts = CREDENTIAL_HOSTS.iter().filter(|(n, _)| n == name).map(|(_, h)| h.to_string()).collect();
                (name.clone(), hosts)
            })
            .collect();
        found.sort();
        found.dedup_by(|a, b| a.0 == b.0);
        found
    }

    /// A program the server runs on the session's behalf (such as `git` for a workspace diff),
    /// under the sandbox its commands run under: what it reads can name more programs to run
    /// (a repository's `core.fsmonitor` or `diff.external`). Without a sandbox, as it is.
    pub fn confined_command(
        &self,
        program: &str,
        args: &[&str],
        cwd: &Path,
    ) -> Result<tokio::process::Command, String> {
        let mut cmd = match self.shells().sandbox() {
            Some(policy) => {
                let args: Vec<std::ffi::OsString> = args.iter().map(std::ffi::OsString::from).collect();
                let w = policy.wrap(std::ffi::OsStr::new(program), &args, cwd, &self.deps().tool_env)?;
                let mut cmd = tokio::process::Command::new(w.program);
                cmd.args(w.args).env_clear().envs(w.env);
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args).current_dir(cwd);
                cmd
            }
        };
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        Ok(cmd)
    }

    /// What the session's commands and user shells, and its local MCP servers, start under.
    fn confine_processes(&self, commands: Option<Arc<sandbox::Policy>>, mcp: Option<Arc<sandbox::Policy>>) {
        self.shells().set_sandbox(commands.clone());
        self.user_shell().set_sandbox(commands);
        self.mcp().set_sandbox(mcp);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("HOME".into(), "/home/u".into()), ("PATH".into(), "/usr/bin:relative/bin".into())]
    }

    fn config(json: serde_json::Value) -> t::SandboxConfig {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn disabled_is_no_sandbox() {
        assert!(from_config(&config(serde_json::json!({"enabled": false})), Path::new("/w"), Path::new("/s"), &env())
            .is_none());
    }

    #[test]
    fn paths_resolve_against_the_cwd_and_home() {
        let c = config(serde_json::json!({"enabled": true, "userPolicy": {"filesystem": {
            "readwritePaths": ["out", "~/cache"], "readonlyPaths": ["/data"], "deniedPaths": [".env"]}}}));
        let p = from_config(&c, Path::new("/w"), Path::new("/s"), &env()).unwrap();
        assert_eq!(p.writable, vec![PathBuf::from("/w/out"), "/home/u/cache".into(), "/s/files".into()]);
        assert_eq!(p.readable[0], PathBuf::from("/data"));
        assert!(p.readable.contains(&PathBuf::from("/usr/bin")), "PATH directories are readable");
        assert!(!p.readable.iter().any(|r| r.ends_with("relative/bin")));
        assert_eq!(p.denied, vec![PathBuf::from("/w/.env")]);
        assert!(p.cwd_writable && p.network && p.refusal.is_none());
        assert!(p.env_deny.contains(&"GITHUB_TOKEN".to_string()));
    }

    #[test]
    fn no_outbound_is_no_network_and_the_working_directory_may_be_left_out() {
        let off = config(serde_json::json!({"enabled": true, "userPolicy": {"network": {"allowOutbound": false}}}));
        let p = from_config(&off, Path::new("/w"), Path::new("/s"), &env()).unwrap();
        assert!(!p.network && p.refusal.is_none());
        let no_cwd = config(serde_json::json!({"enabled": true, "addCurrentWorkingDirectory": false,
            "allowDevToolAccess": false}));
        let p = from_config(&no_cwd, Path::new("/w"), Path::new("/s"), &env()).unwrap();
        assert!(!p.cwd_writable && p.readable.is_empty());
    }

    #[tokio::test]
    async fn host_rules_and_an_upstream_go_through_a_filtering_proxy_or_refuse_every_start() {
        let with = |net: serde_json::Value| {
            from_config(
                &config(serde_json::json!({"enabled": true, "userPolicy": {"network": net}})),
                Path::new("/w"),
                Path::new("/s"),
                &env(),
            )
            .unwrap()
        };
        let p = with(serde_json::json!({"allowedHosts": ["github.com"]}));
        assert!(!p.network && p.proxy.is_some() && p.refusal.is_none(), "{p:?}");
        assert!(with(serde_json::json!({"allowLocalNetwork": false})).proxy.is_some());
        let bad = with(serde_json::json!({"blockedHosts": ["not a host"]}));
        assert!(bad.proxy.is_none() && bad.refusal.unwrap().contains("not a host"));
        let secret = with(
            serde_json::json!({"proxy": {"url": "http://proxy:3128", "username": "u", "password": "${secret:x}"}}),
        );
        assert!(secret.refusal.unwrap().contains("keychain"));
        let unset =
            with(serde_json::json!({"proxy": {"url": "http://proxy:3128", "username": "u", "password": "${NOPE}"}}));
        assert!(unset.refusal.unwrap().contains("NOPE"));
        let inline = with(serde_json::json!({"proxy": {"url": "http://u:p@proxy:3128"}}));
        assert!(inline.refusal.unwrap().contains("credentials"));
        assert!(with(serde_json::json!({"proxy": {"url": "http://proxy:3128"}})).proxy.is_some());
    }

    #[test]
    fn masked_variables_never_reach_a_command() {
        let c = config(
            serde_json::json!({"enabled": true, "credentials": {"envVars": {"NPM_TOKEN": {"injectHosts": ["registry.npmjs.org"]}}}}),
        );
        let p = from_config(&c, Path::new("/w"), Path::new("/s"), &env()).unwrap();
        assert!(p.env_deny.contains(&"NPM_TOKEN".to_string()) && p.env_deny.contains(&"GITHUB_TOKEN".to_string()));
    }

    #[test]
    fn host_rules_without_outbound_are_no_network() {
        let p = from_config(
            &config(serde_json::json!({"enabled": true, "userPolicy": {"network": {"allowOutbound": false, "allowedHosts": ["a.com"]}}})),
            Path::new("/w"),
            Path::new("/s"),
            &env(),
        )
        .unwrap();
        assert!(!p.network && p.proxy.is_none() && p.refusal.is_none());
    }

    #[tokio::test]
    async fn a_session_under_the_floor_gets_its_own_tenants_workspace_only() {
        let (alpha, beta) = (PathBuf::from("/w/alpha"), PathBuf::from("/w/beta"));
        let floor = sandbox::Policy { workspaces: vec![alpha.clone(), beta], ..Default::default() };
        let tenant = crate::TenantScope {
            workspace: alpha.clone(),
            config_home: "/h/alpha".into(),
            cgroup: None,
            network: Some(sandbox::net::Proxy::start(sandbox::net::HostRules::open(false), None).unwrap()),
            files: tools::Files::nowhere(),
        };
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("1");
        let p = for_session(&floor, Some(&tenant), &session);
        assert_eq!(p.workspaces, vec![alpha]);
        assert!(!p.network && p.proxy.is_some(), "its tenant's proxy, not the floor's (no network)");
        // Its `files/` and `/tmp`, not the directory the server keeps its log and rewinds in.
        assert!(p.within_workspaces && p.writable == vec![session.join("files")], "{:?}", p.writable);
        assert!(session.join("files").is_dir());
        assert_eq!(p.tmp, Some(session.join("tmp")));
        // A session outside every workspace gets none (so its processes start nowhere).
        let nobodys = for_session(&floor, None, &dir.path().join("2"));
        assert!(nobodys.workspaces.is_empty() && !nobodys.network && nobodys.proxy.is_none());
    }
}
