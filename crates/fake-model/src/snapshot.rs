//! Snapshot files (the official harness' YAML format) and matching requests against them.
//!
//! ```yaml
//! models: [claude-sonnet-4.5]
//! errors:                     # optional: requests answered with an HTTP error
//!   - model: claude-sonnet-4.5   # optional filter
//!     status: 429
//!     code: user_weekly_rate_limited
//!     message: You've reached your weekly rate limit.
//!     retryAfterSeconds: 1
//!     messages: [ … ]          # the exact (normalised) request
//! conversations:
//!   - messages: [ … ]          # normalised messages incl. assistant replies
//! ```

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::normalize::{merge_assistant_runs, normalize_messages, NormMessage, Side};

/// A loaded, normalised snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub path: PathBuf,
    pub models: Vec<String>,
    /// Conversations with runs of assistant messages merged (see
    /// [`merge_assistant_runs`]).
    pub conversations: Vec<Vec<NormMessage>>,
    pub errors: Vec<StoredError>,
}

/// An `errors:` entry: a request that is answered with an HTTP error every time it is seen
/// (as the harness does: retries of the same request fail again, so clients exhaust their
/// retries unless something, e.g. the model, changes).
#[derive(Debug, Clone)]
pub struct StoredError {
    pub model: Option<String>,
    pub status: u16,
    pub code: Option<String>,
    pub message: Option<String>,
    pub retry_after_seconds: Option<u64>,
    pub messages: Vec<NormMessage>,
}

/// Outcome of matching one normalised request against a snapshot.
#[derive(Debug, Clone)]
pub enum Match {
    Error(StoredError),
    /// The merged assistant message to answer with.
    Reply(NormMessage),
    /// The request equals a whole stored conversation: the recording has no answer, so the
    /// model "never answers" (timeout / abort tests).
    Hang,
    /// Nothing matched; the text explains the closest candidates.
    NoMatch(String),
}

impl Snapshot {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading snapshot {}", path.display()))?;
        Self::parse(&text, path.to_path_buf()).with_context(|| format!("parsing snapshot {}", path.display()))
    }

    pub fn parse(yaml: &str, path: PathBuf) -> Result<Self> {
        let doc: Value = serde_yaml::from_str(yaml)?;
        let models = doc
            .get("models")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();

        let mut conversations = Vec::new();
        for (i, conv) in array(&doc, "conversations")?.iter().enumerate() {
            let messages = normalize_stored(conv).with_context(|| format!("conversation {i}"))?;
            conversations.push(messages);
        }

        let mut errors = Vec::new();
        for (i, err) in array(&doc, "errors")?.iter().enumerate() {
            let status = err
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .with_context(|| format!("errors[{i}]: missing numeric status"))?;
            errors.push(StoredError {
                model: err.get("model").and_then(Value::as_str).map(str::to_string),
                status,
                code: err.get("code").and_then(Value::as_str).map(str::to_string),
                message: err.get("message").and_then(Value::as_str).map(str::to_string),
                retry_after_seconds: err.get("retryAfterSeconds").and_then(Value::as_u64),
                messages: normalize_stored(err).with_context(|| format!("errors[{i}]"))?,
            });
        }

        Ok(Self { path, models, conversations, errors })
    }

    /// Matches a normalised request (assistant runs already merged) in the harness' order:
    /// error entries, then a conversation the request is a strict prefix of with an assistant
    /// message next, then a conversation the request equals (hang).
    pub fn find(&self, request: &[NormMessage], model: Option<&str>) -> Match {
        for err in &self.errors {
            if err.model.is_some() && err.model.as_deref() != model {
                continue;
            }
            if err.messages == request {
                return Match::Error(err.clone());
            }
        }
        for conv in &self.conversations {
            if request.len() < conv.len()
                && conv[..request.len()] == *request
                && conv[request.len()].role == "assistant"
            {
                return Match::Reply(conv[request.len()].clone());
            }
        }
        if self.conversations.iter().any(|c| c == request) {
            return Match::Hang;
        }
        Match::NoMatch(self.diagnose(request))
    }

    /// Explains why nothing matched, closest conversation (longest common prefix) first.
    fn diagnose(&self, request: &[NormMessage]) -> String {
        let mut lines = vec![format!(
            "fake-model: no stored conversation in {} matches this request ({} normalised messages).",
            self.path.display(),
            request.len()
        )];
        if self.conversations.is_empty() {
            lines.push("The snapshot has no conversations.".into());
            return lines.join("\n");
        }
        let mut ranked: Vec<(usize, usize)> = self
            .conversations
            .iter()
            .enumerate()
            .map(|(i, conv)| {
                let common = conv.iter().zip(request).take_while(|(a, b)| a == b).count();
                (i, common)
            })
            .collect();
        ranked.sort_by_key(|&(i, common)| (std::cmp::Reverse(common), i));
        for (rank, &(i, common)) in ranked.iter().enumerate() {
            let conv = &self.conversations[i];
            let label = if rank == 0 { " [closest]" } else { "" };
            if common < request.len() && common < conv.len() {
                lines.push(format!(
                    "Conversation {i} ({} messages){label}: mismatch at message {common}:\n  request: {}\n  stored:  {}",
                    conv.len(),
                    brief(&request[common]),
                    brief(&conv[common]),
                ));
            } else if request.len() >= conv.len() {
                lines.push(format!(
                    "Conversation {i} ({} messages){label}: all stored messages match, but the request has {} (need fewer); next request message: {}",
                    conv.len(),
                    request.len(),
                    request.get(conv.len()).map(brief).unwrap_or_default(),
                ));
            } else {
                lines.push(format!(
                    "Conversation {i} ({} messages){label}: prefix matched, but the next stored message is \"{}\" (need \"assistant\").",
                    conv.len(),
                    conv[request.len()].role,
                ));
            }
        }
        lines.join("\n")
    }
}

