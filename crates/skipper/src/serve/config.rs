//! `skipper serve`'s configuration file (TOML, `config/server.toml` by default): the tenants,
//! their users and credentials, and the cluster settings. Tokens that select a tenant are
//! never in it, only their SHA-256; model credentials are named (an environment variable or a
//! file), never written in it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    #[serde(default)]
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub limits: ServeLimits,
    /// Copilot Extensions agents (`POST /agents/{name}`, `/v1/chat/completions`).
    #[serde(default)]
    pub agents: Vec<super::extensions::config::AgentConfig>,
    #[serde(default)]
    pub extensions: super::extensions::config::ExtensionsConfig,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub credentials: CredentialsConfig,
    #[serde(default)]
    pub audit: AuditConfig,
}

/// The audit log (`rpc_server::audit`): one JSON line per security-relevant act.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// `stderr`, or a file (created mode 0600); no audit log when unset.
    pub path: Option<String>,
    /// A file is rotated past this size (`audit.jsonl` → `audit.jsonl.1` …).
    #[serde(default = "default_audit_max_bytes")]
    pub max_bytes: u64,
    /// Rotated files kept.
    #[serde(default = "default_audit_keep")]
    pub keep: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { path: None, max_bytes: default_audit_max_bytes(), keep: default_audit_keep() }
    }
}

fn default_audit_max_bytes() -> u64 {
    64 << 20
}

fn default_audit_keep() -> u32 {
    5
}

impl AuditConfig {
    pub fn target(&self) -> Option<rpc_server::audit::AuditTarget> {
        use rpc_server::audit::AuditTarget;
        Some(match self.path.as_deref()? {
            "stderr" => AuditTarget::Stderr,
            path => AuditTarget::File { path: path.into(), max_bytes: self.max_bytes.max(1024), keep: self.keep },
        })
    }
}

/// Whose credentials a tenant's model calls carry (`credentials.rs`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsConfig {
    /// Whether a session with no credentials of its own, of its user or of its tenant may use
    /// the server's (its `GH_TOKEN` / sign-in), billed to the server's account. A tenant's
    /// `server_fallback` overrides it. When not allowed, such a session is refused at creation.
    #[serde(default = "yes")]
    pub server_fallback: bool,
}

impl Default for CredentialsConfig {
    fn default() -> Self {
        Self { server_fallback: true }
    }
}

fn yes() -> bool {
    true
}

/// The command sandbox of every tenant's sessions (always on: `sandbox` crate). What the
/// operator may widen, for every tenant alike.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Whether tenants' commands and MCP servers may use the network (default: no network,
    /// not even the host's loopback). They reach it through their tenant's filtering proxy
    /// (HTTP and HTTPS, with `HTTP_PROXY` / `HTTPS_PROXY` set), never directly: the hosts below
    /// and `internal_network` decide where it goes.
    #[serde(default)]
    pub network: bool,
    /// With the network: the only hosts they may reach (exact names, addresses, `*.domain`
    /// for strict subdomains); default: any not blocked.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// With the network: hosts they may never reach (a domain covers its subdomains; `*`
    /// blocks all); these win over `allowed_hosts`.
    #[serde(default)]
    pub blocked_hosts: Vec<String>,
    /// Host paths they may read beyond the system directories (`/usr`, `/etc`, `/opt`, …):
    /// toolchains installed elsewhere, shared read-only data.
    #[serde(default)]
    pub readonly_paths: Vec<PathBuf>,
    /// Whether tenants may reach loopback, private and other internal addresses: through what
    /// the server does for them in-process (their sessions' own model providers, HTTP MCP
    /// servers, `web_fetch`) and through their processes' proxy (default: no; the server's own
    /// model service is not affected).
    #[serde(default)]
    pub internal_network: bool,
    /// Per tenant: processes its commands and MCP servers may have at once, all sessions
    /// together (cgroup `pids`); none when unset.
    pub max_processes: Option<u64>,
    /// Per tenant: memory they may use together, in MiB (cgroup `memory`); none when unset.
    pub max_memory_mb: Option<u64>,
    /// Per tenant: its weight when the CPU is contended, 1-10000 (cgroup `cpu`; the same for
    /// every tenant, so each gets an equal share however many processes it runs); none when
    /// unset.
    pub cpu_weight: Option<u64>,
}

