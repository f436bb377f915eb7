//! The one permission-rules engine: what a session's rules, allowed directories and URLs say
//! about a request before anyone is asked. Every front end fills the same
//! [`SessionPermissions`]: `-p`'s `--allow-tool` / `--deny-tool` / `--add-dir` / `--allow-url`,
//! an SDK's `session.permissions.*`, the team server.
//!
//! Rules are the original's `kind(argument)` patterns: `shell`, `shell(git push)`,
//! `shell(git:*)`, `write`, `write(.env)`, `read`, `url(github.com)`, `memory`, and an MCP
//! server's name with an optional tool (`MyMCP`, `MyMCP(tool)`). A denial beats everything; a
//! path outside the allowed directories is always asked about; then `--allow-all-tools`, the
//! allow rules, and, when nobody can be asked, what only reads.

use std::path::{Component, Path};

use protocol::generated::types::{self as t, PermissionRequest, PermissionRule};

use tools::bash::analysis::named_commands;

use crate::permission_settings::SessionPermissions;

/// What the rules say about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Refused, with what the model is told.
    Denied(String),
    Approved,
    /// Up to whoever answers the session's permission requests.
    Ask,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("Invalid rule format: {0}")]
pub struct InvalidRule(String);

/// Parses one `kind(argument)` pattern.
pub fn parse_rule(text: &str) -> Result<PermissionRule, InvalidRule> {
    let invalid = || InvalidRule(text.to_string());
    let text = text.trim();
    let (kind, argument) = match text.split_once('(') {
        None => (text, None),
        Some((kind, rest)) => {
            let argument = rest.strip_suffix(')').ok_or_else(invalid)?.trim();
            if argument.is_empty() || argument.contains(['(', ')']) {
                return Err(invalid());
            }
            (kind.trim(), Some(argument.to_string()))
        }
    };
    if kind.is_empty() || kind.contains([')', ',']) || kind.chars().any(char::is_whitespace) {
        return Err(invalid());
    }
    let kind = builtin_kind(kind).unwrap_or(kind).to_string();
    Ok(PermissionRule { kind, argument })
}

/// The built-in kinds, whatever their case (hosts send `Shell` as well as `shell`); `None` for
/// an MCP server's name.
fn builtin_kind(kind: &str) -> Option<&'static str> {
    ["shell", "write", "read", "url", "memory"].into_iter().find(|k| k.eq_ignore_ascii_case(kind))
}

/// A `--allow-url` / `--deny-url` value as a rule (a bare domain means `https://`).
pub fn url_rule(pattern: &str) -> PermissionRule {
    PermissionRule { kind: "url".into(), argument: Some(with_scheme(pattern.trim())) }
}

/// A rule as the model is told it: `shell(rm)`, `write`.
pub fn render(rule: &PermissionRule) -> String {
    match &rule.argument {
        Some(argument) => format!("{}({argument})", rule.kind),
        None => rule.kind.clone(),
    }
}

/// The rules' verdict. `approve_all`: `--allow-all-tools` (or `setApproveAll`); `nobody_asks`:
/// no client can ever answer (the headless runner), so what only reads inside the allowed
/// directories is approved, as the original's own prompt would not ask about it.
pub(crate) fn evaluate(
    perms: &SessionPermissions,
    approve_all: bool,
    nobody_asks: bool,
    request: &PermissionRequest,
) -> Verdict {
    // A shell line is split into its commands once, for every rule.
    let commands = match request {
        PermissionRequest::Shell(s) => named_commands(&s.full_command_text),
        _ => Vec::new(),
    };
    let denied: Vec<&PermissionRule> = perms.denied.iter().filter(|r| covers(r, request, &commands)).collect();
    if !denied.is_empty() {
        if matches!(request, PermissionRequest::Url(_)) {
            return Verdict::Denied("Permission to access this URL was denied.".into());
        }
        let names: Vec<String> = denied.iter().map(|r| format!("`{}`", render(r))).collect();
        return Verdict::Denied(format!(
            "Permission to run this tool was denied due to the following rules: {}",
            names.join(", ")
        ));
    }
    // The session's own files (plan.md, files/) are the session's to keep.
    if let PermissionRequest::Read(t::PermissionRequestRead { path, .. })
    | PermissionRequest::Write(t::PermissionRequestWrite { file_name: path, .. }) = request
    {
        if perms.within_own(Path::new(path)) {
            return Verdict::Approved;
        }
    }
    if !paths(request).iter().all(|p| perms.within_allowed(Path::new(p))) {
        return Verdict::Ask;
    }
    if approve_all || allowed(perms, request, &commands) {
        return Verdict::Approved;
    }
    if nobody_asks && only_reads(request) {
        return Verdict::Approved;
    }
    Verdict::Ask
}

