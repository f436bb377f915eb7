//! `$COPILOT_HOME/settings.json`, the user's settings (`user.settings.*`); `config.json`
//! overlays it and wins on read (see `user_config`). This module is the file's only reader
//! and writer.
//!
//! Its type is the open map of settings rather than a struct of fields: `user.settings.set`
//! writes whatever keys the client names, and Skipper itself reads only `disabledSkills` and `bashEnv`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::json_file::JsonFile;

pub const FILE_NAME: &str = "settings.json";

pub type UserSettings = Map<String, Value>;

/// The owner of `<home>/settings.json`.
pub fn file(home: &Path) -> JsonFile<UserSettings> {
    JsonFile::new(home.join(FILE_NAME))
}

/// The `disabledSkills` setting, if it is a list (anything else counts as unset).
pub fn disabled_skills(settings: &UserSettings) -> Option<Vec<String>> {
    let list = settings.get("disabledSkills")?.as_array()?;
    Some(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
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
