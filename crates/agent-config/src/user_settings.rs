//! `$COPILOT_HOME/settings.json`, the user's settings (`user.settings.*`); `config.json`
//! overlays it and wins on read (see `user_config`). This module is the file's only reader
//! and writer.
//!
//! Its type is the open map of settings rather than a struct of fields: `user.settings.set`
//! writes whatever keys the client names, and Skipper itself reads only `bashEnv`, the lists
//! of names turned off (`disabledMcpServers`, `disabledSkills`; see [`names`]) and the plugin
//! settings (`extraKnownMarketplaces`, `enabledPlugins`; see [`marketplaces`],
//! [`plugin_enabled`]).

use std::path::Path;

use serde_json::{Map, Value};

use crate::json_file::JsonFile;

pub const FILE_NAME: &str = "settings.json";

pub type UserSettings = Map<String, Value>;

/// The owner of `<home>/settings.json`.
pub fn file(home: &Path) -> JsonFile<UserSettings> {
    JsonFile::new(home.join(FILE_NAME))
}

/// The MCP servers new sessions list but do not start.
pub const DISABLED_MCP_SERVERS: &str = "disabledMcpServers";
/// The skills every session leaves off.
pub const DISABLED_SKILLS: &str = "disabledSkills";

/// A list setting's names, if it is a list (anything else counts as unset).
fn list(settings: &UserSettings, key: &str) -> Option<Vec<String>> {
    let list = settings.get(key)?.as_array()?;
    Some(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
}

/// The names the user turned off under `key` ([`DISABLED_MCP_SERVERS`], [`DISABLED_SKILLS`]):
/// `config.json`'s list when it still has one (where Skipper kept them before; the legacy file
/// wins, as for every user setting), else `settings.json`'s, where the original keeps them.
pub fn names(home: &Path, key: &str) -> Result<Vec<String>, crate::FileError> {
    if let Some(legacy) = crate::user_config::file(home).read()?.legacy_names(key) {
        return Ok(legacy);
    }
    Ok(list(&file(home).read()?, key).unwrap_or_default())
}

/// Changes the names under `key` where the original keeps them, `settings.json`; a list still in
/// `config.json` moves there first, so the change is not hidden by it. Each file is changed
/// under its lock: two changes at once both land. An unchanged list writes nothing.
pub fn update_names<R>(
    home: &Path,
    key: &str,
    change: impl FnOnce(&mut Vec<String>) -> R,
) -> Result<R, crate::FileError> {
    let legacy = crate::user_config::file(home).update(|c| Ok::<_, crate::FileError>(c.take_legacy_names(key)))?;
    file(home).update(|settings| {
        let before = list(settings, key);
        let mut names = legacy.clone().or_else(|| before.clone()).unwrap_or_default();
        let out = change(&mut names);
        // An absent key stays absent while nothing is in it.
        if legacy.is_some() || before.is_some() || !names.is_empty() {
            settings.insert(key.to_string(), Value::from(names));
        }
        Ok(out)
    })
}

/// The user's marketplaces by name, as the original writes them:
/// `{"source": {"source": "directory", "path": …}}` (or a GitHub or URL source).
pub const EXTRA_KNOWN_MARKETPLACES: &str = "extraKnownMarketplaces";
/// `{"name@marketplace": true|false}`: which plugins of a directory marketplace are on.
pub const ENABLED_PLUGINS: &str = "enabledPlugins";

/// The original's description of a marketplace that is a local directory.
pub fn directory_marketplace(path: &str) -> Value {
    serde_json::json!({"source": {"source": "directory", "path": path}})
}

/// An older Skipper's marketplaces (`config.json`'s `marketplaces`, each `{"source": "<dir>"}`)
/// in the original's shape; an entry already in another shape is kept as it is.
fn from_legacy(legacy: Map<String, Value>) -> Map<String, Value> {
    legacy
        .into_iter()
        .map(|(name, v)| match v.get("source").and_then(Value::as_str) {
            Some(dir) => (name, directory_marketplace(dir)),
            None => (name, v),
        })
        .collect()
}

fn object(settings: &UserSettings, key: &str) -> Map<String, Value> {
    settings.get(key).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `settings.json`'s marketplaces, then those of `legacy` (`config.json`'s) it does not name.
fn with_legacy(settings: &UserSettings, legacy: Option<Map<String, Value>>) -> Map<String, Value> {
    let mut all = object(settings, EXTRA_KNOWN_MARKETPLACES);
    for (name, v) in from_legacy(legacy.unwrap_or_default()) {
        all.entry(name).or_insert(v);
    }
    all
}

/// The user's marketplaces: `settings.json`'s, then those an older Skipper left in
/// `config.json` that it does not name.
pub fn marketplaces(home: &Path) -> Result<Map<String, Value>, crate::FileError> {
    let legacy = crate::user_config::file(home).read()?.marketplaces;
    Ok(with_legacy(&file(home).read()?, legacy))
}

/// Changes the user's marketplaces where the original keeps them, `settings.json`. Those an
/// older Skipper kept in `config.json` are moved there by the same change (taken out of
/// `config.json` only once `settings.json` has them). Nothing is written when `change` fails.
pub fn update_marketplaces<R, E: From<crate::FileError>>(
    home: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<R, E>,
) -> Result<R, E> {
    let legacy = crate::user_config::file(home).read()?.marketplaces;
    let out = file(home).update(|settings| {
        let mut all = with_legacy(settings, legacy.clone());
        let out = change(&mut all)?;
        settings.insert(EXTRA_KNOWN_MARKETPLACES.into(), Value::Object(all));
        Ok::<_, E>(out)
    })?;
    if legacy.is_some() {
        crate::user_config::file(home).update(|c| {
            c.marketplaces = None;
            Ok::<_, crate::FileError>(())
        })?;
    }
    Ok(out)
}

/// Whether `enabledPlugins` turns `spec` (`name@marketplace`) on; unset counts as off.
pub fn plugin_enabled(settings: &UserSettings, spec: &str) -> bool {
    settings.get(ENABLED_PLUGINS).and_then(|m| m.get(spec)).and_then(Value::as_bool).unwrap_or(false)
}

/// Records `spec` as on or off in `enabledPlugins` (the entry stays when off, as the
/// original's does).
pub fn set_plugin_enabled(home: &Path, spec: &str, on: bool) -> Result<(), crate::FileError> {
    file(home).update(|settings| {
        let mut enabled = object(settings, ENABLED_PLUGINS);
        enabled.insert(spec.to_string(), Value::Bool(on));
        settings.insert(ENABLED_PLUGINS.into(), Value::Object(enabled));
        Ok(())
    })
}

/// `names` with `name` in it (`on`) or not, order kept, no duplicate.
pub fn toggle(names: &mut Vec<String>, name: &str, on: bool) {
    names.retain(|n| n != name);
    if on {
        names.push(name.to_string());
    }
}

/// The `bashEnv` setting (shells read `BASH_ENV`), if it is a boolean.
pub fn bash_env(settings: &UserSettings) -> Option<bool> {
    settings.get("bashEnv")?.as_bool()
}

/// Applies `user.settings.set`'s changes: each key written, `null` removing it.
pub fn apply(settings: &mut UserSettings, changes: Map<String, Value>) {
    for (key, value) in changes {
        if value.is_null() {
            settings.remove(&key);
        } else {
            settings.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_file::FileError;

    #[test]
    fn names_are_written_where_the_original_keeps_them_and_a_legacy_list_moves_there() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        update_names(h, DISABLED_MCP_SERVERS, |n| toggle(n, "a", true)).unwrap();
        assert!(!h.join(crate::user_config::FILE_NAME).exists(), "config.json is not created");
        assert_eq!(names(h, DISABLED_MCP_SERVERS).unwrap(), ["a"]);
        let on_disk: Value = serde_json::from_str(&std::fs::read_to_string(h.join(FILE_NAME)).unwrap()).unwrap();
        assert_eq!(on_disk, serde_json::json!({"disabledMcpServers": ["a"]}));

        // An older Skipper's list in config.json wins on read, and moves on the next change.
        std::fs::write(h.join(crate::user_config::FILE_NAME), r#"{"disabledSkills": ["x"], "model": "m"}"#).unwrap();
        assert_eq!(names(h, DISABLED_SKILLS).unwrap(), ["x"]);
        update_names(h, DISABLED_SKILLS, |n| toggle(n, "y", true)).unwrap();
        assert_eq!(names(h, DISABLED_SKILLS).unwrap(), ["x", "y"]);
        let config: Value =
            serde_json::from_str(&std::fs::read_to_string(h.join(crate::user_config::FILE_NAME)).unwrap()).unwrap();
        assert_eq!(config, serde_json::json!({"model": "m"}), "the legacy list is gone, the rest kept");
        update_names(h, DISABLED_SKILLS, |n| toggle(n, "x", false)).unwrap();
        assert_eq!(names(h, DISABLED_SKILLS).unwrap(), ["y"]);
    }

    #[test]
    fn concurrent_changes_from_two_threads_both_land() {
        let home = tempfile::tempdir().unwrap();
        let per_thread = 50;
        std::thread::scope(|s| {
            for t in 0..2 {
                let home = home.path();
                s.spawn(move || {
                    for i in 0..per_thread {
                        update_names(home, DISABLED_SKILLS, |n| toggle(n, &format!("t{t}-{i}"), true)).unwrap();
                    }
                });
            }
        });
        assert_eq!(names(home.path(), DISABLED_SKILLS).unwrap().len(), 2 * per_thread, "no change was lost");
    }

    #[test]
    fn set_keeps_other_keys_and_null_removes() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(FILE_NAME), r#"{"mouse": false, "other": {"x": 1}}"#).unwrap();
        let changes: Map<String, Value> = serde_json::from_str(r#"{"mouse": null, "beep": true}"#).unwrap();
        file(home.path())
            .update(|s| {
                apply(s, changes);
                Ok::<_, FileError>(())
            })
            .unwrap();
        let s = file(home.path()).read().unwrap();
        assert_eq!(Value::Object(s), serde_json::json!({"other": {"x": 1}, "beep": true}));
    }
}
