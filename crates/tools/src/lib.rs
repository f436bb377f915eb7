//! The tools the model can call. Each tool is one module implementing [`Tool`]; the
//! [`Registry`] holds the built-ins in the order the original CLI offers them.
//!
//! Tools know nothing of JSON-RPC or sessions: a [`ToolContext`] gives them the working
//! directory, a permission gate, a progress sink, a cancellation token, the environment for
//! child processes and the session's shells. They read no process environment directly.

mod args;
pub mod bash;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod confined_tests;
pub mod context;
pub mod create;
pub mod diff;
pub mod edit;
pub mod files;
pub mod glob;
pub mod grep;
pub mod large_output;
pub mod output;
pub mod registry;
mod schema;
mod tool;
pub mod view;
mod walk;
pub mod web_fetch;

pub use bash::{ClientCommandEnd, ClientShells, ShellInfo, ShellManager};
pub use context::{PermissionDecision, PermissionGate, PermissionRequest, ProgressSink, ShellCommand, ToolContext};
pub use files::{Beneath, Files};
pub use large_output::{spill_if_large, LARGE_OUTPUT_THRESHOLD};
pub use output::{FileEdit, FileEditKind, ShellExit, ToolOutput, INTERRUPTED_TEXT, SANDBOX_DENIED};
pub use registry::{unknown_tool_message, unknown_tool_text, Registry};
pub use tool::Tool;
