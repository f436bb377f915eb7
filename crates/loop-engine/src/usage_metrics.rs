//! A session's usage totals (`session.usage.getMetrics`, and what `-p --usage-output-file`
//! writes): user requests, and per model the calls and tokens its usage records hold.

use std::collections::BTreeMap;

use protocol::event::SessionEvent;
use protocol::generated::types as t;

use crate::handle::SessionHandle;
use crate::Engine;

impl Engine {
    /// Totals over the session's persisted log.
    pub async fn usage_metrics(&self, session: &SessionHandle) -> t::UsageGetMetricsResult {
        let id = session.id();
        let events = self.messages(id).await.unwrap_or_default();
        let records = self.usage_records(id).await;
        let total_user_requests =
            events.iter().filter(|e| matches!(e.payload, SessionEvent::UserMessage(_))).count() as u64;
        let mut model_metrics: BTreeMap<String, t::UsageMetricsModelMetric> = BTreeMap::new();
        let mut total_api_duration_ms = 0;
        for r in &records {
            total_api_duration_ms += r.duration;
            let m = model_metrics.entry(r.model.clone()).or_default();
            m.requests.count += 1;
            m.usage.input_tokens += r.input_tokens;
            m.usage.output_tokens += r.output_tokens;
            m.usage.cache_read_tokens += r.cache_read_tokens;
            m.usage.cache_write_tokens += r.cache_write_tokens;
        }
        let last = records.last();
        t::UsageGetMetricsResult {
            total_premium_request_cost: 0.0,
            total_user_requests,
            total_nano_aiu: Some(0.0),
            token_details: None,
            total_api_duration_ms,
            session_start_time: session.start_time().to_string(),
            code_changes: t::UsageMetricsCodeChanges::default(),
            model_metrics,
            agent_metrics: Some(BTreeMap::new()),
            current_model: Some(session.view().settings.model.clone()),
            last_call_input_tokens: last.map_or(0, |r| r.input_tokens),
            last_call_output_tokens: last.map_or(0, |r| r.output_tokens),
        }
    }
}
