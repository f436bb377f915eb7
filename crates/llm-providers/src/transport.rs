//! How a model request reaches the network. Normally reqwest; when an SDK client registered
//! itself with `llmInference.setProvider`, the client performs the HTTP call and streams the
//! answer back over JSON-RPC. Every provider speaks through this trait, so both paths carry
//! the same requests.

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
pub use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
pub use reqwest::{Method, StatusCode};

use crate::body::{Body, Frames};
use crate::types::{ChatRequest, ProviderError};

/// A response body arriving in pieces. An `Err` item ends it: the connection failed.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Body,
    /// What the call serves; empty outside a session (catalogue lookups). A transport that hands
    /// the request to someone else (the SDK client) reports it.
    pub context: RequestContext,
}

/// Who issued a request: the session, its agent, the user message being answered, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    pub session_id: Option<String>,
    /// Stable across the session's turns (the root agent of the session), or the sub-agent's.
    pub agent_id: Option<String>,
    /// For a sub-agent's call, the agent that started it.
    pub parent_agent_id: Option<String>,
    /// One user message's loop; the same across retries.
    pub invocation_id: Option<String>,
    /// `conversation-user` for the call a user message starts, `conversation-agent` after tools,
    /// `conversation-compaction` for a summary.
    pub interaction_type: Option<&'static str>,
}

impl HttpRequest {
    pub fn get(url: impl Into<String>, headers: HeaderMap) -> Self {
        Self {
            method: Method::GET,
            url: url.into(),
            headers,
            body: Body::default(),
            context: RequestContext::default(),
        }
    }

    pub fn post(url: impl Into<String>, headers: HeaderMap, body: Body) -> Self {
        Self { method: Method::POST, url: url.into(), headers, body, context: RequestContext::default() }
    }

    /// Marks the request as one model call of `req`'s session.
    pub fn for_call(mut self, req: &ChatRequest) -> Self {
        let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        self.context = RequestContext {
            session_id: nonempty(&req.session_id),
            agent_id: match &req.sub_agent {
                Some(agent) => Some(agent.id.clone()),
                None => nonempty(&req.session_id),
            },
            parent_agent_id: req.sub_agent.as_ref().map(|a| a.parent_id.clone()),
            invocation_id: nonempty(&req.interaction_id),
            interaction_type: Some(req.interaction_type()),
        };
        self
    }
}

pub struct HttpResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: BodyStream,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
    }

    /// The next piece of the body; `Ok(None)` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ProviderError> {
        self.body.next().await.transpose()
    }

    /// The whole body.
    pub async fn bytes(mut self) -> Result<Bytes, ProviderError> {
        let mut all = Vec::new();
        while let Some(piece) = self.chunk().await? {
            all.extend_from_slice(&piece);
        }
        Ok(Bytes::from(all))
    }
}

/// Sends one HTTP request. Dropping the returned future or the response body cancels the call.
#[async_trait]
pub trait HttpTransport: Send + Sync {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ProviderError>;
}

/// The network, through reqwest.
#[derive(Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
    /// URLs parsed before: a session calls the same endpoint turn after turn, and parsing its
    /// URL again each time was a few percent of a turn's instructions.
    urls: Arc<Mutex<Vec<(String, reqwest::Url)>>>,
    /// Requests may not reach internal networks ([`ReqwestTransport::guarded`]).
    guarded: bool,
}

/// How many parsed URLs are kept (a process talks to a handful of endpoints).
const KEPT_URLS: usize = 16;

/// What every provider client starts from: the connect timeout.
fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(30))
}

fn build(builder: reqwest::ClientBuilder) -> Result<reqwest::Client, ProviderError> {
    builder.build().map_err(|e| ProviderError::Network(format!("cannot initialise HTTP client: {}", error_chain(&e))))
}

impl ReqwestTransport {
    pub fn new(client: reqwest::Client) -> Self {
        Self { client, urls: Arc::default(), guarded: false }
    }

    /// A transport for endpoints a tenant of a shared server chooses (its sessions' own
    /// providers): nothing on the server's internal networks is reached. Names resolve only to
    /// outside addresses, and a URL or redirect naming an internal address is refused
    /// ([`sandbox::egress`]).
    pub fn guarded() -> Result<Self, ProviderError> {
        let builder =
            client_builder().dns_resolver(Arc::new(sandbox::egress::Resolver)).redirect(sandbox::egress::redirects(10));
        Ok(Self { client: build(builder)?, urls: Arc::default(), guarded: true })
    }

    /// `text` parsed, from the kept ones when it was parsed before; `None` when it does not
    /// parse (reqwest then reports it as it always has).
    fn parsed(&self, text: &str) -> Option<reqwest::Url> {
        let mut urls = self.urls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, url)) = urls.iter().find(|(kept, _)| kept == text) {
            return Some(url.clone());
        }
        let url = reqwest::Url::parse(text).ok()?;
        if urls.len() >= KEPT_URLS {
            urls.remove(0);
        }
        urls.push((text.to_string(), url.clone()));
        Some(url)
    }

    /// A client with the connect timeout every provider uses.
    pub fn default_client() -> Result<reqwest::Client, ProviderError> {
        build(client_builder())
    }
}

