//! The model-visible conversation a session's actor owns and lends to one run at a time. The
//! history is shared with the model calls (an `Arc`), never copied per turn, and its size is
//! kept as it grows instead of being summed again every turn.

use llm_providers::{ContentPart, History, Message, SystemText, ToolCall, ToolContent, ToolSet, ToolSpec, UserContent};
use tools::INTERRUPTED_TEXT;

pub(crate) struct Conversation {
    pub history: History,
    /// The first prompt (the session's title); `None` until the first user message.
    pub title: Option<String>,
    /// Rough size in bytes of the history as the model sees it.
    pub bytes: usize,
    /// Files the run's tools created or changed, collected by the actor after the run.
    pub files_modified: Vec<String>,
    /// The system prompt last written to the log: an unchanged prompt is not written again.
    pub last_system: Option<String>,
    /// The user's prompts as typed, in order: a compaction summary lists them.
    pub prompts: Vec<String>,
    /// A compaction under way.
    pub compaction: Option<crate::compaction::in_flight::InFlight>,
    /// The history length a failed background compaction covered: the next waits for growth.
    pub failed_mark: Option<usize>,
    /// The tools last offered, with their wire text: the next call offering the same reuses it.
    pub tools: ToolSet,
    /// The model `tools` were last offered to: a new set or a new model is `session.tools_updated`.
    tools_model: Option<String>,
    /// The system prompt last sent, with its JSON: the next call sending the same reuses it.
    pub system: SystemText,
}

impl Conversation {
    pub fn new(messages: Vec<Message>, title: Option<String>) -> Self {
        let bytes = messages.iter().map(message_bytes).sum();
        Self {
            history: History::new(messages),
            title,
            bytes,
            files_modified: Vec::new(),
            last_system: None,
            prompts: Vec::new(),
            compaction: None,
            failed_mark: None,
            tools: ToolSet::default(),
            tools_model: None,
            system: SystemText::default(),
        }
    }

    /// The first `n` messages give way to `head` (a compaction summary).
    pub fn replace_front(&mut self, n: usize, head: Message) {
        let removed: usize = self.history.messages().take(n).map(message_bytes).sum();
        self.bytes = self.bytes.saturating_sub(removed) + message_bytes(&head);
        self.history.replace_front(n, head);
    }

    /// The set to offer `model` as `specs`: the last one when nothing changed, so its texts are
    /// kept. `true` with it when the set or the model is not the last call's.
    pub fn offer(&mut self, model: &str, specs: Vec<ToolSpec>) -> (ToolSet, bool) {
        let next = self.tools.reuse_for(specs);
        let changed = !next.is_same(&self.tools) || self.tools_model.as_deref() != Some(model);
        if changed {
            self.tools_model = Some(model.to_string());
        }
        self.tools = next;
        (self.tools.clone(), changed)
    }

    /// The prompt to send as `text`: the last one when it is unchanged, so its JSON is kept.
    pub fn system_text(&mut self, text: String) -> SystemText {
        self.system = self.system.reuse_for(text);
        self.system.clone()
    }

    /// Messages other than system ones.
    pub fn non_system_messages(&self) -> u64 {
        self.history.messages().filter(|m| !matches!(m, Message::System { .. })).count() as u64
    }

    /// Everything but the system messages goes (`session.history.clearContext`); a compaction
    /// under way covered what went, so it is abandoned.
    pub fn clear_to_system(&mut self, handle: &crate::handle::SessionHandle) {
        self.drop_compaction(handle);
        let kept: Vec<Message> =
            self.history.messages().filter(|m| matches!(m, Message::System { .. })).cloned().collect();
        self.bytes = kept.iter().map(message_bytes).sum();
        self.history = History::new(kept);
    }

    /// A compaction under way is abandoned (what it summarizes is gone).
    pub fn drop_compaction(&mut self, handle: &crate::handle::SessionHandle) {
        if let Some(f) = self.compaction.take() {
            handle.compaction().finished();
            f.abandon();
        }
    }

    pub fn push(&mut self, message: Message) {
        self.bytes += message_bytes(&message);
        self.history.push(message);
    }

