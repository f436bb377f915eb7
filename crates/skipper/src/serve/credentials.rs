//! The model credentials `[[tenants]]` name, read at start: GitHub tokens and provider keys
//! from an environment variable or a file, never from the configuration itself. A named source
//! that is missing or empty stops the server with a message that names the source, never the
//! value.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context};
use protocol::secret::SecretString;
use rpc_server::tenancy::{Credentials, UserSpec};

use super::config::{parse_digest, CredentialsConfig, ProviderSettings, TenantConfig};

/// What a tenant's sessions carry when they bring nothing of their own.
pub fn of_tenant(
    t: &TenantConfig,
    defaults: &CredentialsConfig,
    env: &HashMap<String, String>,
) -> anyhow::Result<Credentials> {
    let who = format!("tenant {}", t.name);
    let github_token =
        secret(&who, "github_token", t.github_token_env.as_deref(), t.github_token_file.as_deref(), env)?;
    let provider = t.provider.as_ref().map(|p| provider(&who, p, env)).transpose()?;
    Ok(Credentials { github_token, provider, server_fallback: t.server_fallback.unwrap_or(defaults.server_fallback) })
}

/// The tenant's users, with their tokens' digests and their GitHub tokens.
pub fn users(t: &TenantConfig, env: &HashMap<String, String>) -> anyhow::Result<Vec<UserSpec>> {
    t.users
        .iter()
        .map(|u| {
            let who = format!("user {} of tenant {}", u.name, t.name);
            Ok(UserSpec {
                name: u.name.clone(),
                token_sha256: parse_digest(&u.token_sha256).with_context(|| format!("{who}: token_sha256"))?,
                github_token: secret(
                    &who,
                    "github_token",
                    u.github_token_env.as_deref(),
                    u.github_token_file.as_deref(),
                    env,
                )?,
            })
        })
        .collect()
}

/// `[tenants.provider]` as a session's `provider` would have it.
fn provider(
    who: &str,
    p: &ProviderSettings,
    env: &HashMap<String, String>,
) -> anyhow::Result<protocol::generated::types::ProviderConfig> {
    let who = format!("{who}: provider");
    let api_key = secret(&who, "api_key", p.api_key_env.as_deref(), p.api_key_file.as_deref(), env)?;
    let bearer = secret(&who, "bearer_token", p.bearer_token_env.as_deref(), p.bearer_token_file.as_deref(), env)?;
    // Through the wire shape, so that a wrong `type` or `wire_api` is refused as a client's
    // would be; the secrets go in afterwards and never through a serde_json value.
    let shape = serde_json::json!({
        "type": p.kind,
        "wireApi": p.wire_api,
        "baseUrl": p.base_url,
        "modelId": p.model_id,
        "wireModel": p.wire_model,
        "azure": p.azure_api_version.as_ref().map(|v| serde_json::json!({"apiVersion": v})),
        "maxPromptTokens": p.max_prompt_tokens,
        "maxOutputTokens": p.max_output_tokens,
    });
    let shape = match shape {
        serde_json::Value::Object(map) => map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        other => other,
    };
    let mut config: protocol::generated::types::ProviderConfig =
        serde_json::from_value(shape).with_context(|| who.clone())?;
    config.api_key = api_key;
    config.bearer_token = bearer;
    Ok(config)
}

/// The secret `name` of `who`: from the environment variable `<name>_env` names, or the file
/// `<name>_file` names (one, not both); `None` when neither is configured.
fn secret(
    who: &str,
    name: &str,
    var: Option<&str>,
    file: Option<&Path>,
    env: &HashMap<String, String>,
) -> anyhow::Result<Option<SecretString>> {
    let value = match (var, file) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => bail!("{who}: give {name}_env or {name}_file, not both"),
        (Some(var), None) => match env.get(var) {
            Some(v) => v.clone(),
            None => bail!("{who}: {name}_env names {var}, which is not set"),
        },
        (None, Some(path)) => {
            std::fs::read_to_string(path).with_context(|| format!("{who}: {name}_file {}", path.display()))?
        }
    };
    let value = value.trim();
    if value.is_empty() {
        let source = var.map_or_else(|| file.map(|f| f.display().to_string()).unwrap_or_default(), str::to_string);
        bail!("{who}: {name} from {source} is empty");
    }
    Ok(Some(SecretString::new(value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::config::ServerConfig;

    const DIGEST: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

    fn tenant(extra: &str) -> TenantConfig {
        let text = format!("[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{DIGEST}\"\n{extra}");
        ServerConfig::parse(&text).unwrap().tenants.remove(0)
    }

    #[test]
    fn tokens_come_from_the_named_variable_or_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "gho-from-file\n").unwrap();
        let env = HashMap::from([("ALPHA_GH".to_string(), "gho-from-env".to_string())]);
        let defaults = CredentialsConfig::default();
        let from_env = of_tenant(&tenant("github_token_env = \"ALPHA_GH\"\n"), &defaults, &env).unwrap();
        assert_eq!(from_env.github_token.unwrap().expose(), "gho-from-env");
        assert!(from_env.server_fallback);
        let text = format!("github_token_file = {:?}\nserver_fallback = false\n", file.display().to_string());
        let from_file = of_tenant(&tenant(&text), &defaults, &env).unwrap();
        assert_eq!(from_file.github_token.unwrap().expose(), "gho-from-file");
        assert!(!from_file.server_fallback);
        assert!(of_tenant(&tenant(""), &defaults, &env).unwrap().github_token.is_none());
    }

    #[test]
    fn a_missing_source_is_an_error_that_names_it_and_never_a_value() {
        let env = HashMap::from([("EMPTY".to_string(), " \n".to_string()), ("SET".to_string(), "sekrit".to_string())]);
        let defaults = CredentialsConfig::default();
        for (extra, says) in [
            ("github_token_env = \"UNSET\"\n", "UNSET, which is not set"),
            ("github_token_env = \"EMPTY\"\n", "from EMPTY is empty"),
            ("github_token_file = \"/nonexistent/token\"\n", "/nonexistent/token"),
            ("github_token_env = \"SET\"\ngithub_token_file = \"/x\"\n", "not both"),
        ] {
            let err = format!("{:#}", of_tenant(&tenant(extra), &defaults, &env).unwrap_err());
            assert!(err.contains(says) && err.contains("tenant alpha"), "{err}");
            assert!(!err.contains("sekrit"));
        }
    }

    #[test]
    fn a_provider_is_a_sessions_provider_with_its_key_read_in() {
        let env = HashMap::from([("ALPHA_KEY".to_string(), "sk-alpha".to_string())]);
        let text = "[tenants.provider]\ntype = \"anthropic\"\nbase_url = \"https://llm.example\"\napi_key_env = \"ALPHA_KEY\"\n\
                    model_id = \"claude-sonnet-4.5\"\n";
        let c = of_tenant(&tenant(text), &CredentialsConfig::default(), &env).unwrap();
        let p = c.provider.unwrap();
        assert_eq!(p.base_url, "https://llm.example");
        assert_eq!(p.api_key.unwrap().expose(), "sk-alpha");
        assert_eq!(p.model_id.as_deref(), Some("claude-sonnet-4.5"));
        assert!(matches!(p.r#type, Some(protocol::generated::types::ProviderConfigType::Anthropic)));
        let bad = "[tenants.provider]\ntype = \"cohere\"\nbase_url = \"https://llm.example\"\n";
        assert!(of_tenant(&tenant(bad), &CredentialsConfig::default(), &env).is_err());
    }
}
