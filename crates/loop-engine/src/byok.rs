//! A session's bring-your-own-key providers, and which client serves each model call.
//!
//! The SDKs configure them on `session.create` / `session.resume` (not persisted: re-sent on
//! resume) in two shapes: one `provider` for the whole session, or named `providers` with
//! `models` selected as `provider/id`. A model call goes to the matching named model, else the
//! session's provider, else the engine's default client (the Copilot API, or the provider the
//! process was started with).

use std::sync::Arc;

use async_trait::async_trait;
use llm_providers::provider::{configured_model, ProviderConfig, ProviderKind, Secret, TokenSource, WireApi};
use llm_providers::transport::HttpTransport;
use llm_providers::{ModelClient, ModelInfo, ProviderError};
use protocol::generated::types as t;

use crate::emitter::Emitter;

/// The provider name the SDKs use for the whole-session `provider` (its token callbacks are
/// registered under it).
pub const SESSION_PROVIDER_NAME: &str = "default";

/// A session's provider settings, checked when they arrive.
#[derive(Debug, Clone, Default)]
pub struct SessionProviders {
    pub single: Option<t::ProviderConfig>,
    pub named: Vec<t::NamedProviderConfig>,
    pub models: Vec<t::ProviderModelConfig>,
}

impl SessionProviders {
    pub fn new(
        single: Option<t::ProviderConfig>,
        named: Vec<t::NamedProviderConfig>,
        models: Vec<t::ProviderModelConfig>,
    ) -> Result<Self, String> {
        let mut out = Self { single, named: Vec::new(), models: Vec::new() };
        out.add(named, models)?;
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.single.is_none() && self.named.is_empty()
    }

    /// Registers more named providers and models (`session.provider.add`); returns the models
    /// added, as `models.list` shows them. Nothing changes when any of it is invalid.
    pub fn add(
        &mut self,
        providers: Vec<t::NamedProviderConfig>,
        models: Vec<t::ProviderModelConfig>,
    ) -> Result<Vec<ModelInfo>, String> {
        let mut next = self.clone();
        for p in providers {
            if p.name.is_empty() || p.name.contains('/') {
                return Err(format!("provider name `{}` must be non-empty and must not contain '/'", p.name));
            }
            if next.named.iter().any(|q| q.name == p.name) {
                return Err(format!("provider `{}` is already registered", p.name));
            }
            check_base_url(&p.base_url, &p.name)?;
            next.named.push(p);
        }
        let mut added = Vec::new();
        for m in models {
            if !next.named.iter().any(|p| p.name == m.provider) {
                return Err(format!("model `{}` names provider `{}`, which is not registered", m.id, m.provider));
            }
            let selection = selection_id(&m);
            if next.models.iter().any(|q| selection_id(q) == selection) {
                return Err(format!("model `{selection}` is already registered"));
            }
            added.push(model_info(&m));
            next.models.push(m);
        }
        if let Some(single) = &next.single {
            check_base_url(&single.base_url, SESSION_PROVIDER_NAME)?;
        }
        *self = next;
        Ok(added)
    }

    /// The models this session's providers serve, as `models.list` shows them.
    pub fn model_list(&self) -> Vec<ModelInfo> {
        let mut out: Vec<ModelInfo> = self.models.iter().map(model_info).collect();
        if let Some(p) = &self.single {
            if let Some(id) = p.model_id.as_deref().or(p.wire_model.as_deref()) {
                out.push(configured_model(
                    id,
                    id,
                    tokens(p.max_prompt_tokens),
                    tokens(p.max_output_tokens),
                    tokens(p.max_context_window_tokens),
                ));
            }
        }
        out
    }

    /// The model a session without an explicit `model` starts on.
    pub fn default_model(&self) -> Option<String> {
        self.single.as_ref().and_then(|p| p.model_id.clone().or_else(|| p.wire_model.clone()))
    }

    /// The named model `selection` (`provider/id`) picks, if any.
    fn named_model(&self, selection: &str) -> Option<(&t::ProviderModelConfig, &t::NamedProviderConfig)> {
        let model = self.models.iter().find(|m| selection_id(m) == selection)?;
        let provider = self.named.iter().find(|p| p.name == model.provider)?;
        Some((model, provider))
    }
}

fn selection_id(m: &t::ProviderModelConfig) -> String {
    format!("{}/{}", m.provider, m.id)
}

fn check_base_url(url: &str, name: &str) -> Result<(), String> {
    let host = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match host {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
        _ => Err(format!("provider `{name}`: baseUrl must be an http(s) URL")),
    }
}

