//! The Anthropic Messages provider against the scripted fake: route, headers, body, the
//! streamed answer, a tool round trip with thinking blocks, retries and final errors.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use llm_providers::anthropic::AnthropicClient;
use llm_providers::provider::{ProviderConfig, ProviderKind, Secret, TokenSource};
use llm_providers::retry::RetryPolicy;
use llm_providers::transport::ReqwestTransport;
use llm_providers::{
    ChatRequest, ChatResponse, Message, ModelClient, ModelEvent, ProviderError, RetryReason, ToolCall, ToolContent,
    ToolSpec, Usage, UserContent,
};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::fake::{fast_retries, Ending, Fake, Reply};
use crate::{request, retries, text_deltas};

const MESSAGES: &str = "/v1/messages";

fn client(config: ProviderConfig) -> AnthropicClient {
    let http = reqwest::Client::builder().no_proxy().build().expect("http client");
    AnthropicClient::new(config, Arc::new(ReqwestTransport::new(http)))
}

fn provider(fake: &Fake) -> ProviderConfig {
    let mut config = ProviderConfig::new(ProviderKind::Anthropic, &fake.base);
    config.retry = RetryPolicy { max_attempts: 6, auth_retries: 2, ..fast_retries(6) };
    config
}

async fn call(client: &AnthropicClient, req: ChatRequest) -> (Result<ChatResponse, ProviderError>, Vec<ModelEvent>) {
    let (tx, mut rx) = unbounded_channel();
    let result = client.chat(req, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (result, events)
}

/// Anthropic SSE: each event named on its `event:` line and in its `type`.
fn stream(events: &[Value], ending: Ending) -> Reply {
    let events =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default())).collect();
    Reply::Sse { events, split: None, gap: Duration::ZERO, ending }
}

fn message_start(id: &str) -> Value {
    json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "content": [],
        "model": "claude-served", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 30, "output_tokens": 1}}})
}

fn block_start(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn block_delta(index: usize, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_end(stop_reason: &str, output_tokens: u64) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens}}),
        json!({"type": "message_stop"}),
    ]
}

/// A complete text answer, streamed in the given pieces.
fn text_answer(pieces: &[&str]) -> Vec<Value> {
    let mut events = vec![message_start("msg_text"), json!({"type": "ping"})];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.extend(pieces.iter().map(|p| block_delta(0, json!({"type": "text_delta", "text": p}))));
    events.push(block_stop(0));
    events.extend(message_end("end_turn", 5));
    events
}

fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, json!({"type": "error", "error": {"type": kind, "message": message}}))
}

#[tokio::test]
async fn posts_to_v1_messages_with_key_version_and_headers_and_always_streams() {
    let fake = Fake::start().await;
    fake.script(MESSAGES, [stream(&text_answer(&["Hel", "lo"]), Ending::Eof)]);
    let mut config = provider(&fake);
    config.api_key = Some(Secret::new("sk-ant-test"));
    config.headers = vec![("X-Team".into(), "blue".into())];
    config.wire_model = Some("claude-wire".into());
    let mut req = request(false);
    req.extra_headers = vec![("x-extra".into(), "1".into())];
    req.tools = vec![ToolSpec {
        name: "view".into(),
        description: "View a file".into(),
        parameters: Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
    }]
    .into();
    let (result, events) = call(&client(config), req).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies.len(), 1);
    assert_eq!(resp.replies[0].content, "Hello");
    assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("stop"));
    assert_eq!(resp.usage, Usage { input_tokens: 30, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0 });
    assert_eq!(resp.api_call_id.as_deref(), Some("msg_text"));
    assert_eq!(resp.model.as_deref(), Some("claude-served"));
    assert!(resp.request_bytes > 0);
    // The session didn't ask for streaming; the deltas are sent all the same.
    assert_eq!(text_deltas(&events, 0), "Hello");
    assert!(events.iter().any(|e| matches!(e, ModelEvent::Bytes { .. })));

    let sent = fake.requests_to(MESSAGES);
    assert_eq!(sent.len(), 1);
    let sent = &sent[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-team"), Some("blue"));
    assert_eq!(sent.header("x-extra"), Some("1"));
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-wire",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "system prompt"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
            "tools": [{"name": "view", "description": "View a file",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "temperature": 0,
            "stream": true,
        })
    );
}

