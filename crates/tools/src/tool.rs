//! What every tool implements ([`Tool`]). Apart from the crate root, which re-exports it, so
//! that the tools (which the root declares) can name it without importing the root.

use async_trait::async_trait;
use serde_json::Value;

use crate::context::ToolContext;
use crate::output::ToolOutput;

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments, as offered to the model (shared: made once).
    fn parameters(&self) -> std::sync::Arc<Value>;
    /// Runs the tool. Never panics on bad arguments: returns a failed [`ToolOutput`].
    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput;
}