    /// A `preToolUse` hook changed calls' arguments: the model sees the calls as they ran.
    pub fn rewrite_call_arguments(&mut self, rewritten: &[(String, String)]) {
        let Some(pos) = self.history.messages().rposition(|m| matches!(m, Message::Assistant { .. })) else {
            return;
        };
        let mut delta: isize = 0;
        self.history.update(pos, |m| {
            if let Message::Assistant { tool_calls, .. } = m {
                for c in tool_calls.iter_mut() {
                    if let Some((_, args)) = rewritten.iter().find(|(id, _)| *id == c.id) {
                        delta += args.len() as isize - c.arguments.len() as isize;
                        c.arguments = args.clone();
                    }
                }
            }
        });
        self.bytes = self.bytes.saturating_add_signed(delta);
    }

    /// After a panic mid-run: every tool call in history must have exactly one result.
    pub fn repair(&mut self) {
        let messages: Vec<&Message> = self.history.messages().collect();
        let Some(pos) = messages.iter().rposition(|m| matches!(m, Message::Assistant { .. })) else { return };
        let Message::Assistant { tool_calls, .. } = messages[pos] else { return };
        let answered: Vec<&str> = messages[pos + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<ToolCall> =
            tool_calls.iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect();
        for c in missing {
            self.push(Message::Tool { tool_call_id: c.id, content: ToolContent::Text(INTERRUPTED_TEXT.into()) });
        }
    }
}

/// Rough size of a message as the model sees it (text, call names and arguments).
pub(crate) fn message_bytes(m: &Message) -> usize {
    let parts = |p: &[ContentPart]| -> usize {
        p.iter()
            .map(|c| match c {
                ContentPart::Text { text } => text.len(),
                ContentPart::ImageUrl { image_url } => image_url.url.len(),
                ContentPart::File { file } => file.file_data.len(),
            })
            .sum()
    };
    match m {
        Message::System { content } => content.len(),
        Message::User { content: UserContent::Text(t) } => t.len(),
        Message::User { content: UserContent::Parts(p) } => parts(p),
        Message::Assistant { content, tool_calls, .. } => {
            content.as_ref().map_or(0, String::len)
                + tool_calls.iter().map(|c| c.id.len() + c.name.len() + c.arguments.len()).sum::<usize>()
        }
        Message::Tool { content: ToolContent::Text(t), tool_call_id } => t.len() + tool_call_id.len(),
        Message::Tool { content: ToolContent::Parts(p), tool_call_id } => parts(p) + tool_call_id.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "view".into(), arguments: args.into() }
    }

    #[test]
    fn size_follows_pushes_and_rewrites() {
        let mut c = Conversation::new(vec![Message::User { content: UserContent::Text("hello".into()) }], None);
        assert_eq!(c.bytes, 5);
        c.push(Message::Assistant { content: None, tool_calls: vec![call("c1", "{}")], reasoning: None });
        let before = c.bytes;
        c.rewrite_call_arguments(&[("c1".into(), "{\"a\":1}".into())]);
        assert_eq!(c.bytes, before + 5);
        let Some(Message::Assistant { tool_calls, .. }) = c.history.messages().last() else { panic!() };
        assert_eq!(tool_calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn a_summary_replaces_the_front_and_keeps_the_rest() {
        let text = |t: &str| Message::User { content: UserContent::Text(t.into()) };
        let mut c = Conversation::new(vec![text("aaaa"), text("bbbb"), text("cc")], None);
        c.replace_front(2, text("s"));
        assert_eq!(c.history.messages().cloned().collect::<Vec<_>>(), vec![text("s"), text("cc")]);
        assert_eq!(c.bytes, 3);
        c.replace_front(9, text("all"));
        assert_eq!(c.history.len(), 1);
        assert_eq!(c.bytes, 3);
    }

    #[test]
    fn repair_answers_every_open_call_once() {
        let mut c = Conversation::new(vec![], None);
        c.push(Message::Assistant {
            content: None,
            tool_calls: vec![call("a", "{}"), call("b", "{}")],
            reasoning: None,
        });
        c.push(Message::Tool { tool_call_id: "a".into(), content: ToolContent::Text("ok".into()) });
        c.repair();
        c.repair();
        let ids: Vec<String> = c
            .history
            .messages()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, vec!["a", "b"]);
    }
}
