//! A session's usage totals (`session.usage.getMetrics`, and what `-p --usage-output-file`
//! writes): user requests, per model the calls and tokens its usage records hold, and the
//! lines the file tools changed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use protocol::event::Event;

use protocol::event::SessionEvent;
use protocol::extensions::UsageRecord;
use protocol::generated::types as t;

use crate::handle::SessionHandle;
use crate::Engine;

impl Engine {
    /// Totals over the session's persisted log (read once).
    pub async fn usage_metrics(&self, session: &SessionHandle) -> t::UsageGetMetricsResult {
        let events = self.persisted_log(session).await.unwrap_or_default();
        let records: Vec<&UsageRecord> = events
            .iter()
            .filter_map(|e| match &e.payload {
                SessionEvent::SessionUsageRecord(d) => Some(&d.usage),
                _ => None,
            })
            .collect();
        let total_user_requests =
            events.iter().filter(|e| matches!(e.payload, SessionEvent::UserMessage(_))).count() as u64;
        let mut model_metrics: BTreeMap<String, t::UsageMetricsModelMetric> = BTreeMap::new();
        let mut total_api_duration_ms = 0;
        let mut total_premium_request_cost = 0.0;
        for r in &records {
            total_api_duration_ms += r.duration;
            // As the original counts premium requests: the calls a user's message started.
            if r.initiator == "user" {
                total_premium_request_cost += r.cost.unwrap_or(0.0);
            }
            let m = model_metrics.entry(r.model.clone()).or_default();
            m.requests.count += 1;
            m.usage.input_tokens += r.input_tokens;
            m.usage.output_tokens += r.output_tokens;
            m.usage.cache_read_tokens += r.cache_read_tokens;
            m.usage.cache_write_tokens += r.cache_write_tokens;
        }
        let last = records.last();
        t::UsageGetMetricsResult {
            total_premium_request_cost,
            total_user_requests,
            total_nano_aiu: Some(0.0),
            token_details: None,
            total_api_duration_ms,
            session_start_time: session.start_time().to_string(),
            code_changes: code_changes(&events),
            model_metrics,
            agent_metrics: Some(BTreeMap::new()),
            current_model: Some(session.view().settings.model.clone()),
            last_call_input_tokens: last.map_or(0, |r| r.input_tokens),
            last_call_output_tokens: last.map_or(0, |r| r.output_tokens),
        }
    }
}

/// The file tools whose results carry a diff of what they changed.
const EDITING_TOOLS: &[&str] = &["create", "edit", "str_replace_editor", "apply_patch", "write"];

/// Lines added and removed by the file tools' successful calls (their results' diffs), and the
/// files they changed. Shell commands are not counted: what they change is not known.
pub fn code_changes(events: &[Event]) -> t::UsageMetricsCodeChanges {
    let mut paths: HashMap<&str, Option<&str>> = HashMap::new();
    let mut files = BTreeSet::new();
    let (mut added, mut removed) = (0, 0);
    for e in events {
        match &e.payload {
            SessionEvent::ToolExecutionStart(d) if EDITING_TOOLS.contains(&d.tool_name.as_str()) => {
                let path = d.arguments.as_ref().and_then(|a| a.get("path")).and_then(|p| p.as_str());
                paths.insert(d.tool_call_id.as_str(), path);
            }
            SessionEvent::ToolExecutionComplete(d) if d.success => {
                let Some(path) = paths.remove(d.tool_call_id.as_str()) else { continue };
                let Some(diff) = d.result.as_ref().and_then(|r| r.detailed_content.as_deref()) else { continue };
                let (a, r) = diff_lines(diff);
                if a + r == 0 {
                    continue;
                }
                added += a;
                removed += r;
                if let Some(path) = path {
                    files.insert(path.to_string());
                }
            }
            _ => {}
        }
    }
    t::UsageMetricsCodeChanges {
        lines_added: added,
        lines_removed: removed,
        files_modified_count: files.len() as u64,
        files_modified: files.into_iter().collect(),
    }
}

/// `+` and `-` lines of a unified diff, its file headers left out.
fn diff_lines(diff: &str) -> (u64, u64) {
    diff.lines().fold((0, 0), |(a, r), line| {
        if line.starts_with("+++") || line.starts_with("---") {
            (a, r)
        } else if line.starts_with('+') {
            (a + 1, r)
        } else if line.starts_with('-') {
            (a, r + 1)
        } else {
            (a, r)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn start(id: &str, tool: &str, path: &str) -> Event {
        Event::new(
            SessionEvent::ToolExecutionStart(t::ToolExecutionStartData {
                tool_call_id: id.into(),
                tool_name: tool.into(),
                arguments: Some(json!({ "path": path, "command": "x" })),
                ..Default::default()
            }),
            false,
        )
    }

    fn done(id: &str, success: bool, diff: &str) -> Event {
        Event::new(
            SessionEvent::ToolExecutionComplete(t::ToolExecutionCompleteData {
                tool_call_id: id.into(),
                success,
                result: Some(t::ToolExecutionCompleteResult {
                    content: "ok".into(),
                    detailed_content: Some(diff.into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            false,
        )
    }

    #[test]
    fn the_file_tools_diffs_are_counted_per_line_and_file() {
        let events = vec![
            start("1", "create", "/w/new.txt"),
            done("1", true, "--- a/w/new.txt\n+++ b/w/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"),
            start("2", "edit", "/w/x.txt"),
            done("2", true, "--- a/w/x.txt\n+++ b/w/x.txt\n@@ -1 +1,2 @@\n-x\n+y\n+z\n"),
            start("3", "edit", "/w/failed.txt"),
            done("3", false, "--- a\n+++ b\n+never\n"),
            start("4", "bash", "/w/ignored"),
            done("4", true, "+not a diff of ours\n"),
            start("5", "edit", "/w/x.txt"),
            done("5", true, "@@ -2 +2 @@\n-z\n+w\n"),
        ];
        let c = code_changes(&events);
        assert_eq!((c.lines_added, c.lines_removed), (5, 2));
        assert_eq!(c.files_modified, ["/w/new.txt", "/w/x.txt"]);
        assert_eq!(c.files_modified_count, 2);
    }
}
