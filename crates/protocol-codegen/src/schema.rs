//! Loading the upstream schemas and indexing what the generator needs from them: the
//! definitions (one flat namespace), the JSON-RPC methods and the session event types.
//!
//! Two generations of the schema: the SDKs' (`api.schema.json`, `session-events.schema.json`:
//! what today's SDKs send) and the original CLI's own, newer one (`cli-1.0.102/`), which adds
//! methods, event types and definitions. The SDKs' win where both have a name, so what an SDK
//! sends always parses; the newer files only supply what the SDKs' lack, plus the properties of
//! a shared definition the allowlist adopts by name ([`Schemas::adopt_newer`]).

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{Map, Value};

pub const API_FILE: &str = "api.schema.json";
pub const EVENTS_FILE: &str = "session-events.schema.json";
/// The original CLI's own schema, beside the SDKs' (`<schemas>/cli-1.0.102/api.schema.json`).
pub const NEWER_DIR: &str = "cli-1.0.102";

/// Who a method's requests come from / are ordered by; mirrors `protocol::rpc::Scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Server,
    Session,
    Client,
}

impl Scope {
    pub fn rust_path(self) -> &'static str {
        match self {
            Scope::Server => "Scope::Server",
            Scope::Session => "Scope::Session",
            Scope::Client => "Scope::Client",
        }
    }
}

#[derive(Debug, Clone)]
pub struct MethodSpec {
    pub name: String,
    pub scope: Scope,
    pub description: Option<String>,
    /// `None` when the schema says `params: null` or omits it.
    pub params: Option<Value>,
    pub result: Option<Value>,
}

#[derive(Debug, Clone)]
pub struct EventSpec {
    /// The `type` string, e.g. `session.idle`.
    pub kind: String,
    /// The schema of `properties.data` (normally a `$ref`).
    pub data: Value,
    /// `properties.ephemeral` is `{const: true}`: the event is never persisted.
    pub always_ephemeral: bool,
    pub description: Option<String>,
    /// Only the original's newer schema has it (a hand-written extension may differ from it).
    pub newer: bool,
}

#[derive(Clone)]
pub struct Schemas {
    api_defs: Map<String, Value>,
    event_defs: Map<String, Value>,
    /// The newer schema's definitions the SDKs' files do not have.
    newer_defs: Map<String, Value>,
    /// Every definition of the newer schema, for adopting a property of a shared one.
    newer_all: Map<String, Value>,
    pub methods: Vec<MethodSpec>,
    pub events: Vec<EventSpec>,
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("reading schema {} (set SKIPPER_SHARED_DIR to the directory holding schemas/)", path.display())
    })?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn definitions(root: &Value, file: &str) -> Result<Map<String, Value>> {
    root.get("definitions")
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| anyhow!("{file} has no `definitions` object"))
}

/// `#/definitions/Name` -> `Name`. api.schema.json also points into the other file
/// (`session-events.schema.json#/definitions/Name`); with one flat namespace of definitions
/// that is the same `Name`.
pub fn ref_name(reference: &str) -> Result<&str> {
    let local = match reference.split_once('#') {
        Some((file, local)) if file.is_empty() || file == API_FILE || file == EVENTS_FILE => local,
        _ => bail!("unsupported $ref `{reference}` (only refs into the two schema files are handled)"),
    };
    local
        .strip_prefix("/definitions/")
        .ok_or_else(|| anyhow!("unsupported $ref `{reference}` (only .../definitions/<Name>)"))
}

/// The definition a schema node points at, if it is a `$ref`.
pub fn as_ref(schema: &Value) -> Result<Option<&str>> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => ref_name(r).map(Some),
        None => Ok(None),
    }
}

/// The whole event union, where a method's params or result carry events, stays JSON
/// (`serde_json::Value`): events are typed once, by the generated `SessionEvent` of the events
/// schema and `protocol::event::Event`; a second typed union of every event would double the
/// generated code for a field that only passes events through.
fn open_event_union(schema: &mut Value) {
    const UNION: &str = "session-events.schema.json#/definitions/SessionEvent";
    match schema {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(UNION) {
                map.remove("$ref");
                return;
            }
            map.values_mut().for_each(open_event_union);
        }
        Value::Array(items) => items.iter_mut().for_each(open_event_union),
        _ => {}
    }
}

