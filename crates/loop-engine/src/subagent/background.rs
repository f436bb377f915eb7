//! Background sub-agents: a `task` call with `mode: "background"` (or `session.tasks.startAgent`)
//! starts an agent that outlives the turn. The session's registry tracks each one (what
//! `session.tasks.*`, `read_agent` and `list_agents` report); when one ends, the session is told
//! with a `system.notification` event and a `<system_notification>` message, which starts a turn
//! when it is idle. As the original's, an agent that gives its answer goes `idle` with its
//! conversation: `write_agent` / `session.tasks.sendMessage` put messages in its inbox, which a
//! running agent reads before its next model call (and before it would finish), and which
//! starts an idle one's next run from where it stopped (then a new notice). Failed and cancelled
//! agents take none; an idle one is cancelled before it can be removed.

use protocol::generated::types as t;

use super::registry::{now, Entry, Finish, Registry};
use super::{AgentScope, Resolved};
use crate::handle::{QueuedMessage, SessionHandle, SessionInput};
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;

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
/// `system.notification` event and the queued `<system_notification>` message). Returns
/// whether the notice was queued.
async fn announce(base: &RunCtx, id: &str, launch: &Launch, outcome: &Result<String, String>) -> bool {
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
        return false;
    }
    let text = notification(id, &launch.agent_type, outcome);
    emitter.emit(t::SystemNotificationData { content: text.clone(), kind: completed_kind(id, launch, outcome) });
    let msg = QueuedMessage { prompt: text, ..Default::default() };
    match base.handle.send(msg, false).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(session = %base.handle.id(), error = %e, "background agent notice not delivered");
            false
        }
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
        inner.entries.push(Entry::running_from(info, cancel.clone()));
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
            let queued = announce(&base, &id, &launch, &outcome).await;
            // Only now may the session's idle go out: before, the notice's turn was not queued.
            registry.noticed(&id);
            if !queued {
                let _ = base.handle.tell(SessionInput::BackgroundSettled).await;
            }
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
    use tokio_util::sync::CancellationToken;

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

    /// A running agent's entry with test values.
    fn running_entry(id: String) -> Entry {
        let info = t::TaskAgentInfo::new(
            id,
            "call".into(),
            "d".into(),
            t::TaskStatus::Running,
            now(),
            "explore".into(),
            "p".into(),
        );
        Entry::running_from(info, CancellationToken::new())
    }

    #[test]
    fn an_ended_agent_holds_idle_back_until_its_notice_is_queued() {
        let registry = Registry::default();
        registry.lock().entries.push(running_entry("a".into()));
        assert!(registry.any_running());
        assert_eq!(registry.finish("a", &Ok("answer".into())), Finish::Done);
        assert!(registry.any_running(), "answered, but its notice is not queued yet");
        registry.noticed("a");
        assert!(!registry.any_running());
    }

    #[test]
    fn ids_are_made_unique_and_finished_agents_can_be_removed() {
        let registry = Registry::default();
        {
            let mut inner = registry.lock();
            for wanted in ["a", "a"] {
                let id = Registry::free_id(&inner, wanted);
                inner.entries.push(running_entry(id));
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
