//! Scripted replies: what the fake model answers to the next `/chat/completions` request.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// One scripted answer. Replies are consumed in FIFO order, one per model request, and take
/// priority over a loaded snapshot (so a test can inject e.g. a 429 in front of a replay).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A plain text answer (`finish_reason: "stop"`).
    Text(String),
    /// Tool calls without text: `(name, arguments JSON text)`. Ids are `call_<n>`.
    ToolCalls(Vec<(String, String)>),
    /// Text and tool calls in one message; empty `content` is sent as `null`.
    Message { content: String, tool_calls: Vec<(String, String)> },
    /// An HTTP error with body `{"error":{"message","type","code"}}` and, when given, a
    /// `retry-after` header (seconds).
    Error { status: u16, retry_after: Option<u64>, message: String },
    /// Streams the text (and, for non-streaming requests, part of the JSON body), then closes
    /// the connection without `finish_reason` / `[DONE]`.
    DropMidStream { partial_text: String },
    /// Sends the response headers and then nothing, until the client disconnects or the
    /// server stops (abort / timeout tests).
    Hang,
    /// Waits before sending anything (slow first byte), then answers with `then`.
    Delay { ms: u64, then: Box<Reply> },
    /// Answers `ms` after the request arrived, however long the fake took to read it: a model
    /// whose latency does not depend on the request (the benchmarks' steady model).
    Latency { ms: u64, then: Box<Reply> },
    /// Streams each chunk as one text delta, sleeping `delay_ms` before each chunk after the
    /// first (abort during streaming). Non-streaming requests get the joined text after the
    /// same total delay.
    SlowText { chunks: Vec<String>, delay_ms: u64 },
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Self {
        Reply::Text(text.into())
    }

    /// One tool call; `arguments` is serialised compactly.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Reply::ToolCalls(vec![(name.into(), arguments.to_string())])
    }

    pub fn error(status: u16, retry_after: Option<u64>, message: impl Into<String>) -> Self {
        Reply::Error { status, retry_after, message: message.into() }
    }

    /// Parses the JSON form used by `POST /_fake/replies`:
    ///
    /// * `{"text": "..."}`
    /// * `{"tool_calls": [{"name": "bash", "arguments": {...} | "<json text>"}]}`
    /// * `{"content": "...", "tool_calls": [...]}`
    /// * `{"error": {"status": 429, "retry_after": 0, "message": "rate limited"}}`
    /// * `{"drop_mid_stream": "partial text"}`
    /// * `{"hang": true}`
    /// * `{"delay_ms": N, "then": {...}}`
    /// * `{"latency_ms": N, "then": {...}}`
    /// * `{"slow_text": ["a", "b"], "delay_ms": N}`
    pub fn from_json(v: &Value) -> Result<Self> {
        let obj = v.as_object().context("a reply must be a JSON object")?;
        if let Some(text) = obj.get("text") {
            return Ok(Reply::Text(text.as_str().context("`text` must be a string")?.to_string()));
        }
        if let Some(err) = obj.get("error") {
            let status = err
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s))
                .context("`error.status` must be an HTTP status code")?;
            return Ok(Reply::Error {
                status,
                retry_after: err.get("retry_after").and_then(Value::as_u64),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error scripted by fake-model")
                    .to_string(),
            });
        }
        if let Some(partial) = obj.get("drop_mid_stream") {
            return Ok(Reply::DropMidStream {
                partial_text: partial.as_str().context("`drop_mid_stream` must be a string")?.to_string(),
            });
        }
        if obj.get("hang").is_some_and(|h| h != &Value::Bool(false)) {
            return Ok(Reply::Hang);
        }
        if let Some(chunks) = obj.get("slow_text") {
            let chunks = chunks
                .as_array()
                .context("`slow_text` must be a list of strings")?
                .iter()
                .map(|c| c.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .context("`slow_text` must be a list of strings")?;
            let delay_ms = obj.get("delay_ms").and_then(Value::as_u64).unwrap_or(100);
            return Ok(Reply::SlowText { chunks, delay_ms });
        }
        if let Some(ms) = obj.get("latency_ms") {
            let ms = ms.as_u64().context("`latency_ms` must be a number")?;
            let then = obj.get("then").context("`latency_ms` needs `then`")?;
            return Ok(Reply::Latency { ms, then: Box::new(Reply::from_json(then)?) });
        }
        if let Some(ms) = obj.get("delay_ms") {
            let ms = ms.as_u64().context("`delay_ms` must be a number")?;
            let then = obj.get("then").context("`delay_ms` needs `then`")?;
            return Ok(Reply::Delay { ms, then: Box::new(Reply::from_json(then)?) });
        }
        let tool_calls = match obj.get("tool_calls") {
            Some(calls) => parse_tool_calls(calls)?,
            None => Vec::new(),
        };
        match obj.get("content") {
            Some(content) => {
                Ok(Reply::Message { content: content.as_str().unwrap_or_default().to_string(), tool_calls })
            }
            None if !tool_calls.is_empty() => Ok(Reply::ToolCalls(tool_calls)),
            None => bail!("unrecognised reply {v}"),
        }
    }
}

