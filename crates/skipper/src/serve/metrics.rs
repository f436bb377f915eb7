//! Prometheus metrics of `skipper serve` (`GET /metrics`). They measure what the engine does,
//! not what clients ask for: the model client and every built-in tool are wrapped in
//! decorators that time each call, so the engine needs no knowledge of metrics.
//!
//! Not covered: models a session brings itself (an SDK `provider`), whose clients the engine
//! builds per call, and SDK-implemented tools, which run in the client.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use llm_providers::{ChatRequest, ChatResponse, ModelClient, ModelEvent, ModelInfo, ProviderError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use tools::{Tool, ToolContext, ToolOutput};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorKind {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolName {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabel {
    tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantKind {
    tenant: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLimit {
    tenant: String,
    limit: &'static str,
}

/// What each tenant used on this node since it started (`rpc_server::metering`), brought up to
/// date from the meter at scrape time.
#[derive(Default)]
struct TenantSeries {
    model_calls: Family<TenantLabel, Counter>,
    tokens: Family<TenantKind, Counter>,
    premium_requests: Family<TenantLabel, Counter<f64, std::sync::atomic::AtomicU64>>,
    tool_calls: Family<TenantLabel, Counter>,
    sandbox_denials: Family<TenantLabel, Counter>,
    limited: Family<TenantLimit, Counter>,
    turns_running: Family<TenantLabel, Gauge>,
}

/// Raises a counter to `total` (the meter's running sum).
fn raise(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

impl TenantSeries {
    fn register(&self, registry: &mut Registry) {
        let r = registry;
        r.register("tenant_model_calls", "Model calls of a tenant's sessions on this node", self.model_calls.clone());
        r.register("tenant_tokens", "Tokens of a tenant's model calls, by kind", self.tokens.clone());
        r.register(
            "tenant_premium_requests",
            "Model calls weighted by their model's premium multiplier",
            self.premium_requests.clone(),
        );
        r.register("tenant_tool_calls", "Tool calls of a tenant's sessions", self.tool_calls.clone());
        r.register(
            "tenant_sandbox_denials",
            "Tool calls the session's confinement refused",
            self.sandbox_denials.clone(),
        );
        r.register("tenant_limited", "Times a limit held a tenant back or refused it, by limit", self.limited.clone());
        r.register("tenant_turns_running", "A tenant's messages running on this node", self.turns_running.clone());
    }

    fn update(&self, meter: &rpc_server::metering::TeamMeter) {
        for (tenant, u) in meter.by_tenant() {
            let label = TenantLabel { tenant: tenant.clone() };
            raise(&self.model_calls.get_or_create(&label), u.model_calls);
            let kinds = [
                ("input", u.input_tokens),
                ("output", u.output_tokens),
                ("cache_read", u.cache_read_tokens),
                ("cache_write", u.cache_write_tokens),
            ];
            for (kind, n) in kinds {
                raise(&self.tokens.get_or_create(&TenantKind { tenant: tenant.clone(), kind }), n);
            }
            let premium = self.premium_requests.get_or_create(&label);
            if u.premium_requests > premium.get() {
                premium.inc_by(u.premium_requests - premium.get());
            }
            raise(&self.tool_calls.get_or_create(&label), u.tool_calls);
            raise(&self.sandbox_denials.get_or_create(&label), u.sandbox_denials);
            self.turns_running
                .get_or_create(&label)
                .set(i64::try_from(meter.turns_running(&tenant)).unwrap_or(i64::MAX));
        }
        for (tenant, limit, n) in meter.limited() {
            raise(&self.limited.get_or_create(&TenantLimit { tenant, limit }), n);
        }
    }
}

fn duration_histogram() -> Histogram {
    // 5 ms … ~82 s: tool runs and model calls both span that range.
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

pub struct Metrics {
    registry: Registry,
    sessions_active: Gauge,
    turns: Counter,
    model_latency: Histogram,
    tool_duration: Family<ToolName, Histogram>,
    errors: Family<ErrorKind, Counter>,
    /// Authentication failures already added to `errors{kind="auth"}` (the tenancy counts them).
    auth_seen: Mutex<u64>,
    tenants: TenantSeries,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("skipper");
        let sessions_active = Gauge::default();
        registry.register("sessions_active", "Sessions loaded in memory", sessions_active.clone());
        let turns = Counter::default();
        registry.register("turns", "Turns run (one model call each; compaction summaries not counted)", turns.clone());
        let model_latency = duration_histogram();
        registry.register_with_unit(
            "model_latency",
            "Duration of one model call (turns and compaction summaries), request to last streamed token",
            prometheus_client::registry::Unit::Seconds,
            model_latency.clone(),
        );
        let tool_duration =
            Family::<ToolName, Histogram>::new_with_constructor(duration_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "tool_duration",
            "Duration of one built-in tool run",
            prometheus_client::registry::Unit::Seconds,
            tool_duration.clone(),
        );
        let errors = Family::<ErrorKind, Counter>::default();
        registry.register("errors", "Failures by kind: model, tool, auth", errors.clone());
        // Every kind is present from the start, so a dashboard sees 0 rather than no series.
        for kind in ["model", "tool", "auth"] {
            let _ = errors.get_or_create(&ErrorKind { kind });
        }
        let tenants = TenantSeries::default();
        tenants.register(&mut registry);
        Arc::new(Self {
            registry,
            sessions_active,
            turns,
            model_latency,
            tool_duration,
            errors,
            auth_seen: Mutex::new(0),
            tenants,
        })
    }

    /// The text exposition, with the values read at scrape time brought up to date first.
    pub fn render(
        &self,
        sessions_active: usize,
        auth_failures: u64,
        meter: Option<&rpc_server::metering::TeamMeter>,
    ) -> String {
        self.sessions_active.set(i64::try_from(sessions_active).unwrap_or(i64::MAX));
        if let Some(meter) = meter {
            self.tenants.update(meter);
        }
        {
            let mut seen = self.auth_seen.lock().unwrap_or_else(|e| e.into_inner());
            if auth_failures > *seen {
                self.errors.get_or_create(&ErrorKind { kind: "auth" }).inc_by(auth_failures - *seen);
                *seen = auth_failures;
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The model client, timed.
    pub fn model(self: &Arc<Self>, inner: Arc<dyn ModelClient>) -> Arc<dyn ModelClient> {
        Arc::new(MeteredModel { inner, metrics: self.clone() })
    }

    /// The built-in tools, each timed.
    pub fn tools(self: &Arc<Self>, builtins: &tools::Registry) -> tools::Registry {
        let mut out = tools::Registry::default();
        for tool in builtins.tools() {
            out.push(Arc::new(MeteredTool { inner: tool.clone(), metrics: self.clone() }));
        }
        out
    }
}

struct MeteredModel {
    inner: Arc<dyn ModelClient>,
    metrics: Arc<Metrics>,
}

#[async_trait::async_trait]
impl ModelClient for MeteredModel {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        self.inner.list_models().await
    }

    async fn warm_up(&self) {
        self.inner.warm_up().await
    }

    fn known_models(&self) -> Option<Vec<ModelInfo>> {
        self.inner.known_models()
    }

    async fn chat(
        &self,
        req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        // A compaction summary is a model call but not a turn of the conversation.
        let is_turn = req.purpose == llm_providers::Purpose::Turn;
        let start = Instant::now();
        let result = self.inner.chat(req, events, cancel).await;
        let m = &self.metrics;
        if is_turn {
            m.turns.inc();
        }
        m.model_latency.observe(start.elapsed().as_secs_f64());
        // An abort is the client's choice, not a failure of the model.
        if matches!(&result, Err(e) if !matches!(e, ProviderError::Cancelled)) {
            m.errors.get_or_create(&ErrorKind { kind: "model" }).inc();
        }
        result
    }

    async fn endpoint(&self) -> Result<Option<llm_providers::Endpoint>, ProviderError> {
        self.inner.endpoint().await
    }

    async fn copilot_api(&self) -> Result<Option<llm_providers::CopilotApi>, ProviderError> {
        self.inner.copilot_api().await
    }
}

struct MeteredTool {
    inner: Arc<dyn Tool>,
    metrics: Arc<Metrics>,
}

#[async_trait::async_trait]
impl Tool for MeteredTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Arc<Value> {
        self.inner.parameters()
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let start = Instant::now();
        let out = self.inner.run(args, ctx).await;
        let m = &self.metrics;
        m.tool_duration
            .get_or_create(&ToolName { tool: self.inner.name().to_string() })
            .observe(start.elapsed().as_secs_f64());
        if !out.success {
            m.errors.get_or_create(&ErrorKind { kind: "tool" }).inc();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_required_series() {
        let m = Metrics::new();
        m.turns.inc();
        m.model_latency.observe(0.2);
        m.tool_duration.get_or_create(&ToolName { tool: "bash".into() }).observe(0.01);
        let text = m.render(3, 2, None);
        for needle in [
            "skipper_sessions_active 3",
            "skipper_turns_total 1",
            "skipper_model_latency_seconds_bucket",
            "skipper_tool_duration_seconds_count{tool=\"bash\"} 1",
            "skipper_errors_total{kind=\"auth\"} 2",
            "skipper_errors_total{kind=\"model\"} 0",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        // Failures already counted are not counted again on the next scrape.
        assert!(m.render(0, 2, None).contains("skipper_errors_total{kind=\"auth\"} 2"));
    }
}
