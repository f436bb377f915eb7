//! How a model request reaches the network. Normally reqwest; when an SDK client registered
//! itself with `llmInference.setProvider`, the client performs the HTTP call and streams the
//! answer back over JSON-RPC. Every provider speaks through this trait, so both paths carry
//! the same requests.

use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
pub use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
pub use reqwest::{Method, StatusCode};

use crate::http::error_chain;
use crate::types::{ChatRequest, ProviderError};

/// A response body arriving in pieces. An `Err` item ends it: the connection failed.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Bytes,
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
        Self { method: Method::GET, url: url.into(), headers, body: Bytes::new(), context: RequestContext::default() }
    }

    pub fn post(url: impl Into<String>, headers: HeaderMap, body: Bytes) -> Self {
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
}

impl ReqwestTransport {
    pub fn new(client: reqwest::Client) -> Self {
        Self { client }
    }

    /// A client with the connect timeout every provider uses.
    pub fn default_client() -> Result<reqwest::Client, ProviderError> {
        reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| ProviderError::Network(format!("cannot initialise HTTP client: {}", error_chain(&e))))
    }
}

#[async_trait]
impl HttpTransport for ReqwestTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ProviderError> {
        let resp = self
            .client
            .request(request.method, &request.url)
            .headers(request.headers)
            .body(request.body)
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
