//! OAuth-protected remote servers whose tokens the host provides. A remote server's requests go
//! through [`AuthClient`], rmcp's HTTP client with the server's current token attached: when
//! the server answers with an auth challenge (401, or 403 `insufficient_scope`), the client asks
//! the host for a token ([`AuthProvider`]) with the reason and the challenge's parameters, then
//! sends the request again. The host may decline; a server declined its first token needs auth.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::Value;

/// Why the host is asked for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthReason {
    /// No token yet.
    Initial,
    /// The current token was rejected.
    Refresh,
    /// A replacement was declined or rejected too: a new authorization.
    Reauth,
    /// The token lacks a scope the server needs.
    Upscope,
}

impl AuthReason {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthReason::Initial => "initial",
            AuthReason::Refresh => "refresh",
            AuthReason::Reauth => "reauth",
            AuthReason::Upscope => "upscope",
        }
    }
}

/// The parameters of a `WWW-Authenticate: Bearer ...` challenge the host is told of.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    pub resource_metadata_url: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// Reads a `Bearer k="v", k2=v2` challenge; unknown parameters are left out.
    pub fn parse(header: &str) -> Self {
        let rest = header.trim();
        let rest = match rest.split_once(char::is_whitespace) {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest,
            _ if rest.eq_ignore_ascii_case("bearer") => "",
            _ => rest,
        };
        let mut out = Challenge::default();
        for (k, v) in auth_params(rest) {
            match k.to_ascii_lowercase().as_str() {
                "resource_metadata" => out.resource_metadata_url = Some(v),
                "scope" => out.scope = Some(v),
                "error" => out.error = Some(v),
                _ => {}
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.resource_metadata_url.is_none() && self.scope.is_none() && self.error.is_none()
    }
}

/// `k=v` pairs separated by commas, values optionally quoted (with `\` escapes).
fn auth_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() && chars.peek().is_none() {
            break;
        }
        if chars.next() != Some('=') {
            if chars.peek().is_none() {
                break;
            }
            continue;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), value.trim().to_string()));
    }
    out
}

/// What the host is asked.
#[derive(Debug, Clone)]
pub struct AuthRequest {
    pub server_name: String,
    pub server_url: String,
    pub reason: AuthReason,
    pub challenge: Option<Challenge>,
    /// The protected-resource metadata document, as fetched.
    pub resource_metadata: Option<String>,
    /// The server's configured OAuth client (`oauthClientId`, `oauthPublicClient`,
    /// `oauthGrantType`); never its secret.
    pub static_client: Option<StaticClient>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StaticClient {
    pub client_id: String,
    pub public_client: Option<bool>,
    pub grant_type: Option<String>,
}

impl StaticClient {
    pub(crate) fn from_config(raw: &Value) -> Option<Self> {
        let client_id = raw.get("oauthClientId").and_then(Value::as_str)?.to_string();
        Some(Self {
            client_id,
            public_client: raw.get("oauthPublicClient").and_then(Value::as_bool),
            grant_type: raw.get("oauthGrantType").and_then(Value::as_str).map(str::to_string),
        })
    }
}

/// The host's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthReply {
    Token(String),
    Cancelled,
}

/// Asks the host for a token (the session asks its clients).
pub type AuthProvider = Arc<dyn Fn(AuthRequest) -> BoxFuture<'static, AuthReply> + Send + Sync>;

/// How long a protected-resource metadata document may take to arrive.
const METADATA_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests sent again after new tokens, at most, before the challenge is the answer.
const MAX_RETRIES: usize = 4;

/// One remote server's authorization: its current token and how to get another.
pub(crate) struct ServerAuth {
    server: String,
    url: String,
    static_client: Option<StaticClient>,
    provider: Option<AuthProvider>,
    token: Mutex<Option<String>>,
    metadata: Mutex<Option<String>>,
    /// The host declined the first token: the server needs auth.
    needs_auth: AtomicBool,
    /// One question to the host at a time: concurrent challenges share its answer.
    asking: tokio::sync::Mutex<()>,
    http: rmcp_reqwest::Client,
    /// The session may not reach internal networks: an address written in a URL the server
    /// hands out (its resource metadata) is checked before it is fetched, since the resolver
    /// that keeps names outside never sees it.
    guarded: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What became of asking the host.
enum Obtained {
    Token,
    Declined,
}

impl ServerAuth {
    /// `guarded`: the session may not reach internal networks (see [`http_client`]).
    pub(crate) fn new(
        server: &str,
        url: &str,
        raw: &Value,
        provider: Option<AuthProvider>,
        guarded: bool,
    ) -> Result<Arc<Self>, String> {
        Ok(Arc::new(Self {
            server: server.to_string(),
            url: url.to_string(),
            static_client: StaticClient::from_config(raw),
            provider,
            token: Mutex::new(None),
            metadata: Mutex::new(None),
            needs_auth: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
            http: http_client(guarded)?,
            guarded,
        }))
    }

