//! What a tenant's user used: model calls, tokens, premium requests, tool calls, sandbox
//! denials; summed from their sessions' events.

use protocol::event::{Event, SessionEvent};
pub use protocol::methods::TenantUsage as Usage;

/// What one event adds (`None`: nothing).
pub fn of(event: &Event) -> Option<Usage> {
    match &event.payload {
        SessionEvent::AssistantUsage(d) => Some(Usage {
            model_calls: 1,
            input_tokens: d.input_tokens.unwrap_or(0),
            output_tokens: d.output_tokens.unwrap_or(0),
            cache_read_tokens: d.cache_read_tokens.unwrap_or(0),
            cache_write_tokens: d.cache_write_tokens.unwrap_or(0),
            premium_requests: d.cost.unwrap_or(0.0),
            ..Default::default()
        }),
        SessionEvent::ToolExecutionComplete(d) => {
            Some(Usage { tool_calls: 1, sandbox_denials: u64::from(sandbox_denied(d)), ..Default::default() })
        }
        _ => None,
    }
}

/// `usage` as the index stores it.
pub fn row(usage: &Usage, tenant: &str, user: &str, day: &str) -> store::UsageRow {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    store::UsageRow {
        tenant: tenant.into(),
        user: user.into(),
        day: day.into(),
        model_calls: n(usage.model_calls),
        input_tokens: n(usage.input_tokens),
        output_tokens: n(usage.output_tokens),
        cache_read_tokens: n(usage.cache_read_tokens),
        cache_write_tokens: n(usage.cache_write_tokens),
        premium_requests: usage.premium_requests,
        tool_calls: n(usage.tool_calls),
        sandbox_denials: n(usage.sandbox_denials),
    }
}

pub fn from_row(row: &store::UsageRow) -> Usage {
    let n = |v: i64| u64::try_from(v).unwrap_or(0);
    Usage {
        model_calls: n(row.model_calls),
        input_tokens: n(row.input_tokens),
        output_tokens: n(row.output_tokens),
        cache_read_tokens: n(row.cache_read_tokens),
        cache_write_tokens: n(row.cache_write_tokens),
        premium_requests: row.premium_requests,
        tool_calls: n(row.tool_calls),
        sandbox_denials: n(row.sandbox_denials),
    }
}

/// A tool call the session's sandbox refused: the original marks such a failure with the
/// remediation a user could take; the file tools' confinement to the workspace says so in
/// their telemetry.
pub fn sandbox_denied(d: &protocol::generated::types::ToolExecutionCompleteData) -> bool {
    let remedied = d.error.as_ref().is_some_and(|e| e.remediation.is_some());
    let told =
        d.tool_telemetry.as_ref().and_then(|t| t.get(tools::SANDBOX_DENIED)).and_then(|v| v.as_str()) == Some("true");
    !d.success && (remedied || told)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::generated::types as t;

    #[test]
    fn a_model_call_and_a_denied_tool_call_are_counted() {
        let usage = t::AssistantUsageData {
            model: "m".into(),
            input_tokens: Some(10),
            output_tokens: Some(4),
            cache_read_tokens: Some(2),
            cost: Some(1.0),
            ..Default::default()
        };
        let mut total = Usage::default();
        total.add(&of(&Event::new(usage.into(), false)).unwrap_or_default());
        let mut denied =
            t::ToolExecutionCompleteData { tool_call_id: "c".into(), success: false, ..Default::default() };
        let mut telemetry = serde_json::Map::new();
        telemetry.insert(tools::SANDBOX_DENIED.into(), "true".into());
        denied.tool_telemetry = Some(telemetry);
        total.add(&of(&Event::new(denied.into(), false)).unwrap_or_default());
        let ok = t::ToolExecutionCompleteData { tool_call_id: "d".into(), success: true, ..Default::default() };
        total.add(&of(&Event::new(ok.into(), false)).unwrap_or_default());
        assert_eq!((total.model_calls, total.tokens(), total.cache_read_tokens), (1, 14, 2));
        assert_eq!((total.premium_requests, total.tool_calls, total.sandbox_denials), (1.0, 2, 1));
        let row = row(&total, "a", "ann", "2026-12-01");
        assert_eq!(from_row(&row), total, "a row and back is the same");
    }
}
