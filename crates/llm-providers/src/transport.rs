//! How a model request reaches the network. Normally reqwest; when an SDK client registered
//! itself with `llmInference.setProvider`, the client performs the HTTP call and streams the
//! answer back over JSON-RPC. Every provider speaks through this trait, so both paths carry
//! the same requests.

use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};

use crate::http::error_chain;
use crate::types::ProviderError;

/// A response body arriving in pieces. An `Err` item ends it: the connection failed.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The session the call serves, when there is one (the SDK path reports it).
    pub session_id: Option<String>,
}

impl HttpRequest {
    pub fn get(url: impl Into<String>, headers: HeaderMap) -> Self {
        Self { method: Method::GET, url: url.into(), headers, body: Bytes::new(), session_id: None }
    }

    pub fn post(url: impl Into<String>, headers: HeaderMap, body: Bytes) -> Self {
        Self { method: Method::POST, url: url.into(), headers, body, session_id: None }
    }

    pub fn for_session(mut self, session_id: &str) -> Self {
        if !session_id.is_empty() {
            self.session_id = Some(session_id.to_string());
        }
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
