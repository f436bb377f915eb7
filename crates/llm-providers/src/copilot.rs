//! GitHub Copilot API ("CAPI") client: account-based base-URL discovery, the model catalogue
//! and chat completions over HTTP, with retries and cancellation.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::http::{ensure_success, insert};
use crate::openai_chat::{request_body, BodyFlavor, ChatCompletions};
use crate::retry::{self, AttemptError, RetryPolicy};
use crate::transport::{HttpRequest, HttpTransport, ReqwestTransport};
use crate::types::{ChatRequest, ChatResponse, Initiator, ModelEvent, ModelInfo, ProviderError};

/// `x-github-api-version` the real CLI sends [probed].
const GITHUB_API_VERSION: &str = "2026-08-01";

#[derive(Clone)]
pub struct CopilotConfig {
    /// CAPI base URL (`COPILOT_API_URL`). `None` → discovered via `/copilot_internal/user`.
    pub api_url: Option<String>,
    /// GitHub REST base (`COPILOT_DEBUG_GITHUB_API_URL`, default `https://api.github.com`).
    pub github_api_url: String,
    /// GitHub/Copilot token sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// The account signed in at run time (`account.login`); when set it is used instead of
    /// `token`.
    pub signed_in: SignedInToken,
    /// Version reported in `editor-version` / `user-agent` (`copilot/<version>`).
    pub version: String,
    /// `copilot-integration-id` header.
    pub integration_id: String,
    pub retry: RetryPolicy,
}

impl CopilotConfig {
    pub const DEFAULT_GITHUB_API_URL: &'static str = "https://api.github.com";
    pub const DEFAULT_INTEGRATION_ID: &'static str = "copilot-developer-cli";

    /// Defaults: CAPI base discovered from the account, public GitHub API.
    pub fn new(token: Option<String>, version: impl Into<String>) -> Self {
        Self {
            api_url: None,
            github_api_url: Self::DEFAULT_GITHUB_API_URL.to_string(),
            token,
            signed_in: SignedInToken::default(),
            version: version.into(),
            integration_id: Self::DEFAULT_INTEGRATION_ID.to_string(),
            retry: RetryPolicy::default(),
        }
    }

    /// Apply the process environment (given as a map; this crate never reads the environment
    /// itself): `COPILOT_API_URL` and `COPILOT_DEBUG_GITHUB_API_URL`. Empty values count as
    /// unset.
    pub fn from_env_map(env: &HashMap<String, String>, token: Option<String>, version: impl Into<String>) -> Self {
        let get = |key: &str| env.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()).map(trim_base);
        let mut config = Self::new(token, version);
        config.api_url = get("COPILOT_API_URL");
        if let Some(url) = get("COPILOT_DEBUG_GITHUB_API_URL") {
            config.github_api_url = url;
        }
        config
    }

    fn user_agent(&self) -> String {
        self.user_agent_for("sdk")
    }

    /// The user agent naming the SDK client (`clientName`) a request is made for.
    fn user_agent_for(&self, client: &str) -> String {
        format!(
            "copilot/{} ({} {}) term/unknown client/{client}",
            self.version,
            std::env::consts::OS,
            std::env::consts::ARCH
        )
    }
}

/// The token of the account signed in while the server runs, shared between the server (which
/// signs in and out) and the model client (which sends it). Never printed.
#[derive(Clone, Default)]
pub struct SignedInToken(Arc<std::sync::RwLock<Option<String>>>);

impl SignedInToken {
    pub fn set(&self, token: Option<String>) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = token;
    }

    pub fn get(&self) -> Option<String> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl fmt::Debug for SignedInToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.get().is_some() { "SignedInToken(<redacted>)" } else { "SignedInToken(None)" })
    }
}

// Hand-written so the token never ends up in a log line.
impl fmt::Debug for CopilotConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopilotConfig")
            .field("api_url", &self.api_url)
            .field("github_api_url", &self.github_api_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("version", &self.version)
            .field("integration_id", &self.integration_id)
            .field("retry", &self.retry)
            .finish()
    }
}

