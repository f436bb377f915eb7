//! `skipper serve` and `skipper tenants` flags. Unlike the headless flags (which the SDKs pass
//! in varying forms and are tolerated when unknown), these are parsed strictly: an operator's
//! typo must not start a server with a default they did not mean.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "skipper serve",
    about = "The self-hosted team server: WebSocket and SDK TCP JSON-RPC, tenants, health and metrics"
)]
pub struct ServeArgs {
    /// HTTP address: /healthz, /readyz, /metrics and the /rpc WebSocket.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Raw TCP JSON-RPC (`Content-Length` framing) for the SDKs' URL connection.
    #[arg(long, default_value = "127.0.0.1:4321")]
    pub sdk_listen: SocketAddr,
    /// Tenants and cluster settings (TOML).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// `sqlite://PATH` (default: the session index under --home).
    #[arg(long)]
    pub database_url: Option<String>,
    /// State root (default: $COPILOT_HOME, else ~/.copilot).
    #[arg(long)]
    pub home: Option<PathBuf>,
    /// Log filter for stderr (`error`, `warn`, `info`, `debug`, or a tracing filter); SKIPPER_LOG wins.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// `text` (readable lines) or `json` (one object per line, for log collectors).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl ServeArgs {
    pub const DEFAULT_CONFIG: &'static str = "config/server.toml";
}

#[derive(Debug, Parser)]
#[command(name = "skipper tenants", about = "Manage the tenants and users of `skipper serve` in its configuration")]
pub struct TenantsArgs {
    /// The server's configuration (TOML); created when missing.
    #[arg(long, global = true, default_value = ServeArgs::DEFAULT_CONFIG)]
    pub config: PathBuf,
    #[command(subcommand)]
    pub command: TenantsCommand,
}

#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// Adds a tenant with a fresh token of its own, or (with --user) a user of a tenant with a
    /// fresh token of theirs (the tenant is added, without a token of its own, when missing).
    /// The token is printed once: only its SHA-256 is stored.
    Add {
        tenant: String,
        #[arg(long)]
        user: Option<String>,
    },
    /// Removes a tenant (its workspace and sessions stay on disk), or (with --user) a user.
    Remove {
        tenant: String,
        #[arg(long)]
        user: Option<String>,
    },
    /// Replaces a tenant's own token, or (with --user) a user's, by a fresh one (printed once);
    /// the old one stops working.
    Rotate {
        tenant: String,
        #[arg(long)]
        user: Option<String>,
    },
    /// Lists the tenants and their users (names and credential sources, never digests).
    List,
}
