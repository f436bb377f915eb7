//! `skipper mcp add`: a server entry made from the command line's options, checked, and added
//! to the user's `mcp-config.json` (never over an existing one).

use agent_config::mcp_config::{McpConfigError, McpConfigStore};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use super::here::Here;
use super::mcp_show::{self, Show};
use super::mcp_sources::{Found, Source};

const EXAMPLES: &str = "\
Examples:
  skipper mcp add context7 -- npx -y @upstash/context7-mcp
  skipper mcp add github --env GITHUB_PERSONAL_ACCESS_TOKEN=ghp_xxx -- npx -y @modelcontextprotocol/server-github
  skipper mcp add --transport http notion https://mcp.notion.com/mcp
  skipper mcp add --transport http --header \"Authorization: Bearer rk_live_xxx\" stripe https://mcp.stripe.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Stdio,
    Http,
    Sse,
}

#[derive(Debug, Args)]
#[command(
    long_about = "Add an MCP server to the user's configuration.\n\nA local (stdio) server is a command line, after `--`:\n  \
                  skipper mcp add <name> -- <command> [args...]\nA remote (HTTP/SSE) server is a URL:\n  \
                  skipper mcp add --transport http <name> <url>\n\n--env and --header may be repeated.",
    after_help = EXAMPLES
)]
pub struct AddArgs {
    /// Server name
    name: String,
    /// The URL of a remote server, or (after --) a local server's command and arguments
    #[arg(value_name = "URL-OR-COMMAND", trailing_var_arg = true, allow_hyphen_values = true)]
    target: Vec<String>,
    /// How the server is reached
    #[arg(long, value_enum, default_value = "stdio")]
    transport: Transport,
    /// An environment variable of a local server, KEY=VALUE (repeatable)
    #[arg(long)]
    env: Vec<String>,
    /// An HTTP header of a remote server, "Name: value" (repeatable)
    #[arg(long)]
    header: Vec<String>,
    /// Tools the agent may use: "*" for all, names separated by commas, or "" for none
    #[arg(long, default_value = "*")]
    tools: String,
    /// Timeout of each tool call, in milliseconds (1-4294967295)
    #[arg(long, value_name = "MS")]
    timeout: Option<String>,
    /// Print the added entry as JSON
    #[arg(long)]
    json: bool,
    /// Show environment and header values instead of masking them
    #[arg(long)]
    show_secrets: bool,
}

const LOCAL_USAGE: &str = "Command is required for local servers.

Usage:
  skipper mcp add <name> -- <command> [args...]
  skipper mcp add --transport stdio --env KEY=value <name> -- <command> [args...]";

const REMOTE_USAGE: &str = "URL is required for remote servers (http/sse).

Usage:
  skipper mcp add --transport http <name> <url>
  skipper mcp add --transport sse <name> <url>";

/// The entry `args` describe, as `mcp-config.json` holds it.
fn entry(args: &AddArgs) -> Result<Value, String> {
    if args.name.trim().is_empty() {
        return Err("MCP server name cannot be empty".into());
    }
    let mut o = Map::new();
    let tools: Vec<Value> = match args.tools.trim() {
        "" => Vec::new(),
        list => list.split(',').map(str::trim).filter(|t| !t.is_empty()).map(|t| Value::String(t.into())).collect(),
    };
    o.insert("tools".into(), Value::Array(tools));
    if let Some(raw) = &args.timeout {
        match raw.parse::<u32>() {
            Ok(ms) if ms >= 1 => o.insert("timeout".into(), Value::from(ms)),
            _ => {
                return Err(format!("Invalid timeout \"{raw}\". Must be an integer from 1 to 4294967295 milliseconds."))
            }
        };
    }
    match args.transport {
        Transport::Stdio => {
            let Some((command, rest)) = args.target.split_first() else { return Err(LOCAL_USAGE.into()) };
            o.insert("type".into(), Value::String("local".into()));
            o.insert("command".into(), Value::String(command.clone()));
            o.insert("args".into(), Value::Array(rest.iter().cloned().map(Value::String).collect()));
            let mut env = Map::new();
            for pair in &args.env {
                let Some((k, v)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                    return Err(format!("Invalid format: \"{pair}\". Expected KEY=VALUE"));
                };
                env.insert(k.into(), Value::String(v.into()));
            }
            if !env.is_empty() {
                o.insert("env".into(), Value::Object(env));
            }
        }
        Transport::Http | Transport::Sse => {
            let url = match args.target.as_slice() {
                [url] if url.starts_with("http://") || url.starts_with("https://") => url.clone(),
                _ => return Err(REMOTE_USAGE.into()),
            };
            let kind = if args.transport == Transport::Sse { "sse" } else { "http" };
            o.insert("type".into(), Value::String(kind.into()));
            o.insert("url".into(), Value::String(url));
            let mut headers = Map::new();
            for line in &args.header {
                let Some((k, v)) = line.split_once(':').filter(|(k, _)| !k.trim().is_empty()) else {
                    return Err(format!("Invalid format: \"{line}\". Expected \"Name: value\""));
                };
                headers.insert(k.trim().into(), Value::String(v.trim().into()));
            }
            if !headers.is_empty() {
                o.insert("headers".into(), Value::Object(headers));
            }
        }
    }
    Ok(Value::Object(o))
}

pub fn run(args: AddArgs, here: &mut Here<'_>) -> anyhow::Result<i32> {
    let config = entry(&args).map_err(anyhow::Error::msg)?;
    let name = args.name.clone();
    match McpConfigStore::new(here.home.clone()).add(&name, config.clone()) {
        Ok(()) => {}
        Err(McpConfigError::Exists(_)) => {
            anyhow::bail!(
                "Server \"{name}\" already exists. To change it, remove it first:\n  skipper mcp remove {name}"
            )
        }
        Err(e) => return Err(e.into()),
    }
    if args.json {
        let shown = serde_json::json!({ name.clone(): config });
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
    } else {
        let found = Found { name: name.clone(), config, source: Source::User, enabled: true };
        let _ = writeln!(here.out, "Added server \"{name}\"\n");
        let _ = write!(here.out, "{}", mcp_show::render(&found, &Show { status: false, secrets: args.show_secrets }));
    }
    Ok(0)
}
