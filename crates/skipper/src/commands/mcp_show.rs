//! One MCP server as `mcp get` and `mcp add` print it: its command or URL, environment and
//! headers (values masked unless asked), tools, timeout and source.

use std::fmt::Write;

use serde_json::Value;

use super::mcp_sources::{Found, Source};

/// What a masked value shows.
const MASK: &str = "***";

pub struct Show {
    /// `Status: Enabled|Disabled` (`get`; `add` leaves it out).
    pub status: bool,
    pub secrets: bool,
}

pub fn render(found: &Found, show: &Show) -> String {
    let c = &found.config;
    let mut s = String::new();
    let _ = writeln!(s, "{}", found.name);
    if show.status {
        let _ = writeln!(s, "  Status: {}", if found.enabled { "Enabled" } else { "Disabled" });
    }
    let _ = writeln!(s, "  Type: {}", found.kind());
    if let Some(url) = c.get("url").and_then(Value::as_str) {
        let _ = writeln!(s, "  URL: {url}");
    }
    if let Some(command) = c.get("command").and_then(Value::as_str) {
        let args = strings(c.get("args"));
        let line = std::iter::once(command.to_string()).chain(args).collect::<Vec<_>>().join(" ");
        let _ = writeln!(s, "  Command: {line}");
    }
    section(&mut s, "Environment", c.get("env"), show.secrets);
    section(&mut s, "Headers", c.get("headers"), show.secrets);
    let _ = writeln!(s, "  Tools: {}", tools(c.get("tools")));
    if let Some(ms) = c.get("timeout").and_then(Value::as_u64) {
        let _ = writeln!(s, "  Timeout: {ms}ms");
    }
    let source = match &found.source {
        Source::User => "User".to_string(),
        Source::Workspace(path) => format!("Workspace ({})", path.display()),
        Source::Plugin(name) => format!("Plugin ({name})"),
    };
    let _ = writeln!(s, "  Source: {source}");
    s
}

fn section(s: &mut String, title: &str, map: Option<&Value>, secrets: bool) {
    let Some(map) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else { return };
    let _ = writeln!(s, "  {title}:");
    for (k, v) in map {
        let value = if secrets { v.as_str().map_or_else(|| v.to_string(), str::to_string) } else { MASK.into() };
        let _ = writeln!(s, "    {k}: {value}");
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// `* (all)`, `(none)`, or the names.
fn tools(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "* (all)".into(),
        Some(list) if list.iter().any(|t| t == "*") => "* (all)".into(),
        Some(list) if list.is_empty() => "(none)".into(),
        Some(_) => strings(v).join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_masked_unless_asked() {
        let found = Found {
            name: "gh".into(),
            config: json!({"type": "local", "command": "node", "args": ["s.js"], "env": {"TOKEN": "t"}, "tools": ["a", "b"], "timeout": 5}),
            source: Source::User,
            enabled: false,
        };
        let masked = render(&found, &Show { status: true, secrets: false });
        assert_eq!(
            masked,
            "gh\n  Status: Disabled\n  Type: local\n  Command: node s.js\n  Environment:\n    TOKEN: ***\n  Tools: a, b\n  Timeout: 5ms\n  Source: User\n"
        );
        assert!(render(&found, &Show { status: false, secrets: true }).contains("    TOKEN: t\n"));
    }
}
