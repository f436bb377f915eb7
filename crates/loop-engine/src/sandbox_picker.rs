//! `sandbox.preparePickerPolicy` and `sandbox.filterPickerCandidates`: which files a host's
//! file picker may offer under a sandbox config. Only what the config gives its commands by
//! name — the working directory, the temporary directory, the tools' directories and the paths
//! the user listed — never the rest of the system the sandbox mounts read-only, and never a
//! denied path.

use std::path::{Path, PathBuf};

use protocol::generated::types as t;
use serde_json::{json, Map, Value};

use crate::session_sandbox::{config_paths, ConfigPaths};

/// The config `sandbox` (opaque JSON, as a host stores it) with its filesystem lists made
/// explicit for a picker in `cwd`; `None` where it is not an enabled sandbox.
pub fn prepare(sandbox: Option<&Value>, cwd: &Path, env: &[(String, String)]) -> Result<Option<Value>, String> {
    let Some((obj, config)) = enabled(sandbox)? else {
        return Ok(None);
    };
    let lists = lists(&config, cwd, env);
    let mut fs = Map::new();
    fs.insert("readwritePaths".into(), strings(&lists.writable));
    fs.insert("readonlyPaths".into(), strings(&lists.readable));
    if !lists.denied.is_empty() {
        fs.insert("deniedPaths".into(), strings(&lists.denied));
    }
    let mut prepared = obj.clone();
    let user = prepared.entry("userPolicy").or_insert_with(|| json!({}));
    if let Some(user) = user.as_object_mut() {
        user.insert("filesystem".into(), Value::Object(fs));
    }
    Ok(Some(Value::Object(prepared)))
}

/// For each of `candidates`, whether a picker in `cwd` may offer it under `sandbox` (all of
/// them where there is no enabled sandbox; a relative path never).
pub fn filter(
    candidates: &[String],
    sandbox: Option<&Value>,
    cwd: &Path,
    env: &[(String, String)],
) -> Result<Vec<bool>, String> {
    // Raw or prepared alike: preparing adds nothing `lists` does not add itself.
    let Some((_, config)) = enabled(sandbox)? else {
        return Ok(vec![true; candidates.len()]);
    };
    let lists = lists(&config, cwd, env);
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let roots: Vec<PathBuf> = lists.writable.iter().chain(&lists.readable).map(|p| real(p)).collect();
    let denied: Vec<PathBuf> = lists.denied.iter().map(|p| real(p)).collect();
    Ok(candidates
        .iter()
        .map(|c| {
            let path = Path::new(c);
            if !path.is_absolute() {
                return false;
            }
            let path = real(path);
            roots.iter().any(|r| path.starts_with(r)) && !denied.iter().any(|d| path.starts_with(d))
        })
        .collect())
}

/// An enabled sandbox's JSON object and its typed config.
type Enabled<'a> = (&'a Map<String, Value>, t::SandboxConfig);

/// `sandbox` as its JSON object and its typed config, where it is an enabled sandbox.
fn enabled(sandbox: Option<&Value>) -> Result<Option<Enabled<'_>>, String> {
    let Some(obj) = sandbox.and_then(Value::as_object).filter(|o| o.get("enabled") == Some(&Value::Bool(true))) else {
        return Ok(None);
    };
    let config = serde_json::from_value(Value::Object(obj.clone())).map_err(|e| e.to_string())?;
    Ok(Some((obj, config)))
}

/// The config's lists, with the working directory (unless left out) and the temporary
/// directory first among the writable ones.
fn lists(config: &t::SandboxConfig, cwd: &Path, env: &[(String, String)]) -> ConfigPaths {
    let mut lists = config_paths(config, cwd, env);
    let mut writable: Vec<PathBuf> = Vec::new();
    if config.add_current_working_directory != Some(false) {
        writable.push(cwd.to_path_buf());
    }
    writable.push(std::env::temp_dir());
    for p in lists.writable.drain(..) {
        if !writable.contains(&p) {
            writable.push(p);
        }
    }
    lists.writable = writable;
    lists.readable.dedup();
    lists
}

fn strings(paths: &[PathBuf]) -> Value {
    Value::Array(paths.iter().map(|p| Value::String(p.display().to_string())).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_picker_offers_what_the_config_names_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        std::fs::create_dir_all(cwd.join("secret")).unwrap();
        let env = vec![("PATH".to_string(), "/usr/bin".to_string())];
        assert_eq!(prepare(Some(&json!({"enabled": false})), &cwd, &env).unwrap(), None);
        let config = json!({"enabled": true, "allowBypass": true,
            "userPolicy": {"filesystem": {"deniedPaths": ["secret"]}, "network": {"allowOutbound": false}}});
        let prepared = prepare(Some(&config), &cwd, &env).unwrap().unwrap();
        let fs = &prepared["userPolicy"]["filesystem"];
        assert_eq!(fs["readwritePaths"][0], json!(cwd.display().to_string()));
        assert!(fs["readonlyPaths"].as_array().unwrap().contains(&json!("/usr/bin")));
        assert_eq!(fs["deniedPaths"], json!([cwd.join("secret").display().to_string()]));
        assert_eq!(prepared["userPolicy"]["network"], json!({"allowOutbound": false}), "the rest is kept");
        assert_eq!(prepared["allowBypass"], json!(true));

        let candidates: Vec<String> = [
            cwd.join("a.txt").display().to_string(),
            cwd.join("sub").display().to_string(),
            "/etc/passwd".into(),
            cwd.join("secret/key").display().to_string(),
            "a.txt".into(),
            "/usr/bin/env".into(),
        ]
        .into();
        let allowed = filter(&candidates, Some(&prepared), &cwd, &env).unwrap();
        assert_eq!(allowed, [true, true, false, false, false, true]);
        assert_eq!(filter(&candidates, Some(&config), &cwd, &env).unwrap(), allowed, "raw or prepared alike");
        assert_eq!(filter(&candidates, None, &cwd, &env).unwrap(), vec![true; 6]);
    }
}