fn trim_base(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

pub struct CopilotClient {
    config: CopilotConfig,
    http: Arc<dyn HttpTransport>,
    /// Base discovered from the account; resolved once, and only when `api_url` is unset. A
    /// failed lookup leaves it empty so the next call tries again.
    discovered_base: OnceCell<String>,
    /// `supported_endpoints` of the catalogue's models by id, from the last `/models` read
    /// (`None` until one succeeded). Picks the API a model is called on.
    catalog_endpoints: std::sync::RwLock<Option<HashMap<String, Vec<String>>>>,
    /// Set once the first model call's catalogue read is done (concurrent first calls share it).
    first_catalogue_read: OnceCell<()>,
    /// The catalogue of the last `/models` read that succeeded.
    catalog_models: std::sync::RwLock<Option<Vec<ModelInfo>>>,
}

/// The wire API a model is called on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    ChatCompletions,
    Responses,
}

/// Chat completions unless the catalogue lists the model's endpoints without it and with the
/// Responses API (plain or over a WebSocket; this client speaks it over HTTP). A model the
/// catalogue does not describe keeps chat completions.
fn api_for(endpoints: Option<&[String]>) -> Api {
    let Some(endpoints) = endpoints.filter(|e| !e.is_empty()) else { return Api::ChatCompletions };
    let has = |name: &str| endpoints.iter().any(|e| e == name);
    if !has("/chat/completions") && (has("/responses") || has("ws:/responses")) {
        Api::Responses
    } else {
        Api::ChatCompletions
    }
}

impl CopilotClient {
    pub fn new(config: CopilotConfig) -> Result<Self, ProviderError> {
        Ok(Self::with_http_client(config, ReqwestTransport::default_client()?))
    }

    /// With a caller-built HTTP client (custom proxy, CA roots, or none of the environment's
    /// proxy settings in tests).
    pub fn with_http_client(config: CopilotConfig, http: reqwest::Client) -> Self {
        Self::with_transport(config, Arc::new(ReqwestTransport::new(http)))
    }

    /// With requests sent some other way (through the SDK client, for one).
    pub fn with_transport(config: CopilotConfig, http: Arc<dyn HttpTransport>) -> Self {
        Self {
            config,
            http,
            discovered_base: OnceCell::new(),
            catalog_endpoints: std::sync::RwLock::new(None),
            first_catalogue_read: OnceCell::new(),
            catalog_models: Default::default(),
        }
    }

    pub fn config(&self) -> &CopilotConfig {
        &self.config
    }

    /// The CAPI base URL (no trailing slash): `api_url`, else `endpoints.api` of the account.
    pub async fn base_url(&self, cancel: &CancellationToken) -> Result<String, ProviderError> {
        if let Some(url) = &self.config.api_url {
            return Ok(trim_base(url));
        }
        self.discovered_base.get_or_try_init(|| self.discover_base(cancel)).await.cloned()
    }

    async fn discover_base(&self, cancel: &CancellationToken) -> Result<String, ProviderError> {
        let url = format!("{}/copilot_internal/user", trim_base(&self.config.github_api_url));
        let headers = self.common_headers()?;
        let (url, headers) = (&url, &headers);
        let base = retry::run(&self.config.retry, None, cancel, move |_| async move {
            let resp = self.http.send(HttpRequest::get(url.as_str(), headers.clone())).await?;
            let resp = ensure_success(resp, "Copilot account lookup").await?;
            let body = resp.bytes().await?;
            let user: Value = serde_json::from_slice(&body)
                .map_err(|e| ProviderError::Protocol(format!("malformed /copilot_internal/user response: {e}")))?;
            user.pointer("/endpoints/api").and_then(Value::as_str).filter(|s| !s.is_empty()).map(trim_base).ok_or_else(
                || ProviderError::Protocol("/copilot_internal/user response has no endpoints.api".into()).into(),
            )
        })
        .await?;
        tracing::debug!(%base, "resolved Copilot API base URL");
        Ok(base)
    }

    fn remember_endpoints(&self, body: &[u8]) {
        let endpoints = parse_endpoints(body);
        *self.catalog_endpoints.write().unwrap_or_else(|e| e.into_inner()) = Some(endpoints);
    }

    /// One `GET /models`, unretried (the catalogue a model list and the API choice read).
    async fn fetch_catalogue(&self, cancel: &CancellationToken) -> Result<Bytes, AttemptError> {
        let url = format!("{}/models", self.base_url(cancel).await?);
        let resp = self.http.send(HttpRequest::get(url.as_str(), self.common_headers()?)).await?;
        let resp = ensure_success(resp, "Model list request").await?;
        Ok(resp.bytes().await?)
    }

