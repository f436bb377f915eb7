//! What a `-p` run did, counted from its events: the one-line summary on stderr and the
//! `{"type":"result",…}` line that ends `--output-format json` (the original's shape, with
//! Skipper's counts beside its usage figures).

use std::time::Instant;

use protocol::event::SessionEvent;
use protocol::generated::types as t;
use serde_json::{json, Value};

pub struct RunSummary {
    started: Instant,
    turns: u64,
    tool_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    api_ms: u64,
    premium_requests: f64,
}

impl RunSummary {
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            turns: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            api_ms: 0,
            premium_requests: 0.0,
        }
    }

    pub fn count(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::AssistantTurnStart(_) => self.turns += 1,
            SessionEvent::ToolExecutionStart(_) => self.tool_calls += 1,
            SessionEvent::AssistantUsage(u) => {
                self.input_tokens += u.input_tokens.unwrap_or(0);
                self.output_tokens += u.output_tokens.unwrap_or(0);
                self.api_ms += u.duration.unwrap_or(0);
                // As the original: the calls a user's message started count, not the agent's
                // own follow-ups.
                if u.initiator.as_deref() == Some("user") {
                    self.premium_requests += u.cost.unwrap_or(0.0);
                }
            }
            _ => {}
        }
    }

    /// `2 turns, 1 tool call, 8018 tokens in, 11 out, 0.5 s`.
    pub fn line(&self) -> String {
        let plural = |n: u64, one: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") };
        format!(
            "{}, {}, {} tokens in, {} out, {:.1} s",
            plural(self.turns, "turn"),
            plural(self.tool_calls, "tool call"),
            self.input_tokens,
            self.output_tokens,
            self.started.elapsed().as_secs_f64()
        )
    }

    /// `code_changes`: what the file tools changed (the session's usage metrics).
    pub fn result(&self, session_id: &str, exit_code: i32, code_changes: &t::UsageMetricsCodeChanges) -> Value {
        json!({
            "type": "result",
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "sessionId": session_id,
            "exitCode": exit_code,
            "usage": {
                "premiumRequests": self.premium_requests,
                "totalApiDurationMs": self.api_ms,
                "sessionDurationMs": self.started.elapsed().as_millis() as u64,
                "turns": self.turns,
                "toolCalls": self.tool_calls,
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "codeChanges": {
                    "linesAdded": code_changes.lines_added,
                    "linesRemoved": code_changes.lines_removed,
                    "filesModified": code_changes.files_modified,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_turns_tools_and_tokens() {
        let mut s = RunSummary::start();
        s.count(&SessionEvent::AssistantTurnStart(Default::default()));
        s.count(&SessionEvent::ToolExecutionStart(Default::default()));
        s.count(&SessionEvent::AssistantTurnStart(Default::default()));
        let usage = t::AssistantUsageData {
            input_tokens: Some(100),
            output_tokens: Some(7),
            duration: Some(30),
            cost: Some(1.0),
            initiator: Some("user".into()),
            ..Default::default()
        };
        s.count(&SessionEvent::AssistantUsage(usage.clone()));
        // The agent's own follow-up call is no premium request.
        let follow_up = t::AssistantUsageData {
            initiator: Some("agent".into()),
            input_tokens: Some(0),
            output_tokens: Some(0),
            duration: Some(0),
            ..usage
        };
        s.count(&SessionEvent::AssistantUsage(follow_up));
        assert!(s.line().starts_with("2 turns, 1 tool call, 100 tokens in, 7 out, "), "{}", s.line());
        let changes = t::UsageMetricsCodeChanges {
            lines_added: 3,
            lines_removed: 1,
            files_modified_count: 1,
            files_modified: vec!["/w/a.rs".into()],
        };
        let r = s.result("sid", 0, &changes);
        assert_eq!(
            (r["type"].as_str(), r["sessionId"].as_str(), r["exitCode"].as_i64()),
            (Some("result"), Some("sid"), Some(0))
        );
        assert_eq!(r["usage"]["premiumRequests"], json!(1.0));
        assert_eq!(r["usage"]["totalApiDurationMs"], json!(30));
        assert_eq!((r["usage"]["turns"].as_u64(), r["usage"]["inputTokens"].as_u64()), (Some(2), Some(100)));
        assert_eq!(
            r["usage"]["codeChanges"],
            json!({"linesAdded": 3, "linesRemoved": 1, "filesModified": ["/w/a.rs"]})
        );
    }
}
