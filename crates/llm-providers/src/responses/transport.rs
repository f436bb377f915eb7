//! One POST of a Responses body, read as SSE or as one JSON object.

use std::time::Instant;

use reqwest::header::CONTENT_TYPE;
use tokio::sync::mpsc::UnboundedSender;

use super::response::parse_response;
use super::stream::{StreamAssembler, StreamStep};
use crate::http::ensure_success;
use crate::retry::AttemptError;
use crate::sse::SseParser;
use crate::transport::{HttpRequest, HttpResponse, HttpTransport};
use crate::types::{ChatResponse, ModelEvent, ProviderError};

/// The response header that identifies a call on OpenAI's and Azure's side.
const REQUEST_ID_HEADER: &str = "x-request-id";

pub(crate) async fn attempt(
    http: &dyn HttpTransport,
    request: HttpRequest,
    stream: bool,
    events: &UnboundedSender<ModelEvent>,
) -> Result<ChatResponse, AttemptError> {
    attempt_with_id_header(http, request, stream, events, REQUEST_ID_HEADER).await
}

/// [`attempt`] against a server that names its calls in another header (CAPI's
/// `x-github-request-id`).
pub(crate) async fn attempt_with_id_header(
    http: &dyn HttpTransport,
    request: HttpRequest,
    stream: bool,
    events: &UnboundedSender<ModelEvent>,
    request_id_header: &str,
) -> Result<ChatResponse, AttemptError> {
    let started = Instant::now();
    let resp = http.send(request).await?;
    let provider_call_id = resp.header(request_id_header);
    let resp = match ensure_success(resp, "Model request").await {
        Ok(resp) => resp,
        Err(mut failure) => {
            if let ProviderError::Http { provider_call_id: id @ None, .. } = &mut failure.error {
                id.clone_from(&provider_call_id);
            }
            return Err(failure);
        }
    };
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
        parse_response(&body)?
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

/// Read an SSE body until `response.completed` (or `.incomplete`), forwarding progress. A
/// body that ends before is `Truncated`.
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
            let step = assembler
                .apply(event.event.as_deref(), &event.data, events)
                .map_err(|error| failed(&assembler, error))?;
            if step == StreamStep::Done {
                break 'read;
            }
        }
        if at_eof {
            break;
        }
    }
    if !assembler.is_complete() {
        let why = format!("connection closed after {total} bytes before response.completed");
        return Err(failed(&assembler, ProviderError::Truncated(why)));
    }
    Ok(assembler.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use reqwest::header::HeaderMap;
    use reqwest::StatusCode;
    use tokio::sync::mpsc::unbounded_channel;

    fn body(pieces: Vec<Result<&'static str, &'static str>>) -> HttpResponse {
        let items = pieces.into_iter().map(|p| match p {
            Ok(text) => Ok(Bytes::from_static(text.as_bytes())),
            Err(why) => Err(ProviderError::Network(why.to_string())),
        });
        HttpResponse { status: StatusCode::OK, headers: HeaderMap::new(), body: Box::pin(futures::stream::iter(items)) }
    }

    const CREATED: &str =
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n";
    const TEXT: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\"hi\"}\n\n";
    const COMPLETED: &str =
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n";

    #[tokio::test]
    async fn a_stream_that_ends_early_is_truncated_and_says_whether_output_was_shown() {
        let (tx, _rx) = unbounded_channel();
        let early = read_stream(body(vec![Ok(CREATED)]), &tx).await.expect_err("truncated");
        assert!(matches!(early.error, ProviderError::Truncated(_)) && !early.emitted_output);

        let after_text = read_stream(body(vec![Ok(CREATED), Ok(TEXT)]), &tx).await.expect_err("truncated");
        assert!(matches!(after_text.error, ProviderError::Truncated(_)) && after_text.emitted_output);

        let dropped = read_stream(body(vec![Ok(CREATED), Err("reset by peer")]), &tx).await.expect_err("truncated");
        assert!(matches!(&dropped.error, ProviderError::Truncated(m) if m.contains("reset by peer")));
    }

    #[tokio::test]
    async fn reading_stops_at_completed_and_counts_bytes() {
        let (tx, mut rx) = unbounded_channel();
        // Whatever follows `response.completed` (even a broken connection) is not read.
        let resp = read_stream(body(vec![Ok(TEXT), Ok(COMPLETED), Err("late reset")]), &tx).await.expect("complete");
        assert_eq!(resp.replies[0].content, "hi");
        let mut totals = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            if let ModelEvent::Bytes { total } = ev {
                totals.push(total);
            }
        }
        assert_eq!(totals, [TEXT.len() as u64, (TEXT.len() + COMPLETED.len()) as u64]);
    }
}
