//! JSON Schema -> [`Item`]s. Starting from the allowlist's roots, definitions are mapped as
//! they are reached (a work queue), so exactly the transitive closure gets generated.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use anyhow::{bail, Result};
use serde_json::Value;

use crate::allowlist::{Allowlist, Ephemeral};
use crate::model::{
    Alias, EnumValue, Field, Item, Presence, StringEnum, Struct, Tagged, TaggedVariant, Ty, Untagged, UntaggedVariant,
    ValueUse,
};
use crate::naming::{field_ident, type_ident, upper_camel, LocalNames, TypeNames};
use crate::schema::{self, as_ref, description, strip_docs, Schemas, Scope};
use crate::unions;

/// A method descriptor to emit.
pub struct MethodOut {
    pub name: String,
    pub ident: String,
    pub scope: Scope,
    pub doc: Option<String>,
    /// `None`: the method takes no params (`crate::rpc::NoParams`).
    pub params: Option<Ty>,
    pub result: Ty,
}

/// A `SessionEvent` variant to emit.
pub struct EventOut {
    pub kind: String,
    pub ident: String,
    pub data: Ty,
    pub always_ephemeral: bool,
    pub doc: Option<String>,
}

/// Everything the emitters need, plus what the summary reports.
pub struct Model {
    pub items: BTreeMap<String, Item>,
    pub methods: Vec<MethodOut>,
    pub events: Vec<EventOut>,
    /// `serde_json::Value` used because the mapping could not do better.
    pub fallbacks: Vec<ValueUse>,
    /// `serde_json::Value` used because the schema leaves the value open (no type).
    pub opaque: Vec<ValueUse>,
    pub collisions: Vec<String>,
    pub notes: Vec<String>,
}

/// Where a schema sits: the name an inline type there would get, and a path for reports.
#[derive(Clone)]
struct Site {
    /// Name for a type made for this schema (`<Parent><Field>`), or the definition's name.
    name: String,
    /// `Type.field`, for reports.
    path: String,
    /// The schema is the definition `name` itself (so it must be named exactly that).
    is_def: bool,
}

impl Site {
    fn def(name: &str) -> Site {
        Site { name: name.to_owned(), path: name.to_owned(), is_def: true }
    }

    fn inline(name: String, path: String) -> Site {
        Site { name, path, is_def: false }
    }

    /// The site of a property of the struct `parent`.
    fn field(parent: &str, prop: &str) -> Site {
        Site::inline(format!("{parent}{}", upper_camel(prop)), format!("{parent}.{prop}"))
    }
}

/// A mapped schema: its Rust type, and whether `null` is also allowed.
struct Mapped {
    ty: Ty,
    nullable: bool,
}

impl Mapped {
    fn plain(ty: Ty) -> Mapped {
        Mapped { ty, nullable: false }
    }

    /// The type where nullability must be in the type itself (array items, map values...).
    fn into_ty(self) -> Ty {
        if self.nullable {
            Ty::option(self.ty)
        } else {
            self.ty
        }
    }
}

struct Mapper<'s> {
    schemas: &'s Schemas,
    names: TypeNames,
    items: BTreeMap<String, Item>,
    /// Definitions generated under their own name (queued or done).
    wanted: BTreeSet<String>,
    queue: VecDeque<String>,
    /// Definitions referenced other than as a tagged-union branch.
    direct: BTreeSet<String>,
    /// (definition, tag) -> name of its variant payload struct (`None`: unit variant).
    payloads: BTreeMap<(String, String), Option<String>>,
    fallbacks: Vec<ValueUse>,
    opaque: Vec<ValueUse>,
    notes: Vec<String>,
    /// `Type.field`s generated optional though the schemas require them, and those met.
    relaxed: BTreeSet<String>,
    relaxed_used: BTreeSet<String>,
    /// Optional `Type.field`s that read a value they do not know as absent, and those met.
    lenient: BTreeSet<String>,
    lenient_used: BTreeSet<String>,
    /// `Type.field`s generated as secrets, and those met.
    secret: BTreeSet<String>,
    secret_used: BTreeSet<String>,
    /// `Type.field`s generated nullable though the schemas say otherwise, and those met.
    nullable: BTreeSet<String>,
    nullable_used: BTreeSet<String>,
}

