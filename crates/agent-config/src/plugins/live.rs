//! Live plugins: every plugin a directory marketplace advertises is loaded from its own
//! directory, never copied and never recorded in `config.json`, as the original does. Its
//! record is made on each read: `cache_path` is the plugin's directory, `installed_from` the
//! marketplace's, and it is on when `settings.json`'s `enabledPlugins["name@marketplace"]` is
//! true ("installing" one only turns that on).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::{manifest, Marketplace};
use crate::user_config::InstalledPlugin;
use crate::user_settings::{self, UserSettings};

/// The directory `source` (relative to the marketplace, `./plugins/x`) names, without `.`
/// components, as the original shows it.
pub(super) fn plugin_dir(marketplace: &Path, source: &str) -> PathBuf {
    marketplace.join(source).components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

/// The live records of the user's directory marketplaces, in catalog order. A plugin an older
/// Skipper copied and recorded (`persisted`) stays that installed plugin, so it is left out
/// here; a catalog that cannot be read lists nothing (logged), rather than failing every
/// reader of the installed plugins.
pub(super) fn records(
    marketplaces: &[Marketplace],
    settings: &UserSettings,
    persisted: &[InstalledPlugin],
) -> Vec<InstalledPlugin> {
    let mut out = Vec::new();
    for m in marketplaces {
        let Some(dir) = &m.directory else { continue };
        let catalog = match manifest::catalog(dir) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(marketplace = %m.name, error = %e, "marketplace catalog unreadable");
                continue;
            }
        };
        for entry in catalog.plugins {
            let Some(source) = &entry.source else { continue };
            let from = plugin_dir(dir, source);
            let spec = format!("{}@{}", entry.name, m.name);
            if !from.is_dir() || persisted.iter().any(|p| p.spec() == spec) {
                continue;
            }
            // The plugin's own manifest wins over the catalog's version, as the original's list shows.
            let version = manifest::plugin_manifest(&from)
                .ok()
                .flatten()
                .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_string))
                .or(entry.version);
            let mut r = InstalledPlugin::new(entry.name, m.name.clone(), version, from.display().to_string());
            r.enabled = user_settings::plugin_enabled(settings, &spec);
            r.installed_from = Some(dir.display().to_string());
            out.push(r);
        }
    }
    out
}
