//! Sending a chat-completions request and reading its answer, JSON or SSE, with deltas
//! forwarded as they arrive. Shared by the Copilot API and OpenAI-compatible providers.

use std::time::Instant;

use reqwest::header::CONTENT_TYPE;
use tokio::sync::mpsc::UnboundedSender;

use super::{parse_completion, StreamAssembler, StreamStep};
use crate::http::ensure_success;
use crate::retry::AttemptError;
use crate::sse::SseParser;
use crate::transport::{HttpRequest, HttpResponse, HttpTransport};
use crate::types::{ChatResponse, ModelEvent, ProviderError};

/// One POST of a chat-completions body; reads a JSON or SSE answer. `request_id_header` names
/// the response header that identifies the call on the provider's side.
pub(crate) async fn chat_attempt(
    http: &dyn HttpTransport,
    request: HttpRequest,
    stream: bool,
    events: &UnboundedSender<ModelEvent>,
    request_id_header: &str,
) -> Result<ChatResponse, AttemptError> {
    let started = Instant::now();
    let resp = http.send(request).await?;
    let provider_call_id = resp.header(request_id_header);
    let resp = ensure_success(resp, "Model request").await?;
    let content_type = resp.header(CONTENT_TYPE.as_str()).unwrap_or_default();
    // Trust what the server sent over what was asked for: some endpoints ignore `stream`.
    let is_sse = content_type.contains("event-stream") || (stream && !content_type.contains("json"));
    let mut response = if is_sse {
        read_stream(resp, events).await?
    } else {
        let body = resp
            .bytes()
            .await
            .map_err(|e| ProviderError::Truncated(format!("reading the response body failed: {e}")))?;
        parse_completion(&body)?
    };
    response.provider_call_id = provider_call_id;
    response.duration_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(
        duration_ms = response.duration_ms,
        request_id = response.provider_call_id.as_deref().unwrap_or(""),
        replies = response.replies.len(),
        "model call complete"
    );
    Ok(response)
}

/// Read an SSE body to the end (or `[DONE]`), forwarding progress. A body that stops before
/// the reply is known to be complete is `Truncated`.
pub(crate) async fn read_stream(
    mut resp: HttpResponse,
    events: &UnboundedSender<ModelEvent>,
) -> Result<ChatResponse, AttemptError> {
    let mut parser = SseParser::new();
    let mut assembler = StreamAssembler::new();
    let mut total = 0u64;
    let truncated = |assembler: &StreamAssembler, why: String| AttemptError {
        error: ProviderError::Truncated(why),
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
            // Everything needed already arrived; a connection torn down afterwards is harmless.
            Err(_) if assembler.is_complete() => break 'read,
            Err(e) => return Err(truncated(&assembler, format!("connection failed after {total} bytes: {e}"))),
        };
        while let Some(event) = parser.next_event() {
            let step = assembler.apply(&event.data, events).map_err(|error| AttemptError {
                error,
                retry_after: None,
                emitted_output: assembler.emitted_output(),
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
        return Err(truncated(&assembler, format!("connection closed after {total} bytes with no finish_reason")));
    }
    Ok(assembler.into_response())
}