#[tokio::test]
async fn a_bearer_token_wins_over_the_key_and_a_configured_version_wins() {
    let fake = Fake::start().await;
    fake.script(MESSAGES, [stream(&text_answer(&["ok"]), Ending::Eof)]);
    let mut config = provider(&fake);
    config.api_key = Some(Secret::new("sk-ant-key"));
    config.bearer_token = Some(Secret::new("bearer-1"));
    config.headers = vec![("anthropic-version".into(), "2099-01-01".into())];
    config.max_output_tokens = Some(1000);
    let (result, _) = call(&client(config), request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "ok");
    let sent = &fake.requests_to(MESSAGES)[0];
    assert_eq!(sent.header("authorization"), Some("Bearer bearer-1"));
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(sent.header("anthropic-version"), Some("2099-01-01"));
    assert_eq!(sent.body["max_tokens"], 1000);
    assert_eq!(sent.body["model"], "test-model", "the session's model without a wire model");
}

#[tokio::test]
async fn tool_round_trip_sends_tool_use_results_and_thinking_back() {
    let fake = Fake::start().await;
    let args = json!({"path": "/tmp/a.txt", "view_range": [1, 20]}).to_string();
    let (head, tail) = args.split_at(11);
    let mut first = vec![
        message_start("msg_1"),
        block_start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
        block_delta(0, json!({"type": "thinking_delta", "thinking": "I should read the file."})),
        block_delta(0, json!({"type": "signature_delta", "signature": "EqQBCkYIBxgCKkB+/="})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        block_delta(1, json!({"type": "text_delta", "text": "Reading it."})),
        block_stop(1),
        block_start(2, json!({"type": "tool_use", "id": "toolu_01", "name": "view", "input": {}})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": head})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": tail})),
        block_stop(2),
        block_start(3, json!({"type": "tool_use", "id": "toolu_02", "name": "list_bash", "input": {}})),
        block_stop(3),
    ];
    first.extend(message_end("tool_use", 50));
    fake.script(
        MESSAGES,
        [stream(&first, Ending::Eof).split_every(17), stream(&text_answer(&["It says hi."]), Ending::Eof)],
    );
    let client = client(provider(&fake));

    let mut req = request(true);
    let (result, events) = call(&client, req.clone()).await;
    let reply = result.expect("first reply").replies.remove(0);
    assert_eq!(reply.content, "Reading it.");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.reasoning.as_deref(), Some("I should read the file."));
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall { id: "toolu_01".into(), name: "view".into(), arguments: args.clone() },
            ToolCall { id: "toolu_02".into(), name: "list_bash".into(), arguments: "{}".into() },
        ]
    );
    assert!(events.contains(&ModelEvent::ReasoningDelta { text: "I should read the file.".into() }));
    let second_tool = events.iter().find_map(|e| match e {
        ModelEvent::ToolCallDelta { choice: 0, index: 1, id, name, .. } => Some((id.clone(), name.clone())),
        _ => None,
    });
    assert_eq!(second_tool, Some((Some("toolu_02".into()), Some("list_bash".into()))));
    let thinking =
        json!({"type": "thinking", "thinking": "I should read the file.", "signature": "EqQBCkYIBxgCKkB+/="});
    assert_eq!(
        reply.reasoning_blocks.as_ref().map(|r| (r.provider.as_str(), r.blocks.clone())),
        Some(("anthropic", vec![thinking.clone()]))
    );

    req.history.push(Message::Assistant {
        content: Some(reply.content.clone()),
        tool_calls: reply.tool_calls.clone(),
        reasoning: reply.reasoning_blocks.clone().map(Box::new),
    });
    req.history.push(Message::Tool { tool_call_id: "toolu_01".into(), content: ToolContent::Text("hi".into()) });
    req.history.push(Message::Tool { tool_call_id: "toolu_02".into(), content: ToolContent::Text("no shells".into()) });
    req.history.push(Message::User { content: UserContent::Text("what does it say?".into()) });
    let (result, _) = call(&client, req).await;
    assert_eq!(result.expect("second reply").replies[0].content, "It says hi.");

    let sent = fake.requests_to(MESSAGES);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "content": [
                thinking,
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_01", "name": "view", "input": {"path": "/tmp/a.txt", "view_range": [1, 20]}},
                {"type": "tool_use", "id": "toolu_02", "name": "list_bash", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "hi"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "no shells"},
                {"type": "text", "text": "what does it say?"},
            ]},
        ])
    );
}

