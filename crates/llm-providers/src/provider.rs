//! A bring-your-own-key provider: which wire API, where, and with which credentials.
//!
//! Built by the caller from the SDK's `provider` setting or the `COPILOT_PROVIDER_*`
//! environment (this crate reads neither). Credentials are [`Secret`]s: they print as
//! `<redacted>` and appear in no error message.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

use crate::retry::{AttemptError, RetryPolicy};
// Credentials are named by this path (they live in a leaf of their own, which the request types
// import as well).
pub use crate::secret::Secret;
use crate::types::{ModelInfo, ProviderError};

/// The provider families the SDKs name (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, ...).
    OpenAi,
    Azure,
    Anthropic,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Azure => "azure",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

/// The request format of OpenAI-type providers (`wireApi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireApi {
    #[default]
    Completions,
    Responses,
}

/// A model backend as `session.provider.getEndpoint` describes it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub kind: ProviderKind,
    /// `None` for Anthropic, which has one wire API.
    pub wire_api: Option<WireApi>,
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Headers every request must carry (credentials included, as they are sent).
    pub headers: Vec<(String, String)>,
}

/// Gives a fresh bearer token before each request (the SDK's `bearerTokenProvider`, asked
/// through the client).
#[async_trait]
pub trait TokenSource: Send + Sync {
    async fn token(&self) -> Result<Secret, ProviderError>;
}

#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub wire_api: WireApi,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Wins over `api_key`.
    pub bearer_token: Option<Secret>,
    /// Wins over both: asked before every request.
    pub token_source: Option<Arc<dyn TokenSource>>,
    /// Sent with every request.
    pub headers: Vec<(String, String)>,
    /// Azure: with a version, the deployment route `/openai/deployments/<model>/...`;
    /// without, the versionless `/openai/v1/...` route.
    pub azure_api_version: Option<String>,
    /// The model name on the wire; the session's model when `None`.
    pub wire_model: Option<String>,
    pub max_prompt_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// What `list_models` answers: the models this provider is configured to serve.
    pub models: Vec<ModelInfo>,
    pub retry: RetryPolicy,
    /// What errors call it ("provider `alpha`"), so a user knows which one failed.
    pub label: String,
    /// The environment variable or setting to check when authentication fails.
    pub credential_hint: String,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("wire_api", &self.wire_api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("bearer_token", &self.bearer_token)
            .field("token_source", &self.token_source.as_ref().map(|_| "<callback>"))
            .field("headers", &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("azure_api_version", &self.azure_api_version)
            .field("wire_model", &self.wire_model)
            .field("label", &self.label)
            .finish()
    }
}

