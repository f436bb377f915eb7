//! `types.rs`: every generated struct and enum, sorted by name (adding a type to the
//! allowlist then only inserts lines instead of moving existing ones).

use std::fmt::Write as _;

use super::text::{lit, HEADER};
use crate::docs::{render, render_opt};
use crate::mapper::Model;
use crate::model::{Alias, Item, Presence, StringEnum, Struct, Tagged, Untagged, ValueUse};

pub fn emit(model: &Model) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//! Structs and enums for the schema definitions reachable from the allowlist, sorted by
//! name. A type named after a definition is that definition; other names are made up for
//! inline schemas (`<Parent><Field>`, `<Method>Params`).

#![allow(clippy::large_enum_variant, clippy::enum_variant_names)]

use serde::{Deserialize, Serialize};
",
    );
    for item in model.items.values() {
        out.push('\n');
        match item {
            Item::Struct(s) => emit_struct(&mut out, s),
            Item::StringEnum(e) => emit_string_enum(&mut out, e),
            Item::Tagged(t) => emit_tagged(&mut out, t),
            Item::Untagged(u) => emit_untagged(&mut out, u),
            Item::Alias(a) => emit_alias(&mut out, a),
        }
    }
    emit_value_uses(&mut out, model);
    out
}

fn emit_struct(out: &mut String, s: &Struct) {
    out.push_str(&render_opt(s.doc.as_deref(), ""));
    let default = if s.default { "Default, " } else { "" };
    let _ = writeln!(out, "#[derive(Debug, Clone, {default}PartialEq, Serialize, Deserialize)]");
    if s.fields.is_empty() {
        let _ = writeln!(out, "pub struct {} {{}}", s.name);
        return;
    }
    let _ = writeln!(out, "pub struct {} {{", s.name);
    for f in &s.fields {
        out.push_str(&render_opt(f.doc.as_deref(), "    "));
        let mut attrs = Vec::new();
        // Raw identifiers (`r#type`) get an explicit rename too, for the reader.
        if f.ident != f.wire {
            attrs.push(format!("rename = {}", lit(&f.wire)));
        }
        if f.presence == Presence::Optional {
            attrs.push("default, skip_serializing_if = \"Option::is_none\"".into());
        }
        if f.lenient {
            attrs.push("deserialize_with = \"crate::nullable::lenient\"".into());
        }
        if f.presence == Presence::RequiredNullable {
            // Serde lets a missing `Option` field default to `None`; the schema requires it.
            attrs.push("deserialize_with = \"crate::nullable::required\"".into());
        }
        if !attrs.is_empty() {
            let _ = writeln!(out, "    #[serde({})]", attrs.join(", "));
        }
        let _ = writeln!(out, "    pub {}: {},", f.ident, f.ty.render(""));
    }
    out.push_str("}\n");
    if !s.default {
        emit_constructor(out, s);
    }
}

/// A struct without `Default` (a required field has no default value) gets `new` taking its
/// required fields, so building one never means spelling out every optional field.
fn emit_constructor(out: &mut String, s: &Struct) {
    let required: Vec<_> = s.fields.iter().filter(|f| f.presence != Presence::Optional).collect();
    let params: Vec<String> = required.iter().map(|f| format!("{}: {}", f.ident, f.ty.render(""))).collect();
    let _ = writeln!(out, "\nimpl {} {{", s.name);
    out.push_str("    /// The required fields; every optional one is `None`.\n");
    if params.len() > 3 {
        out.push_str("    #[allow(clippy::too_many_arguments)]\n");
    }
    let _ = writeln!(out, "    pub fn new({}) -> Self {{", params.join(", "));
    out.push_str("        Self {\n");
    for f in &s.fields {
        if f.presence == Presence::Optional {
            let _ = writeln!(out, "            {}: None,", f.ident);
        } else {
            let _ = writeln!(out, "            {},", f.ident);
        }
    }
    out.push_str("        }\n    }\n}\n");
}

fn emit_string_enum(out: &mut String, e: &StringEnum) {
    out.push_str(&render_opt(e.doc.as_deref(), ""));
    out.push_str("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]\n");
    let _ = writeln!(out, "pub enum {} {{", e.name);
    for v in &e.values {
        out.push_str(&render_opt(v.doc.as_deref(), "    "));
        let _ = writeln!(out, "    #[serde(rename = {})]", lit(&v.wire));
        let _ = writeln!(out, "    {},", v.ident);
    }
    out.push_str("}\n\n");
    let _ = writeln!(out, "impl {} {{", e.name);
    out.push_str("    /// Every value, in schema order.\n");
    let all: Vec<String> = e.values.iter().map(|v| format!("Self::{}", v.ident)).collect();
    let one_line = format!("    pub const ALL: &'static [Self] = &[{}];", all.join(", "));
    if one_line.len() <= 100 {
        let _ = writeln!(out, "{one_line}\n");
    } else {
        out.push_str("    pub const ALL: &'static [Self] = &[\n");
        for a in &all {
            let _ = writeln!(out, "        {a},");
        }
        out.push_str("    ];\n\n");
    }
    out.push_str("    /// The value as it appears on the wire.\n");
    out.push_str("    pub fn as_str(&self) -> &'static str {\n        match self {\n");
    for v in &e.values {
        let _ = writeln!(out, "            Self::{} => {},", v.ident, lit(&v.wire));
    }
    out.push_str("        }\n    }\n}\n\n");
    let _ = writeln!(out, "impl std::fmt::Display for {} {{", e.name);
    out.push_str(
        "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
",
    );
}

