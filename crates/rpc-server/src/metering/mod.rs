//! The team server's [`loop_engine::meter::Meter`]: counts what each tenant's users use
//! (`ledger`), writes their sessions' tool calls, permission decisions and sandbox denials to
//! the audit log, and holds tenants to their limits: messages running at once on a node
//! (`turns`, they wait), model requests per minute (`requests`, counted in the database, they wait) and
//! tokens per day (summed in the database; past it model calls are refused).
//!
//! A session's work is put to the user who created it: their credentials pay for it
//! (`crate::tenant_credentials`).

mod ledger;
mod requests;
mod turns;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use llm_providers::ProviderError;
use loop_engine::meter::{Meter, TurnPermit};
use protocol::event::{Event, SessionEvent};
use serde_json::json;
use store::SessionIndex;
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::tenancy::{Tenancy, Tenant};
pub use ledger::{today, Key};
pub use usage::Usage;

/// How often counted usage is written to the database.
const WRITE_EVERY: Duration = Duration::from_secs(1);

/// Whose a session's work is.
#[derive(Clone)]
struct Who {
    tenant: Arc<Tenant>,
    user: Option<Arc<str>>,
}

pub struct TeamMeter {
    tenancy: Arc<Tenancy>,
    index: SessionIndex,
    audit: Option<Arc<Audit>>,
    sessions: Mutex<HashMap<String, Who>>,
    /// Running tool calls' names, by call id (a completion names no tool).
    tools: Mutex<HashMap<String, String>>,
    ledger: ledger::Ledger,
    turns: Arc<turns::Turns>,
    requests: requests::Held,
    /// Times a limit held a tenant back, by tenant and limit (`/metrics`).
    limited: Mutex<HashMap<(Arc<str>, &'static str), u64>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only short map updates happen under these locks; a poisoned one is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TeamMeter {
    pub fn new(tenancy: Arc<Tenancy>, audit: Option<Arc<Audit>>) -> Arc<Self> {
        Arc::new(Self {
            index: tenancy.index().clone(),
            tenancy,
            audit,
            sessions: Mutex::default(),
            tools: Mutex::default(),
            ledger: ledger::Ledger::default(),
            turns: Arc::default(),
            requests: requests::Held::default(),
            limited: Mutex::default(),
        })
    }

    /// Writes counted usage about once a second until `stop`, and once more then.
    pub fn spawn_writer(self: &Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let meter = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(WRITE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut failing = false;
            let mut minutes_forgotten = String::new();
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.cancelled() => break,
                }
                match meter.ledger.write(&meter.index, meter.limits_tokens()).await {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("usage is written to the database again");
                    }
                    Ok(()) => {}
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "usage could not be written; it is kept and tried again");
                    }
                    Err(_) => {}
                }
                let minute = minute_now();
                if minute != minutes_forgotten
                    && meter.limits_requests()
                    && meter.index.forget_requests_before(&minute).await.is_ok()
                {
                    minutes_forgotten = minute;
                }
            }
            if let Err(e) = meter.ledger.write(&meter.index, false).await {
                tracing::warn!(error = %e, "usage counted since the last write is lost at shutdown");
            }
        })
    }

    /// Whether a tenant's daily tokens are limited: only then does a node need the others' sums.
    fn limits_tokens(&self) -> bool {
        self.tenancy.tenants().any(|t| t.limits().tokens_per_day.is_some())
    }

    fn limits_requests(&self) -> bool {
        self.tenancy.tenants().any(|t| t.limits().model_requests_per_minute.is_some())
    }

    /// Puts `session_id`'s work to `tenant`'s user `user` (its creator); called where a
    /// session is created, forked or resumed on this node.
    pub fn attribute(&self, session_id: &str, tenant: &Arc<Tenant>, user: Option<&str>) {
        let who = Who { tenant: tenant.clone(), user: user.map(Arc::from) };
        lock(&self.sessions).insert(session_id.to_string(), who);
    }

    /// A session deleted: nothing more is put to anyone.
    pub fn forget(&self, session_id: &str) {
        lock(&self.sessions).remove(session_id);
    }

    fn who(&self, session_id: &str) -> Option<Who> {
        if let Some(who) = lock(&self.sessions).get(session_id) {
            return Some(who.clone());
        }
        // Loaded here without passing a handler (taken over from a node that stopped): its
        // tenant is known; its creator is not, until a client resumes it here.
        let tenant = self.tenancy.tenant_of(session_id)?;
        Some(Who { tenant, user: None })
    }

    /// What this node counted since it started, per tenant (`/metrics`; its users summed).
    pub fn by_tenant(&self) -> Vec<(String, Usage)> {
        let mut sums: HashMap<Arc<str>, Usage> = HashMap::new();
        for ((tenant, _), usage) in self.ledger.since_start() {
            sums.entry(tenant).or_default().add(&usage);
        }
        self.tenancy
            .tenants()
            .map(|t| (t.name.clone(), sums.get(t.name.as_str()).copied().unwrap_or_default()))
            .collect()
    }

    /// Times a limit held each tenant back on this node (`/metrics`): (tenant, limit, times).
    pub fn limited(&self) -> Vec<(String, &'static str, u64)> {
        lock(&self.limited).iter().map(|((t, l), n)| (t.to_string(), *l, *n)).collect()
    }

    /// `tenant`'s usage from `from_day` on, across nodes: what the database holds and what this
    /// node has not written yet, per day and user.
    pub async fn usage(&self, tenant: &str, from_day: &str) -> Result<Vec<(String, String, Usage)>, store::StoreError> {
        let mut sums: std::collections::BTreeMap<(String, String), Usage> = Default::default();
        for row in self.index.usage(Some(tenant), from_day).await? {
            sums.entry((row.day.clone(), row.user.clone())).or_default().add(&usage::from_row(&row));
        }
        for (user, day, usage) in self.ledger.unwritten(tenant) {
            if day.as_str() >= from_day {
                sums.entry((day, user.as_deref().unwrap_or("").to_string())).or_default().add(&usage);
            }
        }
        Ok(sums.into_iter().map(|((day, user), usage)| (day, user, usage)).collect())
    }

    /// Why `tenant` may not start more work today (`None`: it may).
    pub fn out_of_tokens(&self, tenant: &Tenant) -> Option<(u64, String)> {
        let max = tenant.limits().tokens_per_day?;
        let used = self.ledger.tokens_today(&tenant.name);
        (used >= max).then(|| {
            let text = format!(
                "tenant {} has used its {max} tokens for today ({used} used); model calls resume at 00:00 UTC",
                tenant.name
            );
            (max, text)
        })
    }

    /// Counts a request refused by `limit` elsewhere (`/metrics`).
    pub fn refused(&self, tenant: &Tenant, limit: &'static str) {
        *lock(&self.limited).entry((Arc::from(tenant.name.as_str()), limit)).or_default() += 1;
    }

    /// `tenant`'s messages running on this node now (`/metrics`).
    pub fn turns_running(&self, tenant: &str) -> u64 {
        self.turns.running(tenant)
    }

    fn held_back(&self, who: &Who, session_id: &str, limit: &'static str, max: u64) {
        self.refused(&who.tenant, limit);
        self.record(who, "limit", session_id, json!({"limit": limit, "max": max}));
    }

    fn record(&self, who: &Who, act: &str, session_id: &str, detail: serde_json::Value) {
        if let Some(audit) = &self.audit {
            audit.record_as(act, Some((&who.tenant.name, who.user.as_deref())), Some(session_id), detail);
        }
    }

    fn audit_event(&self, who: &Who, session_id: &str, event: &Event) {
        match &event.payload {
            SessionEvent::ToolExecutionStart(d) => {
                lock(&self.tools).insert(d.tool_call_id.clone(), d.tool_name.clone());
            }
            SessionEvent::ToolExecutionComplete(d) => {
                let tool = lock(&self.tools).remove(&d.tool_call_id);
                let denied = usage::sandbox_denied(d);
                let code = d.error.as_ref().and_then(|e| e.code.clone());
                let detail = json!({"tool": tool, "toolCallId": d.tool_call_id, "success": d.success, "code": code});
                self.record(who, "tool.call", session_id, detail);
                if denied {
                    let detail = json!({"tool": tool, "toolCallId": d.tool_call_id});
                    self.record(who, "sandbox.denial", session_id, detail);
                }
            }
            SessionEvent::PermissionCompleted(d) => {
                let result = serde_json::to_value(&d.result).ok();
                let kind = result.as_ref().and_then(|r| r.get("kind")).cloned();
                let source = d.decision_source.as_ref().and_then(|s| serde_json::to_value(s).ok());
                let detail = json!({"toolCallId": d.tool_call_id, "result": kind, "source": source});
                self.record(who, "permission.decision", session_id, detail);
            }
            _ => {}
        }
    }
}

