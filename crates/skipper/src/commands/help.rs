//! `skipper help [TOPIC]`: the flags, or one of the original's help topics in Skipper's words.
//! A topic about something Skipper does not have says so; an unknown topic is an error.

use super::here::Here;

/// The original's topics, with what each covers.
const TOPICS: &[(&str, &str)] = &[
    ("billing", "AI credit usage"),
    ("commands", "Interactive mode commands"),
    ("config", "Configuration settings"),
    ("environment", "Environment variables"),
    ("limits", "Session limits"),
    ("logging", "Logging"),
    ("monitoring", "Monitoring with OpenTelemetry"),
    ("permissions", "Permissions"),
    ("providers", "Custom model providers (bring your own key)"),
    ("sandbox", "Command sandboxing"),
];

/// The topics Skipper has nothing for, and why.
const ABSENT: &[(&str, &str)] = &[
    ("billing", "Skipper keeps no AI credit accounting; the provider's own usage pages have it."),
    ("commands", "Skipper has no interactive mode, so it has no slash commands."),
    ("limits", "Skipper has no session limits (--max-ai-credits is accepted and ignored)."),
    (
        "monitoring",
        "Skipper writes OpenTelemetry spans to a file when COPILOT_OTEL_ENABLED is set (see `skipper help environment`); `skipper serve` exports Prometheus metrics at /metrics.",
    ),
    (
        "sandbox",
        "Skipper sandboxes a session's commands with bubblewrap when the SDK session asks for it (sandboxConfig) or a team server requires it; there is no `skipper sandbox` command.",
    ),
];

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let Some(topic) = args.first() else {
        let mut text = super::whole_command().render_long_help().to_string();
        text.push_str("\nHelp topics (skipper help TOPIC):\n");
        for (name, what) in TOPICS {
            text.push_str(&format!("  {name:<12} {what}\n"));
        }
        let _ = write!(here.out, "{text}");
        return 0;
    };
    let text = match topic.as_str() {
        "config" => config_topic(),
        "environment" => include_str!("help/environment.txt").to_string(),
        "permissions" => include_str!("help/permissions.txt").to_string(),
        "logging" => include_str!("help/logging.txt").to_string(),
        "providers" => include_str!("help/providers.txt").to_string(),
        other => match ABSENT.iter().find(|(name, _)| *name == other) {
            Some((_, why)) => format!("{why}\n"),
            None => {
                let mut text = format!("Unknown help topic: {other}\nAvailable topics:\n");
                for (name, _) in TOPICS {
                    text.push_str(&format!("  {name}\n"));
                }
                let _ = write!(here.err, "{text}");
                return 1;
            }
        },
    };
    let _ = write!(here.out, "{text}");
    0
}

/// Every setting `skipper config` knows, with its type, from agent-config's table.
fn config_topic() -> String {
    use agent_config::settings_keys::{Kind, ROOT};
    let mut text = String::from(
        "Configuration Settings:\n\n  Read and change them with `skipper config` (see `skipper config --help`), dotted for\n  \
         nested keys:\n    skipper config footer.showQuota off\n    skipper config allowedUrls github.com\n    \
         skipper config --rm allowedUrls github.com\n    skipper config --list\n\n  \
         Skipper's sessions read few of them (disabledSkills); the rest are kept for the programs\n  \
         that share the file. The settings and what each takes:\n\n",
    );
    fn walk(prefix: &str, members: &[(&str, Kind)], text: &mut String) {
        for (name, kind) in members {
            let key = if prefix.is_empty() { (*name).to_string() } else { format!("{prefix}.{name}") };
            let what = match kind {
                Kind::Bool => "on or off".to_string(),
                Kind::Number => "a number".to_string(),
                Kind::Choice(c) => format!("one of: {}", c.join(", ")),
                Kind::Text => "text".to_string(),
                Kind::PathTemplate => "a path template naming {branch} or {branchSlug}".to_string(),
                Kind::List => "a list (each value adds one item)".to_string(),
                Kind::Group(g) => {
                    walk(&key, g.members, text);
                    if !g.partial {
                        continue;
                    }
                    let more = format!("{key}.*");
                    text.push_str(&format!("  {more:<36} more that Skipper does not know: edit the file\n"));
                    continue;
                }
                Kind::Named(_) => format!("{key}.<name> entries"),
                Kind::Complex | Kind::FileOnly | Kind::UiOnly | Kind::Leaf => "edit the file".to_string(),
                Kind::Policy => "set by your organization's policy".to_string(),
            };
            text.push_str(&format!("  {key:<36} {what}\n"));
        }
    }
    walk("", ROOT.members, &mut text);
    text
}