    pub(crate) fn needs_auth(&self) -> bool {
        self.needs_auth.load(Ordering::SeqCst)
    }

    fn token(&self) -> Option<String> {
        lock(&self.token).clone()
    }

    /// Asks the host for a token after the request sent with `sent` met `header`. When another
    /// request already replaced that token meanwhile, its replacement is used instead.
    async fn obtain(&self, sent: &Option<String>, reason: AuthReason, header: &str) -> Obtained {
        let _one = self.asking.lock().await;
        if &self.token() != sent {
            return Obtained::Token;
        }
        let challenge = Challenge::parse(header);
        let resource_metadata = self.resource_metadata(&challenge).await;
        let Some(provider) = &self.provider else {
            return self.declined(reason);
        };
        let request = AuthRequest {
            server_name: self.server.clone(),
            server_url: self.url.clone(),
            reason,
            challenge: (!challenge.is_empty()).then_some(challenge),
            resource_metadata,
            static_client: self.static_client.clone(),
        };
        match provider(request).await {
            AuthReply::Token(token) => {
                *lock(&self.token) = Some(token);
                self.needs_auth.store(false, Ordering::SeqCst);
                Obtained::Token
            }
            AuthReply::Cancelled => self.declined(reason),
        }
    }

    fn declined(&self, reason: AuthReason) -> Obtained {
        if reason == AuthReason::Initial {
            self.needs_auth.store(true, Ordering::SeqCst);
        }
        Obtained::Declined
    }

    /// The challenge's protected-resource metadata document (the last one fetched when the
    /// challenge names none), compact JSON.
    async fn resource_metadata(&self, challenge: &Challenge) -> Option<String> {
        let Some(url) = &challenge.resource_metadata_url else {
            return lock(&self.metadata).clone();
        };
        if self.guarded && !outside(url) {
            tracing::warn!(server = %self.server, "an MCP server's resource metadata URL is on an internal network: not fetched");
            return None;
        }
        let fetched = async {
            let response = self.http.get(url.as_str()).send().await.ok()?;
            if !response.status().is_success() {
                return None;
            }
            let bytes = response.bytes().await.ok()?;
            let doc: Value = serde_json::from_slice(&bytes).ok()?;
            serde_json::to_string(&doc).ok()
        };
        let doc = tokio::time::timeout(METADATA_TIMEOUT, fetched).await.ok().flatten();
        if doc.is_some() {
            lock(&self.metadata).clone_from(&doc);
        }
        doc
    }
}

/// Whether `url` names a host outside internal networks as written (names are checked again as
/// they resolve).
fn outside(url: &str) -> bool {
    let Ok(parsed) = rmcp_reqwest::Url::parse(url) else { return false };
    sandbox::egress::check_host(parsed.host_str().unwrap_or_default()).is_ok()
}

/// The HTTP client of a remote server's connection and its OAuth requests
/// ([`crate::tls::client_builder`]). `guarded`: for a session that may not reach the server's
/// internal networks (a team server's tenant), names resolve only to outside addresses
/// ([`sandbox::egress`]); the server's URL itself is checked before connecting.
pub(crate) fn http_client(guarded: bool) -> Result<rmcp_reqwest::Client, String> {
    let mut builder = crate::tls::client_builder();
    if guarded {
        builder = builder.dns_resolver(Arc::new(OutsideOnly));
    }
    builder.build().map_err(|e| format!("Cannot set up an HTTP client: {e}"))
}

/// rmcp's reqwest resolving names through [`sandbox::egress::resolve`].
struct OutsideOnly;

impl rmcp_reqwest::dns::Resolve for OutsideOnly {
    fn resolve(&self, name: rmcp_reqwest::dns::Name) -> rmcp_reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = sandbox::egress::resolve(&host).await?;
            Ok(Box::new(addrs.into_iter()) as rmcp_reqwest::dns::Addrs)
        })
    }
}

