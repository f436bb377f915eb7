//! What clients do to the main loop's running turn from outside it: withdraw the message that
//! started the turn while the model has not answered it (`session.queue.withdrawMessage`), and
//! clear the conversation from inside a tool handler (`session.history.clearContext`). The run
//! marks here what it is doing (which message started it, whether the model answered, whether a
//! batch of tool calls is in flight); the actor and the handlers read the marks. The lock is
//! held for a field's read or write, never across an `.await`.

use protocol::generated::types as t;

use crate::handle::SessionHandle;

/// The message that started the running turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnMark {
    pub message_id: String,
    /// Its `user.message` event: a withdrawal cuts the log there.
    pub event_id: String,
    /// The text it was sent with (a withdrawal names it, so an edited message is not taken).
    pub prompt: String,
    /// The model answered it (text or tool calls): it can no longer be withdrawn.
    pub answered: bool,
}

/// A batch of the main loop's tool calls in flight, and the clears its handlers asked for.
#[derive(Debug, Default)]
struct ToolBatch {
    /// Messages other than system ones in the conversation while the calls run.
    messages: u64,
    cleared: bool,
    /// The first user messages of the fresh window, in the order the clears came.
    seeds: Vec<String>,
}

#[derive(Debug, Default)]
pub(crate) struct TurnState {
    mark: Option<TurnMark>,
    tools: Option<ToolBatch>,
}

/// Why `session.history.clearContext` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClearRefused {
    /// The original's words.
    #[error(
        "session.history.clearContext must be called from inside a tool handler: no tool call is in flight, so the \
         clear cannot drop the tool results it orphans and the seed prompt would have no turn to run in. (A clear \
         earlier in the same tool batch also produces this state: its wipe removed the tool calls this check reads. \
         Only one clear per tool batch is supported.)"
    )]
    NoToolCall,
}

impl SessionHandle {
    fn turn_state(&self) -> std::sync::MutexGuard<'_, TurnState> {
        self.turn_lock().lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The run's first message is in the log as `event_id`.
    pub(crate) fn mark_turn(&self, message_id: &str, event_id: &str, prompt: &str) {
        self.turn_state().mark = Some(TurnMark {
            message_id: message_id.to_string(),
            event_id: event_id.to_string(),
            prompt: prompt.to_string(),
            answered: false,
        });
    }

    /// The model answered the running turn's message.
    pub(crate) fn mark_answered(&self) {
        if let Some(m) = self.turn_state().mark.as_mut() {
            m.answered = true;
        }
    }

    pub(crate) fn turn_mark(&self) -> Option<TurnMark> {
        self.turn_state().mark.clone()
    }

    /// The run ended: nothing is withdrawable any more.
    pub(crate) fn take_turn_mark(&self) -> Option<TurnMark> {
        self.turn_state().mark.take()
    }

    /// The message a `session.queue.withdrawMessage` could still take out of the running turn.
    pub fn withdrawable_turn_message(&self) -> Option<String> {
        self.turn_state().mark.as_ref().filter(|m| !m.answered).map(|m| m.message_id.clone())
    }

    /// The main loop's tool calls start; the conversation holds `messages` non-system messages.
    pub(crate) fn open_tool_batch(&self, messages: u64) {
        self.turn_state().tools = Some(ToolBatch { messages, ..Default::default() });
    }

    /// The calls are done: the seed prompts when a handler cleared the context.
    pub(crate) fn close_tool_batch(&self) -> Option<Vec<String>> {
        self.turn_state().tools.take().filter(|b| b.cleared).map(|b| b.seeds)
    }

    /// `session.history.clearContext`: the conversation is cleared once the running tool calls
    /// are done, and `prompt` starts the fresh window. How many messages go (a second clear in the
    /// same batch clears nothing more).
    pub fn clear_context(&self, prompt: String) -> Result<u64, ClearRefused> {
        let cleared = {
            let mut state = self.turn_state();
            let batch = state.tools.as_mut().ok_or(ClearRefused::NoToolCall)?;
            let n = if batch.cleared { 0 } else { batch.messages };
            batch.cleared = true;
            batch.seeds.push(prompt.clone());
            n
        };
        self.emitter().emit(t::ContextClearedData { messages_cleared: cleared, initial_message: Some(prompt) });
        Ok(cleared)
    }
}
