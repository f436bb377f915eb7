//! The built-in tool set, in the order the original CLI offers it.

use std::sync::Arc;

use crate::bash::{BashTool, ListBashTool, ReadBashTool, StopBashTool};
use crate::create::CreateTool;
use crate::edit::EditTool;
use crate::glob::GlobTool;
use crate::grep::GrepTool;
use crate::tool::Tool;
use crate::view::ViewTool;
use crate::web_fetch::WebFetchTool;

#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// All built-ins, in offer order (the original's order, minus the tools Skipper does not
    /// implement here).
    pub fn builtins() -> Self {
        Self::builtins_with(WebFetchTool::default())
    }

    /// All built-ins, with `web_fetch` configured by the caller (e.g. allowed intranet pages).
    pub fn builtins_with(web_fetch: WebFetchTool) -> Self {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(BashTool),
            Arc::new(ReadBashTool),
            Arc::new(StopBashTool),
            Arc::new(ListBashTool),
            Arc::new(ViewTool),
            Arc::new(CreateTool),
            Arc::new(EditTool),
            Arc::new(web_fetch),
            Arc::new(GrepTool),
            Arc::new(GlobTool),
        ];
        Self { tools }
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

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

/// What the model sees when it calls a tool that does not exist: the name, then the tools it
/// may call (comma-separated, ending with a full stop).
pub fn unknown_tool_text(name: &str, available: &[&str]) -> String {
    format!("{} Available tools that can be called are {}.", unknown_tool_message(name), available.join(", "))
}

/// `error.message` for an unknown tool (the text without the list of tools).
pub fn unknown_tool_message(name: &str) -> String {
    format!("Tool '{name}' does not exist.")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_texts() {
        assert_eq!(
            unknown_tool_text("report_intent", &["bash", "view", "task"]),
            "Tool 'report_intent' does not exist. Available tools that can be called are bash, view, task."
        );
        assert_eq!(unknown_tool_message("x"), "Tool 'x' does not exist.");
    }

    #[test]
    fn schemas_match_the_original() {
        // The captured reference lives beside the repository; skip when it is not there.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/spec/reference/builtin-tools-1.0.102.json");
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
        let registry = Registry::builtins();
        for tool in registry.tools() {
            let expected = reference["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == tool.name())
                .unwrap_or_else(|| panic!("{} not in reference", tool.name()));
            assert_eq!(*tool.parameters(), expected["parameters"], "{}", tool.name());
            assert!(!tool.description().is_empty());
        }
    }
}