pub fn build(schemas: &Schemas, allow: &Allowlist) -> Result<Model> {
    let roots = roots(schemas, allow)?;
    let direct = scan_direct_refs(schemas, &roots)?;
    let mut m = Mapper {
        schemas,
        names: TypeNames::new(schemas.all_def_names()),
        items: BTreeMap::new(),
        wanted: BTreeSet::new(),
        queue: VecDeque::new(),
        direct,
        payloads: BTreeMap::new(),
        fallbacks: Vec::new(),
        opaque: Vec::new(),
        notes: Vec::new(),
        relaxed: allow.relax.optional.iter().cloned().collect(),
        relaxed_used: BTreeSet::new(),
        lenient: allow.relax.lenient.iter().cloned().collect(),
        lenient_used: BTreeSet::new(),
        secret: allow.relax.secret.iter().cloned().collect(),
        secret_used: BTreeSet::new(),
        nullable: allow.relax.nullable.iter().cloned().collect(),
        nullable_used: BTreeSet::new(),
    };

    let mut methods = Vec::new();
    for name in &allow.methods.names {
        let spec = schemas.method(name).expect("checked by roots()");
        let ident = upper_camel(name);
        let params = match &spec.params {
            Some(p) => {
                let site = Site::inline(format!("{ident}Params"), format!("method `{name}` params"));
                Some(m.map(p, &site)?.into_ty())
            }
            None => None,
        };
        let result = match &spec.result {
            Some(r) => {
                let site = Site::inline(format!("{ident}Result"), format!("method `{name}` result"));
                m.map(r, &site)?.into_ty()
            }
            None => Ty::Unit,
        };
        methods.push(MethodOut {
            name: name.clone(),
            ident,
            scope: spec.scope,
            doc: spec.description.clone(),
            params,
            result,
        });
    }

    for name in &allow.types.names {
        m.want_def(name)?;
    }

    let mut events = Vec::new();
    let mut event_idents = LocalNames::default();
    event_idents.reserve("Other");
    for kind in &allow.events.names {
        let spec = schemas.event(kind).expect("checked by roots()");
        let ident = event_idents.unique(type_ident(kind));
        let site = Site::inline(format!("{ident}Data"), format!("event `{kind}` data"));
        let data = m.map(&spec.data, &site)?.into_ty();
        events.push(EventOut {
            kind: kind.clone(),
            ident,
            data,
            always_ephemeral: spec.always_ephemeral,
            doc: spec.description.clone(),
        });
    }
    for (kind, ext) in &allow.events.extensions {
        events.push(EventOut {
            kind: kind.clone(),
            ident: event_idents.unique(type_ident(kind)),
            data: Ty::External(ext.data.clone()),
            always_ephemeral: ext.ephemeral == Ephemeral::Always,
            doc: Some("An event type the schema lacks; its payload is written by hand.".into()),
        });
    }

    while let Some(name) = m.queue.pop_front() {
        m.map_def(&name)?;
    }

    if let Some(stale) = m.lenient.difference(&m.lenient_used).next() {
        bail!("allowlist [relax] lenient names `{stale}`, which is not an optional field of a generated struct");
    }
    if let Some(stale) = m.relaxed.difference(&m.relaxed_used).next() {
        bail!("allowlist [relax] names `{stale}`, which is not a required field of a generated struct");
    }
    if let Some(stale) = m.nullable.difference(&m.nullable_used).next() {
        bail!("allowlist [relax] nullable names `{stale}`, which is not a required field of a generated struct");
    }
    if let Some(stale) = m.secret.difference(&m.secret_used).next() {
        bail!("allowlist [relax] secret names `{stale}`, which is not a string field of a generated struct");
    }

    // Sorted, so the lists in types.rs only change where the model does.
    m.fallbacks.sort();
    m.opaque.sort();
    Ok(Model {
        items: m.items,
        methods,
        events,
        fallbacks: m.fallbacks,
        opaque: m.opaque,
        collisions: m.names.collisions,
        notes: m.notes,
    })
}

