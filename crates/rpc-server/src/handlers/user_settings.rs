//! `user.settings.*`: the user's settings in `<copilot home>/settings.json`, overlaid with the
//! legacy `config.json` (which wins on read, as in the original). Only the settings the
//! original knows are listed; their defaults are in `user_settings_defaults.json`. Both files
//! are read on every request, so `reload` has nothing cached to drop: it checks they parse.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_config::{user_config, user_settings, FileError};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::NoParams;
use serde_json::{Map, Value};

use crate::ctx::Ctx;

const DEFAULTS: &str = include_str!("../user_settings_defaults.json");

fn defaults() -> Map<String, Value> {
    serde_json::from_str(DEFAULTS).unwrap_or_default()
}

fn home(ctx: &Ctx) -> PathBuf {
    ctx.config_home()
}

struct Files {
    settings: Map<String, Value>,
    config: Map<String, Value>,
}

fn read(home: &std::path::Path) -> Result<Files, FileError> {
    Ok(Files { settings: user_settings::file(home).read()?, config: user_config::file(home).read()?.to_object() })
}

async fn read_files(ctx: &Ctx) -> Result<Files, RpcError> {
    let home = home(ctx);
    let read = tokio::task::spawn_blocking(move || read(&home));
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

/// Writes each given key to settings.json (`null` removes it), in one update of the file;
/// keys that config.json also holds are reported as shadowed.
pub async fn set(ctx: &Ctx, p: t::UserSettingsSetRequest) -> Result<t::UserSettingsSetResult, RpcError> {
    let Value::Object(changes) = p.settings else {
        return Err(RpcError::invalid_params(ctx.method, "settings: expected an object"));
    };
    let home = home(ctx);
    let written = tokio::task::spawn_blocking(move || -> Result<Vec<String>, FileError> {
        let config = user_config::file(&home).read()?.to_object();
        let shadowed_keys = changes.keys().filter(|k| config.contains_key(*k)).cloned().collect();
        user_settings::file(&home).update(|settings| {
            user_settings::apply(settings, changes);
            Ok::<_, FileError>(())
        })?;
        Ok(shadowed_keys)
    });
    let shadowed_keys = written.await.map_err(|e| ctx.failed(e))?.map_err(|e| ctx.failed(e))?;
    Ok(t::UserSettingsSetResult { shadowed_keys })
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
