//! `session.ui.ephemeralQuery`: a question answered from the conversation so far, without
//! adding either to it. One model call with the session's system prompt and no tools.

use llm_providers::{History, Message, UserContent};

pub(crate) fn request(
    mut history: History,
    system: String,
    model: &str,
    session_id: &str,
    question: String,
) -> llm_providers::ChatRequest {
    history.push(Message::User { content: UserContent::Text(question) });
    llm_providers::ChatRequest {
        model: model.to_string(),
        github_token: None,
        system: system.into(),
        history,
        tools: Default::default(),
        stream: true,
        initiator: llm_providers::Initiator::User,
        interaction_id: uuid::Uuid::new_v4().to_string(),
        session_id: session_id.to_string(),
        extra_headers: Vec::new(),
        reasoning_effort: None,
        purpose: llm_providers::Purpose::Turn,
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
    }
}
