//! Anthropic Messages API providers (`type: "anthropic"`): `POST {base}/v1/messages`, always
//! streamed, with `anthropic-version` and the key in `x-api-key` (a bearer token instead in
//! `Authorization`).
//!
//! Thinking blocks come back as [`ReasoningBlocks`](crate::types::ReasoningBlocks) with
//! provider `anthropic` and are sent back verbatim on the next call; their signatures cover
//! the exact content.

pub(crate) mod request;
mod response;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::http::insert;
use crate::provider::ProviderConfig;
use crate::retry;
use crate::transport::{HttpRequest, HttpTransport};
use crate::types::{ChatRequest, ChatResponse, ModelEvent, ModelInfo, ProviderError};
use request::request_body;
use response::{parse_message, StreamAssembler};

/// The API version the original CLI sends.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; the original's value when none is configured.
const DEFAULT_MAX_TOKENS: u64 = 8192;
/// The response header that identifies a call on Anthropic's side.
const REQUEST_ID_HEADER: &str = "request-id";

pub struct AnthropicClient {
    config: ProviderConfig,
    http: Arc<dyn HttpTransport>,
}

impl AnthropicClient {
    pub fn new(config: ProviderConfig, http: Arc<dyn HttpTransport>) -> Self {
        Self { config, http }
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    pub fn url(&self) -> String {
        format!("{}/v1/messages", self.config.base_url)
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        Ok(self.config.models.clone())
    }

    async fn endpoint(&self) -> Result<Option<crate::provider::Endpoint>, ProviderError> {
        Ok(Some(self.config.endpoint()))
    }

    async fn chat(
        &self,
        req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        let model = self.config.wire_model(&req.model);
        let max_tokens = self.config.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let body = request_body(&req, model, max_tokens);
        let request_bytes = body.len() as u64;
        let url = self.url();
        tracing::debug!(provider = %self.config.label, %model, stream = req.stream, "model call");
        let (req, events, url, body) = (&req, &events, &url, &body);
        let result = retry::run(&self.config.retry, Some(events), &cancel, move |_| async move {
            // Asked per attempt: a token source hands out a fresh token every time.
            let mut headers = self.config.auth_headers().await?;
            // A version pinned in the provider's own headers wins.
            headers
                .entry(HeaderName::from_static("anthropic-version"))
                .or_insert(HeaderValue::from_static(ANTHROPIC_VERSION));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            for (name, value) in &req.extra_headers {
                insert(&mut headers, name, value);
            }
            let request = HttpRequest::post(url.as_str(), headers, body.clone()).for_call(req);
            // Always asked to stream; a JSON answer is still read.
            crate::exchange::attempt::<Messages>(self.http.as_ref(), request, true, events, REQUEST_ID_HEADER)
                .await
                .map_err(|f| self.config.redact_attempt(f))
        })
        .await;
        let mut resp = result.map_err(|e| self.config.describe_failure(e))?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}

/// The Messages API's answers: its event stream, or one `message` object from a server that
/// ignored `stream`.
struct Messages;

impl crate::exchange::ReplyFormat for Messages {
    type Assembler = StreamAssembler;
    const END_OF_REPLY: &'static str = "without message_stop";

    fn parse_json(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        parse_message(body)
    }
}
