//! The background agents of one session as the session keeps them (what `session.tasks.*`,
//! `read_agent` and `list_agents` report). Apart from `background.rs`, which starts and runs
//! them, so that the session's handle can own the registry without depending on the loop.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use protocol::generated::types as t;
use tokio_util::sync::CancellationToken;

use crate::deps::Deps;

/// One background agent.
pub(super) struct Entry {
    pub(super) info: t::TaskAgentInfo,
    pub(super) cancel: CancellationToken,
    pub(super) started: Instant,
    pub(super) finished: Option<Instant>,
    /// When its current run began (for `activeTimeMs`).
    pub(super) active_from: Instant,
    /// Messages sent to the agent and not yet read by it.
    pub(super) inbox: Vec<String>,
    /// Its answer of each run (what `read_agent` shows as turns).
    pub(super) responses: Vec<String>,
    /// Its run ended and the notice telling the session is not yet queued. Counted as
    /// running, so the session's `idle` cannot slip out between the two.
    pub(super) notice_pending: bool,
}

impl Entry {
    /// A running agent's entry, as a start records it.
    pub(super) fn running_from(info: t::TaskAgentInfo, cancel: CancellationToken) -> Self {
        Self {
            info,
            cancel,
            started: Instant::now(),
            finished: None,
            active_from: Instant::now(),
            inbox: Vec::new(),
            responses: Vec::new(),
            notice_pending: false,
        }
    }

    pub(super) fn running(&self) -> bool {
        self.info.status == t::TaskStatus::Running
    }

    /// It gave its answer and waits, with its conversation, for a message to go on.
    pub(super) fn idle(&self) -> bool {
        self.info.status == t::TaskStatus::Idle
    }
}

/// Where an agent's run ended, as the registry records it.
#[derive(Debug, PartialEq)]
pub(crate) enum Finish {
    /// Recorded: the session is to be told.
    Done,
    /// Messages arrived while it answered: it goes on with them.
    More(Vec<String>),
    /// Cancelled or removed meanwhile: nothing to record.
    Gone,
}

#[derive(Default)]
pub(super) struct Inner {
    pub(super) deps: Option<Arc<Deps>>,
    pub(super) entries: Vec<Entry>,
}

/// The background agents of one session, in start order. Never locked across an `.await`.
#[derive(Clone, Default)]
pub struct Registry {
    pub(super) inner: Arc<Mutex<Inner>>,
    pub(super) changed: Arc<tokio::sync::Notify>,
}

/// What `read_agent` and the task listing see of an agent.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub info: t::TaskAgentInfo,
    pub elapsed: Duration,
    /// Its answer of each run so far.
    pub responses: Vec<String>,
}

impl Registry {
    pub(crate) fn new(deps: Arc<Deps>) -> Self {
        Self { inner: Arc::new(Mutex::new(Inner { deps: Some(deps), entries: Vec::new() })), ..Default::default() }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn list(&self) -> Vec<t::TaskAgentInfo> {
        self.lock().entries.iter().map(|e| e.info.clone()).collect()
    }

    pub fn get(&self, id: &str) -> Option<Snapshot> {
        let inner = self.lock();
        let e = inner.entries.iter().find(|e| e.info.id == id)?;
        let elapsed = e.finished.unwrap_or_else(Instant::now).duration_since(e.started);
        Some(Snapshot { info: e.info.clone(), elapsed, responses: e.responses.clone() })
    }

    /// An id not yet taken: `wanted`, else `wanted-2`, `wanted-3`, ...
    pub(super) fn free_id(inner: &Inner, wanted: &str) -> String {
        let taken = |id: &str| inner.entries.iter().any(|e| e.info.id == id);
        if !taken(wanted) {
            return wanted.to_string();
        }
        (2..).map(|n| format!("{wanted}-{n}")).find(|id| !taken(id)).unwrap_or_else(|| wanted.to_string())
    }

    /// Stops a running or idle agent; `false` when there is none such under that id.
    pub fn cancel(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id && (e.running() || e.idle())) else {
            return false;
        };
        e.cancel.cancel();
        e.info.status = t::TaskStatus::Cancelled;
        e.info.idle_since = None;
        e.finished = Some(Instant::now());
        e.info.completed_at = Some(now());
        drop(inner);
        self.changed.notify_waiters();
        true
    }

    /// Stops every running or idle agent (the main loop goes on); how many there were.
    pub fn cancel_all(&self) -> usize {
        let ids: Vec<String> =
            self.lock().entries.iter().filter(|e| e.running() || e.idle()).map(|e| e.info.id.clone()).collect();
        ids.iter().filter(|id| self.cancel(id)).count()
    }

    /// Forgets a finished agent; `false` when there is none under that id or it still runs or
    /// idles (cancel it first).
    pub fn remove(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.entries.len();
        inner.entries.retain(|e| e.info.id != id || e.running() || e.idle());
        before != inner.entries.len()
    }

