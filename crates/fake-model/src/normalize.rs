//! Request normalisation, compatible with the official SDK replay harness
//! (`test/harness/replayingCapiProxy.ts` in github/copilot-sdk).
//!
//! Snapshots store conversations in a normalised form so that they do not depend on
//! timestamps, random tool-call ids, the test's working directory or the platform's shell
//! tool names. To match a live request against a snapshot, the live request is put through
//! the same normalisation; the stored side gets the idempotent subset of it (see [`Side`]),
//! so snapshots recorded by older runtimes (e.g. with the long "Available tools …" text)
//! still compare equal.

use std::sync::LazyLock;

use regex::{NoExpand, Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Placeholder for the working directory inside normalised text.
pub const WORKDIR_PLACEHOLDER: &str = "${workdir}";

/// The text a tool result is normalised to when the tool was interrupted (abort).
pub const INTERRUPTED_TEXT: &str = "The execution of this tool, or a previous tool was interrupted.";

/// Real shell tool names and their placeholders. The harness maps the platform's shell tool
/// family (bash on Unix, powershell on Windows) so snapshots are portable.
pub const SHELL_TOOL_NAMES: &[(&str, &str)] = &[
    ("bash", "${shell}"),
    ("read_bash", "${read_shell}"),
    ("write_bash", "${write_shell}"),
    ("stop_bash", "${stop_shell}"),
    ("list_bash", "${list_shell}"),
];

/// One message in normalised form. Field order matters only for display; comparison is
/// structural.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormMessage {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<NormToolCall>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: NormFunction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormFunction {
    pub name: String,
    pub arguments: String,
}

/// Which side of the comparison a message list comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A live request body: full normalisation.
    Request,
    /// A stored snapshot conversation: already normalised when recorded. The tool-result JSON
    /// step (unwrapping `{resultType:"success", textResultForLlm}`, key sorting, trimming) is
    /// skipped because it is not idempotent: an unwrapped `textResultForLlm` that itself looks
    /// like JSON would be re-sorted and no longer equal the live request's normalisation.
    Stored,
}

