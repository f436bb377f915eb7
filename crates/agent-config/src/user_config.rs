//! `$COPILOT_HOME/config.json`, the user's configuration: installed plugins (`plugins`; see
//! [`crate::installed_plugin`]), what an older Skipper kept here (marketplaces, the MCP servers
//! and skills turned off for every session; the original keeps them in `settings.json`), and
//! settings other programs keep there (the Copilot CLI's own, read as the
//! legacy layer of `user.settings.*`). This module is the file's only reader and writer.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::installed_plugin::InstalledPlugin;
use crate::json_file::JsonFile;

pub const FILE_NAME: &str = "config.json";

/// The file's fields Skipper reads or writes; every other key is kept in `extra`. A field
/// that is absent stays absent on write (`None`), so reading and writing back changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserConfig {
    /// The marketplaces an older Skipper kept here by name, each `{"source": <directory>}`.
    /// The original keeps them in `settings.json` (`extraKnownMarketplaces`); they are read
    /// from here too and move there on the next marketplace change
    /// (see [`crate::user_settings::update_marketplaces`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marketplaces: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_plugins: Option<Vec<InstalledPlugin>>,
    /// MCP servers new sessions list but do not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_mcp_servers: Option<Vec<String>>,
    /// Skills every session leaves off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_skills: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The owner of `<home>/config.json`.
pub fn file(home: &Path) -> JsonFile<UserConfig> {
    JsonFile::new(home.join(FILE_NAME))
}

impl UserConfig {
    pub fn installed_plugins(&self) -> &[InstalledPlugin] {
        self.installed_plugins.as_deref().unwrap_or_default()
    }

    /// A list of names turned off that an older Skipper kept here (the original keeps them in
    /// `settings.json`; see [`crate::user_settings::names`]).
    pub fn legacy_names(&self, key: &str) -> Option<Vec<String>> {
        match key {
            crate::user_settings::DISABLED_MCP_SERVERS => self.disabled_mcp_servers.clone(),
            crate::user_settings::DISABLED_SKILLS => self.disabled_skills.clone(),
            _ => None,
        }
    }

    /// Takes such a list out of this file, to move it to `settings.json`.
    pub fn take_legacy_names(&mut self, key: &str) -> Option<Vec<String>> {
        match key {
            crate::user_settings::DISABLED_MCP_SERVERS => self.disabled_mcp_servers.take(),
            crate::user_settings::DISABLED_SKILLS => self.disabled_skills.take(),
            _ => None,
        }
    }

    /// Whether the user trusts `dir`: it or a folder above it is in `trustedFolders` (or
    /// `trusted_folders`, the older spelling).
    pub fn trusts(&self, dir: &Path) -> bool {
        let listed = ["trustedFolders", "trusted_folders"]
            .iter()
            .filter_map(|k| self.extra.get(*k)?.as_array())
            .flatten()
            .filter_map(Value::as_str);
        listed.map(Path::new).any(|folder| dir.starts_with(folder))
    }

    /// The file as a JSON object (for `user.settings.*`, which overlays every key).
    pub fn to_object(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_file::FileError;

    fn home_with(text: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(FILE_NAME), text).unwrap();
        home
    }

    fn on_disk(home: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(home.join(FILE_NAME)).unwrap()).unwrap()
    }

    #[test]
    fn unknown_fields_survive_a_write() {
        let home = home_with(
            r#"{"model": "gpt-x", "trusted_folders": ["/a"], "marketplaces": {"gh": {"source": {"source": "github", "repo": "o/r"}}},
                "installedPlugins": [{"name": "p", "marketplace": "", "enabled": true, "source": "/s", "cachePath": "/c", "installed_at": "then"}]}"#,
        );
        file(home.path())
            .update(|c| {
                c.disabled_skills = Some(vec!["lint".into()]);
                c.installed_plugins.get_or_insert_default()[0].enabled = false;
                Ok::<_, FileError>(())
            })
            .unwrap();
        let v = on_disk(home.path());
        assert_eq!(v["model"], "gpt-x");
        assert_eq!(v["trusted_folders"][0], "/a");
        assert_eq!(v["marketplaces"]["gh"]["source"]["repo"], "o/r");
        assert_eq!(v["installedPlugins"][0]["installed_at"], "then");
        assert_eq!(v["installedPlugins"][0]["enabled"], false);
        assert_eq!(v["disabledSkills"], serde_json::json!(["lint"]));
    }

    #[test]
    fn a_malformed_file_is_a_clear_error_and_is_not_overwritten() {
        for text in [r#"{"disabledSkills": ["a""#, r#"["not", "an", "object"]"#, r#"{"disabledSkills": "lint"}"#] {
            let home = home_with(text);
            let err = file(home.path())
                .update(|c| {
                    c.disabled_skills = Some(vec!["x".into()]);
                    Ok::<_, FileError>(())
                })
                .unwrap_err();
            let message = err.to_string();
            assert!(message.starts_with("Invalid ") && message.contains(FILE_NAME), "{message}");
            assert!(matches!(file(home.path()).read(), Err(FileError::Invalid { .. })));
            assert_eq!(std::fs::read_to_string(home.path().join(FILE_NAME)).unwrap(), text, "left as it was");
        }
    }

    #[test]
    fn trusted_folders_cover_what_lies_beneath() {
        let home = home_with(r#"{"trustedFolders": ["/w/a"], "trusted_folders": ["/old"]}"#);
        let c = file(home.path()).read().unwrap();
        assert!(c.trusts(Path::new("/w/a")) && c.trusts(Path::new("/w/a/b")) && c.trusts(Path::new("/old/x")));
        assert!(!c.trusts(Path::new("/w/ab")) && !c.trusts(Path::new("/w")));
    }

    #[test]
    fn a_missing_file_reads_as_empty_and_an_unchanged_one_writes_nothing() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(file(home.path()).read().unwrap(), UserConfig::default());
        file(home.path())
            .update(|c| {
                c.take_legacy_names(crate::user_settings::DISABLED_MCP_SERVERS);
                Ok::<_, FileError>(())
            })
            .unwrap();
        assert!(!home.path().join(FILE_NAME).exists());
    }
}