fn parse_tool_calls(v: &Value) -> Result<Vec<(String, String)>> {
    v.as_array()
        .context("`tool_calls` must be a list")?
        .iter()
        .map(|tc| {
            let name = tc.get("name").and_then(Value::as_str).context("tool call needs a `name`")?.to_string();
            let args = match tc.get("arguments") {
                None | Some(Value::Null) => "{}".to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            Ok((name, args))
        })
        .collect()
}

/// The JSON form of a reply (inverse of [`Reply::from_json`]), for logs.
pub fn reply_to_json(r: &Reply) -> Value {
    let calls =
        |tc: &[(String, String)]| -> Value { tc.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect() };
    match r {
        Reply::Text(t) => json!({"text": t}),
        Reply::ToolCalls(tc) => json!({"tool_calls": calls(tc)}),
        Reply::Message { content, tool_calls } => {
            json!({"content": content, "tool_calls": calls(tool_calls)})
        }
        Reply::Error { status, retry_after, message } => {
            json!({"error": {"status": status, "retry_after": retry_after, "message": message}})
        }
        Reply::DropMidStream { partial_text } => json!({"drop_mid_stream": partial_text}),
        Reply::Hang => json!({"hang": true}),
        Reply::Delay { ms, then } => json!({"delay_ms": ms, "then": reply_to_json(then)}),
        Reply::Latency { ms, then } => json!({"latency_ms": ms, "then": reply_to_json(then)}),
        Reply::SlowText { chunks, delay_ms } => json!({"slow_text": chunks, "delay_ms": delay_ms}),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn json_forms_round_trip() {
        let forms = [
            json!({"text": "hi"}),
            json!({"tool_calls": [{"name": "bash", "arguments": {"command": "ls", "a": 1}}]}),
            json!({"content": "x", "tool_calls": [{"name": "view", "arguments": "{\"path\":\"/\"}"}]}),
            json!({"error": {"status": 429, "retry_after": 0, "message": "rate limited"}}),
            json!({"drop_mid_stream": "part"}),
            json!({"hang": true}),
            json!({"delay_ms": 5, "then": {"text": "late"}}),
            json!({"slow_text": ["a", "b"], "delay_ms": 7}),
        ];
        let parsed: Vec<Reply> = forms.iter().map(|f| Reply::from_json(f).unwrap()).collect();
        assert_eq!(parsed[1], Reply::ToolCalls(vec![("bash".into(), r#"{"command":"ls","a":1}"#.into())]));
        assert_eq!(parsed[3], Reply::error(429, Some(0), "rate limited"));
        assert_eq!(parsed[6], Reply::Delay { ms: 5, then: Box::new(Reply::text("late")) });
        for p in &parsed {
            assert_eq!(&Reply::from_json(&reply_to_json(p)).unwrap(), p);
        }
        assert!(Reply::from_json(&json!({"bogus": 1})).is_err());
        assert!(Reply::from_json(&json!("text")).is_err());
    }
}
