//! The shape language workflows declare their arguments in (`argsSchema`) and the schema a
//! workflow's agent answers in: a small subset of JSON Schema, as the SDKs document it. Only
//! `type`, `required`, `enum`, `const`, `properties`, `items`, `anyOf`, `oneOf` (taken as
//! `anyOf`) and `allOf` are checked; everything else is ignored, not enforced. The messages are
//! the original's (`$.n should be integer but is string`).

use serde_json::Value;

/// Whether `value` fits `schema`; the first misfit found, with its JSON path, otherwise.
pub fn check(schema: &Value, value: &Value) -> Result<(), String> {
    check_at(schema, value, "$")
}

fn check_at(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else { return Ok(()) };
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| is_type(value, t)) {
            return Err(format!("{path} should be {} but is {}", allowed.join(" or "), type_of(value)));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            return Err(format!("{path} should be {c}"));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(format!("{path} should be one of {}", listed.join(", ")));
        }
    }
    if let (Some(Value::Array(required)), Some(object)) = (schema.get("required"), value.as_object()) {
        if let Some(missing) = required.iter().filter_map(Value::as_str).find(|k| !object.contains_key(*k)) {
            return Err(format!("{path}.{missing} is required"));
        }
    }
    if let (Some(Value::Object(properties)), Some(object)) = (schema.get("properties"), value.as_object()) {
        for (key, sub) in properties {
            if let Some(v) = object.get(key) {
                check_at(sub, v, &format!("{path}.{key}"))?;
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, v) in array.iter().enumerate() {
            check_at(items, v, &format!("{path}[{i}]"))?;
        }
    }
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            check_at(sub, value, path)?;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(any)) = schema.get(key) {
            if !any.is_empty() && !any.iter().any(|sub| check_at(sub, value, path).is_ok()) {
                return Err(format!("{path} matches none of the {key} branches"));
            }
        }
    }
    Ok(())
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true, // an unknown type name constrains nothing
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use serde_json::json;

    #[test]
    fn misfits_are_named_by_their_path_as_the_original_does() {
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        assert_eq!(check(&schema, &json!({"n": "x"})), Err("$.n should be integer but is string".into()));
        assert_eq!(check(&schema, &json!({})), Err("$.n is required".into()));
        assert_eq!(check(&schema, &json!({"n": 3})), Ok(()));
        assert_eq!(check(&schema, &json!([1])), Err("$ should be object but is array".into()));
    }

    #[test]
    fn type_lists_items_and_branches_are_checked_and_the_rest_ignored() {
        let wide = json!({"type": ["object", "array", "string", "number", "integer", "boolean", "null"]});
        for v in [json!(null), json!([1, "two", false]), json!({"a": 1}), json!(2.5)] {
            assert_eq!(check(&wide, &v), Ok(()), "{v}");
        }
        let items = json!({"type": "array", "items": {"type": "integer"}});
        assert_eq!(check(&items, &json!([1, "x"])), Err("$[1] should be integer but is string".into()));
        let any = json!({"anyOf": [{"type": "string"}, {"const": 3}]});
        assert_eq!(check(&any, &json!(3)), Ok(()));
        assert!(check(&any, &json!(4)).is_err());
        assert_eq!(check(&json!({"type": "string", "maxLength": 1}), &json!("long")), Ok(()));
        assert!(check(&json!({"enum": ["a", "b"]}), &json!("c")).is_err());
    }
}