impl ProviderConfig {
    /// A provider of `kind` at `base_url`, no credentials, default retries.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        Self {
            kind,
            wire_api: WireApi::Completions,
            label: format!("{} provider at {base_url}", kind.as_str()),
            base_url,
            api_key: None,
            bearer_token: None,
            token_source: None,
            headers: Vec::new(),
            azure_api_version: None,
            wire_model: None,
            max_prompt_tokens: None,
            max_output_tokens: None,
            models: Vec::new(),
            retry: RetryPolicy::byok(),
            credential_hint: "the provider's apiKey".into(),
        }
    }

    /// The model name to send for a session whose model is `model`.
    pub fn wire_model<'a>(&'a self, model: &'a str) -> &'a str {
        self.wire_model.as_deref().unwrap_or(model)
    }

    /// Authentication and custom headers for one request. A token source wins over a bearer
    /// token, which wins over an API key; an API key goes where the provider family expects it
    /// (`api-key` for Azure, `x-api-key` for Anthropic, `Authorization: Bearer` otherwise).
    pub async fn auth_headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        let bearer = match &self.token_source {
            Some(source) => Some(source.token().await?),
            None => self.bearer_token.clone(),
        };
        let invalid = |what: &str| ProviderError::Auth(format!("{} has an invalid {what}", self.label));
        if let Some(token) = bearer {
            let value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| invalid("token"))?;
            headers.insert(AUTHORIZATION, sensitive(value));
        } else if let Some(key) = &self.api_key {
            let value = HeaderValue::from_str(key.expose()).map_err(|_| invalid("API key"))?;
            match self.kind {
                ProviderKind::Azure => {
                    headers.insert(HeaderName::from_static("api-key"), sensitive(value));
                }
                ProviderKind::Anthropic => {
                    headers.insert(HeaderName::from_static("x-api-key"), sensitive(value));
                }
                ProviderKind::OpenAi => {
                    let value =
                        HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| invalid("API key"))?;
                    headers.insert(AUTHORIZATION, sensitive(value));
                }
            }
        }
        for (name, value) in &self.headers {
            match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                (Ok(name), Ok(value)) => {
                    headers.insert(name, value);
                }
                _ => tracing::warn!(header = %name, provider = %self.label, "skipping an invalid custom header"),
            }
        }
        Ok(headers)
    }

    /// This provider as `session.provider.getEndpoint` shows it: custom headers only (a token
    /// source is not asked just to describe the endpoint).
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            kind: self.kind,
            wire_api: (self.kind != ProviderKind::Anthropic).then_some(self.wire_api),
            base_url: self.base_url.clone(),
            api_key: self.bearer_token.clone().or_else(|| self.api_key.clone()),
            headers: self.headers.clone(),
        }
    }

    /// What a 401/403 tells the user: which provider, and what to check. Never the key.
    pub fn auth_failure_hint(&self) -> String {
        format!("authentication with {} failed; check {}", self.label, self.credential_hint)
    }

    /// The error a session reports once retries are over: it names the provider and what to
    /// check, keeps the status for `session.error`, and carries no credential even if the
    /// server echoed one back.
    pub fn describe_failure(&self, err: ProviderError) -> ProviderError {
        let base = &self.base_url;
        let err = match err {
            ProviderError::Http { status, message, provider_call_id, code, retry_after } => {
                let detail = message.split_once(": ").map(|(_, d)| d).unwrap_or(&message).to_string();
                let message = match status {
                    401 | 403 => format!(
                        "Authentication failed with {} (HTTP {status}): {detail}\n  Check {}.",
                        self.label, self.credential_hint
                    ),
                    404 => format!(
                        "Resource not found on provider at {base} (HTTP 404).\n  Check the base URL and model name."
                    ),
                    _ => format!("{} failed with HTTP {status}: {detail}", self.label),
                };
                ProviderError::Http { status, message, provider_call_id, code, retry_after }
            }
            ProviderError::Network(detail) => ProviderError::Network(format!("cannot reach {}: {detail}", self.label)),
            other => other,
        };
        self.redact(err)
    }

    /// A failed attempt with the credentials taken out of its message (it is shown to the
    /// session as a retry notice).
    pub(crate) fn redact_attempt(&self, mut failure: AttemptError) -> AttemptError {
        failure.error = self.redact(failure.error);
        failure
    }

    fn redact(&self, err: ProviderError) -> ProviderError {
        let secrets: Vec<&str> = [&self.api_key, &self.bearer_token]
            .into_iter()
            .flatten()
            .map(Secret::expose)
            .filter(|s| s.len() >= 4)
            .collect();
        let clean = |text: String| secrets.iter().fold(text, |t, s| t.replace(s, "<redacted>"));
        match err {
            ProviderError::Http { status, message, provider_call_id, code, retry_after } => {
                ProviderError::Http { status, message: clean(message), provider_call_id, code, retry_after }
            }
            ProviderError::Network(m) => ProviderError::Network(clean(m)),
            ProviderError::Truncated(m) => ProviderError::Truncated(clean(m)),
            ProviderError::Protocol(m) => ProviderError::Protocol(clean(m)),
            ProviderError::Auth(m) => ProviderError::Auth(clean(m)),
            ProviderError::Refused(m) => ProviderError::Refused(clean(m)),
            ProviderError::Cancelled => ProviderError::Cancelled,
        }
    }
}

