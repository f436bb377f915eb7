//! `skipper plugin install|uninstall|update|list|enable|disable|marketplace`: the user's
//! plugins. Everything goes through agent-config's `PluginStore` (what the `plugins.*` methods
//! use), which keeps them where the original CLI does: copies of directly installed plugins,
//! recorded in `config.json`, and live plugins of local marketplaces, turned on and off in
//! `settings.json`. Only local sources work: a plugin directory or `name@marketplace` of a
//! local marketplace; a GitHub repository or git URL needs the network and is refused with the
//! reason.

use agent_config::plugins::{InstallOutcome, PluginError, PluginStore};
use agent_config::user_config::InstalledPlugin;
use clap::{Parser, Subcommand};

use super::here::{self, Here};
use super::plugin_list;
use super::plugin_marketplace::{self, MarketplaceArgs};

const LONG_ABOUT: &str = "\
Manage plugins and plugin marketplaces.

Plugins extend sessions with skills, agents, hooks and MCP servers. Skipper
installs them from a local plugin directory or from a local marketplace
(`skipper plugin marketplace add <directory>`); GitHub repositories and git URLs
need the network, which Skipper's commands do not use.";

#[derive(Debug, Parser)]
#[command(name = "plugin", disable_help_subcommand = true, bin_name = "skipper plugin", about = "Manage plugins", long_about = LONG_ABOUT)]
struct PluginArgs {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Install a plugin
    Install {
        /// Plugin source (plugin@marketplace or a local plugin directory)
        source: Option<String>,
        /// Install a verified Skill or plugin from GitHub (needs the network: refused)
        #[arg(long, value_name = "resource@revision")]
        from_github: Option<String>,
        /// Descriptor digest for --from-github
        #[arg(long, value_name = "sha256:digest")]
        descriptor_digest: Option<String>,
        /// Bundle digest for --from-github
        #[arg(long, value_name = "sha256:digest")]
        bundle_digest: Option<String>,
        /// Descriptor schema version for --from-github
        #[arg(long, value_name = "version")]
        schema_version: Option<String>,
    },
    /// Uninstall a plugin
    Uninstall {
        /// Plugin name (plugin-name or plugin-name@marketplace-name)
        name: String,
    },
    /// Update a plugin (copy it afresh from where it was installed from)
    Update {
        /// Plugin name (plugin-name@marketplace-name); omit when using --all
        name: Option<String>,
        /// Update all installed plugins
        #[arg(long)]
        all: bool,
    },
    /// List installed plugins
    List {
        /// Output as JSON
        #[arg(long)]
        json: bool,
    },
    /// Enable a plugin
    Enable {
        /// Plugin name, name@marketplace, or direct-install source id
        name: String,
    },
    /// Disable a plugin
    Disable {
        /// Plugin name, name@marketplace, or direct-install source id
        name: String,
    },
    /// Manage plugin marketplaces
    Marketplace(MarketplaceArgs),
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <PluginArgs as clap::CommandFactory>::command()
}

