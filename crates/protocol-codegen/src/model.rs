//! The intermediate representation between JSON Schema and Rust source: a set of named items
//! (structs, enums, aliases) whose fields refer to each other through [`Ty`].

/// A Rust type expression.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ty {
    String,
    U64,
    I64,
    F64,
    Bool,
    /// `()`: the schema's `{type: null}`.
    Unit,
    /// `serde_json::Value`: anything.
    Value,
    /// `serde_json::Map<String, serde_json::Value>`: an object with unconstrained values.
    JsonMap,
    /// A generated item in `generated::types`.
    Named(String),
    /// A type written by hand elsewhere in the crate (a full path).
    External(String),
    Option(Box<Ty>),
    Vec(Box<Ty>),
    /// `BTreeMap<String, T>`.
    Map(Box<Ty>),
    /// Indirection that breaks a recursive type (see `analysis::box_recursive_fields`).
    Boxed(Box<Ty>),
}

impl Ty {
    pub fn option(inner: Ty) -> Ty {
        Ty::Option(Box::new(inner))
    }

    /// Renders the type; `prefix` qualifies generated names (`""` inside `types.rs`,
    /// `"t::"` in the modules that import it as `t`).
    pub fn render(&self, prefix: &str) -> String {
        match self {
            Ty::String => "String".into(),
            Ty::U64 => "u64".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::Bool => "bool".into(),
            Ty::Unit => "()".into(),
            Ty::Value => "serde_json::Value".into(),
            Ty::JsonMap => "serde_json::Map<String, serde_json::Value>".into(),
            Ty::Named(n) => format!("{prefix}{n}"),
            Ty::External(p) => p.clone(),
            Ty::Option(t) => format!("Option<{}>", t.render(prefix)),
            Ty::Vec(t) => format!("Vec<{}>", t.render(prefix)),
            Ty::Map(t) => format!("std::collections::BTreeMap<String, {}>", t.render(prefix)),
            Ty::Boxed(t) => format!("Box<{}>", t.render(prefix)),
        }
    }

    /// Generated names this type holds *inline* (not behind a Vec, map or Box): the edges
    /// along which a recursive type would have infinite size.
    pub fn inline_names(&self, out: &mut Vec<String>) {
        match self {
            Ty::Named(n) => out.push(n.clone()),
            Ty::Option(t) => t.inline_names(out),
            _ => {}
        }
    }

    /// Wraps the generated type in `Box`, keeping an outer `Option` outside.
    pub fn boxed(self) -> Ty {
        match self {
            Ty::Option(t) => Ty::Option(Box::new(t.boxed())),
            Ty::Boxed(t) => Ty::Boxed(t),
            other => Ty::Boxed(Box::new(other)),
        }
    }
}

/// How a struct field is (de)serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Required, not nullable: `T`.
    Required,
    /// Required but nullable: `Option<T>`, always serialized (`null` when `None`).
    RequiredNullable,
    /// Optional: `Option<T>`, omitted when `None`.
    Optional,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub ident: String,
    pub wire: String,
    /// The full field type (already `Option<...>` for optional/nullable fields).
    pub ty: Ty,
    pub presence: Presence,
    pub doc: Option<String>,
    /// An optional field whose value a reader does not know is read as absent (`[relax]
    /// lenient`).
    pub lenient: bool,
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    pub doc: Option<String>,
    pub fields: Vec<Field>,
    /// Filled in by `analysis::derive_defaults`.
    pub default: bool,
}

#[derive(Debug, Clone)]
pub struct EnumValue {
    pub ident: String,
    pub wire: String,
    pub doc: Option<String>,
}

/// A string enum.
#[derive(Debug, Clone)]
pub struct StringEnum {
    pub name: String,
    pub doc: Option<String>,
    pub values: Vec<EnumValue>,
}

#[derive(Debug, Clone)]
pub struct TaggedVariant {
    pub ident: String,
    /// The discriminator value.
    pub wire: String,
    /// `None`: the branch has nothing but the discriminator (a unit variant).
    pub payload: Option<Ty>,
    pub doc: Option<String>,
}

/// An internally tagged union (`#[serde(tag = "...")]`).
#[derive(Debug, Clone)]
pub struct Tagged {
    pub name: String,
    pub doc: Option<String>,
    pub tag: String,
    pub variants: Vec<TaggedVariant>,
}

#[derive(Debug, Clone)]
pub struct UntaggedVariant {
    pub ident: String,
    pub ty: Ty,
    pub doc: Option<String>,
}

/// A union told apart by shape (`#[serde(untagged)]`); variants are tried in order.
#[derive(Debug, Clone)]
pub struct Untagged {
    pub name: String,
    pub doc: Option<String>,
    pub variants: Vec<UntaggedVariant>,
}

/// A definition that maps to a non-nominal type (`pub type X = Vec<String>;`).
#[derive(Debug, Clone)]
pub struct Alias {
    pub name: String,
    pub doc: Option<String>,
    pub ty: Ty,
}

#[derive(Debug, Clone)]
pub enum Item {
    Struct(Struct),
    StringEnum(StringEnum),
    Tagged(Tagged),
    Untagged(Untagged),
    Alias(Alias),
}

impl Item {
    pub fn name(&self) -> &str {
        match self {
            Item::Struct(s) => &s.name,
            Item::StringEnum(e) => &e.name,
            Item::Tagged(t) => &t.name,
            Item::Untagged(u) => &u.name,
            Item::Alias(a) => &a.name,
        }
    }
}

/// A schema construct mapped to `serde_json::Value`, with where and why (listed at the end of
/// `types.rs` and in the generator's summary).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ValueUse {
    /// `Type.field` (or a method's params/result).
    pub site: String,
    pub reason: String,
}
