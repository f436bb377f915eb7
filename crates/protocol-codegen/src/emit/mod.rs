//! Rust source for the model. Each emitter builds one file as a string; formatting is fixed
//! here (not left to rustfmt) so the output is byte-for-byte reproducible.

mod events;
mod methods;
mod text;
mod types;

use crate::mapper::Model;

pub use text::HEADER;

/// `(file name, contents)` of every generated file, in a fixed order.
pub fn files(model: &Model) -> Vec<(String, String)> {
    vec![
        ("mod.rs".into(), module_root()),
        ("types.rs".into(), types::emit(model)),
        ("events.rs".into(), events::emit(model)),
        ("methods.rs".into(), methods::emit(model)),
    ]
}

fn module_root() -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//! Wire types generated from the upstream JSON Schemas, for the methods, definitions and
//! events listed in `crates/protocol-codegen/allowlist.toml` (and everything they reach).
//!
//! - [`types`]: one Rust type per schema definition (structs, enums), plus the inline params
//!   and results of methods.
//! - [`events`]: [`SessionEvent`], the typed payload of every allowlisted event type.
//! - [`methods`]: one [`crate::rpc::RpcMethod`] descriptor per allowlisted method.
//!
//! Unknown fields are accepted and ignored; known fields are type-checked.

pub mod events;
pub mod methods;
pub mod types;

pub use events::{SessionEvent, EVENT_TYPES};
pub use types::*;
",
    );
    out
}
