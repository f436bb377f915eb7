//! Reading and changing one setting of a settings file's object by its dotted key, the value
//! typed by [`settings_keys`]. Pure functions on the object: the file's owner
//! ([`crate::user_settings`], [`crate::repo_settings`]) reads and writes it.

use serde_json::{Map, Number, Value};

use crate::settings_keys::{self, Kind, Setting};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error(transparent)]
    Key(#[from] settings_keys::KeyError),
    #[error("Invalid value for \"{key}\": Expected a boolean (on/off, true/false, yes/no), got \"{got}\".")]
    NotBool { key: String, got: String },
    #[error("Invalid value for \"{key}\": Expected a number, got \"{got}\".")]
    NotNumber { key: String, got: String },
    #[error("Invalid value for \"{key}\": Expected one of: {}.", choices.join(", "))]
    NotAChoice { key: String, choices: Vec<String> },
    #[error("Invalid value for \"{key}\": {reason}.")]
    BadTemplate { key: String, reason: &'static str },
    #[error("Setting \"{0}\" is a group; pick one of its keys.")]
    Group(String),
    #[error("Setting \"{0}\" requires a sub-key (e.g. \"{0}.<name>\").")]
    NeedsName(String),
    #[error("Setting \"{0}\" stores a complex value; edit {1} directly.")]
    Complex(String, String),
    #[error("Setting \"{0}\" cannot be changed from the command line. Edit {1} directly.")]
    FileOnly(String, String),
    #[error("Setting \"{0}\" is controlled by your organization's policy, not by your settings.")]
    Policy(String),
    #[error("Setting \"{0}\" is not a list. Remove it whole with `--rm {0}`.")]
    NotAList(String),
    #[error("Setting \"{key}\" cannot be set in {file}.\nSettings a repository can override: {}.", settings_keys::REPO_KEYS.join(", "))]
    NotForRepo { key: String, file: String },
    #[error(
        "Setting \"{0}\" in {2} is not an object, so \"{1}\" cannot be set beneath it. Fix the file, then try again."
    )]
    NotAnObject(String, String, String),
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    Set(Value),
    Added,
    AlreadyThere,
    Removed,
    WasNotSet,
}

/// The value `raw` stands for under `setting`, checked against its type. `file` names the
/// file in the advice to edit it.
pub fn parse(setting: &Setting, raw: &str, file: &str) -> Result<Value, EditError> {
    let key = setting.key();
    match setting.kind {
        Kind::Bool => match raw.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "off" | "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(EditError::NotBool { key, got: raw.into() }),
        },
        Kind::Number => number(raw).map(Value::Number).ok_or(EditError::NotNumber { key, got: raw.into() }),
        Kind::Choice(choices) => choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(raw))
            .map(|c| Value::String((*c).into()))
            .ok_or_else(|| EditError::NotAChoice { key, choices: choices.iter().map(|c| c.to_string()).collect() }),
        Kind::Text | Kind::List => Ok(Value::String(raw.into())),
        Kind::PathTemplate => {
            template(raw).map(|()| Value::String(raw.into())).map_err(|reason| EditError::BadTemplate { key, reason })
        }
        Kind::Group(_) => Err(EditError::Group(key)),
        Kind::Named(_) => Err(EditError::NeedsName(key)),
        Kind::Complex => Err(EditError::Complex(key, file.into())),
        Kind::FileOnly | Kind::UiOnly | Kind::Leaf => Err(EditError::FileOnly(key, file.into())),
        Kind::Policy => Err(EditError::Policy(key)),
    }
}

/// A number as JSON keeps it: a whole number stays whole (`1e3` is 1000).
fn number(raw: &str) -> Option<Number> {
    let f: f64 = raw.trim().parse().ok().filter(|f: &f64| f.is_finite())?;
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        // Exact: a whole f64 below 2^53 converts without loss.
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(f as i64));
    }
    Number::from_f64(f)
}

fn template(raw: &str) -> Result<(), &'static str> {
    if !raw.contains("{branch}") && !raw.contains("{branchSlug}") {
        return Err("must contain {branch} or {branchSlug} so each worktree gets its own directory");
    }
    let rooted =
        raw.starts_with('/') || raw.starts_with("~/") || raw.starts_with("~\\") || raw.starts_with("{repoPath}");
    if !rooted {
        return Err("must be an absolute path, start with ~/ or ~\\, or start with {repoPath}");
    }
    Ok(())
}

