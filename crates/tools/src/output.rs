//! What a tool returns to the loop, and the partial output it reports while it runs.

use std::sync::Arc;

use serde_json::Value;

/// Receives partial output (bash: cumulative text so far).
pub type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

/// The text the model sees for a tool call that was interrupted (abort) or never completed.
pub const INTERRUPTED_TEXT: &str = "The execution of this tool, or a previous tool was interrupted.";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The text the model sees (`textResultForLlm`).
    pub text_for_llm: String,
    pub success: bool,
    /// On failure: `error.message` of `tool.execution_complete` (may be shorter than the text).
    pub error_message: Option<String>,
    /// On failure: `error.code` (`failure`, `denied`, `rejected`, ...).
    pub error_code: Option<String>,
    /// On failure: `error.remediation`, what the user could change to let it run.
    pub remediation: Option<String>,
    /// `result.detailedContent` (e.g. a unified diff for edits); defaults to `text_for_llm`.
    pub detailed_content: Option<String>,
    /// A shell command that ran to its end (`bash`, `read_bash`).
    pub shell_exit: Option<ShellExit>,
    /// The file a tool created or changed.
    pub file_edit: Option<FileEdit>,
    /// Images to attach for the model (`data:` URLs), e.g. from viewing an image file.
    pub image_data_urls: Vec<String>,
    /// `toolTelemetry` for the completion event (free-form).
    pub telemetry: serde_json::Map<String, Value>,
    /// It ran inside the command sandbox (`sandboxed` of the completion event).
    pub sandboxed: bool,
}

/// The telemetry key [`ToolOutput::sandbox_denied`] sets.
pub const SANDBOX_DENIED: &str = "sandbox_denied";

/// How a shell command ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShellExit {
    pub shell_id: String,
    pub exit_code: i32,
    pub cwd: String,
    /// The start of what it printed.
    pub output_preview: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileEditKind {
    Create,
    Edit,
}

/// A file a tool created or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    pub path: String,
    pub kind: FileEditKind,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self { text_for_llm: text.into(), success: true, ..Default::default() }
    }

    /// A failure whose model-visible text and `error.message` are the same.
    pub fn fail(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            error_message: Some(text.clone()),
            error_code: Some("failure".into()),
            text_for_llm: text,
            success: false,
            ..Default::default()
        }
    }

    /// Marks a failure as the session's confinement refusing it (a path outside its workspace,
    /// an internal address), in its telemetry: a team server counts and audits these.
    pub fn sandbox_denied(mut self) -> Self {
        self.telemetry.insert(SANDBOX_DENIED.into(), Value::String("true".into()));
        self
    }

    /// A failure whose `error.message` differs from the text the model sees.
    pub fn fail_with(text: impl Into<String>, message: impl Into<String>, code: &str) -> Self {
        Self {
            text_for_llm: text.into(),
            success: false,
            error_message: Some(message.into()),
            error_code: Some(code.into()),
            ..Default::default()
        }
    }

    /// Replaces a text too large for the model with a pointer to a saved copy and a preview;
    /// the full text stays in `detailed_content`. No-op for small texts.
    pub fn spill_if_large(mut self, temp_dir: &std::path::Path) -> Self {
        if let Some(short) = crate::large_output::spill_if_large(&self.text_for_llm, temp_dir) {
            let full = std::mem::replace(&mut self.text_for_llm, short);
            self.detailed_content.get_or_insert(full);
        }
        self
    }

    pub fn interrupted() -> Self {
        Self::fail_with(INTERRUPTED_TEXT, INTERRUPTED_TEXT, "aborted")
    }
}