/// `plugin_dirs`: the `--plugin-dir` options of the command line (`plugin list` shows them).
pub fn run(args: &[String], plugin_dirs: &[String], here: &mut Here<'_>) -> i32 {
    // `plugin marketplace` alone shows that command's help, as `plugin` alone does.
    let help = ["marketplace".to_string(), "--help".to_string()];
    let args = if args.len() == 1 && args[0] == "marketplace" { &help[..] } else { args };
    let parsed: PluginArgs = match here::parse_or_help("skipper plugin", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let store = PluginStore::new(here.home.clone());
    match parsed.command {
        PluginCommand::Install { source, from_github, .. } => install(&store, source, from_github, here),
        PluginCommand::Uninstall { name } => uninstall(&store, &name, here),
        PluginCommand::Update { name, all } => update(&store, name, all, here),
        PluginCommand::List { json } => plugin_list::run(&store, json, plugin_dirs, here),
        PluginCommand::Enable { name } => switch(&store, &name, true, here),
        PluginCommand::Disable { name } => switch(&store, &name, false, here),
        PluginCommand::Marketplace(m) => plugin_marketplace::run(&store, m.command, here),
    }
}

/// `Failed to <what>: <why>` on stderr; the status is 1.
pub(super) fn failed(here: &mut Here<'_>, what: &str, why: impl std::fmt::Display) -> i32 {
    let _ = writeln!(here.err, "Failed to {what}: {why}");
    1
}

/// Why a source that is not a local directory cannot be used: it names a GitHub repository
/// or a git URL (`None`: it is a path, just not one that exists).
pub(super) fn remote(source: &str) -> Option<&'static str> {
    let url = ["https://", "http://", "ssh://", "git://", "git@", "file://"].iter().any(|p| source.starts_with(p));
    let path = source.starts_with(['/', '.', '~']) || source.contains('\\');
    if url {
        Some("fetching from a git URL needs network access, which Skipper's commands do not use")
    } else if !path && source.contains('/') {
        Some("fetching from a GitHub repository needs network access, which Skipper's commands do not use")
    } else {
        None
    }
}

fn install(store: &PluginStore, source: Option<String>, from_github: Option<String>, here: &mut Here<'_>) -> i32 {
    if from_github.is_some() {
        return failed(
            here,
            "install plugin",
            "--from-github needs network access, which Skipper's commands do not use",
        );
    }
    let Some(source) = source else {
        return failed(here, "install plugin", "name a source (plugin@marketplace or a local plugin directory).");
    };
    let is_spec = agent_config::plugins::is_marketplace_spec(&source);
    let local = here.cwd.join(&source);
    if !is_spec && !local.is_dir() {
        let why = match remote(&source) {
            Some(why) => format!(
                "{why}. Clone it and install the directory, or add a local marketplace with `skipper plugin marketplace add <directory>`."
            ),
            None if local.exists() => format!("Not a plugin directory: {}", local.display()),
            None => format!("Local plugin path does not exist: {}", local.display()),
        };
        return failed(here, "install plugin", why);
    }
    match store.install(&source, &here.cwd) {
        Ok(out) => {
            let _ = writeln!(
                here.out,
                "Plugin \"{}\" installed successfully.{}",
                out.plugin.name,
                skills("Installed", &out)
            );
            if out.plugin.is_live() {
                let _ = writeln!(
                    here.out,
                    "Enabled \"{}\". It is loaded live from {}, so edits take effect on the next session — nothing was copied.",
                    out.plugin.spec(),
                    out.plugin.cache_path
                );
            }
            if let Some(warning) = out.deprecation {
                let _ = writeln!(here.err, "\nWarning: {warning}");
            }
            0
        }
        Err(e) => failed(here, "install plugin", e),
    }
}

/// ` Installed N skill(s).` when the plugin brings any.
fn skills(verb: &str, out: &InstallOutcome) -> String {
    match out.skills {
        0 => String::new(),
        1 => format!(" {verb} 1 skill."),
        n => format!(" {verb} {n} skills."),
    }
}

/// A name as the user gave it, or the spec of the directly installed plugin whose source id
/// it is.
fn spec_for(store: &PluginStore, name: &str) -> Result<String, PluginError> {
    let installed = store.installed()?;
    Ok(installed
        .iter()
        .find(|p| p.direct_source_id().as_deref() == Some(name))
        .map_or_else(|| name.to_string(), InstalledPlugin::spec))
}