/// rmcp's HTTP client with a server's host-provided token.
#[derive(Clone)]
pub(crate) struct AuthClient {
    inner: rmcp_reqwest::Client,
    auth: Arc<ServerAuth>,
}

impl AuthClient {
    pub(crate) fn new(auth: Arc<ServerAuth>) -> Self {
        Self { inner: auth.http.clone(), auth }
    }
}

type Error = StreamableHttpError<rmcp_reqwest::Error>;

/// The challenge a failed request met: its header and whether it asks for more scope.
fn challenge_of<T>(r: &Result<T, Error>) -> Option<(String, bool)> {
    match r {
        Err(StreamableHttpError::AuthRequired(e)) => Some((e.www_authenticate_header.clone(), false)),
        Err(StreamableHttpError::InsufficientScope(e)) => Some((e.www_authenticate_header.clone(), true)),
        _ => None,
    }
}

impl StreamableHttpClient for AuthClient {
    type Error = rmcp_reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut refreshed = false;
        let mut attempt = 0;
        loop {
            let sent = self.auth.token();
            let result = self
                .inner
                .post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    sent.clone().or_else(|| auth_header.clone()),
                    custom_headers.clone(),
                    limits,
                )
                .await;
            let Some((header, more_scope)) = challenge_of(&result) else { return result };
            attempt += 1;
            if attempt > MAX_RETRIES {
                return result;
            }
            let reason = if more_scope {
                AuthReason::Upscope
            } else if sent.is_none() {
                AuthReason::Initial
            } else if !refreshed {
                AuthReason::Refresh
            } else {
                AuthReason::Reauth
            };
            match self.auth.obtain(&sent, reason, &header).await {
                Obtained::Token => {
                    refreshed |= reason == AuthReason::Refresh;
                }
                // A declined refresh asks for a new authorization before giving up.
                Obtained::Declined if reason == AuthReason::Refresh => {
                    refreshed = true;
                    match self.auth.obtain(&sent, AuthReason::Reauth, &header).await {
                        Obtained::Token => {}
                        Obtained::Declined => return result,
                    }
                }
                Obtained::Declined => return result,
            }
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let token = self.auth.token().or(auth_header);
        self.inner.delete_session(uri, session_id, token, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        let token = self.auth.token().or(auth_header);
        self.inner.get_stream(uri, session_id, last_event_id, token, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        let token = self.auth.token().or(auth_header);
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                token,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's challenge that points its metadata at an internal address: a guarded
    /// session's client never connects there; a single user's does.
    #[tokio::test]
    async fn a_guarded_session_does_not_fetch_metadata_from_internal_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/.well-known/oauth-protected-resource", listener.local_addr().unwrap());
        let challenge = Challenge { resource_metadata_url: Some(url), ..Default::default() };
        let guarded = ServerAuth::new("s", "https://mcp.example/", &Value::Null, None, true).unwrap();
        assert_eq!(guarded.resource_metadata(&challenge).await, None);
        let accepted = tokio::time::timeout(std::time::Duration::from_millis(300), listener.accept()).await;
        assert!(accepted.is_err(), "the guarded client connected to an internal address");
        let serve = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let body = r#"{"resource":"r"}"#;
            let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
            s.write_all(reply.as_bytes()).await.unwrap();
        });
        let open = ServerAuth::new("s", "http://127.0.0.1/", &Value::Null, None, false).unwrap();
        assert_eq!(open.resource_metadata(&challenge).await.as_deref(), Some(r#"{"resource":"r"}"#));
        serve.await.unwrap();
        assert!(
            !outside("http://169.254.169.254/latest") && !outside("http://[::1]/") && outside("https://example.com/")
        );
    }

    #[test]
    fn reads_bearer_challenges() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="http://h/.well-known/oauth-protected-resource", scope="mcp.read", error="invalid_token""#,
        );
        assert_eq!(c.resource_metadata_url.as_deref(), Some("http://h/.well-known/oauth-protected-resource"));
        assert_eq!(c.scope.as_deref(), Some("mcp.read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = Challenge::parse(r#"Bearer error="invalid_token""#);
        assert_eq!(c, Challenge { error: Some("invalid_token".into()), ..Default::default() });
        let c = Challenge::parse(r#"Bearer realm=x, scope="a b\"c""#);
        assert_eq!(c.scope.as_deref(), Some("a b\"c"));
        assert!(Challenge::parse("Bearer").is_empty());
    }
}