#[async_trait]
impl HttpTransport for ReqwestTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ProviderError> {
        let builder = match self.parsed(&request.url) {
            Some(url) => {
                if self.guarded {
                    sandbox::egress::check_host(url.host_str().unwrap_or_default())
                        .map_err(|refused| ProviderError::Refused(refused.to_string()))?;
                }
                self.client.request(request.method, url)
            }
            None => self.client.request(request.method, &request.url),
        };
        // A body of one piece stays reusable (reqwest can replay it on a redirect); one of
        // several goes out frame by frame, with its exact length as `content-length`.
        let body = match request.body.pieces() {
            [] | [_] => reqwest::Body::from(request.body.to_bytes()),
            _ => reqwest::Body::wrap(Frames::from(request.body)),
        };
        let resp = builder
            .headers(request.headers)
            .body(body)
            .send()
            .await
            .map_err(|e| ProviderError::Network(error_chain(&e)))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes_stream().map(|piece| piece.map_err(|e| ProviderError::Network(error_chain(&e))));
        Ok(HttpResponse { status, headers, body: Box::pin(body) })
    }
}

/// Headers as name → values (lowercase names), the form they cross JSON-RPC in.
pub fn header_lists(headers: &HeaderMap) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for (name, value) in headers {
        // A value that is not text cannot be carried; no header we send has one.
        if let Ok(value) = value.to_str() {
            out.entry(name.as_str().to_string()).or_default().push(value.to_string());
        }
    }
    out
}

/// The reverse of [`header_lists`]; names or values HTTP would not accept are dropped.
pub fn header_map(lists: &std::collections::BTreeMap<String, Vec<String>>) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, values) in lists {
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else { continue };
        for value in values {
            if let Ok(value) = HeaderValue::from_str(value) {
                out.append(name.clone(), value);
            }
        }
    }
    out
}

/// reqwest's top-level message ("error sending request") hides the cause; append the chain.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_once_and_kept_within_bounds() {
        let transport = ReqwestTransport::new(reqwest::Client::new());
        let url = transport.parsed("http://127.0.0.1:9/chat/completions").expect("parses");
        assert_eq!(url.as_str(), "http://127.0.0.1:9/chat/completions");
        assert_eq!(transport.parsed("http://127.0.0.1:9/chat/completions"), Some(url));
        assert_eq!(transport.urls.lock().unwrap().len(), 1, "the second use found the kept one");
        assert_eq!(transport.parsed("not a url"), None, "reqwest reports a bad URL itself");
        for n in 0..40 {
            transport.parsed(&format!("http://127.0.0.1:9/{n}")).expect("parses");
        }
        assert_eq!(transport.urls.lock().unwrap().len(), KEPT_URLS);
    }

    /// Reads one request (head and a `content-length` body) from `socket`, answers 200.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut seen = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let head_end = loop {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the head ended");
            seen.extend_from_slice(&buf[..n]);
            if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&seen[..head_end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        while seen.len() < head_end + length {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the body ended");
            seen.extend_from_slice(&buf[..n]);
        }
        socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await.unwrap();
        (head, seen[head_end..].to_vec())
    }

    #[tokio::test]
    async fn a_body_in_pieces_goes_out_whole_with_its_length() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/chat/completions", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            read_request(&mut socket).await
        });
        let mut writer = crate::body::BodyWriter::default();
        writer.extend_from_slice(b"{\"a\":\"");
        writer.share(Bytes::from(vec![b'x'; 40_000]));
        writer.share(Bytes::from(vec![b'y'; 30_000]));
        writer.extend_from_slice(b"\"}");
        let body = writer.finish();
        assert!(body.pieces().len() > 1, "the body is in pieces");
        let expected = body.to_bytes();
        let transport = ReqwestTransport::new(reqwest::Client::new());
        let response = transport.send(HttpRequest::post(url, HeaderMap::new(), body)).await.unwrap();
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(&response.bytes().await.unwrap()[..], b"ok");
        let (head, received) = server.await.unwrap();
        assert!(head.contains(&format!("content-length: {}", expected.len())), "{head}");
        assert!(!head.contains("transfer-encoding"), "{head}");
        assert!(received == expected, "the body arrived as written");
    }

    #[tokio::test]
    async fn a_guarded_transport_reaches_nothing_internal() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = tokio::spawn(async move { listener.accept().await.is_ok() });
        let guarded = ReqwestTransport::guarded().unwrap();
        for url in [
            format!("http://127.0.0.1:{port}/v1"),
            format!("http://localhost:{port}/v1"),
            format!("http://[::1]:{port}/"),
        ] {
            let refused = guarded.send(HttpRequest::post(url.clone(), HeaderMap::new(), Default::default())).await;
            let message = match refused {
                Err(ProviderError::Refused(m) | ProviderError::Network(m)) => m,
                _ => panic!("{url}: not refused"),
            };
            assert!(message.contains("internal network"), "{url}: {message}");
        }
        // The plain transport does reach it (the refusal was the guard's).
        let plain = ReqwestTransport::new(reqwest::Client::new());
        let request = HttpRequest::post(format!("http://127.0.0.1:{port}/v1"), HeaderMap::new(), Default::default());
        drop(tokio::time::timeout(std::time::Duration::from_millis(500), plain.send(request)).await);
        assert!(accepted.await.unwrap(), "the plain transport connected");
    }
}