/// Normalises a list of raw chat messages (OpenAI chat-completions JSON, or the equivalent
/// YAML from a snapshot). `workdirs` are the real working directory paths to replace by
/// `${workdir}` (pass both the configured and the canonical path). Errors describe malformed
/// input (e.g. a message without a role) and are reported to the client as HTTP 400.
pub fn normalize_messages(messages: &[Value], side: Side, workdirs: &[String]) -> Result<Vec<NormMessage>, String> {
    let mut out = messages
        .iter()
        .enumerate()
        .map(|(i, m)| transform_message(m, side).map_err(|e| format!("message {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    normalize_tool_calls(&mut out);
    sort_tool_results(&mut out);
    let workdir_patterns = workdir_regexes(workdirs);
    for msg in &mut out {
        if let Some(content) = msg.content.as_mut() {
            *content = replace_workdirs(content, &workdir_patterns);
        }
        for tc in &mut msg.tool_calls {
            tc.function.arguments = replace_workdirs(&tc.function.arguments, &workdir_patterns);
        }
    }
    Ok(out)
}

/// Merges runs of consecutive assistant messages into one (content concatenated, tool calls
/// appended). Stored conversations keep the separate assistant messages a CAPI response
/// produced (one per `choice`), but a client sends them back as a single assistant message in
/// the next request; merging both sides makes the two shapes compare equal.
pub fn merge_assistant_runs(messages: Vec<NormMessage>) -> Vec<NormMessage> {
    let mut out: Vec<NormMessage> = Vec::with_capacity(messages.len());
    for msg in messages {
        match out.last_mut() {
            Some(prev) if prev.role == "assistant" && msg.role == "assistant" => {
                let joined = format!("{}{}", prev.content.take().unwrap_or_default(), msg.content.unwrap_or_default());
                prev.content = (!joined.is_empty()).then_some(joined);
                prev.tool_calls.extend(msg.tool_calls);
            }
            _ => out.push(msg),
        }
    }
    out
}

/// Replaces placeholders in reply text taken from a snapshot with real values:
/// `${workdir}` → the working directory (JSON-string-escaped when `json_escape`, for tool-call
/// arguments).
pub fn expand_workdir(text: &str, workdir: Option<&str>, json_escape: bool) -> String {
    let Some(workdir) = workdir else {
        return text.to_string();
    };
    let value = if json_escape {
        let quoted = Value::String(workdir.to_string()).to_string();
        quoted[1..quoted.len() - 1].to_string()
    } else {
        workdir.to_string()
    };
    text.replace(WORKDIR_PLACEHOLDER, &value)
}

/// `${shell}` → `bash` etc.; other names unchanged.
pub fn expand_tool_name(name: &str) -> String {
    SHELL_TOOL_NAMES
        .iter()
        .find(|(_, placeholder)| *placeholder == name)
        .map(|(real, _)| (*real).to_string())
        .unwrap_or_else(|| name.to_string())
}

fn normalize_tool_name(name: &str) -> String {
    SHELL_TOOL_NAMES
        .iter()
        .find(|(real, _)| *real == name)
        .map(|(_, placeholder)| (*placeholder).to_string())
        .unwrap_or_else(|| name.to_string())
}

/// Scalars in YAML (`content: 4`) arrive as numbers/bools; treat them as their text.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn transform_message(m: &Value, side: Side) -> Result<NormMessage, String> {
    let obj = m.as_object().ok_or("not a JSON object")?;
    let role = obj.get("role").and_then(Value::as_str).ok_or("missing \"role\"")?.to_string();
    let raw_content = obj.get("content").unwrap_or(&Value::Null);
    let content = match role.as_str() {
        // The system prompt changes with every runtime version; never compared.
        "system" => Some("${system}".to_string()),
        "user" => match raw_content {
            Value::Array(parts) => {
                let texts: Vec<String> = parts
                    .iter()
                    .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                        Some("text") => p.get("text").and_then(Value::as_str).map(normalize_user_text),
                        Some("image_url") => Some("[image]".to_string()),
                        _ => None,
                    })
                    .collect();
                Some(texts.join("\n"))
            }
            other => scalar_text(other).map(|s| normalize_user_text(&s)),
        },
        "tool" => match (side, raw_content) {
            (Side::Request, Value::String(s)) => Some(normalize_tool_result_json(s)),
            (Side::Stored, other) => scalar_text(other),
            // The harness ignores non-string tool content (image results); so do we.
            _ => None,
        },
        _ => scalar_text(raw_content),
    }
    .filter(|c| !c.is_empty());

    let tool_call_id = obj.get("tool_call_id").and_then(scalar_text).filter(|s| !s.is_empty());

    let tool_calls = match obj.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().map(transform_tool_call).collect::<Result<Vec<_>, _>>()?,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err("\"tool_calls\" is not an array".into()),
    };

    Ok(NormMessage { role, tool_call_id, content, tool_calls })
}

fn transform_tool_call(tc: &Value) -> Result<NormToolCall, String> {
    let obj = tc.as_object().ok_or("tool call is not an object")?;
    let function = obj.get("function").and_then(Value::as_object);
    let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default().to_string();
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(s)) => normalize_arguments(s),
        // Hand-written snapshots may give arguments as a mapping.
        Some(v @ (Value::Object(_) | Value::Array(_))) => v.to_string(),
        _ => "{}".to_string(),
    };
    Ok(NormToolCall {
        id: obj.get("id").and_then(scalar_text).unwrap_or_default(),
        kind: obj.get("type").and_then(Value::as_str).unwrap_or("function").to_string(),
        function: NormFunction { name, arguments },
    })
}

/// Re-serialises tool-call arguments compactly (key order preserved) so whitespace
/// differences between model outputs do not matter. Empty → `{}`; invalid JSON unchanged.
pub fn normalize_arguments(args: &str) -> String {
    if args.trim().is_empty() {
        return "{}".to_string();
    }
    match serde_json::from_str::<Value>(args) {
        Ok(v) => v.to_string(),
        Err(_) => args.to_string(),
    }
}

/// Tool results: the SDK wraps successful external tool results as
/// `{resultType:"success", textResultForLlm}`; unwrap that, key-sort other JSON (property order
/// is not meaningful), trim plain text.
fn normalize_tool_result_json(s: &str) -> String {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(obj))
            if obj.get("resultType").and_then(Value::as_str) == Some("success")
                && obj.contains_key("textResultForLlm") =>
        {
            match &obj["textResultForLlm"] {
                Value::String(text) => text.clone(),
                other => sort_json_keys(other).to_string(),
            }
        }
        Ok(v) => sort_json_keys(&v).to_string(),
        Err(_) => s.trim().to_string(),
    }
}