/// Bounds of the server as a whole (each connection's own are `config/defaults.toml`'s).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeLimits {
    /// WebSocket and SDK TCP connections open at once; past it: 503 / a `-32005` error.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// On SIGTERM: how long running turns may go on (no new connections meanwhile) before
    /// they are cancelled and the server exits.
    #[serde(default = "default_drain_timeout_s")]
    pub drain_timeout_s: u64,
    /// SDK TCP connections that have not yet authenticated (`connect`), at once; past it: a
    /// `-32005` error. They count towards `max_connections` too.
    #[serde(default = "default_max_unauthenticated")]
    pub max_unauthenticated: usize,
    /// How long an SDK TCP connection has to authenticate before it is closed.
    #[serde(default = "default_handshake_timeout_s")]
    pub handshake_timeout_s: u64,
    /// The largest frame body accepted before a connection authenticates.
    #[serde(default = "default_unauthenticated_frame_bytes")]
    pub unauthenticated_frame_bytes: usize,
    /// Connections one tenant may have open at once (`[[tenants]] max_connections` overrides
    /// it for one); past it: 503 / a `-32005` error. Default: all of `max_connections` with
    /// one tenant, half of them with several, so that no tenant can take every slot.
    pub max_connections_per_tenant: Option<usize>,
    /// Sessions one tenant may own at once, across nodes (`[[tenants]] max_sessions`
    /// overrides it for one); past it `session.create` and `sessions.fork` fail with `-32012`.
    /// Default: no limit.
    pub max_sessions_per_tenant: Option<u64>,
    /// Messages of one tenant's sessions running at once on a node (`[[tenants]] max_turns`
    /// overrides it for one); more wait, queued, until one ends. Default: no limit.
    pub max_turns_per_tenant: Option<u64>,
    /// Model requests one tenant's sessions may send per minute, across nodes
    /// (`[[tenants]] model_requests_per_minute`); more wait for the next minute. Default: no
    /// limit.
    pub model_requests_per_minute_per_tenant: Option<u64>,
    /// Tokens (input and output) one tenant's sessions may use per UTC day, across nodes
    /// (`[[tenants]] tokens_per_day`); past it `session.send` fails with `-32012` and a turn
    /// under way ends with an error at its next model call. Default: no limit.
    pub tokens_per_day_per_tenant: Option<u64>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            drain_timeout_s: default_drain_timeout_s(),
            max_unauthenticated: default_max_unauthenticated(),
            handshake_timeout_s: default_handshake_timeout_s(),
            unauthenticated_frame_bytes: default_unauthenticated_frame_bytes(),
            max_connections_per_tenant: None,
            max_sessions_per_tenant: None,
            max_turns_per_tenant: None,
            model_requests_per_minute_per_tenant: None,
            tokens_per_day_per_tenant: None,
        }
    }
}

fn default_max_unauthenticated() -> usize {
    64
}

fn default_handshake_timeout_s() -> u64 {
    10
}

fn default_unauthenticated_frame_bytes() -> usize {
    64 * 1024
}

fn default_drain_timeout_s() -> u64 {
    30
}