/// The schemas the allowlist starts from; fails on names the schemas lack.
fn roots(schemas: &Schemas, allow: &Allowlist) -> Result<Vec<Value>> {
    let mut roots = Vec::new();
    for name in &allow.methods.names {
        let Some(spec) = schemas.method(name) else {
            bail!("allowlist names method `{name}` which is not in {}", schema::API_FILE);
        };
        roots.extend(spec.params.iter().chain(&spec.result).cloned());
    }
    for name in &allow.types.names {
        if !schemas.is_def(name) {
            bail!(
                "allowlist names type `{name}` which is not a definition in {} or {}",
                schema::API_FILE,
                schema::EVENTS_FILE
            );
        }
        roots.push(serde_json::json!({ "$ref": format!("#/definitions/{name}") }));
    }
    for kind in &allow.events.names {
        let Some(spec) = schemas.event(kind) else {
            bail!("allowlist names event `{kind}` which is not in {}", schema::EVENTS_FILE);
        };
        roots.push(spec.data.clone());
    }
    // A hand-written payload may stand in for one only the newer schema defines (Skipper's
    // `session.usage_record` predates the original's, which holds other fields).
    for kind in allow.events.extensions.keys() {
        if schemas.event(kind).is_some_and(|e| !e.newer) {
            bail!(
                "allowlist lists `{kind}` under [events.extensions], but {} now defines it: \
                 move it to [events] names and drop the hand-written payload",
                schema::EVENTS_FILE
            );
        }
    }
    Ok(roots)
}

/// Pre-pass over the closure: which definitions are referenced *directly* (not only as a
/// branch of a tagged union). A tagged-only definition becomes a variant payload under its
/// own name without the discriminator; a direct one keeps its discriminator field, and its
/// payload struct gets another name.
fn scan_direct_refs(schemas: &Schemas, roots: &[Value]) -> Result<BTreeSet<String>> {
    fn scan(
        schemas: &Schemas,
        s: &Value,
        tagged_branch: bool,
        visited: &mut BTreeSet<String>,
        direct: &mut BTreeSet<String>,
    ) -> Result<()> {
        if let Some(name) = as_ref(s)?.or_else(|| inline_copy_of(schemas, s)) {
            if !tagged_branch {
                direct.insert(name.to_owned());
            }
            if visited.insert(name.to_owned()) {
                scan(schemas, schemas.def_or_err(name)?, false, visited, direct)?;
            }
            return Ok(());
        }
        if let Some(branches) = unions::union_branches(s) {
            let split = unions::split(branches);
            let tagged = unions::tag_property(schemas, &split.effective)?.is_some();
            for b in split.effective {
                scan(schemas, b, tagged, visited, direct)?;
            }
        }
        for b in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            scan(schemas, b, false, visited, direct)?;
        }
        for p in s.get("properties").and_then(Value::as_object).into_iter().flatten() {
            scan(schemas, p.1, false, visited, direct)?;
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub) = s.get(key).filter(|v| v.is_object()) {
                scan(schemas, sub, false, visited, direct)?;
            }
        }
        Ok(())
    }
    let mut visited = BTreeSet::new();
    let mut direct = BTreeSet::new();
    for r in roots {
        scan(schemas, r, false, &mut visited, &mut direct)?;
    }
    Ok(direct)
}

/// An inline schema whose `title` names a definition with the same structure is a copy of
/// that definition (and is generated as a reference to it).
fn inline_copy_of<'s>(schemas: &Schemas, s: &'s Value) -> Option<&'s str> {
    let title = s.get("title").and_then(Value::as_str)?;
    let def = schemas.def(title)?;
    (!std::ptr::eq(def, s) && strip_docs(def) == strip_docs(s)).then_some(title)
}

