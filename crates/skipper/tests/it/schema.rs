//! Validation of session events against the official `session-events.schema.json`.
//!
//! The schema's root is `$ref: #/definitions/SessionEvent`, an `anyOf` over 149 event
//! definitions, each with a `type` const and a `data` `$ref`. Validating against the whole
//! union gives unreadable errors, so each event is validated against the one definition whose
//! `type` const matches (envelope + data, `additionalProperties: false` included), which names
//! the offending field precisely.
//!
//! An event the SDKs' schema refuses passes when the original CLI's own, newer schema
//! (`cli-1.0.102/`) accepts it: event types and fields the original sends that today's SDKs
//! do not know yet (they ignore them).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Violation {
    pub event_type: String,
    /// JSON pointer into the event (e.g. `/data/foo`).
    pub path: String,
    pub message: String,
    /// Where the event came from (notification, getMessages, events.jsonl).
    pub source: String,
    pub event: Value,
    /// The type is not in the schema at all (clients tolerate unknown types).
    pub unknown_type: bool,
}

impl Violation {
    pub fn protocol(message: &str, event: &Value) -> Self {
        Self {
            event_type: event.get("type").and_then(Value::as_str).unwrap_or("?").to_string(),
            path: String::new(),
            message: message.to_string(),
            source: "protocol".into(),
            event: event.clone(),
            unknown_type: false,
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ev = self.event.to_string();
        if ev.len() > 1500 {
            let mut cut = 1500;
            while !ev.is_char_boundary(cut) {
                cut -= 1;
            }
            ev.truncate(cut);
            ev.push('…');
        }
        write!(
            f,
            "[{}] type `{}` at `{}`: {}\n    event: {}",
            self.source,
            self.event_type,
            if self.path.is_empty() { "/" } else { &self.path },
            self.message,
            ev
        )
    }
}

pub struct SchemaChecker {
    root: Value,
    /// event `type` const → definition name (e.g. `session.idle` → `IdleEvent`).
    by_type: HashMap<String, String>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// `<workspace>/../shared`, or `$SKIPPER_SHARED_DIR`.
pub fn shared_dir() -> PathBuf {
    if let Ok(d) = std::env::var("SKIPPER_SHARED_DIR") {
        return PathBuf::from(d);
    }
    // CARGO_MANIFEST_DIR = <workspace>/crates/skipper
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

pub fn checker() -> &'static SchemaChecker {
    static CHECKER: OnceLock<SchemaChecker> = OnceLock::new();
    CHECKER.get_or_init(|| SchemaChecker::load("schemas/session-events.schema.json"))
}

/// The original CLI's own events schema.
fn newer_checker() -> &'static SchemaChecker {
    static CHECKER: OnceLock<SchemaChecker> = OnceLock::new();
    CHECKER.get_or_init(|| SchemaChecker::load("schemas/cli-1.0.102/session-events.schema.json"))
}

impl SchemaChecker {
    fn load(file: &str) -> Self {
        let path = shared_dir().join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {} (set SKIPPER_SHARED_DIR): {e}", path.display()));
        let root: Value = serde_json::from_str(&text).expect("schema is JSON");
        let defs = root["definitions"].as_object().expect("schema has definitions");
        let union = defs["SessionEvent"]["anyOf"].as_array().expect("SessionEvent is an anyOf");
        let mut by_type = HashMap::new();
        for variant in union {
            let name =
                variant["$ref"].as_str().expect("anyOf of $refs").rsplit('/').next().expect("ref name").to_string();
            let ty = defs[&name]["properties"]["type"]["const"].as_str().expect("type const").to_string();
            by_type.insert(ty, name);
        }
        assert!(by_type.len() > 100, "expected ~149 event types in the schema, found {}", by_type.len());
        SchemaChecker { root, by_type, validators: Mutex::new(HashMap::new()) }
    }
}

impl SchemaChecker {
    pub fn definition_for(&self, ty: &str) -> Option<&str> {
        self.by_type.get(ty).map(String::as_str)
    }

