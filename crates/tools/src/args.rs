//! Lenient argument readers shared by the tools.
//!
//! Models do not always follow the schema to the letter (numbers sent as strings, booleans as
//! `"true"`), so the readers accept the obvious spellings and only fail when a value cannot
//! mean what the schema says. Failures are [`ArgError`]s, which turn into the failed
//! [`ToolOutput`] the tool returns.

use serde_json::Value;

use crate::output::ToolOutput;

/// A bad argument; the text is what the model is told.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArgError(pub String);

impl From<ArgError> for ToolOutput {
    fn from(e: ArgError) -> Self {
        ToolOutput::fail(e.0)
    }
}

fn invalid(key: &str, expected: &str) -> ArgError {
    ArgError(format!("Invalid argument \"{key}\": expected {expected}."))
}

/// A required string argument.
pub(crate) fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ArgError> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(ArgError(format!("Missing required argument \"{key}\"."))),
        Some(_) => Err(invalid(key, "a string")),
    }
}

/// An optional string argument (`null` counts as absent).
pub(crate) fn optional_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ArgError> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(Some(s)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(invalid(key, "a string")),
    }
}

/// An optional boolean; accepts `"true"`/`"false"` too.
pub(crate) fn optional_bool(args: &Value, key: &str) -> Result<Option<bool>, ArgError> {
    match args.get(key) {
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(invalid(key, "a boolean")),
    }
}

/// An optional number; accepts numeric strings too.
pub(crate) fn optional_number(args: &Value, key: &str) -> Result<Option<f64>, ArgError> {
    match args.get(key) {
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| invalid(key, "a number")),
        Some(Value::String(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| invalid(key, "a number")),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(invalid(key, "a number")),
    }
}

/// A non-negative count (context lines, limits). Fractions are truncated.
pub(crate) fn optional_count(args: &Value, key: &str) -> Result<Option<usize>, ArgError> {
    match optional_number(args, key)? {
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n as usize)),
        Some(_) => Err(invalid(key, "a non-negative number")),
        None => Ok(None),
    }
}

/// `paths` as a string or an array of strings; older CLIs called it `path`, so that is read
/// as well. Empty when neither is given.
pub(crate) fn paths(args: &Value) -> Result<Vec<String>, ArgError> {
    let mut out = Vec::new();
    for key in ["paths", "path"] {
        match args.get(key) {
            Some(Value::String(s)) if !s.is_empty() => out.push(s.clone()),
            Some(Value::Array(items)) => {
                for item in items {
                    match item {
                        Value::String(s) if !s.is_empty() => out.push(s.clone()),
                        Value::String(_) => {}
                        _ => return Err(invalid(key, "a string or an array of strings")),
                    }
                }
            }
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(_) => return Err(invalid(key, "a string or an array of strings")),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_readers() {
        let a = json!({"s": "x", "b": "true", "n": "3", "arr": ["a", "b"], "path": "c"});
        assert_eq!(required_str(&a, "s").ok(), Some("x"));
        assert!(required_str(&a, "missing").is_err());
        assert_eq!(optional_bool(&a, "b").ok().flatten(), Some(true));
        assert_eq!(optional_number(&a, "n").ok().flatten(), Some(3.0));
        assert_eq!(optional_count(&json!({"c": 2.7}), "c").ok().flatten(), Some(2));
        assert!(optional_count(&json!({"c": -1}), "c").is_err());
        assert_eq!(paths(&json!({"paths": ["a", "b"]})).ok(), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(paths(&json!({"path": "c"})).ok(), Some(vec!["c".to_string()]));
        assert_eq!(paths(&json!({})).ok(), Some(vec![]));
    }
}
