//! The session interchange JSONL (version 1) that `sessions import` reads: a transcript from
//! another tool, as the original CLI 1.0.102 defines it. Line one is a `session` header
//! (external id, creation time, optional title, source and workspace); every other line is a
//! `message` (user or assistant, text and attachment parts), a `tool-call` (after an assistant
//! message of its turn) or a `tool-result` (of an earlier call, before the next message).
//!
//! [`parse`] checks all of it and reports every problem it finds with the original's codes and
//! texts, so a tool that grades its export against one CLI reads the same answer from the
//! other. [`events`] turns a checked transcript into a session's events.

mod events;
mod header;
mod records;
mod time;

use serde::Serialize;
use serde_json::Value;

pub use events::{events, ImportedAttachment};
pub use header::{Header, Repository, Workspace};
pub use records::{Content, Record, ToolResult};

/// One problem with the input: where, a stable code, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub line: usize,
    pub code: &'static str,
    pub message: String,
    /// The record's own id, when the problem is with a record that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
}

impl Diagnostic {
    pub fn new(line: usize, code: &'static str, message: impl Into<String>) -> Self {
        Self { line, code, message: message.into(), external_id: None }
    }

    fn of(line: usize, code: &'static str, message: impl Into<String>, id: &str) -> Self {
        Self { external_id: Some(id.to_string()), ..Self::new(line, code, message) }
    }
}

/// A transcript that passed every check: its header and records, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub header: Header,
    pub header_line: usize,
    pub records: Vec<Record>,
}

/// Checks `text` as a session interchange file: the parsed transcript, or every problem found.
pub fn parse(text: &str) -> Result<Parsed, Vec<Diagnostic>> {
    let lines = json_lines(text)?;
    let mut diagnostics = Vec::new();
    let (header_line, first) = &lines[0];
    let header = header::parse(first, *header_line, &mut diagnostics);
    let records = records::parse_all(&lines[1..], &mut diagnostics);
    match header {
        Some(header) if diagnostics.is_empty() => Ok(Parsed { header, header_line: *header_line, records }),
        _ => Err(diagnostics),
    }
}

/// The non-blank lines as JSON, numbered from 1.
fn json_lines(text: &str) -> Result<Vec<(usize, Value)>, Vec<Diagnostic>> {
    let mut values = Vec::new();
    let mut diagnostics = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => values.push((i + 1, v)),
            Err(_) => diagnostics.push(Diagnostic::new(i + 1, "malformed_json", "Line is not valid JSON.")),
        }
    }
    if values.is_empty() && diagnostics.is_empty() {
        diagnostics.push(Diagnostic::new(1, "empty_input", "The JSONL input contains no records."));
    }
    if diagnostics.is_empty() {
        Ok(values)
    } else {
        Err(diagnostics)
    }
}

/// A string with something in it besides white space.
fn non_empty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests;