fn default_max_connections() -> usize {
    1024
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    pub name: String,
    /// Lowercase hex SHA-256 of the tenant's own token's UTF-8 bytes (it connects as the
    /// tenant, no user). Optional when the tenant has users.
    pub token_sha256: Option<String>,
    /// The GitHub token its sessions' model calls carry when neither the session nor its user
    /// brings one: the name of an environment variable holding it, or a file holding it.
    pub github_token_env: Option<String>,
    pub github_token_file: Option<PathBuf>,
    /// Its own model provider (bring your own key), for sessions that name none of their own.
    pub provider: Option<ProviderSettings>,
    /// In place of `[credentials] server_fallback` for this tenant.
    pub server_fallback: Option<bool>,
    /// Its users: each connects with a token of their own, and their sessions' model calls carry
    /// their credentials.
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// Where the tenant's sessions run; default `<home>/workspaces/<name>`.
    pub workspace: Option<PathBuf>,
    /// The tenant's own configuration (MCP servers, plugins, skills, agents, instructions,
    /// settings); default `<home>/tenants/<name>`. Never inside a workspace.
    pub config_home: Option<PathBuf>,
    /// Connections it may have open at once; default `[limits] max_connections_per_tenant`.
    pub max_connections: Option<usize>,
    /// Sessions it may own at once; default `[limits] max_sessions_per_tenant`.
    pub max_sessions: Option<u64>,
    /// Its messages running at once on a node; default `[limits] max_turns_per_tenant`.
    pub max_turns: Option<u64>,
    /// Its model requests per minute; default `[limits] model_requests_per_minute_per_tenant`.
    pub model_requests_per_minute: Option<u64>,
    /// Its tokens per UTC day; default `[limits] tokens_per_day_per_tenant`.
    pub tokens_per_day: Option<u64>,
    /// Whether its commands and MCP servers may use the network; default `[sandbox] network`.
    pub network: Option<bool>,
    /// Its own `allowed_hosts` / `blocked_hosts`, in place of `[sandbox]`'s.
    pub allowed_hosts: Option<Vec<String>>,
    pub blocked_hosts: Option<Vec<String>>,
}

/// One user of a tenant (`[[tenants.users]]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// Unique within the tenant; recorded as the creator of their sessions.
    pub name: String,
    /// Lowercase hex SHA-256 of the user's token.
    pub token_sha256: String,
    /// The GitHub token their sessions' model calls carry: an environment variable's name, or
    /// a file.
    pub github_token_env: Option<String>,
    pub github_token_file: Option<PathBuf>,
}

/// A tenant's model provider (`[tenants.provider]`), as a session's `provider` has it; the key
/// comes from an environment variable or a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai` (default), `azure` or `anthropic`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub base_url: String,
    /// `completions` (default) or `responses` (openai and azure).
    pub wire_api: Option<String>,
    pub api_key_env: Option<String>,
    pub api_key_file: Option<PathBuf>,
    /// Sent as `Authorization: Bearer`, in place of the API key.
    pub bearer_token_env: Option<String>,
    pub bearer_token_file: Option<PathBuf>,
    /// The well-known model it serves (capabilities and limits are taken from it).
    pub model_id: Option<String>,
    /// The model name sent to the provider, when it differs.
    pub wire_model: Option<String>,
    /// Azure: the API version (the versioned deployment route).
    pub azure_api_version: Option<String>,
    pub max_prompt_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
}

/// Several nodes sharing one database (`--database-url postgres://…`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Unique per node: leases and forwarded requests name it.
    #[serde(default = "default_node_id")]
    pub node_id: String,
    #[serde(default = "default_lease_ttl_s")]
    pub lease_ttl_s: u64,
    /// The directory every node mounts from one shared volume: default workspaces and session
    /// directories live there. Required with PostgreSQL (`shared_root.rs`).
    #[serde(default)]
    pub shared_root: Option<PathBuf>,
    /// How long a request waits for a database connection before it fails with "database
    /// unavailable" (and a turn's event write before the turn stops).
    #[serde(default = "default_database_timeout_ms")]
    pub database_timeout_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            node_id: default_node_id(),
            lease_ttl_s: default_lease_ttl_s(),
            shared_root: None,
            database_timeout_ms: default_database_timeout_ms(),
        }
    }
}

fn default_node_id() -> String {
    "a".into()
}

fn default_lease_ttl_s() -> u64 {
    10
}

fn default_database_timeout_ms() -> u64 {
    2000
}

