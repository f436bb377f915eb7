//! The `skill` tool: the model loads a skill (`agent_config::skills`) by name; the tool answers as the original does and
//! the skill's text follows as a user message (`<skill-context>`).

use std::sync::Arc;

use llm_providers::ToolSpec;
use protocol::generated::types as t;
use serde_json::{json, Value};
use tools::ToolOutput;

use agent_config::skills::{self, SkillSet};

pub const SKILL: &str = "skill";

/// The tool as offered: its description names the enabled skills.
pub fn spec(skills: &SkillSet) -> ToolSpec {
    let mut description = String::from(
        "Load a skill: a set of instructions (and resources in its directory) for a particular kind of task. \
         Call it when the user's request matches a skill's description; its instructions follow the result.",
    );
    let enabled: Vec<_> = skills.all().iter().filter(|s| skills.is_enabled(&s.name)).collect();
    if enabled.is_empty() {
        description.push_str("\n\nNo skills are available.");
    } else {
        description.push_str("\n\n<available_skills>");
        for s in enabled {
            description.push_str(&format!("\n<skill name=\"{}\">{}</skill>", s.name, s.description));
        }
        description.push_str("\n</available_skills>");
    }
    ToolSpec { name: SKILL.into(), description, parameters: parameters() }
}

fn parameters() -> Arc<Value> {
    static P: std::sync::OnceLock<Arc<Value>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        Arc::new(json!({
            "type": "object",
            "properties": {"skill": {"type": "string", "description": "The name of the skill to load."}},
            "required": ["skill"],
        }))
    })
    .clone()
}

/// What loading a skill gives besides the tool result: the text the model reads next and the
/// `skill.invoked` event.
pub struct Loaded {
    pub context: String,
    pub event: t::SkillInvokedData,
}

/// Loads the skill.
pub fn run(skills: &SkillSet, args: &Value, model: &str) -> (ToolOutput, Option<Loaded>) {
    let Some(name) = args.get("skill").and_then(Value::as_str) else {
        return (ToolOutput::fail("The `skill` argument is required."), None);
    };
    let Some(skill) = skills.enabled(name) else {
        let names: Vec<&str> =
            skills.all().iter().filter(|s| skills.is_enabled(&s.name)).map(|s| s.name.as_str()).collect();
        let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return (ToolOutput::fail(format!("Skill \"{name}\" not found. Available skills: {known}.")), None);
    };
    let context = skills::context_message(skill);
    let event = t::SkillInvokedData {
        name: skill.name.clone(),
        model: Some(model.to_string()),
        path: skill.path.to_string_lossy().into_owned(),
        content: skill.body.clone(),
        allowed_tools: skill.allowed_tools.clone(),
        ..Default::default()
    };
    let text = format!("Skill \"{}\" loaded successfully. Follow the instructions in the skill context.", skill.name);
    (ToolOutput::ok(text), Some(Loaded { context, event }))
}