fn array<'a>(doc: &'a Value, key: &str) -> Result<&'a [Value]> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => bail!("`{key}` is not a list"),
    }
}

fn normalize_stored(entry: &Value) -> Result<Vec<NormMessage>> {
    let messages = entry.get("messages").and_then(Value::as_array).context("missing `messages` list")?;
    let normalized = normalize_messages(messages, Side::Stored, &[]).map_err(anyhow::Error::msg)?;
    Ok(merge_assistant_runs(normalized))
}

/// A compact one-line rendering of a message, cut to keep diagnostics readable.
pub fn brief(msg: &NormMessage) -> String {
    let s = serde_json::to_string(msg).unwrap_or_default();
    const MAX: usize = 600;
    if s.chars().count() > MAX {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}… ({} chars)", s.chars().count())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const YAML: &str = r#"
models: [m]
errors:
  - model: m
    status: 429
    retryAfterSeconds: 2
    messages:
      - role: user
        content: boom
conversations:
  - messages:
      - role: user
        content: hi
      - role: assistant
        content: "a "
      - role: assistant
        tool_calls:
          - id: toolcall_0
            type: function
            function: {name: "${shell}", arguments: '{"command":"ls"}'}
  - messages:
      - role: user
        content: wait
"#;

    fn user(text: &str) -> NormMessage {
        NormMessage { role: "user".into(), tool_call_id: None, content: Some(text.into()), tool_calls: vec![] }
    }

    #[test]
    fn matching_order() {
        let snap = Snapshot::parse(YAML, "x.yaml".into()).unwrap();
        match snap.find(&[user("boom")], Some("m")) {
            Match::Error(e) => assert_eq!((e.status, e.retry_after_seconds), (429, Some(2))),
            other => panic!("{other:?}"),
        }
        // The model filter excludes the error entry; nothing else matches.
        assert!(matches!(snap.find(&[user("boom")], Some("other")), Match::NoMatch(_)));
        match snap.find(&[user("hi")], Some("m")) {
            Match::Reply(m) => {
                assert_eq!(m.content.as_deref(), Some("a "));
                assert_eq!(m.tool_calls.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(snap.find(&[user("wait")], None), Match::Hang));
        match snap.find(&[user("nope")], None) {
            Match::NoMatch(text) => assert!(text.contains("mismatch at message 0"), "{text}"),
            other => panic!("{other:?}"),
        }
    }
}