impl ServerConfig {
    /// Reads `path`. A missing file is an empty configuration when it is the default path
    /// (a fresh checkout elsewhere), an error when it was asked for explicitly.
    pub fn load(path: &Path, explicit: bool) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let config: Self = toml::from_str(text)?;
        let mut digests = std::collections::HashMap::new();
        let mut seen = |digest: [u8; 32], who: String| match digests.insert(digest, who.clone()) {
            Some(other) => bail!("{other} and {who} have the same token"),
            None => Ok(()),
        };
        for t in &config.tenants {
            check_name(&t.name)?;
            if let Some(digest) = &t.token_sha256 {
                let digest = parse_digest(digest).with_context(|| format!("tenant {}: token_sha256", t.name))?;
                seen(digest, format!("tenant {}", t.name))?;
            } else if t.users.is_empty() {
                bail!("tenant {}: give it a token_sha256 or at least one [[tenants.users]]", t.name);
            }
            let mut names = std::collections::HashSet::new();
            for u in &t.users {
                check_name(&u.name).with_context(|| format!("tenant {}: user", t.name))?;
                if !names.insert(u.name.as_str()) {
                    bail!("tenant {}: user {} is configured twice", t.name, u.name);
                }
                let digest = parse_digest(&u.token_sha256)
                    .with_context(|| format!("tenant {}: user {}: token_sha256", t.name, u.name))?;
                seen(digest, format!("user {} of tenant {}", u.name, t.name))?;
            }
        }
        if config.limits.max_connections == 0 {
            bail!("limits.max_connections must be at least 1");
        }
        if config.limits.max_connections_per_tenant == Some(0)
            || config.tenants.iter().any(|t| t.max_connections == Some(0))
        {
            bail!("a tenant's max_connections must be at least 1");
        }
        let l = &config.limits;
        type OfTenant = fn(&TenantConfig) -> Option<u64>;
        let limits: [(&str, Option<u64>, OfTenant); 4] = [
            ("max_sessions", l.max_sessions_per_tenant, |t| t.max_sessions),
            ("max_turns", l.max_turns_per_tenant, |t| t.max_turns),
            ("model_requests_per_minute", l.model_requests_per_minute_per_tenant, |t| t.model_requests_per_minute),
            ("tokens_per_day", l.tokens_per_day_per_tenant, |t| t.tokens_per_day),
        ];
        for (name, default, of) in limits {
            if default == Some(0) || config.tenants.iter().any(|t| of(t) == Some(0)) {
                bail!("a tenant's {name} must be at least 1 (leave it out for no limit)");
            }
        }
        if config.cluster.lease_ttl_s == 0 {
            bail!("cluster.lease_ttl_s must be at least 1");
        }
        Ok(config)
    }
}

/// A tenant name is a directory name under `workspaces/` (and a user's name is as plain):
/// letters, digits, `-`, `_`.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        bail!("name {name:?}: use 1 to 64 letters, digits, '-' or '_'");
    }
    Ok(())
}

