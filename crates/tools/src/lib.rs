//! The tools the model can call. Each tool is one module implementing [`Tool`]; the
//! [`Registry`] holds the built-ins in the order the original CLI offers them.
//!
//! Tools know nothing of JSON-RPC or sessions: a [`ToolContext`] gives them the working
//! directory, a permission gate, a progress sink and a cancellation token. They read no
//! process environment directly.

pub mod context;
pub mod output;
pub mod registry;

pub use context::{PermissionDecision, PermissionGate, PermissionRequest, ProgressSink, ToolContext};
pub use output::{ToolOutput, INTERRUPTED_TEXT};
pub use registry::Registry;

use async_trait::async_trait;
use serde_json::Value;

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments, as offered to the model.
    fn parameters(&self) -> Value;
    /// Runs the tool. Never panics on bad arguments: returns a failed [`ToolOutput`].
    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput;
}