/// Whether a schema's alternatives include `null` (`anyOf`/`oneOf` with `{type: null}`, or a
/// type list naming `null`).
fn admits_null(s: &Value) -> bool {
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    let in_union = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| s.get(*k).and_then(Value::as_array))
        .any(|branches| branches.iter().any(is_null));
    let in_types = s.get("type").and_then(Value::as_array).is_some_and(|t| t.iter().any(|t| t == "null"));
    in_union || in_types
}

/// No keyword that constrains the value: `{}`, `{description}`, `{x-opaque-json: true}`.
fn is_unconstrained(s: &Value) -> bool {
    const KEYWORDS: &[&str] = &[
        "type",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "properties",
        "items",
        "additionalProperties",
        "not",
    ];
    match s {
        Value::Bool(true) => true,
        Value::Object(m) => !KEYWORDS.iter().any(|k| m.contains_key(*k)),
        _ => false,
    }
}

/// `integer` is `u64` when the schema rules out negatives.
fn non_negative(s: &Value) -> bool {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64).is_some_and(|v| v >= 0.0);
    bound("minimum") || bound("exclusiveMinimum")
}

impl<'s> Mapper<'s> {
    /// A definition is needed under its own name: queue it once.
    fn want_def(&mut self, name: &str) -> Result<Ty> {
        if self.wanted.insert(name.to_owned()) {
            self.schemas.check_shared_definition(name)?;
            self.names.claim_definition(name);
            self.queue.push_back(name.to_owned());
        }
        Ok(Ty::Named(name.to_owned()))
    }

    fn map_def(&mut self, name: &str) -> Result<()> {
        let def = self.schemas.def_or_err(name)?;
        let mapped = self.map(def, &Site::def(name))?;
        if !self.items.contains_key(name) {
            // Not a struct/enum (e.g. an array or a primitive): keep the name as an alias.
            self.insert(Item::Alias(Alias { name: name.to_owned(), doc: description(def), ty: mapped.into_ty() }))?;
        }
        Ok(())
    }

    fn insert(&mut self, item: Item) -> Result<()> {
        let name = item.name().to_owned();
        if self.items.insert(name.clone(), item).is_some() {
            bail!("internal error: type `{name}` generated twice");
        }
        Ok(())
    }

    /// The name of the type generated for `s` at `site`: the definition's, the schema's
    /// `title` if free, else the structural name.
    fn claim_name(&mut self, s: &Value, site: &Site) -> String {
        if site.is_def {
            return site.name.clone();
        }
        let title = s.get("title").and_then(Value::as_str);
        self.names.claim_inline(title, &site.name, &site.path)
    }

    fn fallback(&mut self, site: &Site, reason: impl Into<String>) -> Mapped {
        self.fallbacks.push(ValueUse { site: site.path.clone(), reason: reason.into() });
        Mapped::plain(Ty::Value)
    }

