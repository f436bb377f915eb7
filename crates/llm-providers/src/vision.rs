//! What a model without vision is sent: the conversation keeps its images (a later switch to a
//! model that sees them sends them again), but each call to a model that does not leaves them
//! out. The message a tool's image rides in (`Image file at path …` plus the image) is left out
//! whole, as the original does; a user's own message keeps its text.

use std::sync::Arc;

use crate::types::{ContentPart, History, HistoryItem, Message, UserContent};

/// The caption of the user message that carries a tool's image.
pub const TOOL_IMAGE_CAPTION: &str = "Image file at path ";

impl History {
    /// This history as a model without vision is sent it. Messages without images are shared,
    /// not copied (their cached wire forms too).
    pub fn without_images(&self) -> History {
        if !self.messages().any(has_image) {
            return self.clone();
        }
        let items = self
            .items()
            .filter_map(|item| match strip(item.message()) {
                Stripped::Unchanged => Some(item.clone()),
                Stripped::Changed(m) => Some(Arc::new(HistoryItem::new(m))),
                Stripped::Dropped => None,
            })
            .collect();
        History::from_items(items)
    }
}

enum Stripped {
    Unchanged,
    Changed(Message),
    Dropped,
}

fn has_image(m: &Message) -> bool {
    matches!(m, Message::User { content: UserContent::Parts(parts) }
        if parts.iter().any(|p| matches!(p, ContentPart::ImageUrl { .. })))
}

fn strip(m: &Message) -> Stripped {
    if !has_image(m) {
        return Stripped::Unchanged;
    }
    let Message::User { content: UserContent::Parts(parts) } = m else { return Stripped::Unchanged };
    let kept: Vec<ContentPart> = parts.iter().filter(|p| !matches!(p, ContentPart::ImageUrl { .. })).cloned().collect();
    let only_caption = kept.iter().all(|p| match p {
        ContentPart::Text { text } => text.starts_with(TOOL_IMAGE_CAPTION),
        _ => false,
    });
    if only_caption {
        return Stripped::Dropped;
    }
    Stripped::Changed(Message::User { content: UserContent::Parts(kept) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ImageUrl;

    fn image(url: &str) -> ContentPart {
        ContentPart::ImageUrl { image_url: ImageUrl { url: url.into() } }
    }

    fn text(t: &str) -> ContentPart {
        ContentPart::Text { text: t.into() }
    }

    #[test]
    fn tool_image_messages_are_left_out_and_user_text_is_kept() {
        let history = History::new(vec![
            Message::User { content: UserContent::Text("look".into()) },
            Message::User { content: UserContent::Parts(vec![text("Image file at path /w/a.png"), image("data:a")]) },
            Message::User { content: UserContent::Parts(vec![text("what is this?"), image("data:b")]) },
        ]);
        let sent = history.without_images();
        let messages: Vec<&Message> = sent.messages().collect();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0], &Message::User { content: UserContent::Text("look".into()) });
        assert_eq!(messages[1], &Message::User { content: UserContent::Parts(vec![text("what is this?")]) });
        // The conversation itself still holds the images.
        assert_eq!(history.len(), 3);
    }

    #[test]
    fn a_history_without_images_is_shared() {
        let history = History::new(vec![Message::User { content: UserContent::Text("hi".into()) }]);
        assert!(history.without_images().shares_messages_with(&history));
    }
}