fn emit_tagged(out: &mut String, t: &Tagged) {
    out.push_str(&render_opt(t.doc.as_deref(), ""));
    // Deserialize is written out (below) so that errors name the bad field inside a variant.
    out.push_str("#[derive(Debug, Clone, PartialEq, Serialize)]\n");
    let _ = writeln!(out, "#[serde(tag = {})]", lit(&t.tag));
    let _ = writeln!(out, "pub enum {} {{", t.name);
    for v in &t.variants {
        out.push_str(&render_opt(v.doc.as_deref(), "    "));
        let _ = writeln!(out, "    #[serde(rename = {})]", lit(&v.wire));
        match &v.payload {
            Some(p) => {
                let _ = writeln!(out, "    {}({}),", v.ident, p.render(""));
            }
            None => {
                let _ = writeln!(out, "    {},", v.ident);
            }
        }
    }
    out.push_str("}\n\n");
    let _ = writeln!(out, "impl {} {{", t.name);
    let _ = writeln!(out, "    /// The `{}` discriminator of this value.", t.tag);
    out.push_str("    pub fn tag(&self) -> &'static str {\n        match self {\n");
    for v in &t.variants {
        let pattern = if v.payload.is_some() { "(_)" } else { "" };
        let _ = writeln!(out, "            Self::{}{pattern} => {},", v.ident, lit(&v.wire));
    }
    out.push_str("        }\n    }\n}\n\n");
    emit_tagged_deserialize(out, t);
}

fn emit_tagged_deserialize(out: &mut String, t: &Tagged) {
    let _ = writeln!(out, "impl<'de> Deserialize<'de> for {} {{", t.name);
    out.push_str("    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {\n");
    let _ = writeln!(out, "        let (kind, _rest) = crate::tagged::split(d, {})?;", lit(&t.tag));
    out.push_str("        match kind.as_str() {\n");
    for v in &t.variants {
        match &v.payload {
            Some(_) => {
                let _ = writeln!(
                    out,
                    "            {} => crate::tagged::variant(_rest).map(Self::{}),",
                    lit(&v.wire),
                    v.ident
                );
            }
            None => {
                let _ = writeln!(out, "            {} => Ok(Self::{}),", lit(&v.wire), v.ident);
            }
        }
    }
    let names: Vec<String> = t.variants.iter().map(|v| lit(&v.wire)).collect();
    let _ =
        writeln!(out, "            other => Err(serde::de::Error::unknown_variant(other, &[{}])),", names.join(", "));
    out.push_str("        }\n    }\n}\n");
}

fn emit_untagged(out: &mut String, u: &Untagged) {
    if let Some(doc) = &u.doc {
        out.push_str(&render(doc, ""));
        out.push_str("///\n");
    }
    out.push_str("/// Untagged: the variants are tried in order.\n");
    out.push_str("#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]\n");
    out.push_str("#[serde(untagged)]\n");
    let _ = writeln!(out, "pub enum {} {{", u.name);
    for v in &u.variants {
        out.push_str(&render_opt(v.doc.as_deref(), "    "));
        let _ = writeln!(out, "    {}({}),", v.ident, v.ty.render(""));
    }
    out.push_str("}\n");
}

fn emit_alias(out: &mut String, a: &Alias) {
    out.push_str(&render_opt(a.doc.as_deref(), ""));
    let _ = writeln!(out, "pub type {} = {};", a.name, a.ty.render(""));
}

fn emit_value_list(out: &mut String, title: &str, uses: &[ValueUse]) {
    out.push_str(&format!("//\n// {title}:\n"));
    if uses.is_empty() {
        out.push_str("// (none)\n");
    }
    for u in uses {
        let _ = writeln!(out, "// - {}: {}", u.site, u.reason);
    }
}

/// The closing comment listing every `serde_json::Value` in this file and why.
fn emit_value_uses(out: &mut String, model: &Model) {
    out.push_str("\n// serde_json::Value in this file\n");
    emit_value_list(out, "Fallbacks (the schema construct has no better mapping)", &model.fallbacks);
    emit_value_list(out, "Open by the schema (no type: any JSON value)", &model.opaque);
}