#[tokio::test]
async fn a_json_message_answer_is_accepted_with_its_request_id() {
    let fake = Fake::start().await;
    let message = json!({"id": "msg_json", "type": "message", "role": "assistant", "model": "claude-served",
        "content": [{"type": "text", "text": "plain"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1}});
    fake.script(MESSAGES, [Reply::json(200, message).with_header("request-id", "req_011")]);
    let (result, _) = call(&client(provider(&fake)), request(false)).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies[0].content, "plain");
    assert_eq!(resp.provider_call_id.as_deref(), Some("req_011"));
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
async fn overload_answers_and_overload_events_are_retried_with_fresh_tokens() {
    let fake = Fake::start().await;
    let overloaded_event = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    fake.script(
        MESSAGES,
        [
            anthropic_error(529, "overloaded_error", "Overloaded"),
            stream(&[message_start("msg_x"), json!({"type": "ping"}), overloaded_event], Ending::Eof),
            stream(&text_answer(&["finally"]), Ending::Eof),
        ],
    );
    let mut config = provider(&fake);
    config.token_source = Some(Arc::new(Rotating(AtomicU32::new(0))));
    let (result, events) = call(&client(config), request(true)).await;
    assert_eq!(result.expect("third try answers").replies[0].content, "finally");
    assert_eq!(
        retries(&events),
        vec![(0, Some(529), RetryReason::ServerError), (1, Some(529), RetryReason::ServerError)]
    );
    let auths: Vec<_> =
        fake.requests().iter().map(|r| r.header("authorization").unwrap_or_default().to_string()).collect();
    assert_eq!(auths, ["Bearer token-1", "Bearer token-2", "Bearer token-3"]);
}

#[tokio::test]
async fn an_error_event_after_output_is_final() {
    let fake = Fake::start().await;
    let mut events = text_answer(&["partial"]);
    events.truncate(4);
    events.push(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    fake.script(MESSAGES, [stream(&events, Ending::Eof), stream(&text_answer(&["again"]), Ending::Eof)]);
    let (result, events) = call(&client(provider(&fake)), request(true)).await;
    match result {
        Err(ProviderError::Truncated(why)) => assert!(why.contains("overloaded_error: Overloaded"), "{why}"),
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert_eq!(fake.requests().len(), 1, "shown text is not shown twice");
    assert_eq!(text_deltas(&events, 0), "partial");
}

#[tokio::test]
async fn persistent_401_ends_with_an_authentication_error_naming_the_provider_not_the_key() {
    let fake = Fake::start().await;
    let denied = || anthropic_error(401, "authentication_error", "invalid x-api-key sk-ant-secret-123");
    fake.script(MESSAGES, [denied(), denied(), denied(), stream(&text_answer(&["never"]), Ending::Eof)]);
    let mut config = provider(&fake);
    config.api_key = Some(Secret::new("sk-ant-secret-123"));
    config.credential_hint = "COPILOT_PROVIDER_API_KEY".into();
    let (result, events) = call(&client(config), request(true)).await;
    let err = result.expect_err("gives up");
    assert_eq!(fake.requests().len(), 3, "the first try and two retries");
    assert_eq!(retries(&events).len(), 2);
    assert_eq!(err.status_code(), Some(401));
    assert_eq!(err.error_type(), "authentication");
    let text = err.to_string();
    assert!(text.contains(&fake.base) && text.contains("COPILOT_PROVIDER_API_KEY"), "{text}");
    assert!(text.contains("invalid x-api-key"), "the server's message is kept: {text}");
    assert!(!text.contains("sk-ant-secret-123"), "{text}");
}

#[tokio::test]
async fn a_500_is_retried_five_times_then_reported_as_a_query_error() {
    let fake = Fake::start().await;
    fake.script(MESSAGES, (0..7).map(|_| anthropic_error(500, "api_error", "Internal server error")));
    let (result, events) = call(&client(provider(&fake)), request(true)).await;
    let err = result.expect_err("gives up");
    assert_eq!(fake.requests().len(), 6);
    assert_eq!(retries(&events).len(), 5);
    assert_eq!((err.status_code(), err.error_type()), (Some(500), "query"));
    assert!(err.to_string().contains("Internal server error"), "{err}");
}

#[tokio::test]
async fn a_400_is_final_and_keeps_the_request_id() {
    let fake = Fake::start().await;
    fake.script(
        MESSAGES,
        [anthropic_error(400, "invalid_request_error", "messages: roles must alternate")
            .with_header("request-id", "req_bad")],
    );
    let (result, _) = call(&client(provider(&fake)), request(true)).await;
    match result {
        Err(ProviderError::Http { status: 400, message, provider_call_id, .. }) => {
            assert!(message.contains("roles must alternate"), "{message}");
            assert_eq!(provider_call_id.as_deref(), Some("req_bad"));
        }
        other => panic!("expected HTTP 400, got {other:?}"),
    }
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_dropped_stream_is_retried_until_output_was_shown() {
    let fake = Fake::start().await;
    let mut partial = text_answer(&["part"]);
    partial.truncate(4);
    fake.script(
        MESSAGES,
        [
            // Nothing shown yet: retried.
            stream(&[message_start("m1")], Ending::Abort),
            // Text shown, then the body just ends: final.
            stream(&partial, Ending::Eof),
            stream(&text_answer(&["never"]), Ending::Eof),
        ],
    );
    let (result, events) = call(&client(provider(&fake)), request(true)).await;
    match result {
        Err(ProviderError::Truncated(why)) => assert!(why.contains("without message_stop"), "{why}"),
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(retries(&events), vec![(0, None, RetryReason::Network)]);
    assert_eq!(text_deltas(&events, 0), "part");
}

#[tokio::test]
async fn cancel_during_a_slow_stream() {
    let fake = Fake::start().await;
    let mut events = text_answer(&["a", "b"]);
    events.truncate(5);
    let slow = match stream(&events, Ending::Trickle) {
        Reply::Sse { events, split, ending, .. } => {
            Reply::Sse { events, split, gap: Duration::from_millis(30), ending }
        }
        other => other,
    };
    fake.script(MESSAGES, [slow]);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let client = client(provider(&fake));
    let call = tokio::spawn({
        let cancel = cancel.clone();
        async move { client.chat(request(true), tx, cancel).await }
    });
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(ModelEvent::TextDelta { .. })) => break,
            Ok(Some(_)) => continue,
            other => panic!("stream never started: {other:?}"),
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), call).await.expect("returns promptly").expect("task");
    assert!(matches!(result, Err(ProviderError::Cancelled)), "{result:?}");
    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
    let deadline = Instant::now() + Duration::from_secs(3);
    while !fake.stream_dropped() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(fake.stream_dropped(), "server still streaming after cancel");
}

#[tokio::test]
async fn list_models_answers_the_configured_models() {
    let fake = Fake::start().await;
    let mut config = provider(&fake);
    config.models = vec![llm_providers::provider::configured_model("claude-x", "Claude X", Some(1000), None, None)];
    let models = client(config).list_models().await.expect("models");
    assert_eq!(models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["claude-x"]);
    assert!(fake.requests().is_empty(), "no network for the catalogue");
}
