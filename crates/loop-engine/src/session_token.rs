//! A session's own GitHub identity on its model calls. A client that serves several users
//! passes each user's `gitHubToken` on `session.create` (the SDKs' multi-user set-up); the
//! original then authenticates that session's calls with it, not with the process's token.

use std::sync::Arc;

use async_trait::async_trait;
use llm_providers::provider::Secret;
use llm_providers::{
    ChatRequest, ChatResponse, CopilotApi, Endpoint, ModelClient, ModelEvent, ModelInfo, ProviderError,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// The process's model client, each call carrying the session's token.
pub(crate) struct WithSessionToken {
    inner: Arc<dyn ModelClient>,
    token: Secret,
}

impl WithSessionToken {
    /// `client` as `token`'s session sees it (`client` itself without a token).
    pub(crate) fn wrap(
        client: &Arc<dyn ModelClient>,
        token: Option<&protocol::secret::SecretString>,
    ) -> Arc<dyn ModelClient> {
        match token.map(|t| t.expose()).filter(|t| !t.is_empty()) {
            Some(token) => Arc::new(Self { inner: client.clone(), token: Secret::new(token) }),
            None => client.clone(),
        }
    }
}

#[async_trait]
impl ModelClient for WithSessionToken {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        self.inner.list_models().await
    }

    async fn chat(
        &self,
        mut req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        req.github_token = Some(self.token.clone());
        self.inner.chat(req, events, cancel).await
    }

    async fn warm_up(&self) {
        self.inner.warm_up().await
    }

    fn known_models(&self) -> Option<Vec<ModelInfo>> {
        self.inner.known_models()
    }

    async fn endpoint(&self) -> Result<Option<Endpoint>, ProviderError> {
        self.inner.endpoint().await
    }

    async fn copilot_api(&self) -> Result<Option<CopilotApi>, ProviderError> {
        self.inner.copilot_api().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the token each call carried.
    struct Recorder(std::sync::Mutex<Vec<Option<String>>>);

    #[async_trait]
    impl ModelClient for Recorder {
        async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
            Ok(Vec::new())
        }

        async fn chat(
            &self,
            req: ChatRequest,
            _events: UnboundedSender<ModelEvent>,
            _cancel: CancellationToken,
        ) -> Result<ChatResponse, ProviderError> {
            self.0.lock().unwrap().push(req.github_token.map(|t| t.expose().to_string()));
            Err(ProviderError::Cancelled)
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            github_token: None,
            system: Default::default(),
            history: Default::default(),
            tools: Default::default(),
            stream: false,
            initiator: llm_providers::Initiator::User,
            interaction_id: "i".into(),
            session_id: "s".into(),
            extra_headers: Vec::new(),
            reasoning_effort: None,
            purpose: Default::default(),
            client_name: None,
            sub_agent: None,
            sampling: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_sessions_calls_carry_its_token_and_other_sessions_calls_do_not() {
        let recorder = Arc::new(Recorder(Default::default()));
        let client: Arc<dyn ModelClient> = recorder.clone();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let own = protocol::secret::SecretString::new("gho_user");
        let _ = WithSessionToken::wrap(&client, Some(&own)).chat(request(), tx.clone(), Default::default()).await;
        let _ = WithSessionToken::wrap(&client, None).chat(request(), tx.clone(), Default::default()).await;
        let empty = protocol::secret::SecretString::new("");
        let _ = WithSessionToken::wrap(&client, Some(&empty)).chat(request(), tx, Default::default()).await;
        assert_eq!(*recorder.0.lock().unwrap(), vec![Some("gho_user".to_string()), None, None]);
    }
}