    /// The API `model` is called on. Before any catalogue was read, one `/models` request is
    /// made (once for all callers, without retries: a catalogue that cannot be read leaves chat
    /// completions).
    async fn api(&self, model: &str, cancel: &CancellationToken) -> Api {
        let known = |s: &Self| {
            let guard = s.catalog_endpoints.read().unwrap_or_else(|e| e.into_inner());
            guard.as_ref().map(|m| api_for(m.get(model).map(Vec::as_slice)))
        };
        if let Some(api) = known(self) {
            return api;
        }
        self.read_catalogue_once(cancel).await;
        known(self).unwrap_or(Api::ChatCompletions)
    }

    /// The first catalogue read, once for all callers (a model call's, or the warm-up's).
    async fn read_catalogue_once(&self, cancel: &CancellationToken) {
        let read = || self.catalog_endpoints.read().unwrap_or_else(|e| e.into_inner()).is_some();
        self.first_catalogue_read
            .get_or_init(|| async {
                if read() {
                    return; // a model list read it meanwhile
                }
                match self.fetch_catalogue(cancel).await {
                    Ok(body) => {
                        self.remember_endpoints(&body);
                        if let Ok(models) = parse_models(&body) {
                            *self.catalog_models.write().unwrap_or_else(|e| e.into_inner()) = Some(models);
                        }
                    }
                    Err(e) => {
                        // Asked once: an unreadable catalogue pins chat completions until a model
                        // list succeeds, rather than costing every call a request.
                        tracing::debug!(error = %e.error, "model catalogue unavailable; calling chat completions");
                        self.remember_endpoints(b"[]");
                    }
                }
            })
            .await;
    }

