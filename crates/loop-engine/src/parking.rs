//! An idle session's conversation leaves memory. The log holds everything the model context is
//! made of (resume rebuilds it from there), so after the idle time a session that stays loaded —
//! a client is still attached — drops its history, prompts and last system prompt, and reads
//! them back from the log when something needs them: the next run, a compaction, a handoff
//! summary, an ephemeral query. Only the title (`session.name.get`) and the markers that are not
//! in the log stay.

use crate::conversation::Conversation;
use crate::deps::Deps;
use crate::handle::SessionHandle;

/// Drops what the log can give back. Returns whether there was anything to drop.
pub(crate) fn park(conv: &mut Conversation) -> bool {
    if conv.history.is_empty() && conv.prompts.is_empty() && conv.last_system.is_none() {
        return false;
    }
    conv.history = Default::default();
    conv.bytes = 0;
    conv.prompts = Vec::new();
    conv.last_system = None;
    true
}

/// Reads the parked parts back from the session's log. A log that cannot be read leaves the
/// conversation empty (logged): the session goes on, as a resume of an unreadable log cannot.
pub(crate) async fn restore(handle: &SessionHandle, deps: &Deps, conv: &mut Conversation) {
    let id = handle.id();
    let loaded = match handle.remote_state() {
        Some(remote) => remote.load(id).await,
        None => deps.events.load(id).await,
    };
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "reading the log back for an idle session failed");
            return;
        }
    };
    let restored = crate::history::replay(&loaded.events);
    let fresh = Conversation::new(restored.messages, restored.title);
    conv.history = fresh.history;
    conv.bytes = fresh.bytes;
    if conv.title.is_none() {
        conv.title = fresh.title;
    }
    conv.prompts = restored.prompts;
    conv.last_system = restored.last_system;
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_providers::{Message, UserContent};

    #[test]
    fn parking_keeps_the_title_and_markers_and_drops_the_rest() {
        let mut c = Conversation::new(vec![Message::User { content: UserContent::Text("hello".into()) }], None);
        c.title = Some("hello".into());
        c.prompts.push("hello".into());
        c.last_system = Some("system".into());
        c.failed_mark = Some(1);
        assert!(park(&mut c));
        assert!(c.history.is_empty());
        assert_eq!(c.bytes, 0);
        assert!(c.prompts.is_empty());
        assert_eq!(c.last_system, None);
        assert_eq!(c.title.as_deref(), Some("hello"));
        assert_eq!(c.failed_mark, Some(1));
        assert!(!park(&mut c));
    }
}
