//! Editing the messages queued behind the running turn (`session.queue.*`): move one, remove
//! it, change its text, duplicate it, insert a new one, each addressed by its id (its message
//! id). What the actor alone can do (steer one into the live turn, pause draining) is the
//! actor's; this is what any queue of messages can do.

use std::collections::VecDeque;

use protocol::generated::types::SessionMode;

use crate::handle::{message_mode, QueuedMessage, SteeringAppend};

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error("unknown queue item id '{0}'")]
    UnknownId(String),
    #[error("queue draining is already paused")]
    AlreadyPaused,
}

/// What an edit did: whether the queue changed, and the id of an item it added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edited {
    pub changed: bool,
    pub id: Option<String>,
}

/// Where the item `id` is in the queue.
pub(crate) fn position(queue: &VecDeque<QueuedMessage>, id: &str) -> Result<usize, QueueError> {
    queue.iter().position(|m| m.message_id == id).ok_or_else(|| QueueError::UnknownId(id.to_string()))
}

/// A position a client gave, clamped to the queue's ends (`len` allowed: after the last).
fn clamp(at: i64, len: usize) -> usize {
    usize::try_from(at.max(0)).unwrap_or(usize::MAX).min(len)
}

/// Moves `id` to `to` (clamped to the queue).
pub(crate) fn move_item(queue: &mut VecDeque<QueuedMessage>, id: &str, to: i64) -> Result<Edited, QueueError> {
    let from = position(queue, id)?;
    let to = clamp(to, queue.len() - 1);
    if from == to {
        return Ok(Edited::default());
    }
    if let Some(item) = queue.remove(from) {
        queue.insert(to, item);
    }
    Ok(Edited { changed: true, id: None })
}

pub(crate) fn remove(queue: &mut VecDeque<QueuedMessage>, id: &str) -> Result<Edited, QueueError> {
    let at = position(queue, id)?;
    Ok(Edited { changed: queue.remove(at).is_some(), id: None })
}

/// Replaces the text `id` sends and what the timeline shows for it (the text itself unless a
/// display text is given: one given at send does not outlive an edit); unchanged when both
/// already read so.
pub(crate) fn update_text(
    queue: &mut VecDeque<QueuedMessage>,
    id: &str,
    prompt: String,
    display_prompt: Option<String>,
) -> Result<Edited, QueueError> {
    let at = position(queue, id)?;
    let item = &mut queue[at];
    if item.prompt == prompt && item.display_prompt == display_prompt {
        return Ok(Edited::default());
    }
    item.prompt = prompt;
    item.display_prompt = display_prompt;
    Ok(Edited { changed: true, id: None })
}

/// A copy of `id`, under a fresh id, right after it.
pub(crate) fn duplicate(queue: &mut VecDeque<QueuedMessage>, id: &str) -> Result<Edited, QueueError> {
    let at = position(queue, id)?;
    let copy = QueuedMessage { message_id: uuid::Uuid::new_v4().to_string(), ..queue[at].clone() };
    let new_id = copy.message_id.clone();
    queue.insert(at + 1, copy);
    Ok(Edited { changed: true, id: Some(new_id) })
}

/// `msg` at `at` (clamped to the queue).
pub(crate) fn insert(queue: &mut VecDeque<QueuedMessage>, at: i64, msg: QueuedMessage) -> Edited {
    let id = msg.message_id.clone();
    queue.insert(clamp(at, queue.len()), msg);
    Edited { changed: true, id: Some(id) }
}