    fn token(&self) -> Result<String, ProviderError> {
        self.config
            .signed_in
            .get()
            .or_else(|| self.config.token.clone())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ProviderError::Auth("no GitHub token configured".into()))
    }

    /// Headers every CAPI request carries, authenticated as the process's account.
    fn common_headers(&self) -> Result<HeaderMap, ProviderError> {
        self.headers_as(None)
    }

    /// Headers every CAPI request carries, authenticated with `session_token` (a session's
    /// own `gitHubToken`) when given, else as the process's account.
    fn headers_as(&self, session_token: Option<&crate::secret::Secret>) -> Result<HeaderMap, ProviderError> {
        let token = match session_token.map(|t| t.expose()).filter(|t| !t.is_empty()) {
            Some(token) => token.to_string(),
            None => self.token()?,
        };
        let mut headers = HeaderMap::new();
        let auth = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| ProviderError::Auth("the token contains characters not allowed in an HTTP header".into()))?;
        headers.insert(AUTHORIZATION, auth);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        insert(&mut headers, "editor-version", &format!("copilot/{}", self.config.version));
        insert(&mut headers, USER_AGENT.as_str(), &self.config.user_agent());
        insert(&mut headers, "copilot-integration-id", &self.config.integration_id);
        headers.insert("x-github-api-version", HeaderValue::from_static(GITHUB_API_VERSION));
        Ok(headers)
    }

    fn chat_headers(&self, req: &ChatRequest, attempt: u32) -> Result<HeaderMap, ProviderError> {
        let mut headers = self.headers_as(req.github_token.as_ref())?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("openai-intent", HeaderValue::from_static("conversation-agent"));
        // A retry is not a new user request; CAPI bills premium requests by this header.
        let initiator = if attempt > 0 { Initiator::Agent } else { req.initiator };
        let interaction_type = crate::types::interaction_type(req.purpose, initiator);
        let initiator = match initiator {
            Initiator::User => "user",
            Initiator::Agent => "agent",
        };
        headers.insert("x-initiator", HeaderValue::from_static(initiator));
        headers.insert("x-interaction-type", HeaderValue::from_static(interaction_type));
        insert(&mut headers, "x-interaction-id", &req.interaction_id);
        insert(&mut headers, "x-client-session-id", &req.session_id);
        if let Some(client) = req.client_name.as_deref().filter(|c| !c.is_empty()) {
            insert(&mut headers, USER_AGENT.as_str(), &self.config.user_agent_for(client));
        }
        for (name, value) in &req.extra_headers {
            insert(&mut headers, name, value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl ModelClient for CopilotClient {
    async fn list_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        // The trait offers no cancellation here; the caller can drop the future instead.
        let cancel = CancellationToken::new();
        let cancel_ref = &cancel;
        retry::run(&self.config.retry, None, &cancel, move |_| async move {
            let body = self.fetch_catalogue(cancel_ref).await?;
            let models = parse_models(&body)?;
            self.remember_endpoints(&body);
            *self.catalog_models.write().unwrap_or_else(|e| e.into_inner()) = Some(models.clone());
            Ok(models)
        })
        .await
    }

    async fn warm_up(&self) {
        self.read_catalogue_once(&CancellationToken::new()).await;
    }

    fn known_models(&self) -> Option<Vec<ModelInfo>> {
        self.catalog_models.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn endpoint(&self) -> Result<Option<crate::provider::Endpoint>, ProviderError> {
        let base_url = self.base_url(&CancellationToken::new()).await?;
        let token = self.token()?;
        let headers = vec![
            ("Authorization".to_string(), format!("Bearer {token}")),
            ("Copilot-Integration-Id".to_string(), self.config.integration_id.clone()),
            ("Editor-Version".to_string(), format!("copilot/{}", self.config.version)),
            ("User-Agent".to_string(), self.config.user_agent()),
            ("X-GitHub-Api-Version".to_string(), GITHUB_API_VERSION.to_string()),
            ("X-Interaction-Id".to_string(), uuid::Uuid::new_v4().to_string()),
            ("Openai-Intent".to_string(), "conversation-agent".to_string()),
        ];
        Ok(Some(crate::provider::Endpoint {
            kind: crate::provider::ProviderKind::OpenAi,
            wire_api: Some(crate::provider::WireApi::Completions),
            base_url,
            api_key: Some(crate::secret::Secret::new(token)),
            headers,
        }))
    }

    async fn copilot_api(&self) -> Result<Option<crate::client::CopilotApi>, ProviderError> {
        let base_url = self.base_url(&CancellationToken::new()).await?;
        Ok(Some(crate::client::CopilotApi {
            base_url,
            token: crate::secret::Secret::new(self.token()?),
            integration_id: self.config.integration_id.clone(),
        }))
    }

    async fn chat(
        &self,
        req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        let base = self.base_url(&cancel).await?;
        if self.api(&req.model, &cancel).await == Api::Responses {
            return self.call_responses(&base, req, events, cancel).await;
        }
        let url = format!("{base}/chat/completions");
        let body = request_body(&req, BodyFlavor::Capi);
        let request_bytes = body.len() as u64;
        tracing::debug!(%url, model = %req.model, messages = req.history.len() + 1, stream = req.stream, "model call");
        let (req, events, url, body) = (&req, &events, &url, &body);
        let mut resp = retry::run(&self.config.retry, Some(events), &cancel, move |attempt| async move {
            let headers = self.chat_headers(req, attempt)?;
            let request = HttpRequest::post(url.as_str(), headers, body.clone()).for_call(req);
            crate::exchange::attempt::<ChatCompletions>(
                self.http.as_ref(),
                request,
                req.stream,
                events,
                "x-github-request-id",
            )
            .await
        })
        .await?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}

impl CopilotClient {
    /// One model call on `/responses`, with the same headers and retries as chat completions.
    async fn call_responses(
        &self,
        base: &str,
        req: ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        let url = format!("{base}/responses");
        let body = crate::responses::request::request_body(&req, &req.model, None);
        let request_bytes = body.len() as u64;
        tracing::debug!(%url, model = %req.model, stream = req.stream, "model call (responses)");
        let (req, events, url, body) = (&req, &events, &url, &body);
        let mut resp = retry::run(&self.config.retry, Some(events), &cancel, move |attempt| async move {
            let headers = self.chat_headers(req, attempt)?;
            let request = HttpRequest::post(url.as_str(), headers, body.clone()).for_call(req);
            crate::exchange::attempt::<crate::responses::Responses>(
                self.http.as_ref(),
                request,
                req.stream,
                events,
                "x-github-request-id",
            )
            .await
        })
        .await?;
        resp.request_bytes = request_bytes;
        Ok(resp)
    }
}

/// `supported_endpoints` of each catalogue entry that lists them.
fn parse_endpoints(body: &[u8]) -> HashMap<String, Vec<String>> {
    let Ok(json) = serde_json::from_slice::<Value>(body) else { return HashMap::new() };
    let entries = match &json {
        Value::Array(entries) => entries.as_slice(),
        other => other.get("data").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default(),
    };
    entries
        .iter()
        .filter_map(|entry| {
            let id = entry.get("id")?.as_str()?;
            let list = entry.get("supported_endpoints")?.as_array()?;
            Some((id.to_string(), list.iter().filter_map(|e| e.as_str().map(str::to_string)).collect()))
        })
        .collect()
}

fn parse_models(body: &[u8]) -> Result<Vec<ModelInfo>, ProviderError> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| ProviderError::Protocol(format!("malformed /models response: {e}")))?;
    let entries = match &json {
        Value::Array(entries) => entries,
        other => match other.get("data") {
            Some(Value::Array(entries)) => entries,
            _ => return Err(ProviderError::Protocol("/models response has no data array".into())),
        },
    };
    let present = |entry: &Value, key: &str| entry.get(key).filter(|v| !v.is_null()).cloned();
    Ok(entries
        .iter()
        .filter_map(|entry| {
            let Some(id) = entry.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
                tracing::warn!(%entry, "skipping /models entry without an id");
                return None;
            };
            Some(ModelInfo {
                id: id.to_string(),
                name: entry.get("name").and_then(Value::as_str).unwrap_or(id).to_string(),
                capabilities: present(entry, "capabilities").unwrap_or_else(|| Value::Object(Default::default())),
                policy: present(entry, "policy"),
                billing: present(entry, "billing"),
                supported_reasoning_efforts: present(entry, "supportedReasoningEfforts"),
                default_reasoning_effort: present(entry, "defaultReasoningEffort"),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_map_rules() {
        let env: HashMap<String, String> =
            [("COPILOT_API_URL", "http://127.0.0.1:9/"), ("COPILOT_DEBUG_GITHUB_API_URL", "http://127.0.0.1:8")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let c = CopilotConfig::from_env_map(&env, Some("t".into()), "1.2.3");
        assert_eq!(c.api_url.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(c.github_api_url, "http://127.0.0.1:8");
        assert_eq!(c.integration_id, CopilotConfig::DEFAULT_INTEGRATION_ID);

        let empty: HashMap<String, String> = [("COPILOT_API_URL".to_string(), String::new())].into_iter().collect();
        let c = CopilotConfig::from_env_map(&empty, None, "1");
        assert_eq!(c.api_url, None);
        assert_eq!(c.github_api_url, "https://api.github.com");
    }

    #[test]
    fn responses_only_when_chat_completions_is_not_listed() {
        let list = |e: &[&str]| e.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(api_for(None), Api::ChatCompletions);
        assert_eq!(api_for(Some(&list(&[]))), Api::ChatCompletions);
        assert_eq!(api_for(Some(&list(&["/responses", "ws:/responses"]))), Api::Responses);
        assert_eq!(api_for(Some(&list(&["/chat/completions", "/responses"]))), Api::ChatCompletions);
        assert_eq!(api_for(Some(&list(&["/v1/messages"]))), Api::ChatCompletions);
        let body = br#"{"data":[{"id":"a","supported_endpoints":["/responses"]},{"id":"b"}]}"#;
        let parsed = parse_endpoints(body);
        assert_eq!(parsed.get("a"), Some(&list(&["/responses"])));
        assert!(!parsed.contains_key("b"));
    }

    #[test]
    fn debug_redacts_token() {
        let c = CopilotConfig::new(Some("secret-token".into()), "1");
        assert!(!format!("{c:?}").contains("secret-token"));
    }

    #[test]
    fn sparse_models() {
        let body = br#"{"data":[{"id":"a"},{"id":"b","name":"B","capabilities":{"limits":{"max_context_window_tokens":5}},"policy":{"state":"enabled"}},{"name":"no id"}]}"#;
        let models = parse_models(body).expect("parses");
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].name, "a");
        assert_eq!(models[0].capabilities, serde_json::json!({}));
        assert_eq!(models[1].context_window(), Some(5));
        assert!(models[1].policy.is_some());
    }
}
