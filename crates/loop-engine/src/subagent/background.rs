//! Background sub-agents: a `task` call with `mode: "background"` (or `session.tasks.startAgent`)
//! starts an agent that outlives the turn. The session's registry tracks each one (what
//! `session.tasks.*`, `read_agent` and `list_agents` report); when one ends, the session is told
//! with a `system.notification` event and a `<system_notification>` message, which starts a turn
//! when it is idle. While one runs, `write_agent` / `session.tasks.sendMessage` put messages in
//! its inbox; the agent reads them before its next model call, and before it would finish.

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
    /// Messages sent to the agent and not yet read by it.
    inbox: Vec<String>,
    /// The agent gave its final answer: it reads no more messages.
    sealed: bool,
}

impl Entry {
    fn running(&self) -> bool {
        self.info.status == t::TaskStatus::Running
    }
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
        Some(Snapshot { info: e.info.clone(), elapsed })
    }

    /// An id not yet taken: `wanted`, else `wanted-2`, `wanted-3`, ...
    fn free_id(inner: &Inner, wanted: &str) -> String {
        let taken = |id: &str| inner.entries.iter().any(|e| e.info.id == id);
        if !taken(wanted) {
            return wanted.to_string();
        }
        (2..).map(|n| format!("{wanted}-{n}")).find(|id| !taken(id)).unwrap_or_else(|| wanted.to_string())
    }

    /// Stops a running agent; `false` when none runs under that id.
    pub fn cancel(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id && e.running()) else { return false };
        e.cancel.cancel();
        e.info.status = t::TaskStatus::Cancelled;
        e.finished = Some(Instant::now());
        e.info.completed_at = Some(now());
        drop(inner);
        self.changed.notify_waiters();
        true
    }

    /// Forgets a finished agent; `false` when there is none under that id or it still runs.
    pub fn remove(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.entries.len();
        inner.entries.retain(|e| e.info.id != id || e.running());
        before != inner.entries.len()
    }

    /// Waits until the agent is no longer running (or `limit` passes); its state then.
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

    /// Leaves a message for a running agent; why not when it cannot take one.
    pub fn send_message(&self, id: &str, message: &str) -> Result<(), String> {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id) else {
            return Err(format!("Agent not found: {id}"));
        };
        if !e.running() || e.sealed {
            // Running but sealed: it is giving its final answer.
            let status = if e.running() { "completed" } else { super::agent_tools::status_name(e.info.status) };
            return Err(format!(
                "Agent \"{id}\" is {status} and cannot receive messages. Only running or idle agents accept messages."
            ));
        }
        e.inbox.push(message.to_string());
        Ok(())
    }

    /// The messages waiting for agent `id` (none for an agent not in the registry, such as a
    /// synchronous one).
    pub(crate) fn take_messages(&self, id: &str) -> Vec<String> {
        let mut inner = self.lock();
        inner.entries.iter_mut().find(|e| e.info.id == id).map(|e| std::mem::take(&mut e.inbox)).unwrap_or_default()
    }

    /// At the agent's final answer: the messages that arrived meanwhile (it goes on with them),
    /// else none, and from then on it takes no more.
    pub(crate) fn take_messages_or_seal(&self, id: &str) -> Vec<String> {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id) else { return Vec::new() };
        if e.inbox.is_empty() {
            e.sealed = true;
        }
        std::mem::take(&mut e.inbox)
    }

    pub fn any_running(&self) -> bool {
        self.lock().entries.iter().any(Entry::running)
    }

    /// Records the end of an agent (unless it was cancelled meanwhile); whether it was recorded.
    fn finish(&self, id: &str, outcome: &Result<String, String>) -> bool {
        let mut inner = self.lock();
        let Some(e) = inner.entries.iter_mut().find(|e| e.info.id == id && e.running()) else { return false };
        e.finished = Some(Instant::now());
        e.info.completed_at = Some(now());
        e.info.active_time_ms = Some(e.started.elapsed().as_millis() as u64);
        match outcome {
            Ok(answer) => {
                e.info.status = t::TaskStatus::Completed;
                e.info.result = Some(answer.clone());
                e.info.latest_response = Some(answer.clone());
            }
            Err(error) => {
                e.info.status = t::TaskStatus::Failed;
                e.info.error = Some(error.clone());
            }
        }
        drop(inner);
        self.changed.notify_waiters();
        true
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

/// What the session is told when an agent ends.
fn notification(agent_id: &str, agent_type: &str, outcome: &Result<String, String>) -> String {
    let what = match outcome {
        Ok(_) => "has completed successfully",
        Err(_) => "has failed",
    };
    format!(
        "<system_notification>\nAgent \"{agent_id}\" ({agent_type}) {what}. Use read_agent with agent_id \"{agent_id}\" \
         to retrieve the full results.\n</system_notification>"
    )
}

/// What `system.notification` says triggered it when an agent ends.
fn completed_kind(agent_id: &str, launch: &Launch, outcome: &Result<String, String>) -> t::SystemNotification {
    let status = match outcome {
        Ok(_) => t::SystemNotificationAgentCompletedStatus::Completed,
        Err(_) => t::SystemNotificationAgentCompletedStatus::Failed,
    };
    let mut kind = t::SystemNotificationAgentCompleted::new(agent_id.to_string(), launch.agent_type.clone(), status);
    kind.display_name = Some(launch.agent.display_name.clone());
    kind.description = Some(launch.description.clone()).filter(|d| !d.is_empty());
    kind.prompt = Some(launch.prompt.clone());
    t::SystemNotification::AgentCompleted(kind)
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
            inbox: Vec::new(),
            sealed: false,
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
        let outcome = super::run::run_agent(&sub, &launch.agent, &launch.prompt, &launch.model, &settings).await;
        if !registry.finish(&id, &outcome) {
            // Cancelled: nobody waits for a notice; an idle held back for it may go out.
            let _ = base.handle.tell(SessionInput::BackgroundSettled).await;
            return;
        }
        let emitter = base.emitter();
        match &outcome {
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
        let text = notification(&id, &launch.agent_type, &outcome);
        emitter.emit(t::SystemNotificationData { content: text.clone(), kind: completed_kind(&id, &launch, &outcome) });
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
            "<system_notification>\nAgent \"a1\" (explore) has completed successfully. Use read_agent with agent_id \
             \"a1\" to retrieve the full results.\n</system_notification>"
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
                    inbox: Vec::new(),
                    sealed: false,
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
        assert_eq!(registry.take_messages_or_seal("a-2"), ["late"], "a message before the end keeps it going");
        assert!(registry.take_messages_or_seal("a-2").is_empty());
        let sealed = registry.send_message("a-2", "too late").unwrap_err();
        assert!(sealed.starts_with("Agent \"a-2\" is completed and cannot receive messages."), "{sealed}");
        assert!(!registry.remove("a"), "a running agent stays");
        assert!(registry.finish("a", &Ok("done".into())));
        assert_eq!(registry.get("a").unwrap().info.result.as_deref(), Some("done"));
        assert!(registry.cancel("a-2"));
        assert!(!registry.cancel("a-2"), "already cancelled");
        assert!(registry.send_message("a-2", "x").unwrap_err().contains("is cancelled"));
        assert!(!registry.finish("a-2", &Ok("late".into())), "a cancelled agent keeps its state");
        assert!(registry.remove("a") && registry.remove("a-2"));
        assert!(registry.list().is_empty());
    }
}
