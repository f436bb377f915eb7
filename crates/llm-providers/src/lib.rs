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
mod client;
pub use client::{CopilotApi, ModelClient, UnavailableClient};
pub mod copilot;
mod exchange;
mod http;
pub mod openai;
mod openai_chat;
pub mod provider;
pub use provider::Endpoint;
pub mod responses;
pub mod retry;
mod secret;
pub mod sse;
mod system_text;
pub use system_text::SystemText;
mod tool_set;
pub use tool_set::ToolSet;
pub mod transport;
mod vision;
#[cfg(test)]
mod wire_cache_tests;
mod wire_format;
pub use vision::TOOL_IMAGE_CAPTION;

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
