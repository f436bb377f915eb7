//! The process-wide bring-your-own-key provider from `COPILOT_PROVIDER_*`, as the original CLI
//! reads it. With one, no GitHub token is needed: every session's model calls go there unless
//! the session configures its own provider.

use std::collections::HashMap;
use std::process::Command;

use anyhow::{bail, Context};
use llm_providers::provider::{configured_model, ProviderConfig, ProviderKind, Secret, WireApi};

/// Variables holding credentials: never passed on to tool subprocesses.
pub const SECRET_VARS: &[&str] =
    &["COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_BEARER_TOKEN", "COPILOT_PROVIDER_HEADERS"];

/// The provider the environment configures, if `COPILOT_PROVIDER_BASE_URL` is set. `model` is
/// the session default (`--model` / `COPILOT_MODEL`), used when no model id is given here.
pub fn from_env(env: &HashMap<String, String>, model: Option<&str>) -> anyhow::Result<Option<ProviderConfig>> {
    let get = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let Some(base_url) = get("COPILOT_PROVIDER_BASE_URL") else {
        return Ok(None);
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!("COPILOT_PROVIDER_BASE_URL must be an http(s) URL");
    }
    let kind = match get("COPILOT_PROVIDER_TYPE").map(str::to_ascii_lowercase).as_deref() {
        None | Some("openai") => ProviderKind::OpenAi,
        Some("azure") => ProviderKind::Azure,
        Some("anthropic") => ProviderKind::Anthropic,
        Some(other) => bail!("COPILOT_PROVIDER_TYPE `{other}` is not one of openai, azure, anthropic"),
    };
    let mut config = ProviderConfig::new(kind, base_url);
    config.wire_api = match get("COPILOT_PROVIDER_WIRE_API").map(str::to_ascii_lowercase).as_deref() {
        None | Some("completions") => WireApi::Completions,
        Some("responses") => WireApi::Responses,
        Some(other) => bail!("COPILOT_PROVIDER_WIRE_API `{other}` is not one of completions, responses"),
    };
    match get("COPILOT_PROVIDER_TRANSPORT") {
        None | Some("http") => {}
        Some(other) => tracing::warn!(transport = other, "only the http provider transport is supported; using http"),
    }
    config.api_key = match (get("COPILOT_PROVIDER_API_KEY"), get("COPILOT_PROVIDER_API_KEY_COMMAND")) {
        (Some(key), _) => Some(Secret::new(key)),
        (None, Some(command)) => Some(key_from_command(command)?),
        (None, None) => None,
    };
    config.bearer_token = get("COPILOT_PROVIDER_BEARER_TOKEN").map(Secret::new);
    config.azure_api_version = get("COPILOT_PROVIDER_AZURE_API_VERSION").map(str::to_string);
    config.headers = get("COPILOT_PROVIDER_HEADERS").map(parse_headers).transpose()?.unwrap_or_default();
    let model_id = get("COPILOT_PROVIDER_MODEL_ID").map(str::to_string);
    config.wire_model = get("COPILOT_PROVIDER_WIRE_MODEL").map(str::to_string).or_else(|| model_id.clone());
    config.max_prompt_tokens = number(env, "COPILOT_PROVIDER_MAX_PROMPT_TOKENS")?;
    config.max_output_tokens = number(env, "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS")?;
    config.credential_hint = if config.bearer_token.is_some() {
        "COPILOT_PROVIDER_BEARER_TOKEN".into()
    } else {
        "COPILOT_PROVIDER_API_KEY (or COPILOT_PROVIDER_API_KEY_COMMAND)".into()
    };
    if let Some(id) = model_id.as_deref().or(model).or(config.wire_model.as_deref()) {
        config.models = vec![configured_model(id, id, config.max_prompt_tokens, config.max_output_tokens, None)];
    }
    Ok(Some(config))
}

/// The model sessions start on when nothing else names one.
pub fn default_model(env: &HashMap<String, String>) -> Option<String> {
    ["COPILOT_PROVIDER_MODEL_ID", "COPILOT_PROVIDER_WIRE_MODEL"]
        .iter()
        .find_map(|k| env.get(*k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()))
}

