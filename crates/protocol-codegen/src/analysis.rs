//! Whole-model passes run after mapping: boxing recursive fields, and deciding which structs
//! can derive `Default`.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Item, Presence, Ty};

/// Generated names an item holds inline (see [`Ty::inline_names`]).
fn inline_edges(item: &Item) -> Vec<String> {
    let mut out = Vec::new();
    match item {
        Item::Struct(s) => s.fields.iter().for_each(|f| f.ty.inline_names(&mut out)),
        Item::Tagged(t) => t.variants.iter().filter_map(|v| v.payload.as_ref()).for_each(|p| p.inline_names(&mut out)),
        Item::Untagged(u) => u.variants.iter().for_each(|v| v.ty.inline_names(&mut out)),
        Item::Alias(a) => a.ty.inline_names(&mut out),
        Item::StringEnum(_) => {}
    }
    out
}

/// Whether `target` is reachable from `from` along inline edges.
fn reaches(graph: &BTreeMap<String, Vec<String>>, from: &str, target: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(n) = stack.pop() {
        if n == target {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(graph.get(&n).into_iter().flatten().cloned());
        }
    }
    false
}

/// A type that contains itself inline has infinite size; every inline edge that lies on such
/// a cycle gets a `Box` (Vec and maps are already indirect). Returns `Type.field` notes.
pub fn box_recursive_fields(items: &mut BTreeMap<String, Item>) -> Vec<String> {
    let graph: BTreeMap<String, Vec<String>> = items.iter().map(|(n, i)| (n.clone(), inline_edges(i))).collect();
    let on_cycle = |owner: &str, ty: &Ty| {
        let mut names = Vec::new();
        ty.inline_names(&mut names);
        names.iter().any(|n| reaches(&graph, n, owner))
    };
    let mut notes = Vec::new();
    let mut boxed = |owner: &str, member: &str, ty: &mut Ty| {
        if on_cycle(owner, ty) {
            *ty = ty.clone().boxed();
            notes.push(format!("{owner}.{member}"));
        }
    };
    for (name, item) in items.iter_mut() {
        match item {
            Item::Struct(s) => {
                for f in &mut s.fields {
                    boxed(name, &f.wire, &mut f.ty);
                }
            }
            Item::Tagged(t) => {
                for v in &mut t.variants {
                    if let Some(p) = &mut v.payload {
                        boxed(name, &v.ident, p);
                    }
                }
            }
            Item::Untagged(u) => {
                for v in &mut u.variants {
                    boxed(name, &v.ident, &mut v.ty);
                }
            }
            Item::Alias(_) | Item::StringEnum(_) => {}
        }
    }
    notes
}

fn has_default(ty: &Ty, items: &BTreeMap<String, Item>, defaults: &BTreeSet<String>) -> bool {
    match ty {
        Ty::String
        | Ty::U64
        | Ty::I64
        | Ty::F64
        | Ty::Bool
        | Ty::Unit
        | Ty::Value
        | Ty::JsonMap
        | Ty::Option(_)
        | Ty::Vec(_)
        | Ty::Map(_) => true,
        Ty::Boxed(t) => has_default(t, items, defaults),
        Ty::Named(n) => match items.get(n) {
            Some(Item::Alias(a)) => has_default(&a.ty, items, defaults),
            _ => defaults.contains(n),
        },
        Ty::External(_) => false,
    }
}

/// Structs derive `Default` when every field's type has one. Computed as a least fixed
/// point, so a struct that needs itself to be defaulted (through a `Box`) does not qualify.
pub fn derive_defaults(items: &mut BTreeMap<String, Item>) {
    let mut defaults = BTreeSet::new();
    loop {
        let mut changed = false;
        for (name, item) in items.iter() {
            if let Item::Struct(s) = item {
                if !defaults.contains(name)
                    && s.fields.iter().all(|f| f.presence != Presence::Required || has_default(&f.ty, items, &defaults))
                {
                    defaults.insert(name.clone());
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (name, item) in items.iter_mut() {
        if let Item::Struct(s) = item {
            s.default = defaults.contains(name);
        }
    }
}