pub fn description(schema: &Value) -> Option<String> {
    schema.get("description").and_then(Value::as_str).map(str::to_owned)
}

impl Schemas {
    pub fn load(dir: &Path) -> Result<Self> {
        let mut api = read_json(&dir.join(API_FILE))?;
        let events = read_json(&dir.join(EVENTS_FILE))?;
        open_event_union(&mut api);
        let mut newer = read_json(&dir.join(NEWER_DIR).join(API_FILE))?;
        open_event_union(&mut newer);
        let newer_events = read_json(&dir.join(NEWER_DIR).join(EVENTS_FILE))?;
        Self::from_values(&api, &events)?.with_newer(&newer, Some(&newer_events))
    }

    /// Adds what the newer schema has and the SDKs' lacks: its methods and event types not
    /// already known by name, and its definitions not already defined.
    pub fn with_newer(mut self, api: &Value, events: Option<&Value>) -> Result<Self> {
        let mut methods = Vec::new();
        collect_all_methods(api, &mut methods)?;
        let known: std::collections::BTreeSet<String> = self.methods.iter().map(|m| m.name.clone()).collect();
        self.methods.extend(methods.into_iter().filter(|m| !known.contains(&m.name)));
        let mut defs = definitions(api, API_FILE)?;
        if let Some(events) = events {
            defs.extend(definitions(events, EVENTS_FILE)?);
        }
        for (name, def) in &defs {
            if !self.api_defs.contains_key(name) && !self.event_defs.contains_key(name) {
                self.newer_defs.insert(name.clone(), def.clone());
            }
        }
        if let Some(events) = events {
            let known: std::collections::BTreeSet<String> = self.events.iter().map(|e| e.kind.clone()).collect();
            let newer = collect_events(&defs, events)?;
            self.events
                .extend(newer.into_iter().filter(|e| !known.contains(&e.kind)).map(|e| EventSpec { newer: true, ..e }));
        }
        self.newer_all = defs;
        Ok(self)
    }

    /// Takes over `Type.property` entries from the newer schema into the SDKs' definition of
    /// `Type`, as optional properties: fields the original sends that today's SDKs do not know
    /// yet (an SDK ignores them, so adding them breaks no client).
    pub fn adopt_newer(&mut self, names: &[String]) -> Result<()> {
        for entry in names {
            let (ty, prop) = entry
                .split_once('.')
                .ok_or_else(|| anyhow!("allowlist [newer] entry `{entry}` is not `Type.property`"))?;
            let newer =
                self.newer_all.get(ty).and_then(|d| d.pointer(&format!("/properties/{prop}"))).cloned().ok_or_else(
                    || anyhow!("allowlist [newer] names `{entry}`, which the newer schema does not define"),
                )?;
            let mut adopted = false;
            for defs in [&mut self.api_defs, &mut self.event_defs] {
                let Some(props) = defs.get_mut(ty).and_then(|d| d.get_mut("properties")).and_then(Value::as_object_mut)
                else {
                    continue;
                };
                if props.contains_key(prop) {
                    bail!("allowlist [newer] names `{entry}`, which the SDKs' schema already has");
                }
                props.insert(prop.to_owned(), newer.clone());
                adopted = true;
            }
            if !adopted {
                bail!("allowlist [newer] names `{entry}`, but `{ty}` is not a definition both schemas have");
            }
        }
        Ok(())
    }

    pub fn from_values(api: &Value, events: &Value) -> Result<Self> {
        let api_defs = definitions(api, API_FILE)?;
        let event_defs = definitions(events, EVENTS_FILE)?;
        let mut methods = Vec::new();
        collect_all_methods(api, &mut methods)?;
        let events = collect_events(&event_defs, events)?;
        Ok(Schemas { api_defs, event_defs, newer_defs: Map::new(), newer_all: Map::new(), methods, events })
    }

    /// A definition by name, from either file (api first; the shared names are identical,
    /// which [`Schemas::check_shared_definition`] verifies for everything generated).
    pub fn def(&self, name: &str) -> Option<&Value> {
        self.api_defs.get(name).or_else(|| self.event_defs.get(name)).or_else(|| self.newer_defs.get(name))
    }

    pub fn def_or_err(&self, name: &str) -> Result<&Value> {
        self.def(name).ok_or_else(|| anyhow!("$ref to `{name}`, which neither schema defines"))
    }