/// Refuses a key a repository's settings file may not hold.
pub fn check_repo_key(setting: &Setting, file: &str) -> Result<(), EditError> {
    match setting.path.first() {
        Some(top) if settings_keys::REPO_KEYS.contains(&top.as_str()) => Ok(()),
        _ => Err(EditError::NotForRepo { key: setting.key(), file: file.into() }),
    }
}

/// The stored value of `setting`, if any.
pub fn get<'a>(object: &'a Map<String, Value>, setting: &Setting) -> Option<&'a Value> {
    let (last, parents) = setting.path.split_last()?;
    let mut here = object;
    for p in parents {
        here = here.get(p)?.as_object()?;
    }
    here.get(last)
}

/// The object holding `setting`'s value, made where missing.
fn parent_mut<'a>(
    object: &'a mut Map<String, Value>,
    setting: &Setting,
    file: &str,
) -> Result<&'a mut Map<String, Value>, EditError> {
    let mut here = object;
    let parents = &setting.path[..setting.path.len().saturating_sub(1)];
    for (i, p) in parents.iter().enumerate() {
        let slot = here.entry(p.clone()).or_insert_with(|| Value::Object(Map::new()));
        here = slot
            .as_object_mut()
            .ok_or_else(|| EditError::NotAnObject(setting.path[..=i].join("."), setting.key(), file.into()))?;
    }
    Ok(here)
}

/// Sets `setting` to the value `raw` stands for; a list setting gains it as an item instead
/// (once).
pub fn set(object: &mut Map<String, Value>, setting: &Setting, raw: &str, file: &str) -> Result<Changed, EditError> {
    let value = parse(setting, raw, file)?;
    let last = setting.path.last().cloned().unwrap_or_default();
    let parent = parent_mut(object, setting, file)?;
    if setting.kind == Kind::List {
        let slot = parent.entry(last).or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            // A hand-written scalar where a list belongs becomes the list it meant.
            *slot = Value::Array(vec![slot.take()]);
        }
        let items = slot.as_array_mut().ok_or(EditError::NotAList(setting.key()))?;
        if items.contains(&value) {
            return Ok(Changed::AlreadyThere);
        }
        items.push(value);
        return Ok(Changed::Added);
    }
    parent.insert(last, value.clone());
    Ok(Changed::Set(value))
}

/// Removes `setting` whole, or with `item` only that item of a list.
pub fn remove(object: &mut Map<String, Value>, setting: &Setting, item: Option<&str>) -> Result<Changed, EditError> {
    match setting.kind {
        Kind::Group(_) => return Err(EditError::Group(setting.key())),
        Kind::Named(_) if item.is_none() && setting.path.len() == 1 => {}
        _ if item.is_some() && setting.kind != Kind::List => return Err(EditError::NotAList(setting.key())),
        _ => {}
    }
    let Some((last, parents)) = setting.path.split_last() else { return Ok(Changed::WasNotSet) };
    let mut here = object;
    for p in parents {
        match here.get_mut(p).and_then(Value::as_object_mut) {
            Some(next) => here = next,
            None => return Ok(Changed::WasNotSet),
        }
    }
    match item {
        None => Ok(if here.remove(last).is_some() { Changed::Removed } else { Changed::WasNotSet }),
        Some(item) => {
            let Some(items) = here.get_mut(last).and_then(Value::as_array_mut) else { return Ok(Changed::WasNotSet) };
            let before = items.len();
            items.retain(|v| v.as_str() != Some(item));
            Ok(if items.len() < before { Changed::Removed } else { Changed::WasNotSet })
        }
    }
}

/// Lines `key=value` for every value in the object, nested keys dotted; a list gives one line
/// per item. Secrets are redacted.
pub fn lines(object: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    flatten("", object, &mut out);
    out
}

fn flatten(prefix: &str, object: &Map<String, Value>, out: &mut Vec<String>) {
    for (k, v) in object {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        let v = redacted(k, v);
        match &v {
            Value::Object(m) if !m.is_empty() => flatten(&key, m, out),
            Value::Array(items) => out.extend(items.iter().map(|i| format!("{key}={}", plain(i)))),
            other => out.push(format!("{key}={}", plain(other))),
        }
    }
}

/// A value as a line shows it: a string bare, anything else as compact JSON.
pub fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a secret's place shows instead of it.
pub const REDACTED: &str = "<redacted>";