fn sort_json_keys(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(sort_json_keys).collect()),
        Value::Object(obj) => {
            let mut keys: Vec<&String> = obj.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sort_json_keys(&obj[k]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn re(pattern: &str) -> Regex {
    // Patterns are compile-time constants covered by unit tests.
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("valid built-in regex")
}

static DATETIME: LazyLock<Regex> = LazyLock::new(|| re(r"<current_datetime>.*?</current_datetime>"));
static REMINDER: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)<reminder>.*?</reminder>"));
static SYSTEM_REMINDER: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)<system_reminder>.*?</system_reminder>"));
static AGENT_INSTRUCTIONS: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)<agent_instructions>.*?</agent_instructions>"));
static PLAN_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\[\[PLAN\]\]\s*"));
static COMPACTION_PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?s)Please create a detailed summary of the conversation so far\. The history is being compacted.*")
});
// Runtime versions may include or omit SKILL.md front matter in skill context blocks.
static SKILL_FRONTMATTER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?s)(<skill-context\b[^>]*>\s*Base directory for this skill:[^\r\n]*(?:\r?\n)+)---\r?\n.*?\r?\n---(?:\r?\n)+")
});
// Background-agent completion notices differ between runtime versions; canonicalise.
static TASK_COMPLETION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"Agent "([^"]+)" \(([^)]+)\) (?:has completed successfully|has finished processing and is now idle)\. Use read_agent with agent_id "[^"]+" to (?:retrieve (?:unread results|the full results)|read the results, or write_agent to send follow-up messages)\."#,
    )
});

/// User message normalisation: strip volatile injected blocks (timestamps, reminders) and
/// canonicalise the compaction prompt.
pub fn normalize_user_text(text: &str) -> String {
    let s = SKILL_FRONTMATTER.replace_all(text, "$1");
    let s = TASK_COMPLETION.replace_all(
        &s,
        r#"Agent "$1" ($2) has completed successfully. Use read_agent with agent_id "$1" to retrieve the full results."#,
    );
    let s = DATETIME.replace_all(&s, "");
    let s = REMINDER.replace_all(&s, "");
    let s = SYSTEM_REMINDER.replace_all(&s, "");
    let s = AGENT_INSTRUCTIONS.replace_all(&s, "");
    let s = PLAN_PREFIX.replace(&s, "");
    let s = COMPACTION_PROMPT.replace(&s, NoExpand("${compaction_prompt}"));
    s.trim().to_string()
}