    /// Waits until the agent is no longer running — idle or ended — (or `limit` passes); its
    /// state then.
    pub async fn wait(&self, id: &str, limit: Duration) -> Option<Snapshot> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let changed = self.changed.notified();
            let snap = self.get(id)?;
            if snap.info.status != t::TaskStatus::Running {
                return Some(snap);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.get(id);
            }
        }
    }

    /// Waits until no agent runs.
    pub async fn wait_all(&self) {
        loop {
            let changed = self.changed.notified();
            if !self.lock().entries.iter().any(Entry::running) {
                return;
            }
            changed.await;
        }
    }

    /// Why agent `id` cannot take a message now, if it cannot.
    pub fn refusal(&self, id: &str) -> Option<String> {
        let inner = self.lock();
        let Some(e) = inner.entries.iter().find(|e| e.info.id == id) else {
            return Some(format!("Agent not found: {id}"));
        };
        if e.running() || e.idle() {
            return None;
        }
        let status = status_name(e.info.status);
        Some(format!(
            "Agent \"{id}\" is {status} and cannot receive messages. Only running or idle agents accept messages."
        ))
    }

    /// The agents that take messages now (running or idle), in start order.
    pub fn reachable(&self) -> Vec<String> {
        self.lock().entries.iter().filter(|e| e.running() || e.idle()).map(|e| e.info.id.clone()).collect()
    }

    /// Leaves a message for an agent: a running one reads it before its next step, an idle one
    /// runs again with it. Why not when it cannot take one.
    pub fn send_message(&self, id: &str, message: &str) -> Result<(), String> {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id) else {
            return Err(format!("Agent not found: {id}"));
        };
        if !e.running() && !e.idle() {
            let status = status_name(e.info.status);
            return Err(format!(
                "Agent \"{id}\" is {status} and cannot receive messages. Only running or idle agents accept messages."
            ));
        }
        e.inbox.push(message.to_string());
        if e.idle() {
            e.info.status = t::TaskStatus::Running;
            e.info.prompt = message.to_string();
            e.info.idle_since = None;
            e.info.active_started_at = Some(now());
            e.active_from = Instant::now();
        }
        drop(inner);
        self.changed.notify_waiters();
        Ok(())
    }

    /// Waits for the message that starts an idle agent's next run; `None` when it will get
    /// none (cancelled, or the session's end).
    pub(super) async fn next_messages(&self, id: &str, cancel: &CancellationToken) -> Option<Vec<String>> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut inner = self.lock();
                let e = inner.entries.iter_mut().find(|e| e.info.id == id)?;
                if e.running() && !e.inbox.is_empty() {
                    return Some(std::mem::take(&mut e.inbox));
                }
                if !e.running() && !e.idle() {
                    return None;
                }
            }
            tokio::select! {
                _ = changed => {}
                _ = cancel.cancelled() => return None,
            }
        }
    }

    /// The messages waiting for agent `id` (none for an agent not in the registry, such as a
    /// synchronous one).
    pub(crate) fn take_messages(&self, id: &str) -> Vec<String> {
        let mut inner = self.lock();
        inner.entries.iter_mut().find(|e| e.info.id == id).map(|e| std::mem::take(&mut e.inbox)).unwrap_or_default()
    }

    /// Whether an agent runs, or has ended without its notice queued yet.
    pub fn any_running(&self) -> bool {
        self.lock().entries.iter().any(|e| e.running() || e.notice_pending)
    }

    /// The notice of agent `id`'s run is queued (or cannot be): it no longer holds idle back.
    pub(super) fn noticed(&self, id: &str) {
        if let Some(e) = self.lock().entries.iter_mut().find(|e| e.info.id == id) {
            e.notice_pending = false;
        }
    }

    /// Records where an agent's run ended — idle with its answer, or failed — unless it was
    /// cancelled meanwhile or a message arrived as it answered (then it goes on).
    pub(super) fn finish(&self, id: &str, outcome: &Result<String, String>) -> Finish {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id && e.running()) else { return Finish::Gone };
        if outcome.is_ok() && !e.inbox.is_empty() {
            return Finish::More(std::mem::take(&mut e.inbox));
        }
        let active = e.info.active_time_ms.unwrap_or(0) + e.active_from.elapsed().as_millis() as u64;
        e.info.active_time_ms = Some(active);
        e.info.active_started_at = None;
        e.notice_pending = true;
        match outcome {
            Ok(answer) => {
                e.info.status = t::TaskStatus::Idle;
                e.info.idle_since = Some(now());
                e.info.result = Some(answer.clone());
                e.info.latest_response = Some(answer.clone());
                e.responses.push(answer.clone());
            }
            Err(error) => {
                e.finished = Some(Instant::now());
                e.info.completed_at = Some(now());
                e.info.status = t::TaskStatus::Failed;
                e.info.error = Some(error.clone());
            }
        }
        drop(inner);
        self.changed.notify_waiters();
        Finish::Done
    }
}

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub(crate) fn status_name(s: t::TaskStatus) -> &'static str {
    match s {
        t::TaskStatus::Running => "running",
        t::TaskStatus::Idle => "idle",
        t::TaskStatus::Completed => "completed",
        t::TaskStatus::Failed => "failed",
        t::TaskStatus::Cancelled => "cancelled",
    }
}