/// Token counts arrive as JSON numbers; anything not a positive whole count is ignored.
fn tokens(n: Option<f64>) -> Option<u64> {
    n.filter(|v| v.is_finite() && *v >= 1.0).map(|v| v as u64)
}

fn model_info(m: &t::ProviderModelConfig) -> ModelInfo {
    let selection = selection_id(m);
    let limits = m.capabilities.as_ref().and_then(|c| c.limits.as_ref());
    let pick = |direct: Option<f64>, from_caps: Option<u64>| tokens(direct).or(from_caps.filter(|n| *n > 0));
    configured_model(
        &selection,
        m.name.as_deref().unwrap_or(&selection),
        pick(m.max_prompt_tokens, limits.and_then(|l| l.max_prompt_tokens)),
        pick(m.max_output_tokens, limits.and_then(|l| l.max_output_tokens)),
        pick(m.max_context_window_tokens, limits.and_then(|l| l.max_context_window_tokens)),
    )
}

/// Who serves one model call: the client, the model name to put in the request, and the
/// prompt budget when the configuration states one.
pub(crate) struct Route {
    pub client: Arc<dyn ModelClient>,
    pub model: String,
    pub prompt_limit: Option<u64>,
    /// Calls through the Skipper's own model client, billed as the catalogue says; a session's
    /// own provider bills nothing here.
    pub billed: bool,
}

/// Asks the session's client for a fresh token (`providerToken.getToken`) before each request.
struct ClientTokenSource {
    emitter: Arc<Emitter>,
    session_id: String,
    provider_name: String,
}

#[async_trait]
impl TokenSource for ClientTokenSource {
    async fn token(&self) -> Result<Secret, ProviderError> {
        let Some(client) = self.emitter.requester() else {
            return Err(ProviderError::Auth(format!(
                "provider `{}` gets its token from the client, and no client is connected",
                self.provider_name
            )));
        };
        let params = serde_json::json!({ "sessionId": self.session_id, "providerName": self.provider_name });
        let answer = client.request("providerToken.getToken", params).await.map_err(|e| {
            ProviderError::Auth(format!("the client gave no token for provider `{}`: {e}", self.provider_name))
        })?;
        match answer.get("token").and_then(serde_json::Value::as_str) {
            Some(token) if !token.is_empty() => Ok(Secret::new(token)),
            _ => Err(ProviderError::Auth(format!(
                "the client gave an empty token for provider `{}`",
                self.provider_name
            ))),
        }
    }
}

/// What a route needs from the session and the engine.
pub(crate) struct RouteCtx<'a> {
    pub default_client: &'a Arc<dyn ModelClient>,
    pub http: &'a Arc<dyn HttpTransport>,
    pub emitter: &'a Arc<Emitter>,
    pub session_id: &'a str,
    /// The session's own GitHub token (`gitHubToken`): the default client's calls carry it.
    pub github_token: Option<&'a protocol::secret::SecretString>,
}

/// The client and wire model for a call on `model`.
pub(crate) fn route(providers: &SessionProviders, model: &str, ctx: &RouteCtx<'_>) -> Route {
    if let Some((m, p)) = providers.named_model(model) {
        let mut config = provider_config(
            Family { kind: p.r#type, wire_api: p.wire_api, azure: p.azure.as_ref() },
            &p.base_url,
            Credentials {
                api_key: p.api_key.as_ref(),
                bearer: p.bearer_token.as_ref(),
                from_client: p.has_bearer_token_provider,
            },
            p.headers.as_ref(),
            &p.name,
            ctx,
        );
        config.label = format!("provider `{}` at {}", p.name, config.base_url);
        config.max_output_tokens = tokens(m.max_output_tokens);
        let wire = m.wire_model.clone().unwrap_or_else(|| m.id.clone());
        let info = model_info(m);
        return Route {
            client: llm_providers::provider_client(config, ctx.http.clone()),
            model: wire,
            prompt_limit: info.context_window(),
            billed: false,
        };
    }
    if let Some(p) = &providers.single {
        let mut config = provider_config(
            Family { kind: p.r#type, wire_api: p.wire_api, azure: p.azure.as_ref() },
            &p.base_url,
            Credentials {
                api_key: p.api_key.as_ref(),
                bearer: p.bearer_token.as_ref(),
                from_client: p.has_bearer_token_provider,
            },
            p.headers.as_ref(),
            SESSION_PROVIDER_NAME,
            ctx,
        );
        config.max_output_tokens = tokens(p.max_output_tokens);
        // The wire model: the provider's, else the well-known id, else the session's model.
        let wire = p.wire_model.clone().or_else(|| p.model_id.clone()).unwrap_or_else(|| model.to_string());
        return Route {
            client: llm_providers::provider_client(config, ctx.http.clone()),
            model: wire,
            prompt_limit: tokens(p.max_prompt_tokens).or(tokens(p.max_context_window_tokens)),
            billed: false,
        };
    }
    Route {
        client: crate::session_token::WithSessionToken::wrap(ctx.default_client, ctx.github_token),
        model: model.to_string(),
        prompt_limit: None,
        billed: true,
    }
}

struct Family<'a> {
    kind: Option<t::ProviderConfigType>,
    wire_api: Option<t::ProviderConfigWireApi>,
    azure: Option<&'a t::ProviderConfigAzure>,
}

struct Credentials<'a> {
    api_key: Option<&'a protocol::secret::SecretString>,
    bearer: Option<&'a protocol::secret::SecretString>,
    from_client: Option<bool>,
}