fn minute_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M").to_string()
}

#[async_trait::async_trait]
impl Meter for TeamMeter {
    fn observe(&self, session_id: &str, event: &Event) {
        let relevant = matches!(
            event.payload,
            SessionEvent::AssistantUsage(_)
                | SessionEvent::ToolExecutionStart(_)
                | SessionEvent::ToolExecutionComplete(_)
                | SessionEvent::PermissionCompleted(_)
        );
        if !relevant {
            return;
        }
        let Some(who) = self.who(session_id) else { return };
        if let Some(used) = usage::of(event) {
            self.ledger.add((Arc::from(who.tenant.name.as_str()), who.user.clone()), &used);
        }
        self.audit_event(&who, session_id, event);
    }

    async fn admit_turn(&self, session_id: &str) -> TurnPermit {
        let Some(who) = self.who(session_id) else { return Box::new(()) };
        let tenant = who.tenant.clone();
        let place = self
            .turns
            .admit(
                Arc::from(tenant.name.as_str()),
                || tenant.limits().turns,
                |max| self.held_back(&who, session_id, "turns", max),
            )
            .await;
        Box::new(place)
    }

    async fn admit_model_call(&self, session_id: &str) -> Result<(), ProviderError> {
        let Some(who) = self.who(session_id) else { return Ok(()) };
        if let Some((max, text)) = self.out_of_tokens(&who.tenant) {
            self.held_back(&who, session_id, "tokens_per_day", max);
            return Err(ProviderError::Http {
                status: 402,
                message: text,
                provider_call_id: None,
                code: Some("tenant_tokens_per_day".into()),
                retry_after: None,
            });
        }
        let mut told = false;
        while let Some(max) = who.tenant.limits().model_requests_per_minute {
            let minute = minute_now();
            if self.requests.take(&who.tenant.name, &minute) {
                break;
            }
            match self.index.take_requests(&who.tenant.name, &minute, max, requests::block(max)).await {
                Ok(taken) if taken > 0 => {
                    self.requests.keep(&who.tenant.name, &minute, taken - 1);
                    break;
                }
                Ok(_) => {
                    if !told {
                        told = true;
                        self.held_back(&who, session_id, "model_requests_per_minute", max);
                    }
                    // Until the next minute begins (and a little, so it has).
                    let now = chrono::Utc::now();
                    let into = u64::from(chrono::Timelike::second(&now)) * 1000
                        + u64::from(chrono::Timelike::nanosecond(&now) / 1_000_000);
                    tokio::time::sleep(Duration::from_millis(60_000u64.saturating_sub(into) + 20)).await;
                }
                Err(e) => {
                    // A limit that cannot be counted is not a reason to stop the team's work:
                    // the database being away is seen (and reported) everywhere else.
                    tracing::warn!(error = %e, tenant = %who.tenant.name, "model requests per minute not counted");
                    break;
                }
            }
        }
        Ok(())
    }
}
