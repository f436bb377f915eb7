//! One attempt of a model call over HTTP, whatever the wire format: send the request, check
//! the status, then read the answer — one JSON object, or server-sent events assembled as
//! they arrive with progress forwarded. A wire format only says how its JSON and its events
//! read ([`ReplyFormat`], [`Assembler`]).

use std::time::Instant;

use reqwest::header::CONTENT_TYPE;
use tokio::sync::mpsc::UnboundedSender;

use crate::http::ensure_success;
use crate::retry::AttemptError;
use crate::sse::{SseEvent, SseParser};
use crate::transport::{HttpRequest, HttpResponse, HttpTransport};
use crate::types::{ChatResponse, ModelEvent, ProviderError};

/// What the reader does after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamStep {
    Continue,
    /// The reply is over; stop reading.
    Done,
}

/// A streamed reply being put together, deltas forwarded as they arrive.
pub(crate) trait Assembler {
    /// Feeds one event.
    fn on_event(&mut self, event: &SseEvent, events: &UnboundedSender<ModelEvent>)
        -> Result<StreamStep, ProviderError>;

    /// Whether any text, reasoning or tool-call delta reached the caller (a retry would show
    /// it twice).
    fn emitted_output(&self) -> bool;

    /// Whether the reply is known to be complete, so a connection closing now loses nothing.
    fn is_complete(&self) -> bool;

    fn into_response(self) -> ChatResponse;
}

/// How a wire format's answers read.
pub(crate) trait ReplyFormat {
    type Assembler: Assembler + Default;

    /// What a stream that ends early never sent, for the error (`no finish_reason`).
    const END_OF_REPLY: &'static str;

    /// A whole answer as one JSON body (a server that ignored `stream`, or was not asked to).
    fn parse_json(body: &[u8]) -> Result<ChatResponse, ProviderError>;
}

/// One POST; reads a JSON or SSE answer. `request_id_header` names the response header that
/// identifies the call on the provider's side (a failure without one keeps the gateway's).
pub(crate) async fn attempt<F: ReplyFormat>(
    http: &dyn HttpTransport,
    request: HttpRequest,
    stream: bool,
    events: &UnboundedSender<ModelEvent>,
    request_id_header: &str,
) -> Result<ChatResponse, AttemptError> {
    let started = Instant::now();
    let resp = http.send(request).await?;
    let provider_call_id = resp.header(request_id_header);
    let resp = ensure_success(resp, "Model request").await.map_err(|mut failure| {
        if let (ProviderError::Http { provider_call_id: id, .. }, Some(ours)) = (&mut failure.error, &provider_call_id)
        {
            *id = Some(ours.clone());
        }
        failure
    })?;
    let content_type = resp.header(CONTENT_TYPE.as_str()).unwrap_or_default();
    // Trust what the server sent over what was asked for: some endpoints ignore `stream`.
    let is_sse = content_type.contains("event-stream") || (stream && !content_type.contains("json"));
    let mut response = if is_sse {
        read_stream(resp, events, F::Assembler::default(), F::END_OF_REPLY).await?
    } else {
        let body = resp
            .bytes()
            .await
            .map_err(|e| ProviderError::Truncated(format!("reading the response body failed: {e}")))?;
        F::parse_json(&body)?
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

/// Reads an event stream until the assembler says the reply is over, forwarding progress. A
/// body that ends (or a connection that fails) before the reply is complete is `Truncated`,
/// retryable only while nothing was shown.
pub(crate) async fn read_stream<A: Assembler>(
    mut resp: HttpResponse,
    events: &UnboundedSender<ModelEvent>,
    mut assembler: A,
    end_of_reply: &str,
) -> Result<ChatResponse, AttemptError> {
    let mut parser = SseParser::new();
    let mut total = 0u64;
    let failed = |assembler: &A, error: ProviderError| AttemptError {
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
            // Everything needed already arrived; a connection torn down afterwards is harmless.
            Err(_) if assembler.is_complete() => break 'read,
            Err(e) => {
                let why = format!("connection failed after {total} bytes: {e}");
                return Err(failed(&assembler, ProviderError::Truncated(why)));
            }
        };
        while let Some(event) = parser.next_event() {
            let step = assembler.on_event(&event, events).map_err(|error| failed(&assembler, error))?;
            if step == StreamStep::Done {
                break 'read;
            }
        }
        if at_eof {
            break;
        }
    }
    if !assembler.is_complete() {
        let why = format!("connection closed after {total} bytes {end_of_reply}");
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

    use crate::responses::Responses;

    fn body(pieces: Vec<Result<&'static str, &'static str>>) -> HttpResponse {
        let items = pieces.into_iter().map(|p| match p {
            Ok(text) => Ok(Bytes::from_static(text.as_bytes())),
            Err(why) => Err(ProviderError::Network(why.to_string())),
        });
        HttpResponse { status: StatusCode::OK, headers: HeaderMap::new(), body: Box::pin(futures::stream::iter(items)) }
    }

    async fn read(
        pieces: Vec<Result<&'static str, &'static str>>,
        tx: &UnboundedSender<ModelEvent>,
    ) -> Result<ChatResponse, AttemptError> {
        type A = <Responses as ReplyFormat>::Assembler;
        read_stream(body(pieces), tx, A::default(), Responses::END_OF_REPLY).await
    }

    const CREATED: &str =
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n";
    const TEXT: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\"hi\"}\n\n";
    const COMPLETED: &str =
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n";

    #[tokio::test]
    async fn a_stream_that_ends_early_is_truncated_and_says_whether_output_was_shown() {
        let (tx, _rx) = unbounded_channel();
        let early = read(vec![Ok(CREATED)], &tx).await.expect_err("truncated");
        assert!(matches!(&early.error, ProviderError::Truncated(m) if m.contains("before response.completed")));
        assert!(!early.emitted_output);

        let after_text = read(vec![Ok(CREATED), Ok(TEXT)], &tx).await.expect_err("truncated");
        assert!(matches!(after_text.error, ProviderError::Truncated(_)) && after_text.emitted_output);

        let dropped = read(vec![Ok(CREATED), Err("reset by peer")], &tx).await.expect_err("truncated");
        assert!(matches!(&dropped.error, ProviderError::Truncated(m) if m.contains("reset by peer")));
    }

    #[tokio::test]
    async fn reading_stops_at_the_end_of_the_reply_and_counts_bytes() {
        let (tx, mut rx) = unbounded_channel();
        // Whatever follows `response.completed` (even a broken connection) is not read.
        let resp = read(vec![Ok(TEXT), Ok(COMPLETED), Err("late reset")], &tx).await.expect("complete");
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