    pub fn is_def(&self, name: &str) -> bool {
        self.def(name).is_some()
    }

    /// Every definition name of both files, for reserving them in the type namespace.
    pub fn all_def_names(&self) -> impl Iterator<Item = &String> {
        self.api_defs.keys().chain(self.event_defs.keys()).chain(self.newer_defs.keys())
    }

    /// One flat namespace only works if a name defined in both files means the same thing.
    pub fn check_shared_definition(&self, name: &str) -> Result<()> {
        if let (Some(a), Some(e)) = (self.api_defs.get(name), self.event_defs.get(name)) {
            if strip_docs(a) != strip_docs(e) {
                bail!(
                    "definition `{name}` differs between {API_FILE} and {EVENTS_FILE}; \
                     the generator assumes one flat namespace of types"
                );
            }
        }
        Ok(())
    }

    pub fn method(&self, name: &str) -> Option<&MethodSpec> {
        self.methods.iter().find(|m| m.name == name)
    }

    pub fn event(&self, kind: &str) -> Option<&EventSpec> {
        self.events.iter().find(|e| e.kind == kind)
    }
}

/// The event types of an events schema whose definitions are `defs`.
fn collect_events(defs: &Map<String, Value>, root: &Value) -> Result<Vec<EventSpec>> {
    let root_def = as_ref(root)?.ok_or_else(|| anyhow!("{EVENTS_FILE}: root is not a $ref to the event union"))?;
    let union = defs
        .get(root_def)
        .and_then(|d| d.get("anyOf"))
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("{EVENTS_FILE}: `{root_def}` is not an anyOf of events"))?;
    let mut out = Vec::new();
    for branch in union {
        let name = as_ref(branch)?.ok_or_else(|| anyhow!("{EVENTS_FILE}: `{root_def}` has an inline branch"))?;
        let def = defs.get(name).ok_or_else(|| anyhow!("{EVENTS_FILE}: missing event definition `{name}`"))?;
        let props = def.get("properties");
        let kind = props
            .and_then(|p| p.pointer("/type/const"))
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("event `{name}` has no properties.type.const"))?;
        let data = props
            .and_then(|p| p.get("data"))
            .cloned()
            .ok_or_else(|| anyhow!("event `{name}` has no properties.data"))?;
        let always_ephemeral = props.and_then(|p| p.pointer("/ephemeral/const")).and_then(Value::as_bool) == Some(true);
        out.push(EventSpec {
            kind: kind.to_owned(),
            description: description(&data).or_else(|| description(def)),
            data,
            always_ephemeral,
            newer: false,
        });
    }
    Ok(out)
}

/// Every method of an api schema, by the group it is in.
fn collect_all_methods(api: &Value, out: &mut Vec<MethodSpec>) -> Result<()> {
    for (group, scope) in [
        ("server", Scope::Server),
        ("session", Scope::Session),
        ("clientSession", Scope::Client),
        ("clientGlobal", Scope::Client),
    ] {
        if let Some(node) = api.get(group) {
            collect_methods(node, scope, out)?;
        }
    }
    Ok(())
}

/// Method groups nest objects (`session.permissions.setApproveAll`); leaves carry `rpcMethod`.
fn collect_methods(node: &Value, scope: Scope, out: &mut Vec<MethodSpec>) -> Result<()> {
    let Some(obj) = node.as_object() else {
        return Ok(());
    };
    if let Some(name) = obj.get("rpcMethod").and_then(Value::as_str) {
        let non_null = |key: &str| obj.get(key).filter(|v| !v.is_null()).cloned();
        out.push(MethodSpec {
            name: name.to_owned(),
            scope,
            description: description(node),
            params: non_null("params"),
            result: non_null("result"),
        });
        return Ok(());
    }
    for child in obj.values() {
        collect_methods(child, scope, out)?;
    }
    Ok(())
}

/// A schema without its documentation keys, for structural comparison. (The shared
/// definitions differ only in `description`, `title` and per-value `x-enumDescriptions`.)
pub fn strip_docs(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "description" | "title" | "x-enumDescriptions"))
                .map(|(k, v)| (k.clone(), strip_docs(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_docs).collect()),
        other => other.clone(),
    }
}