fn uninstall(store: &PluginStore, name: &str, here: &mut Here<'_>) -> i32 {
    let by_id = store
        .installed()
        .ok()
        .and_then(|all| all.into_iter().find(|p| p.direct_source_id().as_deref() == Some(name)).map(|p| p.name));
    let result = match &by_id {
        Some(plugin) => store.uninstall(plugin, Some(name)),
        None => store.uninstall(name, None),
    };
    match result {
        // A live plugin's files are its marketplace's: it is only turned off.
        Ok(p) if p.is_live() => {
            let _ = writeln!(
                here.out,
                "Plugin \"{}\" disabled. It is still on disk at {} — nothing was removed.",
                p.spec(),
                p.installed_from.as_deref().unwrap_or_default()
            );
            0
        }
        Ok(_) => {
            let _ = writeln!(here.out, "Plugin \"{name}\" uninstalled successfully.");
            0
        }
        Err(e) => failed(here, "uninstall plugin", e),
    }
}

/// `Plugin "x" updated successfully (v1 → v2). Updated N skills.`, or why a live plugin has
/// nothing to update.
fn updated_line(spec: &str, out: &InstallOutcome) -> String {
    if let Some(from) = &out.plugin.installed_from {
        return format!(
            "Plugin \"{}\" is always loaded live from {from}; there is nothing to update.",
            out.plugin.spec()
        );
    }
    let version = match (&out.previous_version, &out.plugin.version) {
        (Some(old), Some(new)) if old != new => format!(" (v{old} → v{new})"),
        (Some(_), Some(new)) => format!(" (v{new}, already at latest)"),
        (None, Some(new)) => format!(" (v{new})"),
        _ => String::new(),
    };
    format!("Plugin \"{spec}\" updated successfully{version}.{}", skills("Updated", out))
}

fn update(store: &PluginStore, name: Option<String>, all: bool, here: &mut Here<'_>) -> i32 {
    match (name, all) {
        (Some(_), true) => failed(here, "update plugin", "specify either --all or a plugin name, not both."),
        (None, false) => {
            failed(here, "update plugin", "missing plugin name. Use --all to update all installed plugins.")
        }
        (Some(name), false) => match spec_for(store, &name).and_then(|spec| store.update_plugin(&spec)) {
            Ok(out) => {
                let _ = writeln!(here.out, "{}", updated_line(&name, &out));
                0
            }
            Err(e) => failed(here, "update plugin", e),
        },
        (None, true) => {
            let installed = match store.installed() {
                Ok(list) => list,
                Err(e) => return failed(here, "update plugin", e),
            };
            if installed.is_empty() {
                let _ = writeln!(here.out, "No plugins installed.");
                return 0;
            }
            let s = if installed.len() == 1 { "" } else { "s" };
            let _ = writeln!(here.out, "Updating {} installed plugin{s}...", installed.len());
            let results = match store.update_all() {
                Ok(results) => results,
                Err(e) => return failed(here, "update plugin", e),
            };
            let mut ok = true;
            for (plugin, result) in results {
                match result {
                    Ok(out) => {
                        let _ = writeln!(here.out, "{}", updated_line(&plugin.spec(), &out));
                    }
                    Err(e) => {
                        ok = false;
                        let _ = writeln!(here.err, "Failed to update plugin \"{}\": {e}", plugin.spec());
                    }
                }
            }
            i32::from(!ok)
        }
    }
}

/// Records the change; a name no plugin has is a warning (status 0), as the original's.
fn switch(store: &PluginStore, name: &str, enable: bool, here: &mut Here<'_>) -> i32 {
    let (done, word, verb) =
        if enable { ("Enabled", "enabled", "enable") } else { ("Disabled", "disabled", "disable") };
    let result = spec_for(store, name).and_then(|spec| store.set_enabled(&[spec], enable));
    match result {
        Ok(()) => {
            let _ = writeln!(here.out, "{done} plugin \"{name}\".");
            0
        }
        Err(PluginError::NotInstalled(_)) => {
            let _ = writeln!(
                here.err,
                "Warning: no plugin named \"{name}\" is currently configured, so no active plugin was {word}. \
                 Run `skipper plugin list` to see configured plugins."
            );
            0
        }
        Err(e) => failed(here, &format!("{verb} plugin"), e),
    }
}
