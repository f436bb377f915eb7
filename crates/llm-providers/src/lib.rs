//! Model providers. A [`ModelClient`] takes a [`ChatRequest`] (messages + tool specs), streams
//! [`ModelEvent`]s into a sink while the reply arrives, and returns the assembled
//! [`ChatResponse`]. Retries (429/5xx/connection errors, honouring `retry-after`) happen inside
//! the client and are reported as [`ModelEvent::Retry`] so the loop can show them.
//!
//! This crate knows nothing of sessions, events or JSON-RPC.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod types;
pub use types::*;

pub mod anthropic;
pub mod body;
pub mod copilot;
mod exchange;
mod http;
pub mod openai;
mod openai_chat;
pub mod provider;
pub mod responses;
pub mod retry;
pub mod sse;
mod system_text;
pub use system_text::SystemText;
mod tool_set;
pub use tool_set::ToolSet;
pub mod transport;
mod vision;
#[cfg(test)]
mod wire_cache_tests;
pub use vision::TOOL_IMAGE_CAPTION;

use async_trait::async_trait;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

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
    pub token: provider::Secret,
    /// `copilot-integration-id`.
    pub integration_id: String,
}

/// A model backend as `session.provider.getEndpoint` describes it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub kind: provider::ProviderKind,
    /// `None` for Anthropic, which has one wire API.
    pub wire_api: Option<provider::WireApi>,
    pub base_url: String,
    pub api_key: Option<provider::Secret>,
    /// Headers every request must carry (credentials included, as they are sent).
    pub headers: Vec<(String, String)>,
}

/// The client for a bring-your-own-key provider: its family and wire API pick the format.
pub fn provider_client(
    config: provider::ProviderConfig,
    http: std::sync::Arc<dyn transport::HttpTransport>,
) -> std::sync::Arc<dyn ModelClient> {
    use provider::{ProviderKind, WireApi};
    match (config.kind, config.wire_api) {
        (ProviderKind::Anthropic, _) => std::sync::Arc::new(anthropic::AnthropicClient::new(config, http)),
        (_, WireApi::Responses) => std::sync::Arc::new(responses::ResponsesClient::new(config, http)),
        _ => std::sync::Arc::new(openai::ChatCompletionsClient::new(config, http)),
    }
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
