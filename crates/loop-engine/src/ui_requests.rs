//! Requests a session puts to its clients outside a run: elicitations (`session.ui.elicitation`
//! → `elicitation.requested`), slash commands a client registered (`command.execute`), and
//! slash commands queued for a client to run (`command.queued`, one at a time), plus the
//! handles of directly registered auto-mode-switch handlers, and `exit_plan_mode` reviews and
//! rate-limit prompts (`auto_mode_switch.requested`) a
//! client may answer by id. Each waiting request is a oneshot
//! kept by request id; the client's answer resolves it once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use protocol::generated::types as t;
use tokio::sync::oneshot;

/// A slash command waiting its turn in the command queue.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedCommand {
    pub request_id: String,
    pub command: String,
}

#[derive(Default)]
struct State {
    elicitations: HashMap<String, oneshot::Sender<t::UIElicitationResponse>>,
    /// `exit_plan_mode` reviews waiting on a client: answered by `exitPlanMode.request` or here.
    exit_plans: Waiting<t::UIExitPlanModeResponse>,
    commands: HashMap<String, oneshot::Sender<Option<String>>>,
    /// The queued command a client is running now.
    active: Option<QueuedCommand>,
    waiting: VecDeque<QueuedCommand>,
    auto_mode_handlers: HashSet<String>,
    /// Rate-limit prompts waiting on a client: answered by `autoModeSwitch.request` or
    /// `session.ui.handlePendingAutoModeSwitch`.
    auto_mode_switches: Waiting<t::UIAutoModeSwitchResponse>,
    /// A client answered `yes_always`: later rate limits switch without asking.
    auto_switch_always: bool,
}

/// Requests waiting on a client's answer, by request id: the first answer resolves one.
struct Waiting<T>(HashMap<String, oneshot::Sender<T>>);

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl<T> Waiting<T> {
    fn register(&mut self, request_id: &str) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        self.0.insert(request_id.to_string(), tx);
        rx
    }

    fn take(&mut self, request_id: &str) -> Option<oneshot::Sender<T>> {
        self.0.remove(request_id)
    }
}

/// Resolves a request taken from a [`Waiting`] (outside the lock); `false` when there was none.
fn answer<T>(waiting: Option<oneshot::Sender<T>>, answer: T) -> bool {
    waiting.is_some_and(|tx| tx.send(answer).is_ok())
}