/// 64 lowercase hex digits → 32 bytes.
pub fn parse_digest(hex_text: &str) -> anyhow::Result<[u8; 32]> {
    if hex_text.len() != 64 || !hex_text.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
        bail!("expected 64 lowercase hex digits (the SHA-256 of the token)");
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_text, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
    const OTHER: &str = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9";

    #[test]
    fn users_credentials_and_providers_parse() {
        let c = ServerConfig::parse(&format!(
            "[credentials]\nserver_fallback = false\n\n[[tenants]]\nname = \"alpha\"\ngithub_token_env = \"ALPHA_GH\"\n\n\
             [tenants.provider]\ntype = \"anthropic\"\nbase_url = \"https://example.test\"\napi_key_file = \"/run/k\"\n\n\
             [[tenants.users]]\nname = \"alice\"\ntoken_sha256 = \"{DIGEST}\"\ngithub_token_file = \"/run/alice\"\n\n\
             [[tenants.users]]\nname = \"bob\"\ntoken_sha256 = \"{OTHER}\"\n"
        ))
        .unwrap();
        assert!(!c.credentials.server_fallback);
        let alpha = &c.tenants[0];
        assert_eq!(alpha.token_sha256, None, "a tenant with users needs no token of its own");
        assert_eq!(alpha.github_token_env.as_deref(), Some("ALPHA_GH"));
        let provider = alpha.provider.as_ref().unwrap();
        assert_eq!((provider.kind.as_deref(), provider.base_url.as_str()), (Some("anthropic"), "https://example.test"));
        let users: Vec<_> = alpha.users.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(users, ["alice", "bob"]);
        assert_eq!(alpha.users[0].github_token_file.as_deref(), Some(Path::new("/run/alice")));
        assert!(ServerConfig::parse("").unwrap().credentials.server_fallback, "the server's identity by default");
    }

    #[test]
    fn tenants_and_cluster_parse() {
        let c = ServerConfig::parse(&format!(
            "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{DIGEST}\"\nworkspace = \"/srv/alpha\"\n\n\
             [[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{OTHER}\"\n\n[cluster]\nnode_id = \"b\"\nlease_ttl_s = 5\n\
             shared_root = \"/mnt/skipper\"\n"
        ))
        .unwrap();
        assert_eq!(c.tenants.len(), 2);
        assert_eq!(c.tenants[0].workspace.as_deref(), Some(Path::new("/srv/alpha")));
        assert_eq!((c.cluster.node_id.as_str(), c.cluster.lease_ttl_s), ("b", 5));
        assert_eq!(c.cluster.shared_root.as_deref(), Some(Path::new("/mnt/skipper")));
        assert_eq!(parse_digest(DIGEST).unwrap()[0], 0x2c);
    }

    #[test]
    fn bad_entries_are_refused_with_a_reason() {
        let upper = DIGEST.to_uppercase();
        for bad in [
            format!("[[tenants]]\nname = \"../x\"\ntoken_sha256 = \"{DIGEST}\"\n"),
            format!("[[tenants]]\nname = \"a\"\ntoken_sha256 = \"{upper}\"\n"),
            "[[tenants]]\nname = \"a\"\ntoken_sha256 = \"abc\"\n".to_string(),
            "[[tenants]]\nname = \"a\"\ntoken = \"clear\"\n".to_string(),
            "[cluster]\nlease_ttl_s = 0\n".to_string(),
            "[[tenants]]\nname = \"a\"\n".to_string(),
            format!("[[tenants]]\nname = \"a\"\n[[tenants.users]]\nname = \"u\"\ntoken_sha256 = \"{DIGEST}\"\n[[tenants.users]]\nname = \"u\"\ntoken_sha256 = \"{OTHER}\"\n"),
            format!("[[tenants]]\nname = \"a\"\ntoken_sha256 = \"{DIGEST}\"\n[[tenants.users]]\nname = \"u\"\ntoken_sha256 = \"{DIGEST}\"\n"),
            format!("[[tenants]]\nname = \"a\"\n[[tenants.users]]\nname = \"u/v\"\ntoken_sha256 = \"{DIGEST}\"\n"),
            format!("[[tenants]]\nname = \"a\"\ntoken_sha256 = \"{DIGEST}\"\ngithub_token = \"clear\"\n"),
            format!("[[tenants]]\nname = \"a\"\ntoken_sha256 = \"{DIGEST}\"\ntokens_per_day = 0\n"),
            "[limits]\nmax_turns_per_tenant = 0\n".to_string(),
        ] {
            assert!(ServerConfig::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tenants_limits_parse_and_override_the_defaults() {
        let c = ServerConfig::parse(&format!(
            "[limits]\nmax_turns_per_tenant = 4\nmodel_requests_per_minute_per_tenant = 60\n\n\
             [[tenants]]\nname = \"a\"\ntoken_sha256 = \"{DIGEST}\"\nmax_turns = 2\ntokens_per_day = 1000\n"
        ))
        .unwrap();
        let (l, a) = (&c.limits, &c.tenants[0]);
        assert_eq!((l.max_turns_per_tenant, l.model_requests_per_minute_per_tenant), (Some(4), Some(60)));
        assert_eq!((a.max_turns, a.model_requests_per_minute, a.tokens_per_day), (Some(2), None, Some(1000)));
    }

    #[test]
    fn the_committed_default_parses() {
        let c = ServerConfig::parse(include_str!("../../../../config/server.toml")).unwrap();
        assert!(c.tenants.is_empty(), "the committed default configures no tenant (./x serve uses the default one)");
    }
}