    fn map(&mut self, s: &Value, site: &Site) -> Result<Mapped> {
        if let Some(name) = as_ref(s)? {
            // A definition that is `anyOf: [..., {type: null}]` admits null wherever it is used.
            let nullable = self.schemas.def(name).is_some_and(admits_null);
            return Ok(Mapped { ty: self.want_def(name)?, nullable });
        }
        if !site.is_def {
            if let Some(name) = inline_copy_of(self.schemas, s) {
                return Ok(Mapped::plain(self.want_def(name)?));
            }
        }
        if let Some(branches) = unions::union_branches(s) {
            return self.map_union(s, branches, site);
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            return match all.as_slice() {
                [one] => self.map(one, site),
                _ => Ok(self.fallback(site, "allOf with several schemas")),
            };
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            return self.map_enum(s, values, site);
        }
        if let Some(c) = s.get("const") {
            // Outside a tagged union a const is just a value of its type.
            return Ok(match c {
                Value::String(_) => Mapped::plain(Ty::String),
                Value::Bool(_) => Mapped::plain(Ty::Bool),
                Value::Number(n) if n.is_f64() => Mapped::plain(Ty::F64),
                Value::Number(n) if n.is_u64() => Mapped::plain(Ty::U64),
                Value::Number(_) => Mapped::plain(Ty::I64),
                Value::Null => Mapped::plain(Ty::Unit),
                _ => self.fallback(site, "const of an array or object"),
            });
        }
        match s.get("type") {
            Some(Value::String(t)) => self.map_typed(s, t, site),
            Some(Value::Array(types)) => self.map_type_list(s, types, site),
            Some(_) => Ok(self.fallback(site, "`type` is neither a string nor an array")),
            None if s.get("properties").is_some() => self.map_object(s, site),
            None if s.get("not").is_some() => Ok(self.fallback(site, "`not` schema")),
            None if is_unconstrained(s) => {
                self.opaque
                    .push(ValueUse { site: site.path.clone(), reason: "no type in the schema (any JSON)".into() });
                Ok(Mapped::plain(Ty::Value))
            }
            None => Ok(self.fallback(site, "schema without a type this generator maps")),
        }
    }

    fn map_typed(&mut self, s: &Value, t: &str, site: &Site) -> Result<Mapped> {
        Ok(match t {
            "string" => Mapped::plain(Ty::String),
            "integer" if non_negative(s) => Mapped::plain(Ty::U64),
            "integer" => Mapped::plain(Ty::I64),
            "number" => Mapped::plain(Ty::F64),
            "boolean" => Mapped::plain(Ty::Bool),
            "null" => Mapped::plain(Ty::Unit),
            "array" => match s.get("items") {
                Some(items) if !is_unconstrained(items) => {
                    Mapped::plain(Ty::Vec(Box::new(self.map(items, site)?.into_ty())))
                }
                _ => Mapped::plain(Ty::Vec(Box::new(Ty::Value))),
            },
            "object" => return self.map_object(s, site),
            other => self.fallback(site, format!("unknown type `{other}`")),
        })
    }

    /// `type: ["string", "null"]` is a nullable string; several non-null types are a union.
    fn map_type_list(&mut self, s: &Value, types: &[Value], site: &Site) -> Result<Mapped> {
        let nullable = types.iter().any(|t| t.as_str() == Some("null"));
        let rest: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .map(|t| {
                let mut branch = s.clone();
                if let Some(obj) = branch.as_object_mut() {
                    obj.insert("type".into(), t.clone());
                    obj.remove("description");
                }
                branch
            })
            .collect();
        let mapped = match rest.as_slice() {
            [] => Mapped::plain(Ty::Unit),
            [one] => self.map(one, site)?,
            _ => {
                let mut union = s.clone();
                if let Some(obj) = union.as_object_mut() {
                    obj.remove("type");
                    obj.insert("anyOf".into(), Value::Array(rest.clone()));
                }
                return self.map(&union, site).map(|m| Mapped { nullable: m.nullable || nullable, ty: m.ty });
            }
        };
        Ok(Mapped { ty: mapped.ty, nullable: nullable || mapped.nullable })
    }

    fn map_object(&mut self, s: &Value, site: &Site) -> Result<Mapped> {
        let additional = s.get("additionalProperties");
        // `properties: {}` declares nothing: an open object is a map (an empty struct would
        // drop everything a client sends in it).
        let no_properties = s.get("properties").is_none_or(|p| p.as_object().is_some_and(|m| m.is_empty()));
        if no_properties && additional != Some(&Value::Bool(false)) {
            return Ok(Mapped::plain(match additional {
                Some(v) if v.is_object() && !is_unconstrained(v) => Ty::Map(Box::new(self.map(v, site)?.into_ty())),
                _ => Ty::JsonMap,
            }));
        }
        let name = self.claim_name(s, site);
        let item = self.build_struct(&name, s, None)?;
        self.insert(Item::Struct(item))?;
        Ok(Mapped::plain(Ty::Named(name)))
    }

