//! The built-in tool set, in the order the original CLI offers it.

use std::sync::Arc;

use crate::Tool;

#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// All built-ins, in offer order.
    pub fn builtins() -> Self {
        // Filled in as tool modules land.
        Self { tools: Vec::new() }
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    pub fn push(&mut self, tool: Arc<dyn Tool>) {
        self.tools.push(tool);
    }
}
