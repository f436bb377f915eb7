//! Turning schema names into Rust identifiers, and keeping generated type names unique.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};

/// Keywords that can be used as raw identifiers (`r#type`).
const RAW_OK_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn", "else", "enum",
    "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro", "match", "mod", "move",
    "mut", "override", "priv", "pub", "ref", "return", "static", "struct", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];
/// Keywords that cannot be raw identifiers; they get a `_` suffix instead.
const NON_RAW_KEYWORDS: &[&str] = &["crate", "self", "Self", "super", "_"];

/// Keeps only characters valid in an identifier.
fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// `UpperCamelCase` with `.`, `_`, `-` and camel humps as word breaks:
/// `assistant.message_delta` -> `AssistantMessageDelta`, `approve-for-session` -> `ApproveForSession`.
pub fn upper_camel(s: &str) -> String {
    sanitize(&s.to_upper_camel_case())
}

/// A type or variant name for `raw`: UpperCamel, `V` prefix when it would be empty or start
/// with a digit (`16x16` -> `V16x16`).
pub fn type_ident(raw: &str) -> String {
    let name = upper_camel(raw);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{name}")
    } else {
        name
    }
}

/// A field name for a JSON property: snake_case, raw identifier for keywords.
pub fn field_ident(prop: &str) -> String {
    let mut name = sanitize(&prop.to_snake_case());
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("field_{name}");
    }
    if RAW_OK_KEYWORDS.contains(&name.as_str()) {
        format!("r#{name}")
    } else if NON_RAW_KEYWORDS.contains(&name.as_str()) {
        format!("{name}_")
    } else {
        name
    }
}

/// The identifier without a `r#` prefix (for uniqueness checks and field accessors).
pub fn bare(ident: &str) -> &str {
    ident.strip_prefix("r#").unwrap_or(ident)
}

/// Hands out unique names within one scope (an enum's variants, a struct's fields).
#[derive(Default)]
pub struct LocalNames {
    used: BTreeSet<String>,
}

impl LocalNames {
    pub fn reserve(&mut self, name: &str) {
        self.used.insert(bare(name).to_owned());
    }

    /// `name`, or `name2`, `name3`... if taken.
    pub fn unique(&mut self, name: String) -> String {
        if self.used.insert(bare(&name).to_owned()) {
            return name;
        }
        let base = bare(&name).to_owned();
        let mut n = 2;
        loop {
            let candidate = format!("{base}{n}");
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

/// The one namespace of generated type names (`generated::types`). Every definition name of
/// both schemas is reserved up front, so a name made up for an inline schema never takes a
/// definition's name, even one not generated yet (keeps names stable as the allowlist grows).
pub struct TypeNames {
    reserved: BTreeSet<String>,
    taken: BTreeSet<String>,
    /// Human-readable notes about every name that had to be changed.
    pub collisions: Vec<String>,
}

impl TypeNames {
    pub fn new<'a>(definitions: impl Iterator<Item = &'a String>) -> Self {
        TypeNames { reserved: definitions.cloned().collect(), taken: BTreeSet::new(), collisions: Vec::new() }
    }

    /// Claims a definition's own name.
    pub fn claim_definition(&mut self, name: &str) {
        self.taken.insert(name.to_owned());
    }

    fn free(&self, name: &str) -> bool {
        !self.reserved.contains(name) && !self.taken.contains(name)
    }

    /// Claims a name for a schema that is not a definition. `wanted` is the preferred name
    /// (e.g. the schema's `title`), `fallback` the structural one (`<Parent><Field>`); `what`
    /// describes the schema for the collision report.
    pub fn claim_inline(&mut self, wanted: Option<&str>, fallback: &str, what: &str) -> String {
        if let Some(w) = wanted {
            let w = type_ident(w);
            if self.free(&w) {
                self.taken.insert(w.clone());
                return w;
            }
            // Only worth a note when the fallback is not the obvious name anyway.
            if w != fallback {
                self.collisions.push(format!(
                    "{what}: title `{w}` is already a definition or generated type; named `{fallback}` instead"
                ));
            }
        }
        let base = type_ident(fallback);
        if self.free(&base) {
            self.taken.insert(base.clone());
            return base;
        }
        let mut n = 2;
        loop {
            let candidate = format!("{base}{n}");
            if self.free(&candidate) {
                self.collisions
                    .push(format!("{what}: `{base}` is already a definition or generated type; named `{candidate}`"));
                self.taken.insert(candidate.clone());
                return candidate;
            }
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(upper_camel("assistant.message_delta"), "AssistantMessageDelta");
        assert_eq!(upper_camel("permission.carriedForward"), "PermissionCarriedForward");
        assert_eq!(upper_camel("session.permissions.setApproveAll"), "SessionPermissionsSetApproveAll");
        assert_eq!(type_ident("approve-for-session"), "ApproveForSession");
        assert_eq!(type_ident("16x16"), "V16x16");
        assert_eq!(type_ident(""), "V");
        assert_eq!(field_ident("sessionId"), "session_id");
        assert_eq!(field_ident("type"), "r#type");
        assert_eq!(field_ident("self"), "self_");
        assert_eq!(field_ident("_meta"), "meta");
        assert_eq!(field_ident("max_prompt_tokens"), "max_prompt_tokens");
    }

    #[test]
    fn local_names_get_suffixes() {
        let mut names = LocalNames::default();
        assert_eq!(names.unique("A".into()), "A");
        assert_eq!(names.unique("A".into()), "A2");
        assert_eq!(names.unique("A".into()), "A3");
    }
}
