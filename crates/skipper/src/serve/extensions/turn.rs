//! Watches one turn of a session as an in-process client: streams the answer's text, answers
//! permission requests for the agent (its `allow_tools` run; any other tool is confirmed by
//! the user or refused), and collects what the turn's end reports (files read, errors, a
//! confirmation to ask for).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loop_engine::{EventSubscriber, PendingAnswer, SessionHandle};
use protocol::event::Event;
use protocol::generated::types::{self as t, PermissionDecision};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::sse::{AgentError, Reference, ReferenceMetadata};

/// How long a turn may go without any event while no tool runs (a model that does not
/// answer) before it is given up and reported.
const QUIET_LIMIT: Duration = Duration::from_secs(25);
/// Events queued for one watcher; a watcher this far behind is cut off.
const QUEUE: usize = 4096;

/// Subscriber ids of in-process clients, apart from the RPC connections' (which count up from 1).
static NEXT_TAP: AtomicU64 = AtomicU64::new(1 << 62);

/// The session's events, as one watcher receives them.
pub struct Tap {
    id: u64,
    tx: mpsc::Sender<String>,
    overflowed: AtomicBool,
}

impl Tap {
    pub fn new() -> (Arc<Self>, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let id = NEXT_TAP.fetch_add(1, Ordering::Relaxed);
        (Arc::new(Self { id, tx, overflowed: AtomicBool::new(false) }), rx)
    }

    pub fn id(&self) -> u64 {
        self.id
    }
}

impl EventSubscriber for Tap {
    fn subscriber_id(&self) -> u64 {
        self.id
    }

    fn deliver(&self, _session_id: &str, _event: &Event, json: &str) -> bool {
        if self.tx.try_send(json.to_string()).is_err() {
            self.overflowed.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// What to do with a tool outside `allow_tools`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// End the answer with a confirmation; the request stays pending.
    User,
    /// Nobody can be asked (`/v1/chat/completions`): refuse.
    Refuse,
}

/// A confirmation to ask the user for.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub id: String,
    pub title: String,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub references: Vec<Reference>,
    pub errors: Vec<AgentError>,
    pub confirm: Option<Confirm>,
    /// The client stopped reading.
    pub gone: bool,
}

pub struct Turn {
    pub session: SessionHandle,
    pub tap: Arc<Tap>,
    pub rx: mpsc::Receiver<String>,
    pub allow: Vec<String>,
    pub ask: Ask,
    /// Where the session runs, to name the files it read relative to it.
    pub cwd: std::path::PathBuf,
    /// Tools already running when the watch starts (an accepted confirmation's): the quiet
    /// limit does not apply while they run.
    pub running_tools: usize,
}

struct Call {
    name: String,
    args: Value,
}

impl Turn {
    /// Follows the turn until the session is idle or waits for the user; each piece of the
    /// answer goes to `sink` as it arrives.
    pub async fn watch_with(&mut self, sink: &mut (impl super::Sink + ?Sized)) -> Outcome {
        let mut out = Outcome::default();
        let mut calls: HashMap<String, Call> = HashMap::new();
        let mut running_tools = self.running_tools;
        let mut streamed: std::collections::HashSet<String> = Default::default();
        loop {
            let next = if running_tools == 0 {
                match tokio::time::timeout(QUIET_LIMIT, self.rx.recv()).await {
                    Ok(n) => n,
                    Err(_) => {
                        let _ = self.session.abort(t::AbortReason::RemoteCommand).await;
                        // The aborted turn's own end comes later; the thread's next request
                        // must not take it for the end of its turn.
                        self.wait_idle().await;
                        out.errors.push(agent_error("timeout", "The model did not answer in time."));
                        return out;
                    }
                }
            } else {
                self.rx.recv().await
            };
            let Some(json) = next else {
                let message = if self.tap.overflowed.load(Ordering::Relaxed) {
                    "The answer could not be streamed fast enough."
                } else {
                    "The session ended."
                };
                out.errors.push(agent_error("stream_lost", message));
                return out;
            };
            let Ok(event) = serde_json::from_str::<Value>(&json) else { continue };
            let data = &event["data"];
            match event["type"].as_str().unwrap_or_default() {
                "assistant.message_delta" => {
                    if let (Some(delta), Some(id)) = (data["deltaContent"].as_str(), data["messageId"].as_str()) {
                        streamed.insert(id.to_string());
                        if !delta.is_empty() && !out.gone && !sink.text(delta).await {
                            out.gone = true;
                        }
                    }
                }
                "assistant.message" => {
                    let id = data["messageId"].as_str().unwrap_or_default();
                    let content = data["content"].as_str().unwrap_or_default();
                    if !streamed.contains(id) && !content.is_empty() && !out.gone && !sink.text(content).await {
                        out.gone = true;
                    }
                }
                "tool.execution_start" => {
                    running_tools += 1;
                    if let Some(id) = data["toolCallId"].as_str() {
                        let name = data["toolName"].as_str().unwrap_or_default().to_string();
                        calls.insert(id.to_string(), Call { name, args: data["arguments"].clone() });
                    }
                }
                "tool.execution_complete" => {
                    running_tools = running_tools.saturating_sub(1);
                    let call = data["toolCallId"].as_str().and_then(|id| calls.get(id));
                    if let Some(call) = call {
                        self.record_completion(call, data, &mut out);
                    }
                }
                "permission.requested" => {
                    let request_id = data["requestId"].as_str().unwrap_or_default().to_string();
                    let request = &data["permissionRequest"];
                    let name = request["toolCallId"].as_str().and_then(|id| calls.get(id)).map(|c| c.name.clone());
                    match self.decide(&request_id, name.as_deref(), request).await {
                        Some(confirm) => {
                            out.confirm = Some(confirm);
                            return out;
                        }
                        None => continue,
                    }
                }
                "session.error" => {
                    let code = data["errorType"].as_str().unwrap_or("error");
                    let message = data["message"].as_str().unwrap_or("The agent failed.");
                    out.errors.push(agent_error(code, message));
                }
                "session.idle" => return out,
                _ => {}
            }
        }
    }