    fn validator(&self, def: &str) -> Arc<jsonschema::Validator> {
        if let Some(v) = self.validators.lock().unwrap_or_else(|e| e.into_inner()).get(def) {
            return v.clone();
        }
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$ref": format!("#/definitions/{def}"),
            "definitions": self.root["definitions"],
        });
        let v = Arc::new(
            jsonschema::draft7::options()
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|e| panic!("compiling the schema for {def}: {e}")),
        );
        self.validators.lock().unwrap_or_else(|e| e.into_inner()).insert(def.to_string(), v.clone());
        v
    }
}

impl SchemaChecker {
    /// `(instance path, message)` of every error of `instance` against definition `def`.
    /// An `anyOf` failure on a discriminated union (a branch whose `const` property matches
    /// the instance, e.g. `kind: "shell"`) is replaced by the errors against that branch, so
    /// the report names the offending field instead of "not valid under any of the schemas".
    fn errors(&self, def: &str, instance: &Value, prefix: &str) -> Vec<(String, String)> {
        let validator = self.validator(def);
        let mut out = Vec::new();
        for e in validator.iter_errors(instance) {
            let ipath = e.instance_path().to_string();
            let spath = e.schema_path().to_string();
            if spath.ends_with("/anyOf") || spath.ends_with("/oneOf") {
                let sub = instance.pointer(&ipath).unwrap_or(&Value::Null);
                if let Some(branch) = self.matching_branch(&spath, sub) {
                    let inner = self.errors(&branch, sub, &format!("{prefix}{ipath}"));
                    if !inner.is_empty() {
                        out.extend(inner.into_iter().map(|(p, m)| (p, format!("{m} [branch {branch}]"))));
                        continue;
                    }
                }
            }
            out.push((format!("{prefix}{ipath}"), format!("{e} (schema path {spath})")));
        }
        out
    }

    /// The `$ref` branch of the union at `schema_path` whose `const` discriminator matches.
    fn matching_branch(&self, schema_path: &str, instance: &Value) -> Option<String> {
        let branches = self.root.pointer(schema_path)?.as_array()?;
        for b in branches {
            let name = b.get("$ref")?.as_str()?.rsplit('/').next()?.to_string();
            let props = self.root["definitions"][&name]["properties"].as_object()?;
            let hit = props.iter().any(|(k, p)| p.get("const").is_some_and(|c| instance.get(k) == Some(c)));
            if hit {
                return Some(name);
            }
        }
        None
    }
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Validates one event; returns its violations (empty = valid).
pub fn validate_event(event: &Value, source: &str) -> Vec<Violation> {
    let c = checker();
    let mk = |path: String, message: String, unknown: bool| Violation {
        event_type: event.get("type").and_then(Value::as_str).unwrap_or("?").to_string(),
        path,
        message,
        source: source.to_string(),
        event: event.clone(),
        unknown_type: unknown,
    };
    let Some(ty) = event.get("type").and_then(Value::as_str) else {
        return vec![mk("/type".into(), "event has no string `type`".into(), false)];
    };
    let newer = newer_checker();
    let newer_accepts = || newer.definition_for(ty).is_some_and(|def| newer.errors(def, event, "").is_empty());
    let mut out: Vec<Violation> = match c.definition_for(ty) {
        Some(def) => c.errors(def, event, "").into_iter().map(|(path, message)| mk(path, message, false)).collect(),
        None if newer.definition_for(ty).is_none() => {
            return vec![mk("/type".into(), format!("event type `{ty}` is not in the schema"), true)];
        }
        None => {
            let def = newer.definition_for(ty).unwrap_or_default();
            newer.errors(def, event, "").into_iter().map(|(path, message)| mk(path, message, false)).collect()
        }
    };
    if !out.is_empty() && newer_accepts() {
        out.clear();
    }
    // The envelope's `format: uuid` is not a draft-7 format; check it by hand.
    for key in ["id", "parentId"] {
        if let Some(s) = event.get(key).and_then(Value::as_str) {
            if !is_uuid(s) {
                out.push(mk(format!("/{key}"), format!("`{s}` is not a UUID"), false));
            }
        }
    }
    out
}
