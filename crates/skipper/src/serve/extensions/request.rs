//! The body the Copilot platform (or gh-debug-cli) POSTs to an agent. Only what Skipper uses
//! is read; everything else the platform sends (`copilot_skills`, `agent`, references' extra
//! data, ...) is accepted and ignored.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct AgentRequest {
    pub copilot_thread_id: String,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    /// The platform's own bookkeeping messages are named (`_session`); they are not chat.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub copilot_confirmations: Option<Vec<Confirmation>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Confirmation {
    pub state: String,
    pub confirmation: ConfirmationRef,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ConfirmationRef {
    pub id: String,
    #[serde(flatten)]
    pub _rest: serde_json::Map<String, Value>,
}

/// The user's answer to a confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Accepted(String),
    Dismissed(String),
}

impl Message {
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    fn is_chat(&self) -> bool {
        self.name.as_deref().is_none_or(|n| !n.starts_with('_'))
            && matches!(self.role.as_str(), "user" | "assistant" | "system")
    }
}

impl AgentRequest {
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let req: Self = serde_json::from_slice(body).map_err(|e| format!("invalid request body: {e}"))?;
        if req.copilot_thread_id.trim().is_empty() {
            return Err("copilot_thread_id must not be empty".into());
        }
        if req.last_user().is_none() {
            return Err("messages must contain a user message".into());
        }
        Ok(req)
    }

    fn last_user_index(&self) -> Option<usize> {
        self.messages.iter().rposition(|m| m.role == "user" && m.is_chat())
    }

    /// The new input: the last user message.
    pub fn last_user(&self) -> Option<&Message> {
        self.last_user_index().map(|i| &self.messages[i])
    }

    /// The conversation before the last user message (context for a new thread).
    pub fn earlier(&self) -> Vec<&Message> {
        let end = self.last_user_index().unwrap_or(0);
        self.messages[..end].iter().filter(|m| m.is_chat() && !m.text().is_empty()).collect()
    }

    /// The confirmation answered by the last user message, if it answers one.
    pub fn answer(&self) -> Option<Answer> {
        let c = self.last_user()?.copilot_confirmations.as_ref()?.first()?;
        let id = c.confirmation.id.clone();
        Some(if c.state == "accepted" { Answer::Accepted(id) } else { Answer::Dismissed(id) })
    }
}

/// The first prompt of a session started from a conversation already under way: the earlier
/// messages as context, then the new one.
pub fn prompt_with_history(earlier: &[(&str, &str)], last: &str) -> String {
    if earlier.is_empty() {
        return last.to_string();
    }
    let mut out = String::from("<conversation_history>\n");
    for (role, text) in earlier {
        out.push_str(&format!("{role}: {text}\n"));
    }
    out.push_str("</conversation_history>\n\n");
    out.push_str(last);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_as_the_platform_sends_them_parse() {
        let body = br#"{"copilot_thread_id":"t1","messages":[
            {"role":"user","content":"first","copilot_references":[{"type":"github.repository","id":"r","data":{"x":1},"is_implicit":true,"metadata":{"display_name":"r"}}],"copilot_confirmations":null},
            {"role":"assistant","content":"answer"},
            {"role":"user","content":"sess","name":"_session"},
            {"role":"user","content":"","copilot_confirmations":[{"state":"accepted","confirmation":{"id":"p1","extra":2}}]}
        ],"copilot_skills":null,"agent":"","stop":null}"#;
        let req = AgentRequest::parse(body).unwrap();
        assert_eq!(req.copilot_thread_id, "t1");
        assert_eq!(req.answer(), Some(Answer::Accepted("p1".into())));
        let earlier: Vec<&str> = req.earlier().iter().map(|m| m.text()).collect();
        assert_eq!(earlier, ["first", "answer"]);
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for bad in [&b"not json"[..], br#"{"messages":[]}"#, br#"{"copilot_thread_id":"t","messages":[]}"#] {
            assert!(AgentRequest::parse(bad).is_err());
        }
        let dismissed = br#"{"copilot_thread_id":"t","messages":[{"role":"user","content":null,"copilot_confirmations":[{"state":"dismissed","confirmation":{"id":"p"}}]}]}"#;
        assert_eq!(AgentRequest::parse(dismissed).unwrap().answer(), Some(Answer::Dismissed("p".into())));
    }

    #[test]
    fn history_goes_before_the_new_message() {
        assert_eq!(prompt_with_history(&[], "hi"), "hi");
        assert_eq!(
            prompt_with_history(&[("user", "a"), ("assistant", "b")], "c"),
            "<conversation_history>\nuser: a\nassistant: b\n</conversation_history>\n\nc"
        );
    }
}
