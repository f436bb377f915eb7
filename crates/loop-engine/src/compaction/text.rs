//! The texts of compaction: what the model is asked, and what it sees afterwards in place of
//! the messages the summary replaced. The wording is the original's (model-visible, and the
//! recorded conversations replay against it), kept in `prompts/compaction/`.

const SUMMARY_REQUEST: &str = include_str!("../../../../prompts/compaction/summary_request.md");
const FOCUS: &str = include_str!("../../../../prompts/compaction/focus.md");
const WRAPPER: &str = include_str!("../../../../prompts/compaction/summary_wrapper.md");
pub(crate) const HANDOFF_SYSTEM: &str = include_str!("../../../../prompts/compaction/handoff_system.md");
const HANDOFF_REQUEST: &str = include_str!("../../../../prompts/compaction/handoff_request.md");

/// The user message that asks for the summary, with the user's focus if they gave one.
pub(crate) fn summary_request(custom_instructions: Option<&str>) -> String {
    let focus = match custom_instructions.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => FOCUS.replace("{{instructions}}", text),
        None => String::new(),
    };
    SUMMARY_REQUEST.trim_end().replace("{{focus}}", &focus)
}

/// The user message that asks for a handoff summary.
pub(crate) fn handoff_request() -> &'static str {
    HANDOFF_REQUEST.trim_end()
}

pub(crate) fn handoff_system() -> &'static str {
    HANDOFF_SYSTEM.trim_end()
}

/// What replaces the summarized messages: the user's prompts so far, verbatim, then the
/// summary. `partial` says messages newer than the summary follow it.
pub(crate) fn wrapper(partial: bool, prompts: &[String], summary: &str) -> String {
    let lead = if partial { "Some of the" } else { "The" };
    let messages: String = prompts.iter().map(|p| format!("<user_message>\n{p}\n</user_message>\n")).collect();
    WRAPPER.replace("{{lead}}", lead).replace("{{user_messages}}", &messages).replace("{{summary}}", summary.trim())
}

/// Whether a history message is a summary this module wrote.
pub(crate) fn is_wrapper(text: &str) -> bool {
    let first = WRAPPER.lines().next().unwrap_or_default();
    ["Some of the", "The"].iter().any(|lead| text.starts_with(&first.replace("{{lead}}", lead)))
}

const TITLE_OPEN: &str = "<checkpoint_title>";
const TITLE_CLOSE: &str = "</checkpoint_title>";

/// A summary split for its checkpoint file: the title the model gave it (or one made from the
/// session id), and the text without the title element.
pub(crate) fn checkpoint_parts(summary: &str, session_id: &str) -> (String, String) {
    let found = summary.find(TITLE_OPEN).and_then(|start| {
        let after = start + TITLE_OPEN.len();
        summary[after..].find(TITLE_CLOSE).map(|len| (start, after, after + len))
    });
    match found {
        Some((start, after, close)) => {
            let title = summary[after..close].trim().to_string();
            let body = format!("{}{}", &summary[..start], &summary[close + TITLE_CLOSE.len()..]);
            let title = if title.is_empty() { default_title(session_id) } else { title };
            (title, body.trim().to_string())
        }
        None => (default_title(session_id), summary.trim().to_string()),
    }
}

fn default_title(session_id: &str) -> String {
    format!("Session {}", session_id.chars().take(8).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_focus_before_the_closing_instructions() {
        let plain = summary_request(None);
        assert!(plain.starts_with("Please create a detailed summary of the conversation so far."));
        assert!(plain.ends_with("respond only with the summary text."));
        assert!(!plain.contains("{{"));
        assert!(plain.contains("</example>\n\n---\n\nPlease write the summary now"));
        let focused = summary_request(Some("Focus on math"));
        assert!(focused.contains(
            "</example>\n\n---\n\n## Additional Focus Instructions\n\nThe user has asked you to focus the summary on \
             the following."
        ));
        assert!(focused.contains(
            "<user_focus_instructions>\nFocus on math\n</user_focus_instructions>\n\n---\n\nPlease write the summary now"
        ));
        assert_eq!(summary_request(Some("  ")), plain);
    }

    #[test]
    fn the_wrapper_lists_the_prompts_then_the_summary() {
        let w = wrapper(true, &["Tell me a story.".into(), "Continue.".into()], "<overview>x</overview>\n");
        assert_eq!(
            w,
            "Some of the conversation history has been summarized to free up context.\n\nYou were originally given \
             instructions from a user over one or more turns. Here were the user messages:\n<user_message>\nTell me \
             a story.\n</user_message>\n<user_message>\nContinue.\n</user_message>\n\nHere is a summary of the prior \
             context:\n<summary>\n<overview>x</overview>\n</summary>\n"
        );
        let all = wrapper(false, &["q".into()], "s");
        assert!(all.starts_with("The conversation history has been summarized"));
        assert!(is_wrapper(&w) && is_wrapper(&all));
        assert!(!is_wrapper("The history of Rome"));
    }

    #[test]
    fn checkpoints_take_the_title_out_of_the_summary() {
        let (title, body) = checkpoint_parts(
            "<overview>s2</overview>\n<checkpoint_title>Second Title!!</checkpoint_title>\ntrailing text",
            "39264416-ec13",
        );
        assert_eq!(title, "Second Title!!");
        assert_eq!(body, "<overview>s2</overview>\n\ntrailing text");
        let (title, body) = checkpoint_parts("no tags at all in this summary", "39264416-ec13");
        assert_eq!(title, "Session 39264416");
        assert_eq!(body, "no tags at all in this summary");
        let (_, body) =
            checkpoint_parts("<next_steps>\nnone\n</next_steps>\n\n<checkpoint_title>T</checkpoint_title>", "s");
        assert_eq!(body, "<next_steps>\nnone\n</next_steps>");
    }
}
