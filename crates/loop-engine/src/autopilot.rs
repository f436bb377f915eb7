//! Autopilot mode: the `task_complete` tool, and the nudge that keeps the loop going until the
//! model calls it (bounded).

use llm_providers::ToolSpec;
use serde_json::{json, Value};
use tools::ToolOutput;

pub const TASK_COMPLETE: &str = "task_complete";
/// Nudges per user message before the loop gives up (the original's default is 5).
pub const MAX_NUDGES: u32 = 5;
pub const NUDGE_TEXT: &str = include_str!("../../../prompts/autopilot_nudge.md");

pub fn task_complete_spec() -> ToolSpec {
    // Offered on every model call: built once.
    static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| {
        ToolSpec {
        name: TASK_COMPLETE.into(),
        description: "Declare the task finished. Call this only once all of the work is done, with a short summary of the outcome.".into(),
        parameters: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "What was done."}},
            "required": ["summary"],
        })),
    }
    })
    .clone()
}

pub fn run_task_complete(args: &Value) -> ToolOutput {
    let summary = args.get("summary").and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = ToolOutput::ok(summary.clone());
    out.detailed_content = Some(format!("✓ Task completed: {summary}"));
    out
}

/// Why an autopilot run stopped (`session.autopilot_stopped.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    TaskComplete,
    NudgeLimit,
    Error,
    Aborted,
    Rejected,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::TaskComplete => "task_complete",
            StopReason::NudgeLimit => "max_continues",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Rejected => "rejected",
        }
    }
}