static LARGE_OUTPUT_FILE: LazyLock<Regex> = LazyLock::new(|| re(r"\d+-copilot-tool-output-[a-z0-9.]+"));
static LARGE_OUTPUT_PATH: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"(?:[A-Za-z]:)?[^\s"'`]*[\\/]session-state[\\/]temp[\\/]PLACEHOLDER-copilot-tool-output-PLACEHOLDER"#)
});
static SHELL_EXIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"<shellId:\s*[^>\r\n]+?\s+completed with exit code (-?\d+)>"));
static GH_AUTH_ACTIONS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN environment variable\. Example:\s*\n\s*env:\s*\n\s*GH_TOKEN: \$\{\{ github\.token \}\}",
    )
});
static GH_AUTH_LOCAL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"To get started with GitHub CLI, please run:\s*gh auth login\s*\n\s*Alternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token\.",
    )
});
// Unknown-tool errors may or may not list the available tools, and the list is platform- and
// version-specific; keep only the stable first sentence.
static AVAILABLE_TOOLS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(Tool '[^']+' does not exist\.) Available tools that can be called are [^.]*\."));
static BACKGROUND_AGENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?s)^(Agent started in background with agent_id: .*?\. You'll be notified when it completes\. Tell the user you're waiting and end your response, or continue unrelated work until notified\.).*$",
    )
});
// Aborted tool executions are reported in several ways depending on where the abort landed;
// all mean "interrupted".
static SESSION_ABORTED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?s)Failed to execute `[^`]*` tool.*? due to error: (?:Error: )?Session aborted"));
const SHELL_RECONFIGURED: &str = "<shell context is being reconfigured; retry the command>";

static READ_AGENT_IDLE: LazyLock<Regex> = LazyLock::new(|| re(r"^Agent is idle \(waiting for messages\)\."));
static READ_AGENT_STATUS: LazyLock<Regex> = LazyLock::new(|| re(r"^Agent completed\. (.*), status: idle,"));
static READ_AGENT_TURNS: LazyLock<Regex> = LazyLock::new(|| re(r", total_turns: \d+(\r?\n|$)"));
static READ_AGENT_TURN_HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"\r?\n\r?\n\[Turn \d+\]\r?\n"));
static ELAPSED: LazyLock<Regex> = LazyLock::new(|| re(r"\belapsed: \d+(?:\.\d+)?s\b"));
static DURATION: LazyLock<Regex> = LazyLock::new(|| re(r"\bduration: \d+(?:\.\d+)?s\b"));

/// Tool-result normalisers for environment- and version-dependent text. Applied to both sides
/// (they are idempotent), keyed on the normalised name of the tool that produced the result.
pub fn normalize_tool_result_text(tool_name: Option<&str>, text: &str) -> String {
    if SESSION_ABORTED.is_match(text) || text.contains(SHELL_RECONFIGURED) {
        return INTERRUPTED_TEXT.to_string();
    }
    let s = LARGE_OUTPUT_FILE.replace_all(text, "PLACEHOLDER-copilot-tool-output-PLACEHOLDER");
    let s = LARGE_OUTPUT_PATH.replace_all(&s, "/session-state/temp/PLACEHOLDER-copilot-tool-output-PLACEHOLDER");
    // The live runtime reports `<shellId: N completed with exit code X>`; snapshots were
    // recorded with the harness rewriting it. Applied for every tool (read_bash output carries
    // it too); symmetric on both sides so this is safe.
    let s = SHELL_EXIT.replace_all(&s, "<exited with exit code $1>");
    let s = GH_AUTH_ACTIONS.replace_all(&s, NoExpand("${gh_auth_required}"));
    let s = GH_AUTH_LOCAL.replace_all(&s, NoExpand("${gh_auth_required}"));
    let s = AVAILABLE_TOOLS.replace_all(&s, "$1");
    let s = BACKGROUND_AGENT.replace(&s, "$1");
    let mut s = s.into_owned();
    if tool_name == Some("read_agent") {
        let t = READ_AGENT_IDLE.replace(&s, "Agent completed.");
        let t = READ_AGENT_STATUS.replace(&t, "Agent completed. $1, status: completed,");
        let t = READ_AGENT_TURNS.replace(&t, ", total_turns: 0, duration: 0s$1");
        let t = READ_AGENT_TURN_HEADER.replace(&t, "\n\n");
        let t = ELAPSED.replace_all(&t, "elapsed: 0s");
        s = DURATION.replace_all(&t, "duration: 0s").into_owned();
    }
    s
}

/// Tool-call ids → `toolcall_0`, `toolcall_1`, … in order of first appearance (tool results
/// follow the same mapping); shell tool names → placeholders; tool results through the
/// per-tool normalisers.
fn normalize_tool_calls(messages: &mut [NormMessage]) {
    let mut ids: Vec<(String, String)> = Vec::new();
    // Normalised id → normalised tool name, for picking per-tool result normalisers.
    let mut names: Vec<(String, String)> = Vec::new();
    for msg in messages.iter_mut() {
        for tc in &mut msg.tool_calls {
            let mapped = match ids.iter().find(|(orig, _)| *orig == tc.id) {
                Some((_, mapped)) => mapped.clone(),
                None => {
                    let mapped = format!("toolcall_{}", ids.len());
                    ids.push((tc.id.clone(), mapped.clone()));
                    mapped
                }
            };
            tc.id = mapped;
            tc.function.name = normalize_tool_name(&tc.function.name);
            names.push((tc.id.clone(), tc.function.name.clone()));
        }
        if msg.role == "tool" {
            if let Some(id) = msg.tool_call_id.as_mut() {
                if let Some((_, mapped)) = ids.iter().find(|(orig, _)| orig == id) {
                    *id = mapped.clone();
                }
            }
            if let Some(content) = msg.content.as_mut() {
                let tool_name = msg
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| names.iter().rev().find(|(nid, _)| nid == id).map(|(_, n)| n.as_str()));
                *content = normalize_tool_result_text(tool_name, content);
            }
        }
    }
}

fn tool_id_number(id: Option<&str>) -> Option<u64> {
    id?.strip_prefix("toolcall_")?.parse().ok()
}

/// Tools run concurrently, so results may be sent in any order; sort each run of consecutive
/// tool messages by normalised id.
fn sort_tool_results(messages: &mut [NormMessage]) {
    let mut start = 0;
    while start < messages.len() {
        if messages[start].role != "tool" {
            start += 1;
            continue;
        }
        let mut end = start + 1;
        while end < messages.len() && messages[end].role == "tool" {
            end += 1;
        }
        messages[start..end].sort_by(|a, b| {
            let (ia, ib) = (a.tool_call_id.as_deref(), b.tool_call_id.as_deref());
            match (tool_id_number(ia), tool_id_number(ib)) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => ia.unwrap_or_default().cmp(ib.unwrap_or_default()),
            }
        });
        start = end;
    }
}

/// Builds case-insensitive patterns matching each working directory (with `/` or `\`
/// separators) plus an optional path tail, longest directory first so a nested path wins.
fn workdir_regexes(workdirs: &[String]) -> Vec<Regex> {
    let mut dirs: Vec<String> = workdirs
        .iter()
        .map(|w| w.replace('\\', "/").trim_end_matches('/').to_string())
        // An empty or root workdir would replace every slash; never useful.
        .filter(|w| !w.is_empty())
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    dirs.dedup();
    dirs.iter()
        .filter_map(|dir| {
            let escaped: Vec<String> = dir.split('/').map(regex::escape).collect();
            let pattern = format!(r#"{}([\\/]+[^\s"'`,]*)?"#, escaped.join(r"[\\/]+"));
            RegexBuilder::new(&pattern).case_insensitive(true).build().ok()
        })
        .collect()
}

