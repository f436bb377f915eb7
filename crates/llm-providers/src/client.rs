//! The model client interface ([`ModelClient`]) every provider implements, and what it answers.
//! Apart from the crate root, which builds the providers ([`crate::provider_client`]), so that
//! the providers can import it without importing the root that imports them.

use async_trait::async_trait;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::provider::Endpoint;
use crate::secret::Secret;
use crate::types::{ChatRequest, ChatResponse, ModelEvent, ModelInfo, ProviderError};

#[async_trait]
pub trait ModelClient: Send + Sync {
    /// The model catalogue (`GET /models`).
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError>;

    /// One model call. Streaming progress goes to `events` (only when `req.stream`; a
    /// non-streaming call may still send `Retry`). Cancelling `cancel` ends the call promptly
    /// with [`ProviderError::Cancelled`].
    async fn chat(
        &self,
        req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError>;

    /// Fetches ahead what the first call needs before it can be sent (the Copilot API client
    /// reads the model catalogue to choose the wire API), so that it overlaps the caller's own
    /// start. A failure is left for the call to meet.
    async fn warm_up(&self) {}

    /// The catalogue this client has already read (its warm-up's or a call's), so that a
    /// caller who wants it needs no request of its own. `None`: none read yet.
    fn known_models(&self) -> Option<Vec<ModelInfo>> {
        None
    }

    /// Where calls go and with which credentials, for a caller that wants to talk to the same
    /// backend itself (`session.provider.getEndpoint`). `None`: nothing to tell.
    async fn endpoint(&self) -> Result<Option<Endpoint>, ProviderError> {
        Ok(None)
    }

    /// The Copilot API this client talks to, for the services beside the model that live
    /// there (the built-in GitHub MCP server at `<base>/mcp`). `None`: not the Copilot API.
    async fn copilot_api(&self) -> Result<Option<CopilotApi>, ProviderError> {
        Ok(None)
    }
}

/// The Copilot API's base URL and the credentials a request to it carries.
#[derive(Debug, Clone)]
pub struct CopilotApi {
    /// No trailing slash.
    pub base_url: String,
    pub token: Secret,
    /// `copilot-integration-id`.
    pub integration_id: String,
}

/// A model service that cannot be used (offline with no provider, say): every call fails
/// with the reason, so a session reports it instead of hanging.
pub struct UnavailableClient {
    reason: String,
}

impl UnavailableClient {
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }
}

#[async_trait]
impl ModelClient for UnavailableClient {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        Ok(Vec::new())
    }

    async fn chat(
        &self,
        _req: ChatRequest,
        _events: UnboundedSender<ModelEvent>,
        _cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        Err(ProviderError::Auth(self.reason.clone()))
    }
}
