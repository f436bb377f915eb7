//! OpenTelemetry spans of the agent's work, written to a file as JSON lines (the SDKs'
//! `telemetry: {exporterType: "file", filePath}`), as the original exports them: per user
//! message an `invoke_agent` root span, under it a `chat` span per model call and an
//! `execute_tool` span per tool call, with the GenAI semantic-convention attributes. Message
//! contents and tool arguments/results are recorded only when the host asked for them
//! (`captureContent`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// Where spans go and how they are labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    pub path: PathBuf,
    /// The instrumentation scope's name (`sourceName`).
    pub source_name: String,
    /// Message contents, tool arguments and results go into the spans.
    pub capture_content: bool,
}

/// The scope name when the host names none.
const DEFAULT_SOURCE: &str = "github.copilot";

impl TelemetryConfig {
    /// The configuration the SDKs pass in the environment (`COPILOT_OTEL_*`); `None` unless
    /// file export is on. A relative path is the server's working directory's.
    pub fn from_env(var: impl Fn(&str) -> Option<String>, cwd: &std::path::Path) -> Option<Self> {
        let on = |v: Option<String>| v.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        if !on(var("COPILOT_OTEL_ENABLED")) {
            return None;
        }
        let path = var("COPILOT_OTEL_FILE_EXPORTER_PATH").filter(|p| !p.is_empty())?;
        if var("COPILOT_OTEL_EXPORTER_TYPE").is_some_and(|t| t != "file") {
            return None;
        }
        Some(Self {
            path: cwd.join(path),
            source_name: var("COPILOT_OTEL_SOURCE_NAME").filter(|s| !s.is_empty()).unwrap_or(DEFAULT_SOURCE.into()),
            capture_content: on(var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")),
        })
    }
}

/// Appends finished spans to the file, one JSON object a line.
#[derive(Debug)]
pub struct SpanFile {
    config: TelemetryConfig,
    file: Mutex<Option<std::fs::File>>,
}

/// A span under way; written when ended.
#[derive(Debug, Clone)]
pub struct Span {
    trace_id: String,
    span_id: String,
    parent_span_id: Option<String>,
    name: String,
    start: SystemTime,
    attributes: Map<String, Value>,
}

fn hex_id(bytes: usize) -> String {
    let raw = uuid::Uuid::new_v4().simple().to_string();
    raw[..bytes * 2].to_string()
}

fn nanos(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

impl Span {
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.attributes.insert(key.to_string(), value.into());
    }
}

impl SpanFile {
    pub fn new(config: TelemetryConfig) -> Self {
        Self { config, file: Mutex::new(None) }
    }

    pub fn captures_content(&self) -> bool {
        self.config.capture_content
    }

    /// A new trace's root span.
    pub fn root(&self, name: &str, operation: &str) -> Span {
        self.span(hex_id(16), None, name, operation)
    }

    pub fn child(&self, parent: &Span, name: &str, operation: &str) -> Span {
        self.span(parent.trace_id.clone(), Some(parent.span_id.clone()), name, operation)
    }

    fn span(&self, trace_id: String, parent_span_id: Option<String>, name: &str, operation: &str) -> Span {
        let mut attributes = Map::new();
        attributes.insert("gen_ai.operation.name".into(), operation.into());
        Span {
            trace_id,
            span_id: hex_id(8),
            parent_span_id,
            name: name.to_string(),
            start: SystemTime::now(),
            attributes,
        }
    }

    /// Writes the span; `error` marks it failed (status code 2), else it is OK (1).
    pub fn end(&self, span: Span, error: Option<&str>) {
        let end = SystemTime::now();
        let status = match error {
            Some(message) => json!({"code": 2, "message": message}),
            None => json!({"code": 1}),
        };
        let line = json!({
            "type": "span",
            "traceId": span.trace_id,
            "spanId": span.span_id,
            "parentSpanId": span.parent_span_id.unwrap_or_default(),
            "name": span.name,
            "kind": if span.attributes.get("gen_ai.operation.name").and_then(Value::as_str) == Some("chat") { 3 } else { 1 },
            "startTimeUnixNano": nanos(span.start).to_string(),
            "endTimeUnixNano": nanos(end).to_string(),
            "instrumentationScope": {"name": self.config.source_name},
            "attributes": span.attributes,
            "status": status,
        });
        self.write(&line.to_string());
    }

    fn write(&self, line: &str) {
        let mut file = crate::mutex::lock(&self.file);
        if file.is_none() {
            match std::fs::OpenOptions::new().create(true).append(true).open(&self.config.path) {
                Ok(f) => *file = Some(f),
                Err(e) => {
                    tracing::warn!(path = %self.config.path.display(), error = %e, "telemetry file not writable");
                    return;
                }
            }
        }
        if let Some(f) = file.as_mut() {
            if let Err(e) = writeln!(f, "{line}") {
                tracing::warn!(error = %e, "telemetry span not written");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn file_export_is_configured_from_the_sdk_environment() {
        let cwd = std::path::Path::new("/w");
        assert_eq!(TelemetryConfig::from_env(env(&[]), cwd), None);
        let vars = [
            ("COPILOT_OTEL_ENABLED", "true"),
            ("COPILOT_OTEL_FILE_EXPORTER_PATH", "t.jsonl"),
            ("COPILOT_OTEL_EXPORTER_TYPE", "file"),
            ("COPILOT_OTEL_SOURCE_NAME", "src"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ];
        let c = TelemetryConfig::from_env(env(&vars), cwd).expect("configured");
        assert_eq!(c.path, PathBuf::from("/w/t.jsonl"));
        assert_eq!(c.source_name, "src");
        assert!(c.capture_content);
        let otlp = [("COPILOT_OTEL_ENABLED", "true"), ("COPILOT_OTEL_EXPORTER_TYPE", "otlp-http")];
        assert_eq!(TelemetryConfig::from_env(env(&otlp), cwd), None);
    }

    #[test]
    fn spans_are_written_as_lines_with_their_parent() {
        let dir = std::env::temp_dir().join(format!("skipper-telemetry-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("spans.jsonl");
        let file =
            SpanFile::new(TelemetryConfig { path: path.clone(), source_name: "s".into(), capture_content: false });
        let root = file.root("invoke_agent", "invoke_agent");
        let mut chat = file.child(&root, "chat m", "chat");
        chat.set("gen_ai.request.model", "m");
        file.end(chat, None);
        file.end(root, Some("boom"));
        let lines: Vec<Value> = std::fs::read_to_string(&path)
            .expect("written")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["traceId"], lines[1]["traceId"]);
        assert_eq!(lines[0]["parentSpanId"], lines[1]["spanId"]);
        assert_eq!(lines[1]["parentSpanId"], "");
        assert_eq!(lines[0]["instrumentationScope"]["name"], "s");
        assert_eq!(lines[0]["attributes"]["gen_ai.operation.name"], "chat");
        assert_eq!(lines[1]["status"]["code"], 2);
        assert_eq!(lines[0]["spanId"].as_str().map(str::len), Some(16));
        std::fs::remove_dir_all(&dir).ok();
    }
}
