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
use std::time::Instant;

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::http::{ensure_success, insert};
use crate::openai_chat::StreamStep;
use crate::provider::ProviderConfig;
use crate::retry::{self, AttemptError};
use crate::sse::SseParser;
use crate::transport::{HttpRequest, HttpResponse, HttpTransport};
use crate::types::{ChatRequest, ChatResponse, ModelEvent, ModelInfo, ProviderError};
use crate::ModelClient;
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

    async fn endpoint(&self) -> Result<Option<crate::Endpoint>, ProviderError> {
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
            attempt(self.http.as_ref(), request, events).await.map_err(|f| self.config.redact_attempt(f))
        })
        .await;
        let mut resp = result.map_err(|e| self.config.describe_failure(e))?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}

/// One POST; reads the SSE answer (or a JSON message from a server that ignored `stream`).
async fn attempt(
    http: &dyn HttpTransport,
    request: HttpRequest,
    events: &UnboundedSender<ModelEvent>,
) -> Result<ChatResponse, AttemptError> {
    let started = Instant::now();
    let resp = http.send(request).await?;
    let provider_call_id = resp.header(REQUEST_ID_HEADER);
    let resp = ensure_success(resp, "Model request").await.map_err(|mut failure| {
        // Anthropic names the call in `request-id`; a gateway's id is the fallback.
        if let (ProviderError::Http { provider_call_id: id, .. }, Some(ours)) = (&mut failure.error, &provider_call_id)
        {
            *id = Some(ours.clone());
        }
        failure
    })?;
    let content_type = resp.header(CONTENT_TYPE.as_str()).unwrap_or_default();
    let mut response = if content_type.contains("json") {
        let body = resp
            .bytes()
            .await
            .map_err(|e| ProviderError::Truncated(format!("reading the response body failed: {e}")))?;
        parse_message(&body)?
    } else {
        read_stream(resp, events).await?
    };
    response.provider_call_id = provider_call_id;
    response.duration_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(
        duration_ms = response.duration_ms,
        request_id = response.provider_call_id.as_deref().unwrap_or(""),
        "model call complete"
    );
    Ok(response)
}

/// Read the event stream to `message_stop`, forwarding progress. A body that ends (or a
/// connection that fails) before it is `Truncated`, retryable only while nothing was shown.
async fn read_stream(
    mut resp: HttpResponse,
    events: &UnboundedSender<ModelEvent>,
) -> Result<ChatResponse, AttemptError> {
    let mut parser = SseParser::new();
    let mut assembler = StreamAssembler::new();
    let mut total = 0u64;
    let failed = |assembler: &StreamAssembler, error: ProviderError| AttemptError {
        error,
        retry_after: None,
        emitted_output: assembler.emitted_output(),
    };
    'read: loop {
        let at_eof = match resp.chunk().await {
            Ok(Some(bytes)) => {
                total += bytes.len() as u64;
                let _ = events.send(ModelEvent::Bytes { total });
                parser.push(&bytes);
                false
            }
            Ok(None) => {
                parser.finish();
                true
            }
            Err(e) => {
                let why = format!("connection failed after {total} bytes: {e}");
                return Err(failed(&assembler, ProviderError::Truncated(why)));
            }
        };
        while let Some(event) = parser.next_event() {
            let step = assembler.apply(event.event.as_deref(), &event.data, events).map_err(|error| {
                // An error event after deltas were shown can't be retried without showing
                // them twice: the reply was cut short.
                let error = match error {
                    ProviderError::Http { message, .. } if assembler.emitted_output() => {
                        ProviderError::Truncated(message)
                    }
                    other => other,
                };
                failed(&assembler, error)
            })?;
            if step == StreamStep::Done {
                break 'read;
            }
        }
        if at_eof {
            break;
        }
    }
    if !assembler.is_complete() {
        let why = format!("connection closed after {total} bytes without message_stop");
        return Err(failed(&assembler, ProviderError::Truncated(why)));
    }
    Ok(assembler.into_response())
}
