//! `skipper plugin list`: the installed (copied) plugins, the live plugins of local
//! marketplaces, and those the command line's `--plugin-dir` options mount, each in its own
//! section as the original shows them (it has a built-in section too; Skipper has no built-in
//! plugins).

use std::path::Path;

use agent_config::plugins::{manifest, PluginStore};
use agent_config::user_config::InstalledPlugin;
use serde_json::{json, Value};

use super::here::Here;
use super::plugin::failed;

/// A plugin a `--plugin-dir` option mounts for this run.
struct External {
    name: String,
    version: Option<String>,
}

/// The plugins of the `--plugin-dir` directories (relative ones from the working directory):
/// a directory without a named manifest is left out, and so is one whose name an installed
/// plugin has, as the original does.
fn external(dirs: &[String], cwd: &Path, installed: &[InstalledPlugin]) -> Vec<External> {
    dirs.iter()
        .filter_map(|d| {
            let m = manifest::plugin_manifest(&cwd.join(d)).ok().flatten()?;
            let field = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
            Some(External { name: field("name")?, version: field("version") })
        })
        .filter(|e| !installed.iter().any(|p| !p.is_live() && p.name == e.name))
        .collect()
}

fn version(v: Option<&str>) -> String {
    v.map(|v| format!(" (v{v})")).unwrap_or_default()
}

pub fn run(store: &PluginStore, as_json: bool, plugin_dirs: &[String], here: &mut Here<'_>) -> i32 {
    let all = match store.installed() {
        Ok(list) => list,
        Err(e) => return failed(here, "list plugins", e),
    };
    let external = external(plugin_dirs, &here.cwd, &all);
    let (live, installed): (Vec<_>, Vec<_>) = all.into_iter().partition(InstalledPlugin::is_live);
    if as_json {
        let entry = |name: &str, marketplace: &str, version: Option<&str>, enabled: bool, source: &str| {
            let mut o = json!({"name": name, "marketplace": marketplace});
            if let Some(v) = version {
                o["version"] = json!(v);
            }
            o["enabled"] = json!(enabled);
            o["source"] = json!(source);
            o
        };
        let mut entries: Vec<Value> = installed
            .iter()
            .map(|p| entry(&p.name, &p.marketplace, p.version.as_deref(), p.enabled, "installed"))
            .collect();
        for p in &live {
            let mut o = entry(&p.name, &p.marketplace, p.version.as_deref(), p.enabled, "live");
            o["installedFrom"] = json!(p.installed_from);
            entries.push(o);
        }
        entries.extend(external.iter().map(|e| entry(&e.name, "", e.version.as_deref(), true, "external")));
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
        return 0;
    }
    let mut sections: Vec<String> = Vec::new();
    if !installed.is_empty() {
        let lines = installed.iter().map(|p| {
            let off = if p.enabled { "" } else { " [disabled]" };
            format!("  • {}{}{off}\n", p.spec(), version(p.version.as_deref()))
        });
        sections.push(std::iter::once("Installed plugins:\n".to_string()).chain(lines).collect());
    }
    if !live.is_empty() {
        let lines = live.iter().map(|p| {
            let state = if p.enabled { "enabled" } else { "disabled" };
            let from = p.installed_from.as_deref().unwrap_or_default();
            format!("  • {}{} ({state})\n      from {from}\n", p.spec(), version(p.version.as_deref()))
        });
        let title = "Live Plugins (loaded from a local marketplace directory, never copied):\n".to_string();
        sections.push(std::iter::once(title).chain(lines).collect());
    }
    if !external.is_empty() {
        let lines = external.iter().map(|e| format!("  • {}{}\n", e.name, version(e.version.as_deref())));
        sections.push(std::iter::once("External Plugins (via --plugin-dir):\n".to_string()).chain(lines).collect());
    }
    if sections.is_empty() {
        let _ =
            writeln!(here.out, "No plugins installed.\n\nUse 'skipper plugin install <source>' to install a plugin.");
        return 0;
    }
    let _ = write!(here.out, "{}", sections.join("\n"));
    0
}
