//! Background sub-agents: a `task` call with `mode: "background"` (or `session.tasks.startAgent`)
//! starts an agent that outlives the turn. The session's registry tracks each one (what
//! `session.tasks.*`, `read_agent` and `list_agents` report); when one ends, the session is told
//! with a `system.notification` event and a `<system_notification>` message, which starts a turn
//! when it is idle. As the original's, an agent that gives its answer goes `idle` with its
//! conversation: `write_agent` / `session.tasks.sendMessage` put messages in its inbox, which a
//! running agent reads before its next model call (and before it would finish), and which
//! starts an idle one's next run from where it stopped (then a new notice). Failed and cancelled
//! agents take none; an idle one is cancelled before it can be removed.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use protocol::generated::types as t;
use tokio_util::sync::CancellationToken;

use super::{AgentScope, Resolved};
use crate::handle::{QueuedMessage, SessionHandle, SessionInput};
use crate::run::RunCtx;
use crate::settings::SessionSettings;
use crate::Deps;

/// One background agent.
struct Entry {
    info: t::TaskAgentInfo,
    cancel: CancellationToken,
    started: Instant,
    finished: Option<Instant>,
    /// When its current run began (for `activeTimeMs`).
    active_from: Instant,
    /// Messages sent to the agent and not yet read by it.
    inbox: Vec<String>,
    /// Its answer of each run (what `read_agent` shows as turns).
    responses: Vec<String>,
}

impl Entry {
    fn running(&self) -> bool {
        self.info.status == t::TaskStatus::Running
    }

