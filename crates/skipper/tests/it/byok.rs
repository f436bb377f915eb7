//! Bring-your-own-key providers through the binary: a session's `provider`, named `providers`
//! with `models`, tokens from the client, the `COPILOT_PROVIDER_*` runner, and failures.

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

use crate::conversation::T;
use crate::harness::{with_timeout, RpcClient, TestEnv};

fn header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"][name].as_str()
}

/// Requests the fake received at `path`.
fn requests_to(fake: &FakeModel, path: &str) -> Vec<Value> {
    fake.requests().into_iter().filter(|r| r["path"].as_str() == Some(path)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn session_provider_gets_the_calls_with_its_key_headers_and_wire_model() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::text("2"));
        let c = &env.client;
        let sid = c
            .create_session(json!({
                "model": "claude-sonnet-4.5",
                "provider": {
                    "type": "openai",
                    "baseUrl": format!("{}/v1", env.fake.url()),
                    "apiKey": "sk-session-key",
                    "wireModel": "llama3.2",
                    "headers": {"X-Team": "blue"}
                }
            }))
            .await;
        c.send(&sid, "What is 1+1?").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(c.events_of_type(&sid, "assistant.message")[0]["data"]["content"], json!("2"));
        let sent = requests_to(&env.fake, "/v1/chat/completions");
        assert_eq!(sent.len(), 1, "{:?}", env.fake.requests());
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer sk-session-key"));
        assert_eq!(header(&sent[0], "x-team"), Some("blue"));
        assert_eq!(sent[0]["body"]["model"], json!("llama3.2"));
        assert!(sent[0]["body"].get("snippy").is_none());
        assert!(header(&sent[0], "copilot-integration-id").is_none(), "no Copilot headers to another provider");
        let turn = &c.events_of_type(&sid, "assistant.turn_start")[0];
        assert_eq!(turn["data"]["model"], json!("claude-sonnet-4.5"), "events show the session's model name");
        // The key stays out of everything the session writes.
        let log = std::fs::read_to_string(env.dirs.session_dir(&sid).join("events.jsonl")).unwrap();
        assert!(!log.contains("sk-session-key"));
        c.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn named_models_route_to_their_provider_and_switching_moves_the_calls() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_replies([Reply::text("from alpha"), Reply::text("from delta")]);
        let c = &env.client;
        let base = format!("{}/v1", env.fake.url());
        let sid = c
            .create_session(json!({
                "model": "alpha/haiku",
                "providers": [
                    {"name": "alpha", "type": "openai", "baseUrl": base, "apiKey": "alpha-secret", "headers": {"X-Provider": "alpha"}},
                    {"name": "delta", "type": "openai", "baseUrl": base, "bearerToken": "delta-bearer", "headers": {"X-Provider": "delta"}}
                ],
                "models": [
                    {"id": "sonnet", "provider": "alpha", "wireModel": "byok-gpt-4o"},
                    {"id": "haiku", "provider": "alpha", "wireModel": "byok-gpt-4o-mini"},
                    {"id": "turbo", "provider": "delta", "wireModel": "byok-gpt-4-turbo", "maxPromptTokens": 5000}
                ]
            }))
            .await;
        c.send(&sid, "first").await;
        c.wait_for_nth_event(&sid, "session.idle", 1, T).await;
        let switched = c.ok("session.model.switchTo", json!({"sessionId": sid, "modelId": "delta/turbo"})).await;
        assert_eq!(switched["modelId"], json!("delta/turbo"));
        c.send(&sid, "second").await;
        c.wait_for_nth_event(&sid, "session.idle", 2, T).await;

        let sent = requests_to(&env.fake, "/v1/chat/completions");
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0]["body"]["model"], json!("byok-gpt-4o-mini"));
        assert_eq!(header(&sent[0], "x-provider"), Some("alpha"));
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer alpha-secret"));
        assert_eq!(sent[1]["body"]["model"], json!("byok-gpt-4-turbo"));
        assert_eq!(header(&sent[1], "x-provider"), Some("delta"));
        assert_eq!(header(&sent[1], "authorization"), Some("Bearer delta-bearer"));
        let usage = c.events_of_type(&sid, "session.usage_info");
        assert_eq!(usage.last().unwrap()["data"]["tokenLimit"], json!(5000), "the model's configured limit");
        c.assert_schema_clean();
    })
    .await;
}