    /// Lets the events go by until the session is idle (or nothing happens for a while).
    pub async fn wait_idle(&mut self) {
        while let Ok(Some(json)) = tokio::time::timeout(QUIET_LIMIT, self.rx.recv()).await {
            if json.contains("\"session.idle\"")
                && serde_json::from_str::<Value>(&json).is_ok_and(|e| e["type"] == "session.idle")
            {
                return;
            }
        }
    }

    /// Answers a permission request itself, or returns the confirmation to ask the user for.
    async fn decide(&self, request_id: &str, tool: Option<&str>, request: &Value) -> Option<Confirm> {
        if tool.is_some_and(|name| self.allow.iter().any(|a| a == name)) {
            let _ = self.session.answer(request_id, PendingAnswer::Permission(PermissionDecision::Approved)).await;
            return None;
        }
        if self.ask == Ask::Refuse {
            let _ =
                self.session.answer(request_id, PendingAnswer::Permission(PermissionDecision::UserNotAvailable)).await;
            return None;
        }
        Some(confirmation(request_id, tool, request))
    }

    fn record_completion(&self, call: &Call, data: &Value, out: &mut Outcome) {
        if data["success"].as_bool() == Some(true) {
            if call.name == "view" {
                if let Some(path) = call.args["path"].as_str() {
                    let shown = relative(&self.cwd, path);
                    if !out.references.iter().any(|r| r.id == shown) && self.cwd.join(path).is_file() {
                        out.references.push(file_reference(&shown));
                    }
                }
            }
            return;
        }
        let code = data["error"]["code"].as_str().unwrap_or("failure");
        // A refusal (the user dismissed it, or no one could approve) is an answer, not a failure.
        if matches!(code, "rejected" | "denied") {
            return;
        }
        let message = data["error"]["message"].as_str().unwrap_or("The tool failed.").to_string();
        out.errors.push(AgentError {
            kind: "function",
            code: code.to_string(),
            message,
            identifier: call.name.clone(),
        });
    }
}

pub fn agent_error(code: &str, message: &str) -> AgentError {
    AgentError { kind: "agent", code: code.to_string(), message: message.to_string(), identifier: "skipper".into() }
}

/// The confirmation for a pending request: which tool, and what it wants to do.
pub fn confirmation(request_id: &str, tool: Option<&str>, request: &Value) -> Confirm {
    let kind = request["kind"].as_str().unwrap_or("tool");
    let tool = tool.map(str::to_string).unwrap_or_else(|| kind.to_string());
    let detail = ["fullCommandText", "fileName", "path", "url", "toolName"]
        .iter()
        .find_map(|k| request[*k].as_str())
        .unwrap_or_default();
    let intention = request["intention"].as_str().unwrap_or_default();
    let message = match (intention.is_empty(), detail.is_empty()) {
        (false, false) => format!("The `{tool}` tool wants to {}: {detail}", lower_first(intention)),
        (false, true) => format!("The `{tool}` tool wants to {}", lower_first(intention)),
        (true, false) => format!("The `{tool}` tool wants to run: {detail}"),
        (true, true) => format!("The `{tool}` tool wants to run."),
    };
    Confirm { id: request_id.to_string(), title: format!("Allow {tool}?"), message }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn relative(cwd: &Path, path: &str) -> String {
    let p = Path::new(path);
    let p = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    p.strip_prefix(cwd).map(|r| r.to_string_lossy().into_owned()).unwrap_or_else(|_| path.to_string())
}

fn file_reference(shown: &str) -> Reference {
    let name = Path::new(shown).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Reference {
        kind: "file".into(),
        id: shown.to_string(),
        data: json!({"path": shown}),
        is_implicit: false,
        metadata: ReferenceMetadata { display_name: name, display_icon: None, display_url: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmations_name_the_tool_and_what_it_wants() {
        let shell = json!({"kind": "shell", "intention": "List files", "fullCommandText": "ls -la"});
        let c = confirmation("r1", Some("bash"), &shell);
        assert_eq!(c.title, "Allow bash?");
        assert_eq!(c.message, "The `bash` tool wants to list files: ls -la");
        let write = json!({"kind": "write", "intention": "Create file", "fileName": "/w/a.txt"});
        assert_eq!(confirmation("r2", None, &write).message, "The `write` tool wants to create file: /w/a.txt");
    }

    #[test]
    fn read_files_are_named_relative_to_the_session() {
        assert_eq!(relative(Path::new("/w"), "/w/src/a.rs"), "src/a.rs");
        assert_eq!(relative(Path::new("/w"), "b.rs"), "b.rs");
        assert_eq!(relative(Path::new("/w"), "/elsewhere/c.rs"), "/elsewhere/c.rs");
        assert_eq!(file_reference("src/a.rs").metadata.display_name, "a.rs");
    }
}