fn provider_config(
    family: Family<'_>,
    base_url: &str,
    credentials: Credentials<'_>,
    headers: Option<&std::collections::BTreeMap<String, String>>,
    name: &str,
    ctx: &RouteCtx<'_>,
) -> ProviderConfig {
    let kind = match family.kind {
        Some(t::ProviderConfigType::Azure) => ProviderKind::Azure,
        Some(t::ProviderConfigType::Anthropic) => ProviderKind::Anthropic,
        Some(t::ProviderConfigType::Openai) | None => ProviderKind::OpenAi,
    };
    let mut config = ProviderConfig::new(kind, base_url);
    config.wire_api = match family.wire_api {
        Some(t::ProviderConfigWireApi::Responses) => WireApi::Responses,
        _ => WireApi::Completions,
    };
    config.azure_api_version = family.azure.and_then(|a| a.api_version.clone());
    let nonempty =
        |s: Option<&protocol::secret::SecretString>| s.map(|s| s.expose()).filter(|v| !v.is_empty()).map(Secret::new);
    config.api_key = nonempty(credentials.api_key);
    config.bearer_token = nonempty(credentials.bearer);
    if credentials.from_client == Some(true) {
        config.token_source = Some(Arc::new(ClientTokenSource {
            emitter: ctx.emitter.clone(),
            session_id: ctx.session_id.to_string(),
            provider_name: name.to_string(),
        }));
    }
    config.headers = headers.map(|h| h.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
    config.credential_hint = format!("the apiKey or bearerToken of provider `{name}`");
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> t::NamedProviderConfig {
        t::NamedProviderConfig { name: name.into(), base_url: "http://127.0.0.1:1/v1".into(), ..Default::default() }
    }

    fn model(provider: &str, id: &str) -> t::ProviderModelConfig {
        t::ProviderModelConfig { id: id.into(), provider: provider.into(), ..Default::default() }
    }

    #[test]
    fn registry_rules() {
        let mut p = SessionProviders::new(None, vec![named("alpha")], vec![model("alpha", "sonnet")]).unwrap();
        assert!(p.add(vec![named("a/b")], vec![]).unwrap_err().contains("'/'"));
        assert!(p.add(vec![named("alpha")], vec![]).unwrap_err().contains("already"));
        assert!(p.add(vec![], vec![model("beta", "x")]).unwrap_err().contains("not registered"));
        assert!(p.add(vec![], vec![model("alpha", "sonnet")]).unwrap_err().contains("already"));
        let mut bad = named("gamma");
        bad.base_url = "file:///etc/passwd".into();
        assert!(p.add(vec![bad], vec![]).unwrap_err().contains("http"));
        assert_eq!(p.named.len(), 1, "a failed add changes nothing");

        let mut m = model("beta", "haiku");
        m.name = Some("Haiku".into());
        m.max_prompt_tokens = Some(3072.0);
        let added = p.add(vec![named("beta")], vec![m]).unwrap();
        assert_eq!(added[0].id, "beta/haiku");
        assert_eq!(added[0].name, "Haiku");
        assert_eq!(added[0].context_window(), Some(3072));
        let ids: Vec<_> = p.model_list().into_iter().map(|m| m.id).collect();
        assert_eq!(ids, ["alpha/sonnet", "beta/haiku"]);
    }
}