/// Answers every `providerToken.getToken` request with `token-<n>`, recording the params.
fn answer_token_requests(client: &std::sync::Arc<RpcClient>) -> tokio::task::JoinHandle<()> {
    let me = client.clone();
    tokio::spawn(async move {
        let mut answered = 0usize;
        loop {
            let Ok(request) = me
                .try_wait_until(Duration::from_secs(3600), |c| {
                    c.inbound().into_iter().filter(|m| m["method"] == json!("providerToken.getToken")).nth(answered)
                })
                .await
            else {
                return;
            };
            answered += 1;
            let token = format!("token-{answered}-for-{}", request["params"]["providerName"].as_str().unwrap_or("?"));
            me.send_json(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"token": token}})).await;
        }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_provider_is_asked_before_every_request() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_replies([Reply::text("one"), Reply::text("two")]);
        let c = &env.client;
        let answerer = answer_token_requests(c);
        let sid = c
            .create_session(json!({
                "providers": [{"name": "mi", "type": "openai", "baseUrl": format!("{}/v1", env.fake.url()),
                               "apiKey": "static-key-not-used", "hasBearerTokenProvider": true}],
                "models": [{"id": "default", "provider": "mi", "wireModel": "byok-gpt-4o"}],
                "model": "mi/default"
            }))
            .await;
        for (n, prompt) in ["go", "again"].into_iter().enumerate() {
            c.send(&sid, prompt).await;
            c.wait_for_nth_event(&sid, "session.idle", n + 1, T).await;
        }
        answerer.abort();
        let sent = requests_to(&env.fake, "/v1/chat/completions");
        assert_eq!(sent.len(), 2);
        let auths: Vec<_> = sent.iter().map(|r| header(r, "authorization").unwrap_or_default().to_string()).collect();
        assert_eq!(auths, ["Bearer token-1-for-mi", "Bearer token-2-for-mi"], "a fresh token per request");
        let asked: Vec<Value> =
            c.inbound().into_iter().filter(|m| m["method"] == json!("providerToken.getToken")).collect();
        assert_eq!(asked[0]["params"], json!({"sessionId": sid, "providerName": "mi"}));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_key_ends_the_turn_with_an_authentication_error_after_two_retries() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_replies((0..3).map(|_| Reply::error(401, None, "invalid key sk-bad-key-1234")));
        let c = &env.client;
        let base = format!("{}/v1", env.fake.url());
        let sid = c
            .create_session(json!({"provider": {"type": "openai", "baseUrl": base, "apiKey": "sk-bad-key-1234"}}))
            .await;
        c.send(&sid, "hello").await;
        let err = c.wait_for_event(&sid, "session.error", T).await;
        c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(env.fake.requests().len(), 3, "the first try and two retries");
        assert_eq!(err["data"]["errorType"], json!("authentication"));
        assert_eq!(err["data"]["statusCode"], json!(401));
        let message = err["data"]["message"].as_str().unwrap();
        assert!(message.contains(&base), "{message}");
        for ev in c.events(&sid) {
            assert!(!ev.to_string().contains("sk-bad-key-1234"), "the key leaked into {ev}");
        }
        assert!(!env.skipper.stderr_text().contains("sk-bad-key-1234"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_provider_settings_are_rejected_with_invalid_params() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let cases = [
            json!({"providers": [{"name": "a/b", "baseUrl": "http://127.0.0.1:1"}]}),
            json!({"providers": [{"name": "a", "baseUrl": "http://127.0.0.1:1"}], "models": [{"id": "m", "provider": "zzz"}]}),
            json!({"provider": {"baseUrl": "not a url", "apiKey": "sk-hidden-in-error"}}),
            json!({"provider": {"type": "gemini", "baseUrl": "http://127.0.0.1:1"}}),
        ];
        for params in cases {
            let err = c.call("session.create", params.clone()).await.expect_err("rejected");
            assert_eq!(err.code, -32602, "{params}: {err:?}");
            assert!(!err.message.contains("sk-hidden-in-error"), "{}", err.message);
        }
        let list = c.ok("session.list", json!({})).await;
        assert_eq!(list["sessions"], json!([]), "nothing was created");
    })
    .await;
}

