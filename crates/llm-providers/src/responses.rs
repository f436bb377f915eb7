//! OpenAI Responses API providers (`wireApi: "responses"`): OpenAI itself, Azure OpenAI, and
//! compatible servers. The sibling of [`crate::openai::ChatCompletionsClient`]: the same
//! credentials, retries and failures, another wire format.
//!
//! Requests are stateless (`store: false`): every call resends the conversation as input items,
//! and reasoning survives between calls only as the encrypted items the previous reply returned
//! (kept as [`ReasoningBlocks`](crate::types::ReasoningBlocks) with provider
//! `openai-responses`).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use llm_providers::provider::{ProviderConfig, ProviderKind, WireApi};
//! # use llm_providers::responses::ResponsesClient;
//! # use llm_providers::transport::ReqwestTransport;
//! # fn demo() -> Result<(), llm_providers::ProviderError> {
//! let mut config = ProviderConfig::new(ProviderKind::OpenAi, "https://api.openai.com/v1");
//! config.wire_api = WireApi::Responses;
//! let http = Arc::new(ReqwestTransport::new(ReqwestTransport::default_client()?));
//! let client = ResponsesClient::new(config, http);
//! assert_eq!(client.url(), "https://api.openai.com/v1/responses");
//! # Ok(()) }
//! ```

pub(crate) mod request;
mod response;
mod stream;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::http::insert;
use crate::provider::{ProviderConfig, ProviderKind};
use crate::retry;
use crate::transport::{HttpRequest, HttpTransport};
use crate::types::{ChatRequest, ChatResponse, ModelEvent, ModelInfo, ProviderError};

pub use request::REASONING_PROVIDER;

/// The response header that identifies a call on OpenAI's and Azure's side.
const REQUEST_ID_HEADER: &str = "x-request-id";

/// The Responses API's answers: one `response` object, or its event stream.
pub(crate) struct Responses;

impl crate::exchange::ReplyFormat for Responses {
    type Assembler = stream::StreamAssembler;
    const END_OF_REPLY: &'static str = "before response.completed";

    fn parse_json(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        response::parse_response(body)
    }
}

pub struct ResponsesClient {
    config: ProviderConfig,
    http: Arc<dyn HttpTransport>,
}

impl ResponsesClient {
    pub fn new(config: ProviderConfig, http: Arc<dyn HttpTransport>) -> Self {
        Self { config, http }
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Where every call goes. The spec only shows `{base}/responses`; for Azure we chose its
    /// documented routes: with an API version, `/openai/responses?api-version=` (the model in
    /// the body names the deployment, there is no per-deployment path); without one, the
    /// versionless `/openai/v1/responses`, as the chat client does for `/chat/completions`.
    pub fn url(&self) -> String {
        let base = &self.config.base_url;
        match (self.config.kind, &self.config.azure_api_version) {
            (ProviderKind::Azure, Some(version)) => format!("{base}/openai/responses?api-version={version}"),
            (ProviderKind::Azure, None) => format!("{base}/openai/v1/responses"),
            _ => format!("{base}/responses"),
        }
    }
}

#[async_trait]
impl ModelClient for ResponsesClient {
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
        let url = self.url();
        let body = request::request_body(&req, model, self.config.max_output_tokens);
        let request_bytes = body.len() as u64;
        tracing::debug!(provider = %self.config.label, model, stream = req.stream, "model call (responses)");
        let (req, events, url, body) = (&req, &events, &url, &body);
        let result = retry::run(&self.config.retry, Some(events), &cancel, move |_| async move {
            // Asked per attempt: a token source hands out a fresh token every time.
            let mut headers = self.config.auth_headers().await?;
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                ACCEPT,
                HeaderValue::from_static(if req.stream { "text/event-stream" } else { "application/json" }),
            );
            for (name, value) in &req.extra_headers {
                insert(&mut headers, name, value);
            }
            let request = HttpRequest::post(url.as_str(), headers, body.clone()).for_call(req);
            crate::exchange::attempt::<Responses>(self.http.as_ref(), request, req.stream, events, REQUEST_ID_HEADER)
                .await
                .map_err(|f| self.config.redact_attempt(f))
        })
        .await;
        let mut resp = result.map_err(|e| self.config.describe_failure(e))?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}
