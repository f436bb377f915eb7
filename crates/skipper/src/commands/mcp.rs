//! `skipper mcp list|get|add|remove|enable|disable`: the user's MCP servers. What is changed
//! is the user's `mcp-config.json` and `disabledMcpServers`, through agent-config's
//! `McpConfigStore` (what the `mcp.config.*` methods use); workspace and plugin servers are
//! listed, not edited.

use agent_config::mcp_config::{McpConfigError, McpConfigStore};
use clap::{Parser, Subcommand};
use serde_json::{Map, Value};

use super::here::{self, Here};
use super::mcp_add::AddArgs;
use super::mcp_show::{self, Show};
use super::mcp_sources::{self, Found, Source};

const LONG_ABOUT: &str = "\
Manage the MCP servers new sessions start.

MCP (Model Context Protocol) servers give the agent more tools. A server is a
local program spoken to over stdio, or a remote HTTP/SSE endpoint.

Servers come from:
  User       $COPILOT_HOME/mcp-config.json (default ~/.copilot)
  Workspace  .mcp.json or .github/mcp.json of a trusted work tree
  Plugin     installed plugins that bring MCP servers

`add` and `remove` change the user's file; `enable` and `disable` apply to a
server of any source.";

#[derive(Debug, Parser)]
#[command(name = "mcp", bin_name = "skipper mcp", about = "Manage MCP servers", long_about = LONG_ABOUT)]
struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// List the configured MCP servers, by source
    List {
        /// Print as JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one server's configuration
    Get {
        /// Server name
        name: String,
        /// Print as JSON
        #[arg(long)]
        json: bool,
        /// Show environment and header values instead of masking them
        #[arg(long)]
        show_secrets: bool,
    },
    /// Add a server to the user's configuration
    Add(AddArgs),
    /// Remove a server from the user's configuration
    Remove {
        /// Server name
        name: String,
    },
    /// Turn a server back on for new sessions
    Enable {
        /// Server name
        name: String,
    },
    /// Turn a server off for new sessions
    Disable {
        /// Server name
        name: String,
    },
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <McpArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let parsed: McpArgs = match here::parse_or_help("skipper mcp", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let result = match parsed.command {
        McpCommand::List { json } => list(json, here),
        McpCommand::Get { name, json, show_secrets } => get(&name, json, show_secrets, here),
        McpCommand::Add(add) => super::mcp_add::run(add, here),
        McpCommand::Remove { name } => remove(&name, here),
        McpCommand::Enable { name } => switch(&name, false, here),
        McpCommand::Disable { name } => switch(&name, true, here),
    };
    result.unwrap_or_else(|e| here.fail(e))
}

fn store(here: &Here<'_>) -> McpConfigStore {
    McpConfigStore::new(here.home.clone())
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn list(json: bool, here: &mut Here<'_>) -> anyhow::Result<i32> {
    let all = mcp_sources::all(&here.home, &here.cwd)?;
    if json {
        let servers: Map<String, Value> = all.iter().map(|f| (f.name.clone(), f.to_json())).collect();
        let _ = writeln!(here.out, "{}", pretty(&serde_json::json!({ "mcpServers": servers })));
        return Ok(0);
    }
    if all.is_empty() {
        let _ = writeln!(
            here.out,
            "No MCP servers configured.\n\nAdd a server with:\n  skipper mcp add <name> -- <command> [args...]\n  \
             skipper mcp add --transport http <name> <url>"
        );
        return Ok(0);
    }
    for (title, tag) in [("User servers", "user"), ("Workspace servers", "workspace"), ("Plugin servers", "plugin")] {
        let here_too: Vec<&Found> = all.iter().filter(|f| f.source.tag() == tag).collect();
        if here_too.is_empty() {
            continue;
        }
        let _ = writeln!(here.out, "{title}:");
        for f in here_too {
            let mut notes = vec![f.kind()];
            if let Source::Plugin(p) = &f.source {
                notes.push(format!("plugin {p}"));
            }
            if !f.enabled {
                notes.push("disabled".into());
            }
            let _ = writeln!(here.out, "  {} ({})", f.name, notes.join(", "));
        }
        let _ = writeln!(here.out);
    }
    Ok(0)
}

/// `Server "x" not found.` with the names there are.
fn not_found(name: &str, all: &[Found]) -> anyhow::Error {
    let mut text = format!("Server \"{name}\" not found.");
    if !all.is_empty() {
        text.push_str("\n\nAvailable servers:");
        for f in all {
            text.push_str(&format!("\n  {}", f.name));
        }
    }
    anyhow::anyhow!(text)
}

fn get(name: &str, json: bool, secrets: bool, here: &mut Here<'_>) -> anyhow::Result<i32> {
    let all = mcp_sources::all(&here.home, &here.cwd)?;
    let Some(found) = all.iter().find(|f| f.name == name) else { return Err(not_found(name, &all)) };
    if json {
        let _ = writeln!(here.out, "{}", pretty(&serde_json::json!({ name: found.to_json() })));
    } else {
        let _ = write!(here.out, "{}", mcp_show::render(found, &Show { status: true, secrets }));
    }
    Ok(0)
}

fn remove(name: &str, here: &mut Here<'_>) -> anyhow::Result<i32> {
    match store(here).remove_configured(name) {
        Ok(()) => {
            let _ = writeln!(here.out, "Removed server \"{name}\"");
            Ok(0)
        }
        Err(McpConfigError::NotConfigured(_)) => {
            // Say where a server of that name is defined, if it is one the user cannot remove here.
            let all = mcp_sources::all(&here.home, &here.cwd)?;
            match all.iter().find(|f| f.name == name).map(|f| &f.source) {
                Some(Source::Workspace(path)) => anyhow::bail!(
                    "Cannot remove workspace server \"{name}\": it is defined in {}. Edit that file to remove it.",
                    path.display()
                ),
                Some(Source::Plugin(plugin)) => anyhow::bail!(
                    "Cannot remove server \"{name}\": it comes with the plugin \"{plugin}\". Uninstall or disable the plugin instead."
                ),
                _ => anyhow::bail!("Server \"{name}\" not found."),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Enables or disables `name` for new sessions; a name no source knows is still recorded
/// (a server added later starts off as asked), with a warning.
fn switch(name: &str, disable: bool, here: &mut Here<'_>) -> anyhow::Result<i32> {
    let known = mcp_sources::all(&here.home, &here.cwd)?.iter().any(|f| f.name == name);
    store(here).set_disabled(&[name.to_string()], disable)?;
    let (done, word) = if disable { ("Disabled", "disabled") } else { ("Enabled", "enabled") };
    if known {
        let _ = writeln!(here.out, "{done} MCP server \"{name}\".");
    } else {
        let _ = writeln!(
            here.err,
            "Warning: no MCP server named \"{name}\" is configured, so none was {word}. \
             Run `skipper mcp list` to see the configured servers."
        );
    }
    Ok(0)
}