fn run_with_provider(fake_url: &str, home: &std::path::Path, workdir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_skipper"))
        .args(["-p", "say hi", "--allow-all-tools"])
        .current_dir(workdir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_HOME", home.join(".copilot"))
        // No GitHub token at all, and no Copilot API: only the provider.
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", format!("{fake_url}/v1"))
        .env("COPILOT_PROVIDER_API_KEY", "sk-runner")
        .env("COPILOT_PROVIDER_MODEL_ID", "llama3.2")
        .env("COPILOT_PROVIDER_HEADERS", "X-Run: ci")
        .env("SKIPPER_LOG", "debug")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runner_uses_the_environment_provider_without_a_github_token() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("hi from llama"));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || run_with_provider(&url, &h, &w)).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("hi from llama"), "{stdout}");
    let sent = requests_to(&fake, "/v1/chat/completions");
    assert_eq!(sent.len(), 1, "{:?}", fake.requests());
    assert_eq!(header(&sent[0], "authorization"), Some("Bearer sk-runner"));
    assert_eq!(header(&sent[0], "x-run"), Some("ci"));
    assert_eq!(sent[0]["body"]["model"], json!("llama3.2"));
    assert!(!stderr.contains("sk-runner"), "the key must not reach the debug log");
}

#[tokio::test(flavor = "multi_thread")]
async fn providers_added_at_runtime_are_listed_selectable_and_used() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::text("runtime answer"));
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        let added = c
            .ok(
                "session.provider.add",
                json!({
                    "sessionId": sid,
                    "providers": [{"name": "rt", "type": "openai", "baseUrl": format!("{}/v1", env.fake.url()),
                                   "apiKey": "runtime-secret", "headers": {"X-SDK-Provider": "runtime"}}],
                    "models": [{"provider": "rt", "id": "m1", "name": "Runtime Model", "wireModel": "wire-m1",
                                "capabilities": {"limits": {"max_prompt_tokens": 3072}}}]
                }),
            )
            .await;
        assert_eq!(added["models"][0]["id"], json!("rt/m1"));
        assert_eq!(added["models"][0]["name"], json!("Runtime Model"));
        assert_eq!(added["models"][0]["capabilities"]["limits"]["max_prompt_tokens"], json!(3072));
        let listed = c.ok("session.model.list", json!({"sessionId": sid})).await;
        let ids: Vec<&str> = listed["list"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
        assert!(ids.contains(&"rt/m1") && ids.contains(&"claude-sonnet-4.5"), "BYOK and catalogue models: {ids:?}");
        let dup = c
            .call("session.provider.add", json!({"sessionId": sid, "models": [{"provider": "rt", "id": "m1"}]}))
            .await
            .expect_err("a second model with the same id");
        assert_eq!(dup.code, -32602, "{dup:?}");

        c.ok("session.model.switchTo", json!({"sessionId": sid, "modelId": "rt/m1"})).await;
        assert_eq!(c.ok("session.model.getCurrent", json!({"sessionId": sid})).await["modelId"], json!("rt/m1"));
        c.send(&sid, "hi").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let sent = requests_to(&env.fake, "/v1/chat/completions");
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["body"]["model"], json!("wire-m1"));
        assert_eq!(header(&sent[0], "x-sdk-provider"), Some("runtime"));
        c.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_endpoint_is_opt_in_and_describes_the_backend() {
    with_timeout(60, async {
        let fake = FakeModel::start().await.unwrap();
        let dirs = crate::harness::Dirs::new();
        // Off by default: credentials are not handed out.
        let plain = crate::harness::Skipper::spawn(&fake.url(), dirs.clone(), Default::default()).await;
        let c = plain.client();
        c.connect().await;
        let sid = c.create_session(json!({})).await;
        let err = c.call("session.provider.getEndpoint", json!({"sessionId": sid})).await.expect_err("disabled");
        assert!(err.message.contains("COPILOT_ALLOW_GET_PROVIDER_ENDPOINT"), "{err:?}");

        let opts = crate::harness::Options {
            extra_env: vec![("COPILOT_ALLOW_GET_PROVIDER_ENDPOINT".into(), "true".into())],
            ..Default::default()
        };
        let allowed = crate::harness::Skipper::spawn(&fake.url(), dirs.clone(), opts).await;
        let c = allowed.client();
        c.connect().await;
        let byok = c
            .create_session(json!({"provider": {"type": "openai", "wireApi": "completions",
                "baseUrl": "https://api.example.test/v1", "apiKey": "byok-secret", "headers": {"X-Custom-Header": "byok-yes"}}}))
            .await;
        let e = c.ok("session.provider.getEndpoint", json!({"sessionId": byok})).await;
        assert_eq!(e["type"], json!("openai"));
        assert_eq!(e["wireApi"], json!("completions"));
        assert_eq!(e["baseUrl"], json!("https://api.example.test/v1"));
        assert_eq!(e["apiKey"], json!("byok-secret"));
        assert_eq!(e["headers"]["X-Custom-Header"], json!("byok-yes"));
        assert!(e.get("sessionToken").is_none());

        let capi = c.create_session(json!({})).await;
        let e = c.ok("session.provider.getEndpoint", json!({"sessionId": capi})).await;
        assert_eq!(e["baseUrl"], json!(fake.url()));
        assert_eq!(e["apiKey"], json!("fake"));
        assert_eq!(e["headers"]["Authorization"], json!("Bearer fake"));
        assert!(e["headers"]["User-Agent"].as_str().unwrap().to_lowercase().contains("copilot"));
        assert!(e["headers"]["Copilot-Integration-Id"].is_string() && e["headers"]["X-GitHub-Api-Version"].is_string());
    })
    .await;
}

