//! `availableTools` / `excludedTools` patterns. The SDKs' `ToolSet` sends source-qualified
//! patterns (`builtin:bash`, `builtin:*`, `custom:*`, `mcp:*`); older clients send bare names.
//! A bare pattern matches a tool of any source; `*` in the name part matches any run of
//! characters.

/// Where a tool offered to the model comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSource {
    /// Skipper's own tools (`bash`, `view`, `task`, `skill`, ...).
    Builtin,
    /// Tools an SDK client registered.
    Custom,
    /// Tools of the session's MCP servers.
    Mcp,
}

impl ToolSource {
    fn prefix(self) -> &'static str {
        match self {
            ToolSource::Builtin => "builtin",
            ToolSource::Custom => "custom",
            ToolSource::Mcp => "mcp",
        }
    }
}

/// Whether `pattern` selects the tool `name` of `source`.
pub fn matches(pattern: &str, source: ToolSource, name: &str) -> bool {
    let name_pattern = match pattern.split_once(':') {
        Some((prefix, rest)) if matches!(prefix, "builtin" | "custom" | "mcp") => {
            if prefix != source.prefix() {
                return false;
            }
            rest
        }
        _ => pattern,
    };
    wildcard(name_pattern, name)
}

/// Whether `pattern` selects `name` whatever its source (a custom agent's tool list).
pub fn matches_any_source(pattern: &str, name: &str) -> bool {
    [ToolSource::Builtin, ToolSource::Custom, ToolSource::Mcp].into_iter().any(|s| matches(pattern, s, name))
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_match_any_source() {
        assert!(matches("bash", ToolSource::Builtin, "bash"));
        assert!(matches("bash", ToolSource::Custom, "bash"));
        assert!(!matches("bash", ToolSource::Builtin, "bash2"));
    }

    #[test]
    fn a_prefix_restricts_the_source() {
        assert!(matches("builtin:*", ToolSource::Builtin, "view"));
        assert!(!matches("builtin:*", ToolSource::Custom, "view"));
        assert!(matches("custom:my_tool", ToolSource::Custom, "my_tool"));
        assert!(!matches("mcp:*", ToolSource::Builtin, "grep"));
        assert!(matches("mcp:*", ToolSource::Mcp, "server-tool"));
    }

    #[test]
    fn wildcards_match_runs() {
        assert!(wildcard("*", ""));
        assert!(wildcard("git*", "github-search"));
        assert!(wildcard("*-search", "github-search"));
        assert!(wildcard("a*b*c", "aXbYc"));
        assert!(!wildcard("a*b*c", "aXcYb"));
        assert!(!wildcard("ab*ab", "ab"));
        assert!(!wildcard("view", "viewer"));
    }

    #[test]
    fn an_unknown_prefix_is_part_of_the_name() {
        assert!(matches("server:tool", ToolSource::Mcp, "server:tool"));
        assert!(!matches("server:tool", ToolSource::Mcp, "tool"));
    }
}
