//! The system prompt: named sections (our own words, in `prompts/system/`) assembled in a
//! fixed order, then shaped by the session's `systemMessage` config (append / replace /
//! customize per section).

use std::collections::BTreeMap;

use protocol::methods::{SectionText, SystemMessageConfig};
use serde_json::Value;

/// Section ids in prompt order, as the SDKs name them.
const SECTIONS: &[(&str, &str)] = &[
    ("preamble", include_str!("../../../prompts/system/preamble.md")),
    ("identity", include_str!("../../../prompts/system/identity.md")),
    ("tone", include_str!("../../../prompts/system/tone.md")),
    ("tool_efficiency", include_str!("../../../prompts/system/tool_efficiency.md")),
    ("environment_context", include_str!("../../../prompts/system/environment_context.md")),
    ("code_change_rules", include_str!("../../../prompts/system/code_change_rules.md")),
    ("guidelines", include_str!("../../../prompts/system/guidelines.md")),
    ("safety", include_str!("../../../prompts/system/safety.md")),
    ("tool_instructions", ""),
    ("custom_instructions", ""),
    ("runtime_instructions", ""),
    ("last_instructions", include_str!("../../../prompts/system/last_instructions.md")),
];

/// What the sections are filled with.
#[derive(Debug, Clone, Copy)]
pub struct Vars<'a> {
    pub cwd: &'a str,
    /// The rendered custom instructions (see `instructions`); empty for none.
    pub custom_instructions: &'a str,
}

impl<'a> Vars<'a> {
    pub fn new(cwd: &'a str) -> Self {
        Self { cwd, custom_instructions: "" }
    }
}

/// Builds the full system prompt for a session.
pub fn build(config: Option<&SystemMessageConfig>, vars: Vars<'_>) -> String {
    build_with(config, vars, &std::collections::HashMap::new())
}

/// Sections whose action is `transform`, with their rendered text: the client rewrites them
/// (`systemMessage.transform`) before the first model call of a message.
pub fn transform_requests(config: Option<&SystemMessageConfig>, vars: Vars<'_>) -> BTreeMap<String, SectionText> {
    let mut out = BTreeMap::new();
    let Some(sections) = config.filter(|c| c.mode.as_deref() == Some("customize")).and_then(|c| c.sections.as_ref())
    else {
        return out;
    };
    for (id, text) in SECTIONS {
        let wants = sections.get(*id).and_then(|o| o.get("action")).and_then(Value::as_str) == Some("transform");
        if wants {
            out.insert((*id).to_string(), SectionText { content: render(id, text, vars) });
        }
    }
    out
}

fn render(id: &str, text: &str, vars: Vars<'_>) -> String {
    if id == "custom_instructions" {
        return vars.custom_instructions.to_string();
    }
    let text = text.trim();
    // Most sections have no placeholder: no new string per replacement for them.
    if !text.contains("{{") {
        return text.to_string();
    }
    text.replace("{{cwd}}", vars.cwd).replace("{{os}}", std::env::consts::OS)
}

/// Like [`build`], with client-transformed section texts replacing the rendered ones.
pub fn build_with(
    config: Option<&SystemMessageConfig>,
    vars: Vars<'_>,
    transformed: &std::collections::HashMap<String, String>,
) -> String {
    let mode = config.and_then(|c| c.mode.as_deref()).unwrap_or("append");
    if mode == "replace" {
        return config.and_then(|c| c.content.clone()).unwrap_or_default();
    }
    let sections = config.and_then(|c| c.sections.as_ref()).filter(|_| mode == "customize");
    let mut parts: Vec<String> = Vec::new();
    for (id, text) in SECTIONS {
        let base = render(id, text, vars);
        let rendered = match (transformed.get(*id), sections.and_then(|s| s.get(*id))) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(over)) => apply_override(&base, over),
            (None, None) => Some(base),
        };
        if let Some(r) = rendered.filter(|r| !r.is_empty()) {
            parts.push(r);
        }
    }
    if let Some(extra) = config.and_then(|c| c.content.as_deref()).filter(|s| !s.is_empty()) {
        parts.push(extra.to_string());
    }
    parts.join("\n\n")
}

/// One section override `{action, content?}`. `None` removes the section.
fn apply_override(base: &str, over: &Value) -> Option<String> {
    let action = over.get("action").and_then(Value::as_str).unwrap_or("preserve");
    let content = over.get("content").and_then(Value::as_str).unwrap_or("");
    match action {
        "remove" => None,
        "replace" => Some(content.to_string()),
        "append" => Some(format!("{base}\n{content}")),
        "prepend" => Some(format!("{content}\n{base}")),
        _ => Some(base.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> SystemMessageConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn default_has_code_change_block_and_cwd() {
        let p = build(None, Vars::new("/w"));
        assert!(p.contains("<code_change_instructions>"));
        assert!(p.contains("Working directory: /w"));
    }

    #[test]
    fn custom_instructions_come_after_the_tool_instructions() {
        let p = build(None, Vars { cwd: "/w", custom_instructions: "<custom_instruction>\nX\n</custom_instruction>" });
        let at = p.find("<custom_instruction>").expect("custom instructions are in the prompt");
        assert!(at > p.find("<safety>").unwrap());
        assert!(at < p.find(include_str!("../../../prompts/system/last_instructions.md").trim()).unwrap());
    }

    #[test]
    fn replace_is_exact() {
        assert_eq!(build(Some(&cfg(json!({"mode":"replace","content":"X"}))), Vars::new("/w")), "X");
    }

    #[test]
    fn append_adds_content_last() {
        let p = build(Some(&cfg(json!({"mode":"append","content":"Always say PINEAPPLE"}))), Vars::new("/w"));
        assert!(p.ends_with("Always say PINEAPPLE"));
    }

    #[test]
    fn transform_sections_are_offered_and_applied() {
        let c = cfg(json!({"mode":"customize","sections":{"tone":{"action":"transform"}}}));
        let reqs = transform_requests(Some(&c), Vars::new("/w"));
        assert_eq!(reqs.len(), 1);
        assert!(reqs["tone"].content.contains("<tone>"));
        let mut t = std::collections::HashMap::new();
        t.insert("tone".to_string(), "LOUD".to_string());
        let p = build_with(Some(&c), Vars::new("/w"), &t);
        assert!(p.contains("LOUD") && !p.contains("<tone>"));
    }

    #[test]
    fn customize_removes_and_replaces_sections() {
        let p = build(
            Some(&cfg(json!({"mode":"customize","sections":{
                "code_change_rules":{"action":"remove"},
                "tone":{"action":"replace","content":"TONE!"}}}))),
            Vars::new("/w"),
        );
        assert!(!p.contains("<code_change_instructions>"));
        assert!(p.contains("TONE!"));
        assert!(!p.contains("<tone>"));
    }
}