/// A model a provider serves, as `models.list` shows it, with the limits configured for it.
pub fn configured_model(
    id: &str,
    name: &str,
    max_prompt: Option<u64>,
    max_output: Option<u64>,
    max_context: Option<u64>,
) -> ModelInfo {
    let mut limits = serde_json::Map::new();
    for (key, value) in [
        ("max_prompt_tokens", max_prompt),
        ("max_output_tokens", max_output),
        ("max_context_window_tokens", max_context),
    ] {
        if let Some(v) = value {
            limits.insert(key.into(), v.into());
        }
    }
    ModelInfo {
        id: id.to_string(),
        name: name.to_string(),
        capabilities: serde_json::json!({ "limits": limits, "supports": {} }),
        policy: Some(serde_json::json!({ "state": "enabled" })),
        billing: None,
        supported_reasoning_efforts: None,
        default_reasoning_effort: None,
    }
}

fn sensitive(mut value: HeaderValue) -> HeaderValue {
    value.set_sensitive(true);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn credentials_go_where_each_family_expects_them() {
        let mut p = ProviderConfig::new(ProviderKind::Azure, "https://x.openai.azure.com/");
        assert_eq!(p.base_url, "https://x.openai.azure.com");
        p.api_key = Some(Secret::new("k1"));
        assert_eq!(p.auth_headers().await.unwrap()["api-key"], "k1");
        p.kind = ProviderKind::Anthropic;
        assert_eq!(p.auth_headers().await.unwrap()["x-api-key"], "k1");
        p.kind = ProviderKind::OpenAi;
        assert_eq!(p.auth_headers().await.unwrap()[AUTHORIZATION], "Bearer k1");
        p.bearer_token = Some(Secret::new("t1"));
        p.kind = ProviderKind::Azure;
        let h = p.auth_headers().await.unwrap();
        assert_eq!(h[AUTHORIZATION], "Bearer t1");
        assert!(h.get("api-key").is_none(), "the bearer token wins over the key");
    }

    #[test]
    fn failures_name_the_provider_and_hide_the_key() {
        let mut p = ProviderConfig::new(ProviderKind::OpenAi, "http://127.0.0.1:9/v1");
        p.api_key = Some(Secret::new("sk-echoed"));
        p.credential_hint = "COPILOT_PROVIDER_API_KEY".into();
        let http = |status, message: &str| ProviderError::http(status, message);
        let e = p.describe_failure(http(401, "Model request failed with HTTP 401: bad key sk-echoed"));
        let text = e.to_string();
        assert!(text.contains("http://127.0.0.1:9/v1") && text.contains("COPILOT_PROVIDER_API_KEY"), "{text}");
        assert!(!text.contains("sk-echoed"), "{text}");
        assert_eq!(e.status_code(), Some(401));
        assert_eq!(e.error_type(), "authentication");
        let e = p.describe_failure(http(404, "Model request failed with HTTP 404: nope"));
        assert_eq!(
            e.to_string(),
            "Resource not found on provider at http://127.0.0.1:9/v1 (HTTP 404).\n  Check the base URL and model name."
        );
        let e = p.describe_failure(http(500, "Model request failed with HTTP 500: boom"));
        assert_eq!(e.error_type(), "query");
        assert!(e.to_string().contains("HTTP 500: boom"));
    }

    #[test]
    fn secrets_never_print() {
        let mut p = ProviderConfig::new(ProviderKind::OpenAi, "http://h");
        p.api_key = Some(Secret::new("sk-very-secret"));
        p.headers = vec![("x-team".into(), "hidden-value".into())];
        let shown = format!("{p:?}");
        assert!(!shown.contains("sk-very-secret") && !shown.contains("hidden-value"), "{shown}");
        assert!(!p.auth_failure_hint().contains("sk-very-secret"));
    }
}