    /// It gave its answer and waits, with its conversation, for a message to go on.
    fn idle(&self) -> bool {
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
struct Inner {
    deps: Option<Arc<Deps>>,
    entries: Vec<Entry>,
}

/// The background agents of one session, in start order. Never locked across an `.await`.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Mutex<Inner>>,
    changed: Arc<tokio::sync::Notify>,
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

    fn lock(&self) -> MutexGuard<'_, Inner> {
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
    fn free_id(inner: &Inner, wanted: &str) -> String {
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
        let status = super::agent_tools::status_name(e.info.status);
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
            let status = super::agent_tools::status_name(e.info.status);
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
    async fn next_messages(&self, id: &str, cancel: &CancellationToken) -> Option<Vec<String>> {
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

    pub fn any_running(&self) -> bool {
        self.lock().entries.iter().any(Entry::running)
    }

    /// Records where an agent's run ended — idle with its answer, or failed — unless it was
    /// cancelled meanwhile or a message arrived as it answered (then it goes on).
    fn finish(&self, id: &str, outcome: &Result<String, String>) -> Finish {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id && e.running()) else { return Finish::Gone };
        if outcome.is_ok() && !e.inbox.is_empty() {
            return Finish::More(std::mem::take(&mut e.inbox));
        }
        let active = e.info.active_time_ms.unwrap_or(0) + e.active_from.elapsed().as_millis() as u64;
        e.info.active_time_ms = Some(active);
        e.info.active_started_at = None;
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

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// What a background agent is asked to do.
pub(crate) struct Launch {
    pub agent: Resolved,
    pub agent_type: String,
    pub prompt: String,
    pub model: String,
    /// The agent id asked for (made unique).
    pub name: String,
    pub description: String,
    /// The `task` call that started it (a made-up one for `session.tasks.startAgent`).
    pub tool_call_id: String,
}

/// The `task` result for a background start.
pub(crate) fn started_text(agent_id: &str) -> String {
    format!(
        "Agent started in background with agent_id: {agent_id}. You'll be notified when it completes. Tell the user \
         you're waiting and end your response, or continue unrelated work until notified."
    )
}

/// What the session is told when an agent's run ends (the original's texts: idle after an
/// answer, failed otherwise).
fn notification(agent_id: &str, agent_type: &str, outcome: &Result<String, String>) -> String {
    let body = match outcome {
        Ok(_) => format!(
            "Agent \"{agent_id}\" ({agent_type}) has finished processing and is now idle. Use read_agent with agent_id \
             \"{agent_id}\" to read the results, or write_agent to send follow-up messages."
        ),
        Err(_) => format!(
            "Agent \"{agent_id}\" ({agent_type}) has failed. Use read_agent with agent_id \"{agent_id}\" to retrieve the \
             full results."
        ),
    };
    format!("<system_notification>\n{body}\n</system_notification>")
}

/// What `system.notification` says triggered it when an agent's run ends.
fn completed_kind(agent_id: &str, launch: &Launch, outcome: &Result<String, String>) -> t::SystemNotification {
    if outcome.is_ok() {
        return t::SystemNotification::AgentIdle(t::SystemNotificationAgentIdle {
            agent_id: agent_id.to_string(),
            agent_type: launch.agent_type.clone(),
            display_name: Some(launch.agent.display_name.clone()),
            description: Some(launch.description.clone()).filter(|d| !d.is_empty()),
        });
    }
    let status = t::SystemNotificationAgentCompletedStatus::Failed;
    let mut kind = t::SystemNotificationAgentCompleted::new(agent_id.to_string(), launch.agent_type.clone(), status);
    kind.display_name = Some(launch.agent.display_name.clone());
    kind.description = Some(launch.description.clone()).filter(|d| !d.is_empty());
    kind.prompt = Some(launch.prompt.clone());
    t::SystemNotification::AgentCompleted(kind)
}

/// Tells the session an agent's run ended: `subagent.completed` / `failed`, then the notice (a
/// `system.notification` event and the queued `<system_notification>` message).
async fn announce(base: &RunCtx, id: &str, launch: &Launch, outcome: &Result<String, String>) {
    let emitter = base.emitter();
    match outcome {
        Ok(_) => emitter.emit(t::SubagentCompletedData {
            tool_call_id: launch.tool_call_id.clone(),
            agent_name: launch.agent.name.clone(),
            agent_display_name: launch.agent.display_name.clone(),
            model: Some(launch.model.clone()),
            ..Default::default()
        }),
        Err(error) => emitter.emit(t::SubagentFailedData {
            tool_call_id: launch.tool_call_id.clone(),
            agent_name: launch.agent.name.clone(),
            agent_display_name: launch.agent.display_name.clone(),
            error: error.clone(),
            model: Some(launch.model.clone()),
            ..Default::default()
        }),
    };
    emitter.emit(t::BackgroundTasksChangedData {});
    if base.handle.stopped().is_cancelled() {
        return;
    }
    let text = notification(id, &launch.agent_type, outcome);
    emitter.emit(t::SystemNotificationData { content: text.clone(), kind: completed_kind(id, launch, outcome) });
    let msg = QueuedMessage {
        message_id: uuid::Uuid::new_v4().to_string(),
        prompt: text,
        attachments: Vec::new(),
        agent_mode: None,
        request_headers: Vec::new(),
        delivery: t::UserMessageDelivery::Idle,
    };
    if let Err(e) = base.handle.send(msg, false).await {
        tracing::warn!(session = %base.handle.id(), error = %e, "background agent notice not delivered");
        let _ = base.handle.tell(SessionInput::BackgroundSettled).await;
    }
}

/// Starts the agent and returns its id at once; it runs on its own task, cancelled with the
/// session (or through the registry), never with the turn that started it.
pub(crate) fn start(handle: &SessionHandle, settings: &SessionSettings, launch: Launch) -> Result<String, String> {
    let registry = handle.tasks().clone();
    let cancel = handle.stopped().child_token();
    let (agent_id, deps) = {
        let mut inner = registry.lock();
        let Some(deps) = inner.deps.clone() else { return Err("background agents are unavailable".into()) };
        let agent_id = Registry::free_id(&inner, &launch.name);
        let mut info = t::TaskAgentInfo::new(
            agent_id.clone(),
            launch.tool_call_id.clone(),
            launch.description.clone(),
            t::TaskStatus::Running,
            now(),
            launch.agent_type.clone(),
            launch.prompt.clone(),
        );
        info.display_name = Some(launch.agent.display_name.clone());
        info.resolved_model = Some(launch.model.clone());
        info.execution_mode = Some(t::TaskExecutionMode::Background);
        info.can_promote_to_background = Some(false);
        inner.entries.push(Entry {
            info,
            cancel: cancel.clone(),
            started: Instant::now(),
            finished: None,
            active_from: Instant::now(),
            inbox: Vec::new(),
            responses: Vec::new(),
        });
        (agent_id, deps)
    };
    registry.changed.notify_waiters();
    let base = RunCtx::new(handle.clone(), deps, cancel);
    base.emitter().emit(t::SubagentStartedData {
        tool_call_id: launch.tool_call_id.clone(),
        agent_name: launch.agent.name.clone(),
        agent_display_name: launch.agent.display_name.clone(),
        agent_description: launch.agent.description.clone(),
        model: Some(launch.model.clone()),
        agent_type: Some(launch.agent_type.clone()),
        execution_mode: Some("background".into()),
        ..Default::default()
    });
    base.emitter().emit(t::BackgroundTasksChangedData {});
    let settings = settings.clone();
    let id = agent_id.clone();
    tokio::spawn(async move {
        let sub =
            base.for_subagent(AgentScope { agent_id: id.clone(), parent_tool_call_id: launch.tool_call_id.clone() });
        let mut agent = super::run::AgentLoop::new(&launch.agent, &launch.prompt, &launch.model, &settings, true);
        loop {
            let outcome = agent.run(&sub).await;
            match registry.finish(&id, &outcome) {
                Finish::Done => {}
                Finish::More(messages) => {
                    messages.into_iter().for_each(|m| agent.push_message(m));
                    continue;
                }
                Finish::Gone => {
                    // Cancelled: nobody waits for a notice; an idle held back for it may go out.
                    let _ = base.handle.tell(SessionInput::BackgroundSettled).await;
                    return;
                }
            }
            announce(&base, &id, &launch, &outcome).await;
            if outcome.is_err() || base.handle.stopped().is_cancelled() {
                return;
            }
            // It keeps its conversation until a message (or the session's end, its removal).
            let Some(messages) = registry.next_messages(&id, &sub.cancel).await else { return };
            messages.into_iter().for_each(|m| agent.push_message(m));
            base.emitter().emit(t::BackgroundTasksChangedData {});
        }
    });
    Ok(agent_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_agent() {
        assert!(started_text("a1").starts_with("Agent started in background with agent_id: a1. You'll be notified"));
        let done = notification("a1", "explore", &Ok("x".into()));
        assert_eq!(
            done,
            "<system_notification>\nAgent \"a1\" (explore) has finished processing and is now idle. Use read_agent \
             with agent_id \"a1\" to read the results, or write_agent to send follow-up messages.\n</system_notification>"
        );
    }

    #[test]
    fn ids_are_made_unique_and_finished_agents_can_be_removed() {
        let registry = Registry::default();
        {
            let mut inner = registry.lock();
            for wanted in ["a", "a"] {
                let id = Registry::free_id(&inner, wanted);
                let info = t::TaskAgentInfo::new(
                    id,
                    "call".into(),
                    "d".into(),
                    t::TaskStatus::Running,
                    now(),
                    "explore".into(),
                    "p".into(),
                );
                inner.entries.push(Entry {
                    info,
                    cancel: CancellationToken::new(),
                    started: Instant::now(),
                    finished: None,
                    active_from: Instant::now(),
                    inbox: Vec::new(),
                    responses: Vec::new(),
                });
            }
        }
        let ids: Vec<String> = registry.list().into_iter().map(|i| i.id).collect();
        assert_eq!(ids, ["a", "a-2"]);
        assert!(registry.send_message("a", "one").is_ok() && registry.send_message("a", "two").is_ok());
        assert_eq!(registry.take_messages("a"), ["one", "two"]);
        assert!(registry.take_messages("a").is_empty(), "each message is read once");
        assert_eq!(registry.send_message("b", "x").unwrap_err(), "Agent not found: b");
        assert!(registry.send_message("a-2", "late").is_ok());
        assert_eq!(registry.finish("a-2", &Ok("x".into())), Finish::More(vec!["late".into()]), "it goes on");
        assert_eq!(registry.finish("a-2", &Ok("answer".into())), Finish::Done);
        let snap = registry.get("a-2").unwrap();
        assert_eq!((snap.info.status, snap.responses.clone()), (t::TaskStatus::Idle, vec!["answer".to_string()]));
        assert!(snap.info.idle_since.is_some());
        assert_eq!(registry.reachable(), ["a", "a-2"], "an idle agent still takes messages");
        assert!(!registry.remove("a-2"), "an idle agent is cancelled before it is removed");
        // A message resumes it: running again, with the message as its latest prompt.
        assert!(registry.send_message("a-2", "again").is_ok());
        let info = registry.get("a-2").unwrap().info;
        assert_eq!((info.status, info.prompt.as_str()), (t::TaskStatus::Running, "again"));
        assert_eq!(registry.take_messages("a-2"), ["again"]);
        assert!(!registry.remove("a"), "a running agent stays");
        assert_eq!(registry.finish("a", &Err("boom".into())), Finish::Done);
        assert_eq!(registry.get("a").unwrap().info.error.as_deref(), Some("boom"));
        assert!(registry.send_message("a", "x").unwrap_err().contains("is failed"));
        assert!(registry.cancel("a-2"));
        assert!(!registry.cancel("a-2"), "already cancelled");
        assert!(registry.send_message("a-2", "x").unwrap_err().contains("is cancelled"));
        assert_eq!(registry.refusal("a-2").unwrap(), registry.send_message("a-2", "x").unwrap_err());
        assert_eq!(registry.finish("a-2", &Ok("late".into())), Finish::Gone, "a cancelled agent keeps its state");
        assert!(registry.remove("a") && registry.remove("a-2"));
        assert!(registry.list().is_empty());
    }
}
