//! `user.settings.*`: the user's settings in `<copilot home>/settings.json`, overlaid with the
//! legacy `config.json` (which wins on read, as in the original). Only the settings the
//! original knows are listed; their defaults are in `user_settings_defaults.json`. Both files
//! are read on every request, so `reload` has nothing cached to drop: it checks they parse.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::NoParams;
use serde_json::{Map, Value};

use crate::table::Ctx;

const DEFAULTS: &str = include_str!("../user_settings_defaults.json");

fn defaults() -> Map<String, Value> {
    serde_json::from_str(DEFAULTS).unwrap_or_default()
}

fn home(ctx: &Ctx) -> PathBuf {
    ctx.server.engine.layout().home.clone()
}

/// A settings file's object; a missing file is empty, an unreadable one an error.
fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Map::new()),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(format!("{} does not hold a JSON object", path.display())),
            Err(e) => Err(format!("{} is not valid JSON: {e}", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

struct Files {
    settings: Map<String, Value>,
    config: Map<String, Value>,
}

async fn read_files(ctx: &Ctx) -> Result<Files, RpcError> {
    let home = home(ctx);
    let read = tokio::task::spawn_blocking(move || -> Result<Files, String> {
        Ok(Files {
            settings: read_object(&home.join("settings.json"))?,
            config: read_object(&home.join("config.json"))?,
        })
    });
    read.await.map_err(|e| ctx.failed(e))?.map_err(|e| ctx.failed(e))
}

pub fn effective(
    settings: &Map<String, Value>,
    config: &Map<String, Value>,
) -> BTreeMap<String, t::UserSettingMetadata> {
    defaults()
        .into_iter()
        .map(|(key, default)| {
            let set = config.get(&key).or_else(|| settings.get(&key)).cloned();
            let meta = t::UserSettingMetadata {
                is_default: set.is_none(),
                value: set.unwrap_or_else(|| default.clone()),
                default,
            };
            (key, meta)
        })
        .collect()
}

pub async fn get(ctx: &Ctx, _p: NoParams) -> Result<t::UserSettingsGetResult, RpcError> {
    let files = read_files(ctx).await?;
    Ok(t::UserSettingsGetResult { settings: effective(&files.settings, &files.config) })
}

/// Writes each given key to settings.json (`null` removes it); keys that config.json also
/// holds are reported as shadowed.
pub async fn set(ctx: &Ctx, p: t::UserSettingsSetRequest) -> Result<t::UserSettingsSetResult, RpcError> {
    let Value::Object(changes) = p.settings else {
        return Err(RpcError::invalid_params(ctx.method, "settings: expected an object"));
    };
    let files = read_files(ctx).await?;
    let mut settings = files.settings;
    let mut shadowed_keys = Vec::new();
    for (key, value) in changes {
        if files.config.contains_key(&key) {
            shadowed_keys.push(key.clone());
        }
        if value.is_null() {
            settings.remove(&key);
        } else {
            settings.insert(key, value);
        }
    }
    let path = home(ctx).join("settings.json");
    let text = serde_json::to_string_pretty(&Value::Object(settings)).map_err(|e| ctx.failed(e))?;
    let written = tokio::task::spawn_blocking(move || write_atomically(&path, text.as_bytes()));
    written.await.map_err(|e| ctx.failed(e))?.map_err(|e| ctx.failed(format!("cannot write settings.json: {e}")))?;
    Ok(t::UserSettingsSetResult { shadowed_keys })
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

pub async fn reload(ctx: &Ctx, _p: NoParams) -> Result<(), RpcError> {
    read_files(ctx).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_json_wins_and_unset_keys_show_defaults() {
        let settings: Map<String, Value> = serde_json::from_str(r#"{"mouse": false, "beep": true}"#).unwrap();
        let config: Map<String, Value> = serde_json::from_str(r#"{"beep": false}"#).unwrap();
        let e = effective(&settings, &config);
        assert_eq!(e["mouse"].value, Value::Bool(false));
        assert!(!e["mouse"].is_default);
        assert_eq!(e["beep"].value, Value::Bool(false));
        assert_eq!(e["bannerStyle"].value, Value::String("mona".into()));
        assert!(e["bannerStyle"].is_default);
        assert!(!e.contains_key("notASetting"));
    }
}