/// A name that says its value is a credential (`token`, `apiKey`, `clientSecret`, `password`).
pub fn names_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["token", "secret", "password", "apikey", "api_key", "authorization"].iter().any(|s| lower.contains(s))
}

/// `v` as output shows it: values under a secret's name replaced, at any depth.
pub fn redacted(name: &str, v: &Value) -> Value {
    if names_secret(name) && !v.is_object() {
        return Value::String(REDACTED.into());
    }
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), redacted(k, v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(|i| redacted("", i)).collect()),
        other => other.clone(),
    }
}

/// The whole object with its secrets redacted.
pub fn redacted_object(object: &Map<String, Value>) -> Map<String, Value> {
    object.iter().map(|(k, v)| (k.clone(), redacted(k, v))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings_keys::resolve;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn values_are_typed() {
        let beep = resolve("beep").unwrap();
        assert_eq!(parse(&beep, "ON", "f").unwrap(), json!(true));
        assert_eq!(parse(&beep, "no", "f").unwrap(), json!(false));
        assert!(matches!(parse(&beep, "maybe", "f"), Err(EditError::NotBool { .. })));
        let n = resolve("commandHistoryMaxSize").unwrap();
        assert_eq!(parse(&n, "1e3", "f").unwrap(), json!(1000));
        assert_eq!(parse(&n, "1.5", "f").unwrap(), json!(1.5));
        assert!(parse(&n, "abc", "f").is_err());
        let theme = resolve("theme").unwrap();
        assert_eq!(parse(&theme, "DIM", "f").unwrap(), json!("dim"));
        assert_eq!(
            parse(&theme, "x", "f").unwrap_err().to_string(),
            r#"Invalid value for "theme": Expected one of: default, github, dim, high-contrast, colorblind."#
        );
        let wt = resolve("worktreePathTemplate").unwrap();
        assert!(parse(&wt, "a/{branch}", "f").is_err());
        assert!(parse(&wt, "~/wt/{branchSlug}", "f").is_ok());
        assert!(matches!(parse(&resolve("footer").unwrap(), "x", "f"), Err(EditError::Group(_))));
        assert!(matches!(parse(&resolve("logLevel").unwrap(), "x", "f"), Err(EditError::FileOnly(..))));
    }

    #[test]
    fn set_append_and_remove() {
        let mut o = Map::new();
        set(&mut o, &resolve("footer.showQuota").unwrap(), "off", "f").unwrap();
        let urls = resolve("allowedUrls").unwrap();
        assert_eq!(set(&mut o, &urls, "a.com", "f").unwrap(), Changed::Added);
        assert_eq!(set(&mut o, &urls, "a.com", "f").unwrap(), Changed::AlreadyThere);
        set(&mut o, &urls, "b.com", "f").unwrap();
        assert_eq!(
            Value::Object(o.clone()),
            json!({"footer": {"showQuota": false}, "allowedUrls": ["a.com", "b.com"]})
        );
        assert_eq!(lines(&o), ["footer.showQuota=false", "allowedUrls=a.com", "allowedUrls=b.com"]);
        assert_eq!(remove(&mut o, &urls, Some("a.com")).unwrap(), Changed::Removed);
        assert_eq!(remove(&mut o, &urls, Some("a.com")).unwrap(), Changed::WasNotSet);
        assert!(matches!(remove(&mut o, &resolve("beep").unwrap(), Some("x")), Err(EditError::NotAList(_))));
        assert!(matches!(remove(&mut o, &resolve("footer").unwrap(), None), Err(EditError::Group(_))));
        assert_eq!(remove(&mut o, &resolve("footer.showQuota").unwrap(), None).unwrap(), Changed::Removed);
        assert_eq!(get(&o, &urls), Some(&json!(["b.com"])));
    }

    #[test]
    fn a_scalar_in_the_way_of_a_group_is_an_error() {
        let mut o = obj(json!({"footer": true}));
        assert!(matches!(
            set(&mut o, &resolve("footer.showQuota").unwrap(), "on", "f"),
            Err(EditError::NotAnObject(..))
        ));
    }

    #[test]
    fn secrets_are_redacted_in_output() {
        let o = obj(json!({"extensions": {"x": {"apiKey": "k", "name": "n"}}, "model": "m"}));
        assert_eq!(lines(&o), ["extensions.x.apiKey=<redacted>", "extensions.x.name=n", "model=m"]);
    }
}