/// One streamed tool round trip through the provider `provider(fake_url)` describes; returns
/// the bodies the fake received at `path`.
async fn tool_round_trip(provider: impl Fn(&str) -> Value, path: &str) -> Vec<Value> {
    let env = TestEnv::start().await;
    let note = env.workdir().join("note.txt");
    std::fs::write(&note, "the note says 42\n").unwrap();
    env.fake.push_replies([
        Reply::tool_call("view", json!({"path": note.to_string_lossy()})),
        Reply::text("The note says 42."),
    ]);
    let c = &env.client;
    let sid = c.create_session(json!({"provider": provider(&env.fake.url()), "streaming": true})).await;
    let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
    c.send(&sid, "What does the note say?").await;
    c.wait_for_event(&sid, "session.idle", T).await;
    approver.abort();
    assert_eq!(c.count(&sid, "session.error"), 0, "{:?}", c.events_of_type(&sid, "session.error"));
    let messages = c.events_of_type(&sid, "assistant.message");
    assert_eq!(messages.last().unwrap()["data"]["content"], json!("The note says 42."));
    let deltas: String = c
        .events_of_type(&sid, "assistant.message_delta")
        .iter()
        .filter_map(|d| d["data"]["deltaContent"].as_str().map(str::to_string))
        .collect();
    assert_eq!(deltas, "The note says 42.", "streamed deltas add up to the message");
    let done = c.events_of_type(&sid, "tool.execution_complete");
    assert_eq!(done[0]["data"]["success"], json!(true), "{done:?}");
    c.assert_schema_clean();
    requests_to(&env.fake, path).into_iter().map(|r| r["body"].clone()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_responses_wire_api_carries_a_tool_round_trip() {
    with_timeout(60, async {
        let provider = |url: &str| json!({"type": "openai", "wireApi": "responses", "baseUrl": format!("{url}/v1"), "apiKey": "k"});
        let bodies = tool_round_trip(provider, "/v1/responses").await;
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0]["stream"], json!(true));
        assert_eq!(bodies[0]["store"], json!(false));
        let input = bodies[1]["input"].as_array().unwrap();
        let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
        assert!(kinds.contains(&"function_call") && kinds.contains(&"function_call_output"), "{kinds:?}");
        let output = input.iter().find(|i| i["type"] == json!("function_call_output")).unwrap();
        assert!(output["output"].as_str().unwrap().contains("the note says 42"), "{output}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_azure_completions_api_carries_a_tool_round_trip() {
    with_timeout(60, async {
        let provider = |url: &str| {
            json!({"type": "azure", "baseUrl": url, "apiKey": "azure-key", "wireModel": "gpt-4o-dep",
                   "azure": {"apiVersion": "2024-10-21"}})
        };
        let bodies =
            tool_round_trip(provider, "/openai/deployments/gpt-4o-dep/chat/completions?api-version=2024-10-21").await;
        assert_eq!(bodies.len(), 2);
        let tools = crate::conversation::tool_messages(&bodies[1]);
        assert!(tools[0].1.contains("the note says 42"), "{tools:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_messages_api_carries_a_tool_round_trip() {
    with_timeout(60, async {
        let provider =
            |url: &str| json!({"type": "anthropic", "baseUrl": url, "apiKey": "ant-key", "wireModel": "claude-x"});
        let bodies = tool_round_trip(provider, "/v1/messages").await;
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0]["model"], json!("claude-x"));
        assert_eq!(bodies[0]["stream"], json!(true));
        let messages = bodies[1]["messages"].as_array().unwrap();
        let blocks: Vec<&Value> = messages.iter().flat_map(|m| m["content"].as_array().unwrap().iter()).collect();
        let tool_use = blocks.iter().find(|b| b["type"] == json!("tool_use")).expect("tool_use sent back");
        let result = blocks.iter().find(|b| b["type"] == json!("tool_result")).expect("tool_result");
        assert_eq!(result["tool_use_id"], tool_use["id"]);
        assert!(result.to_string().contains("the note says 42"), "{result}");
    })
    .await;
}

/// The persisted events of one scripted conversation, with what differs between runs (ids,
/// times, call ids, sizes and durations of the wire) taken out.
async fn event_shape(provider: impl Fn(&str) -> Value) -> Vec<Value> {
    let env = TestEnv::start().await;
    env.fake.push_replies([Reply::tool_call("glob", json!({"pattern": "*.md"})), Reply::text("Done: 4.")]);
    let c = &env.client;
    let sid = c.create_session(json!({"provider": provider(&env.fake.url()), "streaming": true})).await;
    let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
    c.send(&sid, "2+2?").await;
    c.wait_for_event(&sid, "session.idle", T).await;
    approver.abort();
    c.get_messages(&sid)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let mut data = e["data"].clone();
            if let Some(d) = data.as_object_mut() {
                for volatile in [
                    "sessionId",
                    "startTime",
                    "messageId",
                    "interactionId",
                    "toolCallId",
                    "requestId",
                    "apiCallId",
                    "providerCallId",
                    "duration",
                    "inputTokens",
                    "outputTokens",
                    "cost",
                    "timestamp",
                    "context",
                    "copilotVersion",
                    "toolRequests",
                    "reasoningOpaque",
                    "encryptedContent",
                    "transformedContent",
                    "originatingMessageId",
                ] {
                    d.remove(volatile);
                }
            }
            let text = json!({"type": e["type"], "data": data}).to_string();
            serde_json::from_str(&text.replace(&*env.workdir().to_string_lossy(), "${workdir}")).unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_wire_api_yields_the_same_session_events() {
    with_timeout(120, async {
        let completions = event_shape(|url| json!({"type": "openai", "baseUrl": format!("{url}/v1")})).await;
        let responses = event_shape(|url| json!({"type": "openai", "wireApi": "responses", "baseUrl": url})).await;
        let anthropic = event_shape(|url| json!({"type": "anthropic", "baseUrl": url})).await;
        let types: Vec<&Value> = completions.iter().map(|e| &e["type"]).collect();
        assert!(types.contains(&&json!("tool.execution_complete")), "{types:?}");
        assert_eq!(completions, responses, "chat completions vs responses");
        assert_eq!(completions, anthropic, "chat completions vs anthropic");
    })
    .await;
}
