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

/// Builds the full system prompt for a session.
pub fn build(config: Option<&SystemMessageConfig>, cwd: &str) -> String {
    build_with(config, cwd, &std::collections::HashMap::new())
}

/// Sections whose action is `transform`, with their rendered text: the client rewrites them
/// (`systemMessage.transform`) before the first model call of a message.
pub fn transform_requests(config: Option<&SystemMessageConfig>, cwd: &str) -> BTreeMap<String, SectionText> {
    let mut out = BTreeMap::new();
    let Some(sections) = config.filter(|c| c.mode.as_deref() == Some("customize")).and_then(|c| c.sections.as_ref())
    else {
        return out;
    };
    for (id, text) in SECTIONS {
        let wants = sections.get(*id).and_then(|o| o.get("action")).and_then(Value::as_str) == Some("transform");
        if wants {
            out.insert((*id).to_string(), SectionText { content: render(text, cwd) });
        }
    }
    out
}

fn render(text: &str, cwd: &str) -> String {
    text.trim().replace("{{cwd}}", cwd).replace("{{os}}", std::env::consts::OS)
}

/// Like [`build`], with client-transformed section texts replacing the rendered ones.
pub fn build_with(
    config: Option<&SystemMessageConfig>,
    cwd: &str,
    transformed: &std::collections::HashMap<String, String>,
) -> String {
    let mode = config.and_then(|c| c.mode.as_deref()).unwrap_or("append");
    if mode == "replace" {
        return config.and_then(|c| c.content.clone()).unwrap_or_default();
    }
    let sections = config.and_then(|c| c.sections.as_ref()).filter(|_| mode == "customize");
    let mut parts: Vec<String> = Vec::new();
    for (id, text) in SECTIONS {
        let base = render(text, cwd);
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
        let p = build(None, "/w");
        assert!(p.contains("<code_change_instructions>"));
        assert!(p.contains("Working directory: /w"));
    }

    #[test]
    fn replace_is_exact() {
        assert_eq!(build(Some(&cfg(json!({"mode":"replace","content":"X"}))), "/w"), "X");
    }

    #[test]
    fn append_adds_content_last() {
        let p = build(Some(&cfg(json!({"mode":"append","content":"Always say PINEAPPLE"}))), "/w");
        assert!(p.ends_with("Always say PINEAPPLE"));
    }

    #[test]
    fn transform_sections_are_offered_and_applied() {
        let c = cfg(json!({"mode":"customize","sections":{"tone":{"action":"transform"}}}));
        let reqs = transform_requests(Some(&c), "/w");
        assert_eq!(reqs.len(), 1);
        assert!(reqs["tone"].content.contains("<tone>"));
        let mut t = std::collections::HashMap::new();
        t.insert("tone".to_string(), "LOUD".to_string());
        let p = build_with(Some(&c), "/w", &t);
        assert!(p.contains("LOUD") && !p.contains("<tone>"));
    }

    #[test]
    fn customize_removes_and_replaces_sections() {
        let p = build(
            Some(&cfg(json!({"mode":"customize","sections":{
                "code_change_rules":{"action":"remove"},
                "tone":{"action":"replace","content":"TONE!"}}}))),
            "/w",
        );
        assert!(!p.contains("<code_change_instructions>"));
        assert!(p.contains("TONE!"));
        assert!(!p.contains("<tone>"));
    }
}
