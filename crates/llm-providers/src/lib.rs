//! Model providers. A [`ModelClient`] takes a [`ChatRequest`] (messages + tool specs), streams
//! [`ModelEvent`]s into a sink while the reply arrives, and returns the assembled
//! [`ChatResponse`]. Retries (429/5xx/connection errors, honouring `retry-after`) happen inside
//! the client and are reported as [`ModelEvent::Retry`] so the loop can show them.
//!
//! This crate knows nothing of sessions, events or JSON-RPC.

pub mod types;
pub use types::*;

pub mod anthropic;
pub mod copilot;
mod http;
pub mod openai;
mod openai_chat;
pub mod provider;
pub mod retry;
pub mod sse;
pub mod transport;

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
}