    /// A struct for an object schema; `skip` leaves out a tagged union's discriminator.
    fn build_struct(&mut self, name: &str, s: &Value, skip: Option<&str>) -> Result<Struct> {
        let required: BTreeSet<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut idents = LocalNames::default();
        let mut fields = Vec::new();
        let props = s.get("properties").and_then(Value::as_object);
        for (prop, ps) in props.into_iter().flatten() {
            if Some(prop.as_str()) == skip {
                continue;
            }
            let mut mapped = self.map(ps, &Site::field(name, prop))?;
            let key = format!("{name}.{prop}");
            if self.secret.contains(&key) && matches!(mapped.ty, Ty::String) {
                self.secret_used.insert(key.clone());
                mapped.ty = Ty::External("crate::secret::SecretString".into());
            }
            if self.nullable.contains(&key) && required.contains(prop.as_str()) {
                self.nullable_used.insert(key.clone());
                mapped.nullable = true;
            }
            let relaxed = self.relaxed.contains(&key) && required.contains(prop.as_str());
            if relaxed {
                self.relaxed_used.insert(key);
            }
            let presence = match (required.contains(prop.as_str()) && !relaxed, mapped.nullable) {
                (true, false) => Presence::Required,
                (true, true) => Presence::RequiredNullable,
                (false, _) => Presence::Optional,
            };
            let ty = match presence {
                Presence::Required => mapped.ty,
                Presence::RequiredNullable | Presence::Optional => Ty::option(mapped.ty),
            };
            let mut doc = description(ps);
            if ps.get("deprecated") == Some(&Value::Bool(true)) {
                doc = Some(format!("{}\n\nDeprecated.", doc.unwrap_or_default()).trim().into());
            }
            let lenient = presence == Presence::Optional && self.lenient.contains(&format!("{name}.{prop}"));
            if lenient {
                self.lenient_used.insert(format!("{name}.{prop}"));
            }
            let ident = idents.unique(field_ident(prop));
            fields.push(Field { ident, wire: prop.clone(), ty, presence, doc, lenient });
        }
        Ok(Struct { name: name.to_owned(), doc: description(s), fields, default: false })
    }

    fn map_enum(&mut self, s: &Value, values: &[Value], site: &Site) -> Result<Mapped> {
        let nullable = values.iter().any(Value::is_null);
        let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        if strings.len() + usize::from(nullable) != values.len() || strings.is_empty() {
            return Ok(self.fallback(site, "enum with non-string values"));
        }
        let name = self.claim_name(s, site);
        let docs = s.get("x-enumDescriptions");
        let mut idents = LocalNames::default();
        let values = strings
            .iter()
            .map(|v| EnumValue {
                ident: idents.unique(type_ident(v)),
                wire: (*v).to_owned(),
                doc: docs.and_then(|d| d.get(*v)).and_then(Value::as_str).map(str::to_owned),
            })
            .collect();
        self.insert(Item::StringEnum(StringEnum { name: name.clone(), doc: description(s), values }))?;
        Ok(Mapped { ty: Ty::Named(name), nullable })
    }

    fn map_union(&mut self, s: &Value, branches: &[Value], site: &Site) -> Result<Mapped> {
        let split = unions::split(branches);
        if split.never > 0 {
            self.notes.push(format!(
                "{}: dropped {} `{{not: {{}}}}` branch(es) of an anyOf (\"or absent\"; absence is handled by Option)",
                site.path, split.never
            ));
        }
        let nullable = split.nullable;
        let effective = split.effective;
        let mapped = match effective.as_slice() {
            [] if nullable => Mapped::plain(Ty::Unit),
            [] => self.fallback(site, "anyOf without any possible branch"),
            [one] => {
                // The union's own documentation belongs to the type made for its one branch.
                let mut branch = (*one).clone();
                if let (Some(obj), Some(d)) = (branch.as_object_mut(), s.get("description")) {
                    if as_ref(one)?.is_none() && !obj.contains_key("description") {
                        obj.insert("description".into(), d.clone());
                    }
                }
                self.map(&branch, site)?
            }
            many => {
                if let Some(tag) = unions::tag_property(self.schemas, many)? {
                    self.map_tagged(s, many, &tag, site)?
                } else if unions::untagged_distinguishable(self.schemas, many)? {
                    self.map_untagged(s, many, site)?
                } else {
                    self.fallback(site, "anyOf whose branches serde cannot tell apart")
                }
            }
        };
        Ok(Mapped { ty: mapped.ty, nullable: nullable || mapped.nullable })
    }