#[derive(Default)]
pub struct UiRequests {
    state: Mutex<State>,
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl UiRequests {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new elicitation: its request id and where the answer arrives.
    pub fn register_elicitation(&self) -> (String, oneshot::Receiver<t::UIElicitationResponse>) {
        let (tx, rx) = oneshot::channel();
        let id = new_id();
        self.lock().elicitations.insert(id.clone(), tx);
        (id, rx)
    }

    /// A client's answer; `false` when nothing waits under that id.
    pub fn answer_elicitation(&self, request_id: &str, answer: t::UIElicitationResponse) -> bool {
        let tx = self.lock().elicitations.remove(request_id);
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// The requester gave up (or no client can answer any more): forget the request.
    pub fn forget_elicitation(&self, request_id: &str) {
        self.lock().elicitations.remove(request_id);
    }

    /// Nobody left answers elicitations: every waiting one ends (its receiver sees the drop).
    pub fn drop_elicitations(&self) {
        self.lock().elicitations.clear();
    }

    /// An `exit_plan_mode` review under `request_id` (announced by `exit_plan_mode.requested`):
    /// a client may answer it through `session.ui.handlePendingExitPlanMode`.
    pub fn register_exit_plan(&self, request_id: &str) -> oneshot::Receiver<t::UIExitPlanModeResponse> {
        self.lock().exit_plans.register(request_id)
    }

    /// `false` when no review waits under that id (unknown, or already answered).
    pub fn answer_exit_plan(&self, request_id: &str, response: t::UIExitPlanModeResponse) -> bool {
        let waiting = self.lock().exit_plans.take(request_id);
        answer(waiting, response)
    }

    pub fn forget_exit_plan(&self, request_id: &str) {
        self.lock().exit_plans.take(request_id);
    }

    /// A new `command.execute`: its request id and where the client's outcome (an error
    /// message, or none) arrives.
    pub fn register_command(&self) -> (String, oneshot::Receiver<Option<String>>) {
        let (tx, rx) = oneshot::channel();
        let id = new_id();
        self.lock().commands.insert(id.clone(), tx);
        (id, rx)
    }

    /// `session.commands.handlePendingCommand`: `false` only when a waiting request could not
    /// take the answer (an unknown id is acknowledged, as the original does).
    pub fn finish_command(&self, request_id: &str, error: Option<String>) -> bool {
        let tx = self.lock().commands.remove(request_id);
        match tx {
            Some(tx) => tx.send(error).is_ok(),
            None => true,
        }
    }

    pub fn forget_command(&self, request_id: &str) {
        self.lock().commands.remove(request_id);
    }

    /// Queues a slash command. Returns it when it starts at once (nothing else is running),
    /// for the caller to announce as `command.queued`.
    pub fn enqueue_command(&self, command: String) -> Option<QueuedCommand> {
        let item = QueuedCommand { request_id: new_id(), command };
        let mut s = self.lock();
        if s.active.is_none() {
            s.active = Some(item.clone());
            Some(item)
        } else {
            s.waiting.push_back(item);
            None
        }
    }

    /// A client finished the running queued command. `None` when `request_id` is not the
    /// running one; otherwise the next command to announce, if the queue goes on.
    pub fn complete_queued(&self, request_id: &str, stop_processing_queue: bool) -> Option<Option<QueuedCommand>> {
        let mut s = self.lock();
        if s.active.as_ref().is_none_or(|a| a.request_id != request_id) {
            return None;
        }
        s.active = None;
        if stop_processing_queue {
            return Some(None);
        }
        let next = s.waiting.pop_front();
        s.active = next.clone();
        Some(next)
    }

    /// Commands waiting their turn (not the running one), oldest first.
    pub fn waiting_commands(&self) -> Vec<QueuedCommand> {
        self.lock().waiting.iter().cloned().collect()
    }

    /// Drops the most recently queued command; `false` when none waits.
    pub fn remove_most_recent_command(&self) -> bool {
        self.lock().waiting.pop_back().is_some()
    }

    pub fn clear_waiting_commands(&self) {
        self.lock().waiting.clear();
    }

    pub fn register_auto_mode_handler(&self) -> String {
        let handle = new_id();
        self.lock().auto_mode_handlers.insert(handle.clone());
        handle
    }

    pub fn unregister_auto_mode_handler(&self, handle: &str) -> bool {
        self.lock().auto_mode_handlers.remove(handle)
    }

    /// Whether a client registered a direct auto-mode-switch handler (it answers through
    /// `session.ui.handlePendingAutoModeSwitch`).
    pub fn has_auto_mode_handler(&self) -> bool {
        !self.lock().auto_mode_handlers.is_empty()
    }

    /// A rate-limit prompt under `request_id` (announced by `auto_mode_switch.requested`).
    pub fn register_auto_mode_switch(&self, request_id: &str) -> oneshot::Receiver<t::UIAutoModeSwitchResponse> {
        self.lock().auto_mode_switches.register(request_id)
    }

    /// `false` when no prompt waits under that id (unknown, or already answered).
    pub fn answer_auto_mode_switch(&self, request_id: &str, response: t::UIAutoModeSwitchResponse) -> bool {
        let waiting = self.lock().auto_mode_switches.take(request_id);
        answer(waiting, response)
    }

    pub fn forget_auto_mode_switch(&self, request_id: &str) {
        self.lock().auto_mode_switches.take(request_id);
    }

    pub fn auto_switch_always(&self) -> bool {
        self.lock().auto_switch_always
    }

    pub fn set_auto_switch_always(&self) {
        self.lock().auto_switch_always = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_commands_run_one_at_a_time_in_order() {
        let ui = UiRequests::default();
        let first = ui.enqueue_command("/a".into()).expect("starts at once");
        assert!(ui.enqueue_command("/b".into()).is_none());
        assert!(ui.enqueue_command("/c".into()).is_none());
        assert!(ui.remove_most_recent_command());
        assert_eq!(ui.waiting_commands().iter().map(|c| c.command.as_str()).collect::<Vec<_>>(), ["/b"]);
        assert!(ui.complete_queued("unknown", false).is_none());
        let next = ui.complete_queued(&first.request_id, false).expect("first was running");
        assert_eq!(next.map(|c| c.command), Some("/b".to_string()));
        assert!(ui.waiting_commands().is_empty());
    }

    #[tokio::test]
    async fn an_elicitation_answer_reaches_its_requester_once() {
        let ui = UiRequests::default();
        let (id, rx) = ui.register_elicitation();
        let answer = t::UIElicitationResponse::new(t::UIElicitationResponseAction::Decline);
        assert!(!ui.answer_elicitation("other", answer.clone()));
        assert!(ui.answer_elicitation(&id, answer.clone()));
        assert!(!ui.answer_elicitation(&id, answer.clone()));
        assert_eq!(rx.await.ok(), Some(answer));
    }

    #[tokio::test]
    async fn a_rate_limit_prompt_is_answered_once_and_only_under_its_id() {
        let ui = UiRequests::default();
        assert!(!ui.has_auto_mode_handler());
        let handle = ui.register_auto_mode_handler();
        assert!(ui.has_auto_mode_handler());
        let rx = ui.register_auto_mode_switch("r1");
        assert!(!ui.answer_auto_mode_switch("r2", t::UIAutoModeSwitchResponse::Yes));
        assert!(ui.answer_auto_mode_switch("r1", t::UIAutoModeSwitchResponse::YesAlways));
        assert!(!ui.answer_auto_mode_switch("r1", t::UIAutoModeSwitchResponse::No));
        assert_eq!(rx.await.ok(), Some(t::UIAutoModeSwitchResponse::YesAlways));
        // Forgotten (the run went on without an answer): a late answer finds nothing.
        let _late = ui.register_auto_mode_switch("r3");
        ui.forget_auto_mode_switch("r3");
        assert!(!ui.answer_auto_mode_switch("r3", t::UIAutoModeSwitchResponse::Yes));
        assert!(ui.unregister_auto_mode_handler(&handle));
        assert!(!ui.has_auto_mode_handler());
    }

    #[test]
    fn auto_mode_handler_handles_unregister_once() {
        let ui = UiRequests::default();
        assert!(!ui.unregister_auto_mode_handler("missing"));
        let h = ui.register_auto_mode_handler();
        assert!(ui.unregister_auto_mode_handler(&h));
        assert!(!ui.unregister_auto_mode_handler(&h));
    }
}
