//! `--share [PATH]`: the session as a Markdown file when the run ends (what a CI job attaches
//! to its artifacts): the user's messages, the tools called with their arguments and output,
//! and the answers, in order.

use std::collections::HashMap;
use std::fmt::Write as _;

use protocol::event::{Event, SessionEvent};

/// Tool output longer than this is cut in the file (the session log keeps all of it).
const MAX_OUTPUT_CHARS: usize = 4000;

/// The file a bare `--share` writes, in the working directory.
pub fn default_file_name(session_id: &str) -> String {
    format!("copilot-session-{session_id}.md")
}

/// The Markdown for `events` (the session's log, oldest first).
pub fn render(session_id: &str, events: &[Event]) -> String {
    let started = events.first().map(|e| e.timestamp.as_str()).unwrap_or("");
    let ended = events.last().map(|e| e.timestamp.as_str()).unwrap_or("");
    let mut md = String::from("# Skipper session\n\n");
    let _ = writeln!(md, "> [!NOTE]\n> - **Session ID:** `{session_id}`  ");
    let _ = writeln!(md, "> - **Started:** {started}  ");
    if let Some(secs) = seconds_between(started, ended) {
        let _ = writeln!(md, "> - **Duration:** {secs}s  ");
    }
    let _ =
        writeln!(md, "> - **Exported:** {}  \n", chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    // Each call's name and arguments, shown with its output when it completes.
    let mut calls: HashMap<&str, (&str, Option<&serde_json::Value>)> = HashMap::new();
    for e in events {
        match &e.payload {
            SessionEvent::UserMessage(d) => section(&mut md, "User", d.content.trim()),
            SessionEvent::AssistantMessage(d) if !d.content.trim().is_empty() => {
                section(&mut md, "Copilot", d.content.trim())
            }
            SessionEvent::ToolExecutionStart(d) => {
                calls.insert(d.tool_call_id.as_str(), (d.tool_name.as_str(), d.arguments.as_ref()));
            }
            SessionEvent::ToolExecutionComplete(d) => {
                let (name, args) = calls.remove(d.tool_call_id.as_str()).unwrap_or(("tool", None));
                let mut body = String::new();
                if let Some(args) = args {
                    let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
                    let _ = write!(body, "```json\n{pretty}\n```\n\n");
                }
                let output = match (&d.result, &d.error) {
                    (_, Some(err)) => format!("Failed: {}", err.message),
                    (Some(r), None) => r.content.clone(),
                    (None, None) => String::new(),
                };
                let _ = write!(body, "```\n{}\n```", cut(output.trim_end()).replace("```", "` ` `"));
                section(&mut md, &format!("`{name}`"), &body);
            }
            SessionEvent::SessionError(d) => section(&mut md, "Error", d.message.trim()),
            _ => {}
        }
    }
    md.push_str("---\n");
    md
}

fn section(md: &mut String, title: &str, body: &str) {
    let _ = write!(md, "---\n\n### {title}\n\n{body}\n\n");
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((at, _)) => format!("{}\n… ({} more characters)", &text[..at], text[at..].chars().count()),
        None => text.to_string(),
    }
}

fn seconds_between(from: &str, to: &str) -> Option<i64> {
    let from = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let to = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    Some((to - from).num_seconds().max(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::generated::types as t;

    fn event(at: &str, payload: SessionEvent) -> Event {
        Event { timestamp: at.into(), ..Event::new(payload, false) }
    }

    #[test]
    fn messages_and_tool_calls_in_order() {
        let events = vec![
            event(
                "2026-11-30T08:00:00.000Z",
                SessionEvent::UserMessage(t::UserMessageData { content: "make it".into(), ..Default::default() }),
            ),
            event(
                "2026-11-30T08:00:01.000Z",
                SessionEvent::ToolExecutionStart(t::ToolExecutionStartData {
                    tool_call_id: "c1".into(),
                    tool_name: "bash".into(),
                    arguments: Some(serde_json::json!({"command": "echo hi"})),
                    ..Default::default()
                }),
            ),
            event(
                "2026-11-30T08:00:02.000Z",
                SessionEvent::ToolExecutionComplete(t::ToolExecutionCompleteData {
                    tool_call_id: "c1".into(),
                    success: true,
                    result: Some(t::ToolExecutionCompleteResult { content: "hi".into(), ..Default::default() }),
                    ..Default::default()
                }),
            ),
            event(
                "2026-11-30T08:00:03.000Z",
                SessionEvent::AssistantMessage(t::AssistantMessageData {
                    content: "done here".into(),
                    ..Default::default()
                }),
            ),
        ];
        let md = render("abc", &events);
        assert!(md.starts_with("# Skipper session\n\n> [!NOTE]\n> - **Session ID:** `abc`"), "{md}");
        assert!(md.contains("> - **Duration:** 3s"), "{md}");
        let user = md.find("### User\n\nmake it").expect("user");
        let tool =
            md.find("### `bash`\n\n```json\n{\n  \"command\": \"echo hi\"\n}\n```\n\n```\nhi\n```").expect("tool");
        let answer = md.find("### Copilot\n\ndone here").expect("answer");
        assert!(user < tool && tool < answer, "{md}");
    }

    #[test]
    fn long_output_is_cut() {
        let long = "x".repeat(MAX_OUTPUT_CHARS + 10);
        assert!(cut(&long).ends_with("… (10 more characters)"));
        assert_eq!(cut("short"), "short");
    }
}
