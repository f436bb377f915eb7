//! `methods.rs`: one `RpcMethod` descriptor per allowlisted method (allowlist order).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::text::{lit, HEADER};
use crate::docs::render;
use crate::mapper::Model;
use crate::model::{Item, Presence, Ty};
use crate::schema::Scope;

const PREFIX: &str = "t::";

/// The field holding a required string `sessionId`, if the params type has one (so it can
/// name its session).
fn session_id_field<'m>(model: &'m Model, params: &Ty) -> Option<&'m str> {
    let Ty::Named(name) = params else {
        return None;
    };
    let Some(Item::Struct(s)) = model.items.get(name) else {
        return None;
    };
    s.fields
        .iter()
        .find(|f| f.wire == "sessionId" && f.presence == Presence::Required && f.ty == Ty::String)
        .map(|f| f.ident.as_str())
}

pub fn emit(model: &Model) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//! One [`crate::rpc::RpcMethod`] descriptor per allowlisted JSON-RPC method, and
//! [`crate::rpc::SessionScoped`] for the params of session-scoped methods.

use super::types as t;
",
    );
    let mut session_scoped = BTreeSet::new();
    for m in &model.methods {
        let doc = match &m.doc {
            Some(d) => format!("`{}`: {d}", m.name),
            None => format!("`{}`.", m.name),
        };
        let params = match &m.params {
            Some(p) => p.render(PREFIX),
            None => "crate::rpc::NoParams".into(),
        };
        out.push('\n');
        out.push_str(&render(&doc, ""));
        let _ = write!(
            out,
            "#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct {ident};

impl crate::rpc::RpcMethod for {ident} {{
    const NAME: &'static str = {name};
    const SCOPE: crate::rpc::Scope = crate::rpc::{scope};
    type Params = {params};
    type Result = {result};
}}
",
            ident = m.ident,
            name = lit(&m.name),
            scope = m.scope.rust_path(),
            result = m.result.render(PREFIX),
        );
        if let Some(p) = &m.params {
            if m.scope == Scope::Session {
                if let Some(field) = session_id_field(model, p) {
                    session_scoped.insert((p.render(PREFIX), field));
                }
            }
        }
    }
    for (p, field) in &session_scoped {
        let _ = write!(
            out,
            "\nimpl crate::rpc::SessionScoped for {p} {{
    fn session_id(&self) -> &str {{
        &self.{field}
    }}
}}\n"
        );
    }
    out.push_str("\n/// Every allowlisted method name.\npub const METHOD_NAMES: &[&str] = &[\n");
    for m in &model.methods {
        let _ = writeln!(out, "    {},", lit(&m.name));
    }
    out.push_str("];\n");
    out
}