/// Whether every part of the request is covered by an allow rule (or an allowed URL).
/// `commands`: a shell request's [`named_commands`].
fn allowed(perms: &SessionPermissions, request: &PermissionRequest, commands: &[(String, Vec<String>)]) -> bool {
    let by_rule = |request: &PermissionRequest| perms.approved.iter().any(|r| covers(r, request, commands));
    let url_allowed = |url: &str| {
        perms.unrestricted_urls
            || perms
                .approved
                .iter()
                .any(|r| builtin_kind(&r.kind) == Some("url") && url_matches(r.argument.as_deref(), url))
            || perms.allowed_urls.iter().any(|pattern| url_matches(Some(pattern), url))
    };
    match request {
        PermissionRequest::Shell(s) => {
            let shell_rules: Vec<&PermissionRule> =
                perms.approved.iter().filter(|r| builtin_kind(&r.kind) == Some("shell")).collect();
            !commands.is_empty()
                && !s.has_write_file_redirection
                && commands
                    .iter()
                    .all(|(name, words)| shell_rules.iter().any(|r| shell_matches(r.argument.as_deref(), name, words)))
                && s.possible_urls.iter().all(|u| url_allowed(&u.url))
        }
        PermissionRequest::Url(u) => url_allowed(&u.url),
        other => by_rule(other),
    }
}

/// Whether `rule` speaks to (some part of) `request`; `commands`: a shell request's
/// [`named_commands`].
fn covers(rule: &PermissionRule, request: &PermissionRequest, commands: &[(String, Vec<String>)]) -> bool {
    let argument = rule.argument.as_deref();
    match (builtin_kind(&rule.kind).unwrap_or(&rule.kind), request) {
        ("shell", PermissionRequest::Shell(_)) => {
            commands.iter().any(|(name, words)| shell_matches(argument, name, words))
        }
        ("url", PermissionRequest::Shell(s)) => s.possible_urls.iter().any(|u| url_matches(argument, &u.url)),
        ("url", PermissionRequest::Url(u)) => url_matches(argument, &u.url),
        ("write", PermissionRequest::Write(w)) => path_matches(argument, &w.file_name),
        ("read", PermissionRequest::Read(r)) => path_matches(argument, &r.path),
        ("memory", PermissionRequest::Memory(_)) => argument.is_none(),
        ("shell" | "url" | "write" | "read" | "memory", _) => false,
        (server, PermissionRequest::Mcp(m)) => server == m.server_name && argument.is_none_or(|t| t == m.tool_name),
        _ => false,
    }
}

/// `shell(git push)` is the command named `git push`; `shell(git:*)` any command whose words
/// begin with `git` (not `gitea`); `shell` any command.
fn shell_matches(argument: Option<&str>, name: &str, words: &[String]) -> bool {
    let Some(argument) = argument else { return true };
    match argument.strip_suffix(":*") {
        Some(stem) => {
            let stem: Vec<&str> = stem.split_whitespace().collect();
            words.len() >= stem.len() && words.iter().zip(&stem).all(|(w, s)| w == s)
        }
        None => argument.split_whitespace().eq(name.split_whitespace()),
    }
}

/// `write(.env)`: a relative pattern matches by trailing components, in any directory; an
/// absolute one that path or anything beneath it.
fn path_matches(argument: Option<&str>, path: &str) -> bool {
    let Some(pattern) = argument else { return true };
    let pattern = Path::new(pattern);
    let path = Path::new(path);
    if pattern.is_absolute() {
        return path.starts_with(pattern);
    }
    let wanted: Vec<Component> = pattern.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    let have: Vec<Component> = path.components().collect();
    !wanted.is_empty() && have.len() >= wanted.len() && have[have.len() - wanted.len()..] == wanted[..]
}

/// Protocol-aware: `example.com` is `https://example.com`; `https://*.github.com` covers
/// `api.github.com`; a pattern with a path covers that path and below.
fn url_matches(argument: Option<&str>, url: &str) -> bool {
    let Some(pattern) = argument else { return true };
    let pattern = with_scheme(pattern);
    let (Some((p_scheme, p_rest)), Some((u_scheme, u_rest))) = (pattern.split_once("://"), url.split_once("://"))
    else {
        return false;
    };
    if !p_scheme.eq_ignore_ascii_case(u_scheme) {
        return false;
    }
    let split = |rest: &str| -> (String, String) {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let host = rest[..end].rsplit('@').next().unwrap_or("").to_ascii_lowercase();
        (host, rest[end..].to_string())
    };
    let (p_host, p_path) = split(p_rest);
    let (u_host, u_path) = split(u_rest);
    let host_ok = match p_host.strip_prefix("*.") {
        Some(domain) => u_host.ends_with(&format!(".{domain}")) || u_host == domain,
        None => p_host == u_host,
    };
    let p_path = p_path.trim_end_matches('/');
    host_ok && (p_path.is_empty() || u_path == p_path || u_path.starts_with(&format!("{p_path}/")))
}

