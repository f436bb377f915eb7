//! OpenAI-compatible and Azure Chat Completions providers against the scripted fake: routes,
//! credentials, wire model, retries and the errors a session ends with.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use llm_providers::openai::ChatCompletionsClient;
use llm_providers::provider::{ProviderConfig, ProviderKind, Secret, TokenSource};
use llm_providers::transport::ReqwestTransport;
use llm_providers::{ModelClient, ProviderError};
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::fake::{fast_retries, Fake, Reply};
use crate::request;

fn client(config: ProviderConfig) -> ChatCompletionsClient {
    let http = reqwest::Client::builder().no_proxy().build().expect("http client");
    ChatCompletionsClient::new(config, Arc::new(ReqwestTransport::new(http)))
}

fn provider(kind: ProviderKind, base: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(kind, base);
    config.retry = llm_providers::retry::RetryPolicy { max_attempts: 6, auth_retries: 2, ..fast_retries(6) };
    config
}

fn completion(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "cmpl-9", "model": "served-model", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
    )
}

async fn call(client: &ChatCompletionsClient, stream: bool) -> Result<llm_providers::ChatResponse, ProviderError> {
    let (tx, _rx) = unbounded_channel();
    client.chat(request(stream), tx, CancellationToken::new()).await
}

#[tokio::test]
async fn openai_compatible_posts_to_chat_completions_with_a_bearer_key() {
    let fake = Fake::start().await;
    fake.script("/v1/chat/completions", [completion("hi")]);
    let mut config = provider(ProviderKind::OpenAi, &format!("{}/v1/", fake.base));
    config.api_key = Some(Secret::new("sk-test"));
    config.headers = vec![("X-Team".into(), "blue".into())];
    config.wire_model = Some("llama3.2".into());
    let resp = call(&client(config), false).await.expect("reply");
    assert_eq!(resp.replies[0].content, "hi");
    assert_eq!(resp.usage.input_tokens, 5);

    let sent = fake.requests_to("/v1/chat/completions");
    assert_eq!(sent.len(), 1);
    let sent = &sent[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("x-team"), Some("blue"));
    assert_eq!(sent.body["model"], "llama3.2", "the wire model replaces the session's");
    assert!(sent.body.get("snippy").is_none(), "CAPI-only fields stay off other endpoints");
    assert!(sent.body.get("stream").is_none(), "no streaming unless the session asked for it");
    assert_eq!(sent.body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn azure_uses_deployment_routes_and_the_api_key_header() {
    let fake = Fake::start().await;
    fake.script("/openai/deployments/gpt-4o-dep/chat/completions", [completion("a")]);
    fake.script("/openai/v1/chat/completions", [completion("b")]);
    let mut config = provider(ProviderKind::Azure, &fake.base);
    config.api_key = Some(Secret::new("azure-key"));
    config.wire_model = Some("gpt-4o-dep".into());
    config.azure_api_version = Some("2024-10-21".into());
    assert_eq!(call(&client(config.clone()), false).await.expect("deployment route").replies[0].content, "a");
    config.azure_api_version = None;
    assert_eq!(call(&client(config), false).await.expect("v1 route").replies[0].content, "b");

    let requests = fake.requests();
    assert_eq!(requests[0].path, "/openai/deployments/gpt-4o-dep/chat/completions");
    assert_eq!(requests[0].query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(requests[1].path, "/openai/v1/chat/completions");
    for r in &requests {
        assert_eq!(r.header("api-key"), Some("azure-key"));
        assert_eq!(r.header("authorization"), None);
    }
}

struct Rotating(AtomicU32);

#[async_trait]
impl TokenSource for Rotating {
    async fn token(&self) -> Result<Secret, ProviderError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Secret::new(format!("token-{n}")))
    }
}

#[tokio::test]
async fn a_401_is_retried_twice_with_a_fresh_token_each_time() {
    let fake = Fake::start().await;
    let denied = || Reply::json(401, json!({"error": {"message": "token expired"}}));
    fake.script("/chat/completions", [denied(), denied(), completion("finally")]);
    let mut config = provider(ProviderKind::OpenAi, &fake.base);
    config.api_key = Some(Secret::new("static-key"));
    config.token_source = Some(Arc::new(Rotating(AtomicU32::new(0))));
    let resp = call(&client(config), false).await.expect("third try answers");
    assert_eq!(resp.replies[0].content, "finally");
    let auths: Vec<_> =
        fake.requests().iter().map(|r| r.header("authorization").unwrap_or_default().to_string()).collect();
    assert_eq!(auths, ["Bearer token-1", "Bearer token-2", "Bearer token-3"]);
}

#[tokio::test]
async fn persistent_401_ends_with_an_authentication_error_naming_the_provider_not_the_key() {
    let fake = Fake::start().await;
    let denied = || Reply::json(401, json!({"error": {"message": "invalid api key sk-live-123456"}}));
    fake.script("/chat/completions", [denied(), denied(), denied(), completion("never")]);
    let mut config = provider(ProviderKind::OpenAi, &fake.base);
    config.api_key = Some(Secret::new("sk-live-123456"));
    config.credential_hint = "COPILOT_PROVIDER_API_KEY".into();
    let err = call(&client(config), false).await.expect_err("gives up");
    assert_eq!(fake.requests().len(), 3, "the first try and two retries");
    assert_eq!(err.status_code(), Some(401));
    assert_eq!(err.error_type(), "authentication");
    let text = err.to_string();
    assert!(text.contains(&fake.base) && text.contains("COPILOT_PROVIDER_API_KEY"), "{text}");
    assert!(!text.contains("sk-live-123456"), "{text}");
}

#[tokio::test]
async fn a_500_is_retried_five_times_then_reported() {
    let fake = Fake::start().await;
    let boom = || Reply::json(500, json!({"error": {"message": "boom"}}));
    fake.script("/chat/completions", (0..7).map(|_| boom()));
    let err = call(&client(provider(ProviderKind::OpenAi, &fake.base)), false).await.expect_err("gives up");
    assert_eq!(fake.requests().len(), 6);
    assert_eq!((err.status_code(), err.error_type()), (Some(500), "query"));
}

#[tokio::test]
async fn streaming_is_asked_for_only_when_the_session_streams() {
    let fake = Fake::start().await;
    fake.script(
        "/chat/completions",
        [Reply::sse(&[crate::fake::role(0), crate::fake::text(0, "streamed"), crate::fake::finish(0, "stop")])],
    );
    let resp = call(&client(provider(ProviderKind::OpenAi, &fake.base)), true).await.expect("reply");
    assert_eq!(resp.replies[0].content, "streamed");
    let sent = &fake.requests()[0];
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.header("authorization"), None, "no credential configured, none sent (Ollama)");
}
