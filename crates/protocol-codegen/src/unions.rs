//! Deciding what an `anyOf`/`oneOf` becomes: `Option<T>`, an internally tagged enum, an
//! untagged enum, or (when serde could not tell the branches apart) `serde_json::Value`.
//! These decisions look only at the schemas, so the pre-pass that finds direct references
//! and the mapper agree on them.

use std::collections::BTreeSet;

use anyhow::Result;
use serde_json::Value;

use crate::schema::{as_ref, Schemas};

/// The branches of a union, with `null` and impossible (`{not: {}}`) branches taken out.
pub struct Branches<'s> {
    pub effective: Vec<&'s Value>,
    /// A `{type: null}` branch was present: the union is `Option<...>`.
    pub nullable: bool,
    /// How many `{not: {}}` branches were dropped. The schemas use `anyOf [{not: {}}, X]` for
    /// "X or absent" (TypeScript `X | undefined`); absence is already handled by `Option`.
    pub never: usize,
}

pub fn union_branches(schema: &Value) -> Option<&Vec<Value>> {
    schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array)
}

fn is_null_schema(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null") || s.get("const") == Some(&Value::Null)
}

fn is_never_schema(s: &Value) -> bool {
    s.get("not").and_then(Value::as_object).is_some_and(|m| m.is_empty())
}

pub fn split(branches: &[Value]) -> Branches<'_> {
    let mut out = Branches { effective: Vec::new(), nullable: false, never: 0 };
    for b in branches {
        if is_null_schema(b) {
            out.nullable = true;
        } else if is_never_schema(b) {
            out.never += 1;
        } else {
            out.effective.push(b);
        }
    }
    out
}

/// A branch with its `$ref` followed (one level): the schema and, if any, its definition name.
pub fn resolve<'s>(schemas: &'s Schemas, branch: &'s Value) -> Result<(&'s Value, Option<&'s str>)> {
    match as_ref(branch)? {
        Some(name) => Ok((schemas.def_or_err(name)?, Some(name))),
        None => Ok((branch, None)),
    }
}

fn required(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn declared(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The string `const` of property `prop`, if the schema requires that property.
pub fn required_const<'s>(schema: &'s Value, prop: &str) -> Option<&'s str> {
    if !required(schema).contains(prop) {
        return None;
    }
    schema.get("properties")?.get(prop)?.get("const")?.as_str()
}

/// The discriminator of an internally tagged union: a property every branch requires with a
/// distinct string `const`. The first such property of the first branch wins.
pub fn tag_property(schemas: &Schemas, branches: &[&Value]) -> Result<Option<String>> {
    if branches.len() < 2 {
        return Ok(None);
    }
    let mut resolved = Vec::new();
    for b in branches {
        let (s, _) = resolve(schemas, b)?;
        if s.get("properties").is_none() {
            return Ok(None);
        }
        resolved.push(s);
    }
    // Candidates in the first branch's property order, so the choice is the schema author's.
    let Some(first_props) = resolved[0].get("properties").and_then(Value::as_object) else {
        return Ok(None);
    };
    'candidates: for prop in first_props.keys() {
        let mut values = BTreeSet::new();
        for s in &resolved {
            match required_const(s, prop) {
                Some(v) if values.insert(v) => {}
                _ => continue 'candidates,
            }
        }
        return Ok(Some(prop.clone()));
    }
    Ok(None)
}

/// The JSON shape a branch accepts, for deciding whether `#[serde(untagged)]` can tell the
/// branches apart by trying them in order.
#[derive(Debug)]
enum Shape<'s> {
    String,
    Integer,
    Number,
    Bool,
    Array,
    /// An object with known properties.
    Struct {
        required: BTreeSet<&'s str>,
        declared: BTreeSet<&'s str>,
    },
    /// An object that accepts any keys (a map).
    OpenObject,
    /// Anything else (nested unions, untyped): never safe to try before another branch.
    Unknown,
}

fn shape<'s>(schemas: &'s Schemas, branch: &'s Value) -> Result<Shape<'s>> {
    let (s, _) = resolve(schemas, branch)?;
    if s.get("enum").is_some() || s.get("const").is_some_and(Value::is_string) {
        return Ok(Shape::String);
    }
    Ok(match s.get("type").and_then(Value::as_str) {
        Some("string") => Shape::String,
        Some("integer") => Shape::Integer,
        Some("number") => Shape::Number,
        Some("boolean") => Shape::Bool,
        Some("array") => Shape::Array,
        Some("object") if s.get("properties").is_some() => {
            Shape::Struct { required: required(s), declared: declared(s) }
        }
        Some("object") => Shape::OpenObject,
        None if s.get("properties").is_some() => Shape::Struct { required: required(s), declared: declared(s) },
        _ => Shape::Unknown,
    })
}

/// Whether an untagged enum of these branches (tried in order) picks the intended branch for
/// every valid value: no two branches of the same primitive kind (integer before number is
/// fine), and each struct branch requires a field that no later object branch declares.
pub fn untagged_distinguishable(schemas: &Schemas, branches: &[&Value]) -> Result<bool> {
    let shapes = branches.iter().map(|b| shape(schemas, b)).collect::<Result<Vec<_>>>()?;
    for (i, a) in shapes.iter().enumerate() {
        for b in &shapes[i + 1..] {
            let ok = match (a, b) {
                (Shape::Unknown, _) | (_, Shape::Unknown) => false,
                (Shape::Integer, Shape::Number) => true,
                (Shape::Struct { required, .. }, Shape::Struct { declared, .. }) => {
                    required.iter().any(|r| !declared.contains(r))
                }
                (Shape::Struct { required, .. }, Shape::OpenObject) => !required.is_empty(),
                (Shape::OpenObject, Shape::Struct { .. } | Shape::OpenObject) => false,
                (Shape::Struct { .. } | Shape::OpenObject, _) | (_, Shape::Struct { .. } | Shape::OpenObject) => true,
                (x, y) => std::mem::discriminant(x) != std::mem::discriminant(y),
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// The variant name of an untagged branch: the definition name, or the JSON type.
pub fn untagged_variant_name(branch: &Value) -> Result<String> {
    if let Some(name) = as_ref(branch)? {
        return Ok(name.to_owned());
    }
    if branch.get("enum").is_some() {
        return Ok("String".into());
    }
    Ok(match branch.get("type").and_then(Value::as_str) {
        Some("string") => "String",
        Some("integer") => "Integer",
        Some("number") => "Number",
        Some("boolean") => "Bool",
        Some("array") => "Array",
        Some("object") => "Object",
        _ if branch.get("properties").is_some() => "Object",
        _ => "Value",
    }
    .into())
}
