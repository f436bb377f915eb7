//! OpenAI-compatible Chat Completions providers: OpenAI itself, Azure OpenAI, and local servers
//! that speak the same API (Ollama, vLLM, llama.cpp, LM Studio).

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::http::insert;
use crate::openai_chat::{request_body, BodyFlavor, ChatCompletions};
use crate::provider::{ProviderConfig, ProviderKind};
use crate::retry;
use crate::transport::{HttpRequest, HttpTransport};
use crate::types::{ChatRequest, ChatResponse, ModelEvent, ModelInfo, ProviderError};

pub struct ChatCompletionsClient {
    config: ProviderConfig,
    http: Arc<dyn HttpTransport>,
}

impl ChatCompletionsClient {
    pub fn new(config: ProviderConfig, http: Arc<dyn HttpTransport>) -> Self {
        Self { config, http }
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Where a call for `wire_model` goes. Azure with an API version uses the deployment route
    /// (the deployment is named after the model); without one, the versionless v1 route.
    pub fn url(&self, wire_model: &str) -> String {
        let base = &self.config.base_url;
        match (self.config.kind, &self.config.azure_api_version) {
            (ProviderKind::Azure, Some(version)) => {
                format!("{base}/openai/deployments/{wire_model}/chat/completions?api-version={version}")
            }
            (ProviderKind::Azure, None) => format!("{base}/openai/v1/chat/completions"),
            _ => format!("{base}/chat/completions"),
        }
    }
}

#[async_trait]
impl ModelClient for ChatCompletionsClient {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        Ok(self.config.models.clone())
    }

    async fn endpoint(&self) -> Result<Option<crate::provider::Endpoint>, ProviderError> {
        Ok(Some(self.config.endpoint()))
    }

    async fn chat(
        &self,
        mut req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        req.model = self.config.wire_model(&req.model).to_string();
        let url = self.url(&req.model);
        let body = request_body(&req, BodyFlavor::OpenAi);
        let request_bytes = body.len() as u64;
        tracing::debug!(provider = %self.config.label, model = %req.model, stream = req.stream, "model call");
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
            crate::exchange::attempt::<ChatCompletions>(self.http.as_ref(), request, req.stream, events, "x-request-id")
                .await
                .map_err(|f| self.config.redact_attempt(f))
        })
        .await;
        let mut resp = result.map_err(|e| self.config.describe_failure(e))?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}