/// Adds to a steering message not yet taken into the turn: only if it still reads `expected`
/// and was sent in the same mode (a message sent in another mode is not merged into it). The
/// text and its shown text each gain a paragraph; attachments are added after its own.
pub(crate) fn append_steering(steering: &mut [QueuedMessage], add: SteeringAppend, session: SessionMode) -> bool {
    let Some(msg) = steering.iter_mut().find(|m| m.message_id == add.message_id) else { return false };
    if msg.prompt != add.expected || message_mode(msg.agent_mode, session) != add.agent_mode {
        return false;
    }
    let shown = format!("{}\n\n{}", msg.shown(), add.display_prompt);
    msg.prompt = format!("{}\n\n{}", msg.prompt, add.prompt);
    msg.display_prompt = Some(shown);
    msg.attachments.extend(add.attachments);
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use protocol::generated::types::UserMessageAgentMode;

    use super::*;

    fn msg(id: &str) -> QueuedMessage {
        QueuedMessage {
            message_id: id.to_string(),
            prompt: format!("p{id}"),
            delivery: protocol::generated::types::UserMessageDelivery::Queued,
            ..Default::default()
        }
    }

    fn queue(ids: &[&str]) -> VecDeque<QueuedMessage> {
        ids.iter().map(|id| msg(id)).collect()
    }

    fn ids(q: &VecDeque<QueuedMessage>) -> Vec<&str> {
        q.iter().map(|m| m.message_id.as_str()).collect()
    }

    #[test]
    fn moves_clamp_to_the_ends_and_say_whether_anything_moved() {
        let mut q = queue(&["a", "b", "c"]);
        assert!(move_item(&mut q, "c", 0).unwrap().changed);
        assert_eq!(ids(&q), ["c", "a", "b"]);
        assert!(!move_item(&mut q, "c", -4).unwrap().changed, "already first");
        assert!(move_item(&mut q, "c", 99).unwrap().changed);
        assert_eq!(ids(&q), ["a", "b", "c"]);
        assert_eq!(move_item(&mut q, "x", 0), Err(QueueError::UnknownId("x".into())));
        assert_eq!(QueueError::UnknownId("x".into()).to_string(), "unknown queue item id 'x'");
    }

    #[test]
    fn text_duplicates_inserts_and_removals_address_items_by_id() {
        let mut q = queue(&["a", "b"]);
        assert!(update_text(&mut q, "a", "new".into(), None).unwrap().changed);
        assert!(!update_text(&mut q, "a", "new".into(), None).unwrap().changed, "the same text again");
        assert!(update_text(&mut q, "a", "new".into(), Some("shown".into())).unwrap().changed);
        assert_eq!(q[0].shown(), "shown");
        assert!(update_text(&mut q, "a", "new".into(), None).unwrap().changed, "the display text goes");
        assert_eq!(q[0].shown(), "new");
        let copy = duplicate(&mut q, "a").unwrap().id.unwrap();
        assert_eq!(ids(&q), ["a", copy.as_str(), "b"]);
        assert_eq!(q[1].prompt, "new");
        assert_eq!(insert(&mut q, 99, msg("n")).id.as_deref(), Some("n"));
        assert_eq!(ids(&q).last(), Some(&"n"));
        assert!(remove(&mut q, "b").unwrap().changed);
        assert_eq!(remove(&mut q, "b"), Err(QueueError::UnknownId("b".into())));
        assert_eq!(duplicate(&mut q, "zz"), Err(QueueError::UnknownId("zz".into())));
    }

    fn append(id: &str, expected: &str, mode: UserMessageAgentMode) -> SteeringAppend {
        SteeringAppend {
            message_id: id.into(),
            expected: expected.into(),
            agent_mode: mode,
            prompt: "more".into(),
            display_prompt: "more!".into(),
            attachments: Vec::new(),
        }
    }

    #[test]
    fn steering_grows_only_while_it_reads_as_expected_and_in_its_own_mode() {
        let mut lane = vec![msg("a"), QueuedMessage { agent_mode: Some(UserMessageAgentMode::Plan), ..msg("b") }];
        let interactive = UserMessageAgentMode::Interactive;
        assert!(!append_steering(&mut lane, append("a", "wrong", interactive), SessionMode::Interactive));
        assert!(append_steering(&mut lane, append("a", "pa", interactive), SessionMode::Interactive));
        assert!(!append_steering(&mut lane, append("a", "pa", interactive), SessionMode::Interactive), "it changed");
        assert_eq!((lane[0].prompt.as_str(), lane[0].shown()), ("pa\n\nmore", "pa\n\nmore!"));
        assert!(append_steering(&mut lane, append("a", "pa\n\nmore", interactive), SessionMode::Interactive));
        assert_eq!(lane[0].shown(), "pa\n\nmore!\n\nmore!");
        // A message sent in plan mode takes no interactive text, and a session's mode stands
        // for a message that named none.
        assert!(!append_steering(&mut lane, append("b", "pb", interactive), SessionMode::Interactive));
        assert!(append_steering(&mut lane, append("b", "pb", UserMessageAgentMode::Plan), SessionMode::Interactive));
        assert!(!append_steering(&mut lane, append("a", "pa\n\nmore\n\nmore", interactive), SessionMode::Plan));
        assert!(!append_steering(&mut lane, append("zz", "x", interactive), SessionMode::Interactive));
    }
}