    fn map_tagged(&mut self, s: &Value, branches: &[&Value], tag: &str, site: &Site) -> Result<Mapped> {
        let name = self.claim_name(s, site);
        let mut idents = LocalNames::default();
        let mut variants = Vec::new();
        for branch in branches {
            let (schema, def) = unions::resolve(self.schemas, branch)?;
            let wire = unions::required_const(schema, tag).expect("tag_property checked every branch").to_owned();
            let ident = idents.unique(type_ident(&wire));
            let payload = self.tagged_payload(schema, def, tag, &name, &ident)?;
            variants.push(TaggedVariant {
                doc: description(branch).or_else(|| description(schema)),
                ident,
                wire,
                payload: payload.map(Ty::Named),
            });
        }
        self.insert(Item::Tagged(Tagged { name: name.clone(), doc: description(s), tag: tag.to_owned(), variants }))?;
        Ok(Mapped::plain(Ty::Named(name)))
    }

    /// The struct carried by a tagged variant: the branch minus its discriminator, or `None`
    /// (a unit variant) when the discriminator is all there is.
    fn tagged_payload(
        &mut self,
        schema: &Value,
        def: Option<&str>,
        tag: &str,
        union: &str,
        variant: &str,
    ) -> Result<Option<String>> {
        let has_fields =
            schema.get("properties").and_then(Value::as_object).is_some_and(|p| p.keys().any(|k| k != tag));
        if !has_fields {
            return Ok(None);
        }
        let Some(def) = def else {
            let site = Site::inline(format!("{union}{variant}"), format!("{union}::{variant}"));
            let name = self.claim_name(schema, &site);
            let item = self.build_struct(&name, schema, Some(tag))?;
            self.insert(Item::Struct(item))?;
            return Ok(Some(name));
        };
        let key = (def.to_owned(), tag.to_owned());
        if let Some(done) = self.payloads.get(&key) {
            return Ok(done.clone());
        }
        self.schemas.check_shared_definition(def)?;
        let name = if self.direct.contains(def) {
            // The definition is generated with its discriminator for its direct uses.
            let name = self.names.claim_inline(None, &format!("{def}Payload"), &format!("{union}::{variant}"));
            self.notes.push(format!(
                "`{def}` is both a `{union}` variant and used directly: the variant carries `{name}` (without `{tag}`)"
            ));
            name
        } else {
            self.names.claim_definition(def);
            def.to_owned()
        };
        self.payloads.insert(key, Some(name.clone()));
        let item = self.build_struct(&name, schema, Some(tag))?;
        self.insert(Item::Struct(item))?;
        Ok(Some(name))
    }

    fn map_untagged(&mut self, s: &Value, branches: &[&Value], site: &Site) -> Result<Mapped> {
        let name = self.claim_name(s, site);
        let mut idents = LocalNames::default();
        let mut variants = Vec::new();
        for branch in branches {
            let ident = idents.unique(type_ident(&unions::untagged_variant_name(branch)?));
            let branch_site = Site::inline(format!("{name}{ident}"), format!("{name}::{ident}"));
            let ty = self.map(branch, &branch_site)?.into_ty();
            variants.push(UntaggedVariant { ident, ty, doc: description(branch) });
        }
        self.insert(Item::Untagged(Untagged { name: name.clone(), doc: description(s), variants }))?;
        Ok(Mapped::plain(Ty::Named(name)))
    }
}