fn with_scheme(pattern: &str) -> String {
    if pattern.contains("://") {
        pattern.to_string()
    } else {
        format!("https://{pattern}")
    }
}

/// The file system paths a request touches.
fn paths(request: &PermissionRequest) -> Vec<&str> {
    match request {
        PermissionRequest::Read(r) => vec![r.path.as_str()],
        PermissionRequest::Write(w) => vec![w.file_name.as_str()],
        PermissionRequest::Shell(s) => s.possible_paths.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A read, or a command line of read-only commands that writes no file and names no URL.
fn only_reads(request: &PermissionRequest) -> bool {
    match request {
        PermissionRequest::Read(_) => true,
        PermissionRequest::Shell(s) => {
            !s.commands.is_empty()
                && s.commands.iter().all(|c| c.read_only)
                && !s.has_write_file_redirection
                && s.possible_urls.is_empty()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<PermissionRule> {
        list.iter().map(|r| parse_rule(r).unwrap()).collect()
    }

    fn shell(command: &str) -> PermissionRequest {
        let line = tools::bash::analysis::analyze(command, Path::new("/work"), None);
        PermissionRequest::Shell(t::PermissionRequestShell {
            full_command_text: command.into(),
            commands: line
                .commands
                .into_iter()
                .map(|c| t::PermissionRequestShellCommand { identifier: c.identifier, read_only: c.read_only })
                .collect(),
            possible_paths: line.possible_paths,
            possible_urls: line
                .possible_urls
                .into_iter()
                .map(|url| t::PermissionRequestShellPossibleUrl { url })
                .collect(),
            has_write_file_redirection: line.writes_files,
            ..Default::default()
        })
    }

    fn write(path: &str) -> PermissionRequest {
        PermissionRequest::Write(t::PermissionRequestWrite { file_name: path.into(), ..Default::default() })
    }

    fn perms(approved: &[&str], denied: &[&str]) -> SessionPermissions {
        let mut p = SessionPermissions::for_cwd(Path::new("/work"));
        p.approved = rules(approved);
        p.denied = rules(denied);
        p
    }

    #[test]
    fn patterns_parse_as_the_original_writes_them() {
        assert_eq!(
            parse_rule("shell(git:*)").unwrap(),
            PermissionRule { kind: "shell".into(), argument: Some("git:*".into()) }
        );
        assert_eq!(parse_rule("write").unwrap(), PermissionRule { kind: "write".into(), argument: None });
        assert_eq!(parse_rule("MyMCP(tool)").unwrap().kind, "MyMCP");
        for bad in ["shell(", "shell()", "(x)", "", "shell(a)b", "a b"] {
            assert_eq!(parse_rule(bad), Err(InvalidRule(bad.trim().to_string())), "{bad:?}");
        }
        assert_eq!(render(&url_rule("example.com")), "url(https://example.com)");
    }

    #[test]
    fn denials_beat_allow_all_and_name_their_rules() {
        let p = perms(&[], &["shell(rm)", "shell(git push)"]);
        let told = |c: &str| evaluate(&p, true, false, &shell(c));
        assert_eq!(
            told("rm -f x && git push origin"),
            Verdict::Denied(
                "Permission to run this tool was denied due to the following rules: `shell(rm)`, `shell(git push)`"
                    .into()
            )
        );
        assert_eq!(told("git status"), Verdict::Approved);
        let p = perms(&[], &["shell(git)"]);
        assert_eq!(evaluate(&p, true, false, &shell("git status")), Verdict::Approved, "git is not git status");
        let p = perms(&[], &["shell(git:*)"]);
        assert!(matches!(evaluate(&p, true, false, &shell("git log -1")), Verdict::Denied(_)));
        assert_eq!(evaluate(&p, true, false, &shell("gitea x")), Verdict::Approved);
    }

    #[test]
    fn allow_rules_cover_every_command_and_no_redirection() {
        let p = perms(&["shell(echo)", "shell(npm run:*)"], &[]);
        assert_eq!(evaluate(&p, false, false, &shell("echo hi")), Verdict::Approved);
        assert_eq!(evaluate(&p, false, false, &shell("npm run build")), Verdict::Approved);
        assert_eq!(evaluate(&p, false, false, &shell("echo hi > y.txt")), Verdict::Ask);
        assert_eq!(evaluate(&p, false, false, &shell("echo hi && touch z")), Verdict::Ask);
    }

    #[test]
    fn paths_outside_are_asked_even_under_allow_all() {
        let mut p = perms(&[], &[]);
        assert_eq!(evaluate(&p, true, true, &write("/srv/x")), Verdict::Ask);
        assert_eq!(evaluate(&p, true, true, &shell("cat /srv/x")), Verdict::Ask);
        assert_eq!(evaluate(&p, true, true, &write("/work/x")), Verdict::Approved);
        p.allow(Path::new("/srv"));
        assert_eq!(evaluate(&p, true, true, &write("/srv/x")), Verdict::Approved);
        p.unrestricted_paths = true;
        assert_eq!(evaluate(&p, true, true, &write("/etc/x")), Verdict::Approved);
    }

    #[test]
    fn write_rules_match_trailing_components_or_absolute_paths() {
        let p = perms(&[], &["write(.env)"]);
        assert!(matches!(evaluate(&p, true, false, &write("/work/sub/.env")), Verdict::Denied(_)));
        assert_eq!(evaluate(&p, true, false, &write("/work/sub/ok")), Verdict::Approved);
        let p = perms(&[], &["write(/work/secret)"]);
        assert!(matches!(evaluate(&p, true, false, &write("/work/secret/a")), Verdict::Denied(_)));
        assert_eq!(evaluate(&p, true, false, &write("/work/secret2")), Verdict::Approved);
    }

    #[test]
    fn urls_are_protocol_aware() {
        assert!(url_matches(Some("example.com"), "https://example.com/a"));
        assert!(!url_matches(Some("example.com"), "http://example.com/a"));
        assert!(!url_matches(Some("example.com"), "https://example.com.evil.net/"));
        assert!(url_matches(Some("https://*.github.com"), "https://api.github.com/x"));
        assert!(url_matches(Some("https://docs.rs/serde"), "https://docs.rs/serde/latest"));
        assert!(!url_matches(Some("https://docs.rs/serde"), "https://docs.rs/serde_json"));
        let mut p = perms(&[], &[]);
        p.denied.push(url_rule("example.com"));
        let fetch = PermissionRequest::Url(t::PermissionRequestUrl {
            url: "https://example.com/a".into(),
            ..Default::default()
        });
        assert_eq!(
            evaluate(&p, true, false, &fetch),
            Verdict::Denied("Permission to access this URL was denied.".into())
        );
        assert_eq!(
            evaluate(&p, true, false, &shell("curl -s https://example.com/x")),
            Verdict::Denied(
                "Permission to run this tool was denied due to the following rules: `url(https://example.com)`".into()
            )
        );
        let mut p = perms(&[], &[]);
        p.approved.push(url_rule("example.com"));
        assert_eq!(evaluate(&p, false, false, &fetch), Verdict::Approved);
    }

    #[test]
    fn the_sessions_own_files_need_no_approval_unless_denied() {
        let mut p = perms(&[], &[]);
        p.own = Some("/home/u/.copilot/session-state/s1".into());
        assert_eq!(evaluate(&p, false, false, &write("/home/u/.copilot/session-state/s1/plan.md")), Verdict::Approved);
        assert_eq!(evaluate(&p, false, false, &write("/home/u/.copilot/session-state/s2/plan.md")), Verdict::Ask);
        assert_eq!(evaluate(&p, false, false, &write("/home/u/.copilot/session-state/s1/../s2/x")), Verdict::Ask);
        p.denied = rules(&["write(plan.md)"]);
        assert!(matches!(
            evaluate(&p, false, false, &write("/home/u/.copilot/session-state/s1/plan.md")),
            Verdict::Denied(_)
        ));
    }

    #[test]
    fn nobody_to_ask_approves_what_only_reads() {
        let p = perms(&[], &[]);
        assert_eq!(evaluate(&p, false, true, &shell("ls | wc -l")), Verdict::Approved);
        assert_eq!(evaluate(&p, false, true, &shell("cat x > y")), Verdict::Ask);
        assert_eq!(evaluate(&p, false, false, &shell("ls")), Verdict::Ask, "a client decides");
        let mcp = PermissionRequest::Mcp(t::PermissionRequestMcp {
            server_name: "MyMCP".into(),
            tool_name: "drop".into(),
            ..Default::default()
        });
        let p = perms(&["MyMCP"], &["MyMCP(drop)"]);
        assert!(matches!(evaluate(&p, false, false, &mcp), Verdict::Denied(_)));
        let p = perms(&["MyMCP"], &[]);
        assert_eq!(evaluate(&p, false, false, &mcp), Verdict::Approved);
        let mut p = perms(&[], &[]);
        p.denied.push(PermissionRule { kind: "Shell".into(), argument: Some("rm".into()) });
        assert!(matches!(evaluate(&p, true, false, &shell("rm x")), Verdict::Denied(_)), "kinds in any case");
    }
}