static SLASHES: LazyLock<Regex> = LazyLock::new(|| re(r"[\\/]+"));

fn replace_workdirs(text: &str, patterns: &[Regex]) -> String {
    let mut s = text.to_string();
    for p in patterns {
        s = p
            .replace_all(&s, |caps: &regex::Captures<'_>| {
                let rest = caps.get(1).map(|m| SLASHES.replace_all(m.as_str(), "/").into_owned()).unwrap_or_default();
                format!("{WORKDIR_PLACEHOLDER}{rest}")
            })
            .into_owned();
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn norm(messages: Value, workdir: &str) -> Vec<NormMessage> {
        normalize_messages(messages.as_array().unwrap(), Side::Request, &[workdir.to_string()]).unwrap()
    }

    #[test]
    fn user_text_strips_injected_blocks() {
        let s = "<current_datetime>2026-11-22T11:29:03.560+00:00</current_datetime>\n\n<reminder>\nfoo\n</reminder>[[PLAN]] hi <system_reminder>x</system_reminder><agent_instructions>y\nz</agent_instructions> ";
        // [[PLAN]] is only stripped at the very start (after other blocks are removed).
        assert_eq!(normalize_user_text(s), "hi");
        assert_eq!(
            normalize_user_text("Please create a detailed summary of the conversation so far. The history is being compacted so that ...\nmore"),
            "${compaction_prompt}"
        );
        assert_eq!(normalize_user_text("  plain  "), "plain");
    }

    #[test]
    fn system_and_multimodal() {
        let out = norm(
            json!([
                {"role":"system","content":"You are..."},
                {"role":"user","content":[
                    {"type":"text","text":"<current_datetime>x</current_datetime>\n\nlook"},
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}}
                ]}
            ]),
            "/w",
        );
        assert_eq!(out[0].content.as_deref(), Some("${system}"));
        assert_eq!(out[1].content.as_deref(), Some("look\n[image]"));
    }

    #[test]
    fn tool_ids_names_workdir_and_results() {
        let out = norm(
            json!([
                {"role":"assistant","content":"","tool_calls":[
                    {"id":"call_9","type":"function","function":{"name":"bash","arguments":"{ \"command\": \"ls /tmp/WD/sub//x.txt\" }"}},
                    {"id":"call_3","type":"function","function":{"name":"report_intent","arguments":""}}
                ]},
                {"role":"tool","tool_call_id":"call_3","content":"Tool 'report_intent' does not exist. Available tools that can be called are bash, read_bash, view."},
                {"role":"tool","tool_call_id":"call_9","content":"out\n<shellId: 0 completed with exit code 2>\n"},
            ]),
            "/tmp/wd/",
        );
        assert_eq!(out[0].content, None);
        assert_eq!(out[0].tool_calls[0].id, "toolcall_0");
        assert_eq!(out[0].tool_calls[0].function.name, "${shell}");
        assert_eq!(out[0].tool_calls[0].function.arguments, r#"{"command":"ls ${workdir}/sub/x.txt"}"#);
        assert_eq!(out[0].tool_calls[1].id, "toolcall_1");
        assert_eq!(out[0].tool_calls[1].function.arguments, "{}");
        // Sorted by normalised id.
        assert_eq!(out[1].tool_call_id.as_deref(), Some("toolcall_0"));
        assert_eq!(out[1].content.as_deref(), Some("out\n<exited with exit code 2>"));
        assert_eq!(out[2].tool_call_id.as_deref(), Some("toolcall_1"));
        assert_eq!(out[2].content.as_deref(), Some("Tool 'report_intent' does not exist."));
    }

    #[test]
    fn tool_result_json_handling() {
        let out = norm(
            json!([
                {"role":"tool","tool_call_id":"a","content":"{\"resultType\":\"success\",\"textResultForLlm\":\"  ok  \"}"},
                {"role":"tool","tool_call_id":"b","content":"{\"z\":1,\"a\":{\"y\":2,\"b\":3}}"},
                {"role":"tool","tool_call_id":"c","content":"Failed to execute `bash` tool with arguments: {} due to error: Error: Session aborted"},
                {"role":"tool","tool_call_id":"d","content":"<shell context is being reconfigured; retry the command>"},
            ]),
            "/w",
        );
        assert_eq!(out[0].content.as_deref(), Some("  ok  "));
        assert_eq!(out[1].content.as_deref(), Some(r#"{"a":{"b":3,"y":2},"z":1}"#));
        assert_eq!(out[2].content.as_deref(), Some(INTERRUPTED_TEXT));
        assert_eq!(out[3].content.as_deref(), Some(INTERRUPTED_TEXT));
    }

    #[test]
    fn stored_side_is_stable() {
        let stored = json!([
            {"role":"assistant","tool_calls":[{"id":"toolcall_0","type":"function","function":{"name":"${shell}","arguments":"{\"command\":\"ls\"}"}}]},
            {"role":"tool","tool_call_id":"toolcall_0","content":"{\"b\":1,\"a\":2}"},
        ]);
        let out = normalize_messages(stored.as_array().unwrap(), Side::Stored, &[]).unwrap();
        // Not re-sorted on the stored side.
        assert_eq!(out[1].content.as_deref(), Some(r#"{"b":1,"a":2}"#));
        assert_eq!(out[0].tool_calls[0].function.name, "${shell}");
    }

    #[test]
    fn merges_assistant_runs() {
        let msgs = vec![
            NormMessage { role: "assistant".into(), tool_call_id: None, content: Some("a".into()), tool_calls: vec![] },
            NormMessage {
                role: "assistant".into(),
                tool_call_id: None,
                content: None,
                tool_calls: vec![NormToolCall {
                    id: "toolcall_0".into(),
                    kind: "function".into(),
                    function: NormFunction { name: "x".into(), arguments: "{}".into() },
                }],
            },
        ];
        let merged = merge_assistant_runs(msgs);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].content.as_deref(), Some("a"));
        assert_eq!(merged[0].tool_calls.len(), 1);
    }

    #[test]
    fn expansion() {
        assert_eq!(expand_tool_name("${shell}"), "bash");
        assert_eq!(expand_tool_name("view"), "view");
        assert_eq!(expand_workdir(r#"{"p":"${workdir}/a"}"#, Some(r"C:\w"), true), r#"{"p":"C:\\w/a"}"#);
        assert_eq!(expand_workdir("${workdir}", None, false), "${workdir}");
    }

    #[test]
    fn malformed_messages_are_errors() {
        assert!(normalize_messages(&[json!({"content":"x"})], Side::Request, &[]).is_err());
        assert!(normalize_messages(&[json!(3)], Side::Request, &[]).is_err());
    }

    #[test]
    fn read_agent_normaliser() {
        let s = "Agent completed. agent_id: a, status: idle, elapsed: 12.5s, total_turns: 3\n\n[Turn 2]\nanswer";
        assert_eq!(
            normalize_tool_result_text(Some("read_agent"), s),
            "Agent completed. agent_id: a, status: completed, elapsed: 0s, total_turns: 0, duration: 0s\n\nanswer"
        );
    }
}