fn number(env: &HashMap<String, String>, name: &str) -> anyhow::Result<Option<u64>> {
    match env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).with_context(|| format!("{name} must be a whole number")),
    }
}

/// `"Name: value"` lines (a newline or a literal `\n` between them).
fn parse_headers(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    text.replace("\\n", "\n")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| match line.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
            // The line may hold a secret: name the problem, not the content.
            _ => bail!("COPILOT_PROVIDER_HEADERS: each line must be `Name: value`"),
        })
        .collect()
}

/// Runs `COPILOT_PROVIDER_API_KEY_COMMAND` through the shell; its trimmed output is the key.
fn key_from_command(command: &str) -> anyhow::Result<Secret> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running COPILOT_PROVIDER_API_KEY_COMMAND")?;
    if !out.status.success() {
        bail!("COPILOT_PROVIDER_API_KEY_COMMAND failed ({})", out.status);
    }
    let key = String::from_utf8(out.stdout).context("COPILOT_PROVIDER_API_KEY_COMMAND printed non-UTF-8 output")?;
    let key = key.trim();
    if key.is_empty() {
        bail!("COPILOT_PROVIDER_API_KEY_COMMAND printed nothing");
    }
    Ok(Secret::new(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn nothing_without_a_base_url() {
        assert!(from_env(&env(&[("COPILOT_PROVIDER_API_KEY", "k")]), None).unwrap().is_none());
    }

    #[test]
    fn reads_every_variable() {
        let c = from_env(
            &env(&[
                ("COPILOT_PROVIDER_BASE_URL", "https://x.openai.azure.com/"),
                ("COPILOT_PROVIDER_TYPE", "azure"),
                ("COPILOT_PROVIDER_API_KEY", "k1"),
                ("COPILOT_PROVIDER_AZURE_API_VERSION", "2024-10-21"),
                ("COPILOT_PROVIDER_HEADERS", "X-A: 1\\nX-B:two words"),
                ("COPILOT_PROVIDER_MODEL_ID", "gpt-4o"),
                ("COPILOT_PROVIDER_WIRE_MODEL", "my-deployment"),
                ("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "64000"),
                ("COPILOT_PROVIDER_MAX_OUTPUT_TOKENS", "4096"),
            ]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.kind, ProviderKind::Azure);
        assert_eq!(c.base_url, "https://x.openai.azure.com");
        assert_eq!(c.api_key.as_ref().map(Secret::expose), Some("k1"));
        assert_eq!(c.azure_api_version.as_deref(), Some("2024-10-21"));
        assert_eq!(c.headers, vec![("X-A".into(), "1".into()), ("X-B".into(), "two words".into())]);
        assert_eq!(c.wire_model.as_deref(), Some("my-deployment"));
        assert_eq!((c.max_prompt_tokens, c.max_output_tokens), (Some(64000), Some(4096)));
        assert_eq!(c.models[0].id, "gpt-4o");
        assert_eq!(c.models[0].context_window(), Some(64000));
    }

    #[test]
    fn key_command_and_bad_values() {
        let c = from_env(
            &env(&[
                ("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:11434/v1"),
                ("COPILOT_PROVIDER_API_KEY_COMMAND", "echo from-cmd"),
            ]),
            Some("llama3.2"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.api_key.as_ref().map(Secret::expose), Some("from-cmd"));
        assert_eq!(c.models[0].id, "llama3.2");
        let bad = |pairs: &[(&str, &str)]| {
            let mut all = vec![("COPILOT_PROVIDER_BASE_URL", "http://h")];
            all.extend_from_slice(pairs);
            from_env(&env(&all), None).unwrap_err().to_string()
        };
        assert!(bad(&[("COPILOT_PROVIDER_TYPE", "gemini")]).contains("COPILOT_PROVIDER_TYPE"));
        assert!(bad(&[("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "lots")]).contains("whole number"));
        let header_err = bad(&[("COPILOT_PROVIDER_HEADERS", "secret-without-colon")]);
        assert!(!header_err.contains("secret-without-colon"), "{header_err}");
        assert!(bad(&[("COPILOT_PROVIDER_API_KEY_COMMAND", "exit 3")]).contains("failed"));
        assert!(from_env(&env(&[("COPILOT_PROVIDER_BASE_URL", "ftp://h")]), None).is_err());
    }
}
