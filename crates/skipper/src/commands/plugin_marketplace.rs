//! `skipper plugin marketplace list|add|remove|browse|update`: the marketplaces plugins are
//! installed from, through agent-config's `PluginStore` (which keeps the user's in
//! `settings.json`, as the original does). Only local marketplaces (a directory
//! with a `marketplace.json`) can be added, browsed or updated; the built-in ones are on GitHub
//! and need the network, which is refused with the reason.

use agent_config::plugins::{Marketplace, PluginStore};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::here::Here;
use super::plugin::{failed, remote};

#[derive(Debug, Args)]
#[command(disable_help_subcommand = true)]
pub struct MarketplaceArgs {
    #[command(subcommand)]
    pub command: MarketplaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Add a marketplace (a local directory with a marketplace.json)
    Add {
        /// Marketplace source (a local directory; GitHub repositories and URLs need the network)
        source: String,
    },
    /// Remove a marketplace
    Remove {
        /// Marketplace name
        name: String,
        /// Force removal even if plugins are installed
        #[arg(short, long)]
        force: bool,
    },
    /// List registered marketplaces
    List {
        /// Output as JSON
        #[arg(long)]
        json: bool,
    },
    /// Browse plugins in a marketplace
    Browse {
        /// Marketplace name
        name: String,
        /// Output as JSON
        #[arg(long)]
        json: bool,
    },
    /// Update marketplace plugin catalogs
    Update {
        /// Marketplace name (all when left out)
        name: Option<String>,
    },
}

pub fn run(store: &PluginStore, command: MarketplaceCommand, here: &mut Here<'_>) -> i32 {
    match command {
        MarketplaceCommand::Add { source } => add(store, &source, here),
        MarketplaceCommand::Remove { name, force } => remove(store, &name, force, here),
        MarketplaceCommand::List { json } => list(store, json, here),
        MarketplaceCommand::Browse { name, json } => browse(store, &name, json, here),
        MarketplaceCommand::Update { name } => update(store, name.as_deref(), here),
    }
}

fn add(store: &PluginStore, source: &str, here: &mut Here<'_>) -> i32 {
    let local = here.cwd.join(source);
    if !local.is_dir() {
        let why = match remote(source) {
            Some(why) => format!("{why}. Clone it and add the directory."),
            None => format!("Local marketplace path does not exist: {}", local.display()),
        };
        return failed(here, "add marketplace", why);
    }
    match store.add_marketplace(source, &here.cwd) {
        Ok(name) => {
            let _ = writeln!(here.out, "Marketplace \"{name}\" added successfully.");
            0
        }
        Err(e) => failed(here, "add marketplace", e),
    }
}

fn remove(store: &PluginStore, name: &str, force: bool, here: &mut Here<'_>) -> i32 {
    let all = match store.marketplaces() {
        Ok(all) => all,
        Err(e) => return failed(here, "remove marketplace", e),
    };
    match all.iter().find(|m| m.name == name) {
        None => return failed(here, "remove marketplace", format!("Marketplace \"{name}\" is not registered")),
        Some(m) if m.is_default => {
            return failed(
                here,
                "remove marketplace",
                format!("Marketplace \"{name}\" is a default marketplace and cannot be removed"),
            )
        }
        Some(_) => {}
    }
    match store.remove_marketplace(name, force) {
        Ok((true, _)) => {
            let _ = writeln!(here.out, "Marketplace \"{name}\" removed successfully.");
            0
        }
        Ok((false, dependents)) => {
            let _ = writeln!(
                here.err,
                "Cannot remove marketplace \"{name}\".\nInstalled plugins from this marketplace: {}\n\
                 Use --force to remove the marketplace and uninstall all its plugins.",
                dependents.join(", ")
            );
            1
        }
        Err(e) => failed(here, "remove marketplace", e),
    }
}

/// `Local: <directory>` for a local marketplace, `GitHub: owner/repo` for one on GitHub (every
/// built-in one), a URL as it is.
fn shown_source(m: &Marketplace) -> String {
    if m.directory.is_some() {
        format!("Local: {}", m.source)
    } else if m.is_default || !m.source.contains("://") {
        format!("GitHub: {}", m.source)
    } else {
        m.source.clone()
    }
}

fn list(store: &PluginStore, as_json: bool, here: &mut Here<'_>) -> i32 {
    let all = match store.marketplaces() {
        Ok(all) => all,
        Err(e) => return failed(here, "list marketplaces", e),
    };
    let (defaults, users): (Vec<_>, Vec<_>) = all.into_iter().partition(|m| m.is_default);
    if as_json {
        // The user's first, as the original lists them.
        let entries: Vec<Value> = users
            .iter()
            .chain(&defaults)
            .map(|m| json!({"name": m.name, "source": shown_source(m), "isDefault": m.is_default}))
            .collect();
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
        return 0;
    }
    if !defaults.is_empty() {
        let _ = writeln!(here.out, "Included with GitHub Copilot:");
        for m in &defaults {
            let _ = writeln!(here.out, "  ◆ {} ({})", m.name, shown_source(m));
        }
    }
    if !users.is_empty() {
        if !defaults.is_empty() {
            let _ = writeln!(here.out);
        }
        let _ = writeln!(here.out, "Registered marketplaces:");
        for m in &users {
            let _ = writeln!(here.out, "  • {} ({})", m.name, shown_source(m));
        }
    }
    0
}

fn browse(store: &PluginStore, name: &str, as_json: bool, here: &mut Here<'_>) -> i32 {
    let plugins = match store.browse(name) {
        Ok(plugins) => plugins,
        Err(e) => return failed(here, "browse marketplace", e),
    };
    if as_json {
        let entries: Vec<Value> = plugins
            .iter()
            .map(|p| {
                let mut o = json!({"name": p.name});
                if let Some(d) = &p.description {
                    o["description"] = json!(d);
                }
                o["marketplace"] = json!(name);
                o
            })
            .collect();
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
        return 0;
    }
    if plugins.is_empty() {
        let _ = writeln!(here.out, "No plugins found in marketplace \"{name}\".");
        return 0;
    }
    let _ = writeln!(here.out, "Plugins in \"{name}\":");
    for p in &plugins {
        let description = p.description.as_deref().map(|d| format!(" - {d}")).unwrap_or_default();
        let _ = writeln!(here.out, "  • {}{description}", p.name);
    }
    let _ = writeln!(here.out, "\nInstall with: skipper plugin install <plugin-name>@{name}");
    0
}

fn update(store: &PluginStore, name: Option<&str>, here: &mut Here<'_>) -> i32 {
    let _ = match name {
        Some(n) => writeln!(here.out, "Updating marketplace \"{n}\"..."),
        None => writeln!(here.out, "Updating all marketplaces..."),
    };
    let results = match store.refresh(name) {
        Ok(results) => results,
        Err(e) => return failed(here, "update marketplaces", e),
    };
    let mut ok = true;
    for (market, result) in results {
        match result {
            Ok(()) => {
                let _ = writeln!(here.out, "Marketplace \"{market}\" updated successfully.");
            }
            Err(e) => {
                ok = false;
                let _ = writeln!(here.err, "Failed to update marketplace \"{market}\": {e}");
            }
        }
    }
    i32::from(!ok)
}
