//! CopilotClient against a scripted HTTP fake.

mod anthropic;
mod byok_chat;
mod fake;
mod responses;

use std::time::{Duration, Instant};

use fake::{finish, role, text, tool_args, tool_start, usage, Ending, Fake, Reply};
use llm_providers::copilot::CopilotConfig;
use llm_providers::{
    ChatRequest, ChatResponse, History, Initiator, Message, ModelClient, ModelEvent, ProviderError, RetryReason,
    ToolCall, ToolContent, ToolSpec, Usage, UserContent,
};
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

const CHAT: &str = "/chat/completions";

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        github_token: None,
        system: "system prompt".into(),
        history: History::new(vec![Message::User { content: UserContent::Text("hello".into()) }]),
        tools: Default::default(),
        stream,
        initiator: Initiator::User,
        interaction_id: "interaction-1".into(),
        session_id: "session-1".into(),
        extra_headers: vec![],
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
        purpose: Default::default(),
        reasoning_effort: None,
    }
}

async fn chat(fake: &Fake, req: ChatRequest) -> (Result<ChatResponse, ProviderError>, Vec<ModelEvent>) {
    let (tx, mut rx) = unbounded_channel();
    let result = fake.client().chat(req, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (result, events)
}

fn text_deltas(events: &[ModelEvent], want_choice: usize) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta { choice, text } if *choice == want_choice => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[ModelEvent]) -> Vec<(u32, Option<u16>, RetryReason)> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retry { attempt, status, reason, .. } => Some((*attempt, *status, *reason)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streaming_text_reply_is_assembled() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [Reply::sse(&[
            role(0),
            text(0, "Hel"),
            text(0, ""),
            text(0, "lo, "),
            text(0, "world"),
            finish(0, "stop"),
            usage(120, 7, 100),
        ])],
    );
    let (result, events) = chat(&fake, request(true)).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies.len(), 1);
    assert_eq!(resp.replies[0].content, "Hello, world");
    assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("stop"));
    assert_eq!(text_deltas(&events, 0), resp.replies[0].content);
    // Empty content pieces produce no delta.
    let deltas = events.iter().filter(|e| matches!(e, ModelEvent::TextDelta { .. })).count();
    assert_eq!(deltas, 3);
    assert_eq!(
        resp.usage,
        Usage { input_tokens: 120, output_tokens: 7, cache_read_tokens: 100, cache_write_tokens: 0 }
    );
    assert_eq!(resp.api_call_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(resp.provider_call_id.as_deref(), Some("req-stream"));
    assert_eq!(resp.model.as_deref(), Some("test-model"));

    let totals: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Bytes { total } => Some(*total),
            _ => None,
        })
        .collect();
    assert!(!totals.is_empty());
    assert!(totals.windows(2).all(|w| w[0] < w[1]), "{totals:?}");
}

#[tokio::test]
async fn tool_call_arguments_split_across_chunks() {
    let long_path = "x".repeat(450);
    let args_a = json!({"path": long_path}).to_string();
    let args_b = json!({"command": "ls -la", "description": "list"}).to_string();
    let mut chunks = vec![role(0), tool_start(0, 0, "call_a", "view")];
    chunks.extend(args_a.as_bytes().chunks(200).map(|c| tool_args(0, 0, std::str::from_utf8(c).expect("ascii"))));
    chunks.push(tool_start(0, 1, "call_b", "bash"));
    chunks.extend(args_b.as_bytes().chunks(200).map(|c| tool_args(0, 1, std::str::from_utf8(c).expect("ascii"))));
    chunks.push(finish(0, "tool_calls"));

    let fake = Fake::start().await;
    // Network pieces of 13 bytes cut events and lines anywhere.
    fake.script(CHAT, [Reply::sse(&chunks).split_every(13)]);
    let (result, events) = chat(&fake, request(true)).await;
    let resp = result.expect("reply");
    assert_eq!(
        resp.replies[0].tool_calls,
        vec![
            ToolCall { id: "call_a".into(), name: "view".into(), arguments: args_a.clone() },
            ToolCall { id: "call_b".into(), name: "bash".into(), arguments: args_b.clone() },
        ]
    );
    assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("tool_calls"));

    let mut streamed = String::new();
    let mut first = None;
    for e in &events {
        if let ModelEvent::ToolCallDelta { choice: 0, index: 0, id, name, arguments } = e {
            if first.is_none() {
                first = Some((id.clone(), name.clone()));
            }
            streamed.push_str(arguments);
        }
    }
    assert_eq!(first, Some((Some("call_a".into()), Some("view".into()))));
    assert_eq!(streamed, args_a);
}

#[tokio::test]
async fn two_streamed_choices_are_two_replies() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [Reply::sse(&[
            text(0, "I'll look."),
            finish(0, "stop"),
            tool_start(1, 0, "call_1", "view"),
            tool_args(1, 0, "{\"path\":\"a\"}"),
            finish(1, "tool_calls"),
        ])],
    );
    let (result, events) = chat(&fake, request(true)).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies.len(), 2);
    assert_eq!(resp.replies[0].content, "I'll look.");
    assert!(resp.replies[0].tool_calls.is_empty());
    assert_eq!(resp.replies[1].content, "");
    assert_eq!(resp.replies[1].tool_calls[0].name, "view");
    assert!(events.iter().any(|e| matches!(e, ModelEvent::ToolCallDelta { choice: 1, .. })));
}

#[tokio::test]
async fn non_streaming_reply_with_two_choices() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [Reply::json(
            200,
            json!({
                "id": "chatcmpl-ns", "object": "chat.completion", "model": "test-model",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "text first"}, "finish_reason": "stop"},
                    {"index": 1, "message": {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_9", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"x\"}"}}
                    ]}, "finish_reason": "tool_calls"}
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
            }),
        )],
    );
    let (result, events) = chat(&fake, request(false)).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies.len(), 2);
    assert_eq!(resp.replies[0].content, "text first");
    assert_eq!(resp.replies[1].content, "");
    assert_eq!(
        resp.replies[1].tool_calls,
        vec![ToolCall { id: "call_9".into(), name: "grep".into(), arguments: "{\"pattern\":\"x\"}".into() }]
    );
    assert_eq!(resp.usage.input_tokens, 11);
    assert_eq!(resp.usage.output_tokens, 3);
    assert_eq!(resp.api_call_id.as_deref(), Some("chatcmpl-ns"));
    assert_eq!(resp.provider_call_id.as_deref(), Some("req-123"));
    assert!(events.is_empty(), "non-streaming calls send no progress: {events:?}");

    let body = &fake.requests_to(CHAT)[0].body;
    assert!(body.get("stream").is_none());
    assert!(body.get("stream_options").is_none());
}

#[tokio::test]
async fn tolerant_stream_parsing() {
    // CRLF, `data:` without a space, comments, an empty-choices chunk and no [DONE].
    let raw = format!(
        ": hello\r\n\r\ndata:{}\r\n\r\ndata: {}\r\n\r\ndata: {}\r\n\r\ndata: {}",
        text(0, "a"),
        json!({"id": "chatcmpl-1", "choices": []}),
        text(0, "b"),
        finish(0, "stop"),
    );
    let fake = Fake::start().await;
    fake.script(CHAT, [Reply::raw_sse(&raw, 5)]);
    let (result, _) = chat(&fake, request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "ab");
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [
            Reply::json(429, json!({"error": {"message": "rate limited", "type": "x", "code": "y"}}))
                .with_header("retry-after", "0"),
            Reply::sse(&[text(0, "ok"), finish(0, "stop")]),
        ],
    );
    let (result, events) = chat(&fake, request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "ok");
    assert_eq!(retries(&events), vec![(0, Some(429), RetryReason::RateLimit)]);
    let retry = events.iter().find_map(|e| match e {
        ModelEvent::Retry { delay_ms, message, .. } => Some((*delay_ms, message.clone())),
        _ => None,
    });
    let (delay_ms, message) = retry.expect("retry event");
    assert_eq!(delay_ms, 0);
    assert!(message.contains("rate limited") && message.contains("429"), "{message}");

    let calls = fake.requests_to(CHAT);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].header("x-initiator"), Some("user"));
    // A retry is not a new user request.
    assert_eq!(calls[1].header("x-initiator"), Some("agent"));
    assert_eq!(calls[0].body, calls[1].body);
}

#[tokio::test]
async fn server_errors_exhaust_attempts() {
    let fake = Fake::start().await;
    fake.script(CHAT, (0..5).map(|_| Reply::json(500, json!({"error": {"message": "boom"}}))));
    let (result, events) = chat(&fake, request(true)).await;
    match result {
        Err(ProviderError::Http { status: 500, message, provider_call_id, .. }) => {
            assert!(message.contains("boom") && message.contains("500"), "{message}");
            assert_eq!(provider_call_id.as_deref(), Some("req-123"));
        }
        other => panic!("expected HTTP 500, got {other:?}"),
    }
    assert_eq!(fake.requests_to(CHAT).len(), 3);
    assert_eq!(
        retries(&events),
        vec![(0, Some(500), RetryReason::ServerError), (1, Some(500), RetryReason::ServerError)]
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let fake = Fake::start().await;
    fake.script(CHAT, [Reply::json(400, json!({"error": {"message": "bad model"}})), Reply::sse(&[finish(0, "stop")])]);
    let (result, events) = chat(&fake, request(true)).await;
    let err = result.expect_err("400 is final");
    assert_eq!(err.status_code(), Some(400));
    assert_eq!(err.error_type(), "query");
    assert!(err.to_string().contains("bad model"), "{err}");
    assert_eq!(fake.requests_to(CHAT).len(), 1);
    assert!(retries(&events).is_empty());
}

#[tokio::test]
async fn stream_dropped_before_output_is_retried() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [Reply::sse_ending(&[role(0)], Ending::Abort), Reply::sse(&[text(0, "second try"), finish(0, "stop")])],
    );
    let (result, events) = chat(&fake, request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "second try");
    assert_eq!(retries(&events), vec![(0, None, RetryReason::Network)]);
    assert_eq!(fake.requests_to(CHAT).len(), 2);
}

#[tokio::test]
async fn stream_that_keeps_dying_is_truncated() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [
            Reply::sse_ending(&[role(0)], Ending::Abort),
            Reply::sse_ending(&[role(0)], Ending::Eof),
            Reply::sse_ending(&[], Ending::Eof),
        ],
    );
    let (result, events) = chat(&fake, request(true)).await;
    assert!(matches!(result, Err(ProviderError::Truncated(_))), "{result:?}");
    assert_eq!(fake.requests_to(CHAT).len(), 3);
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn stream_dropped_after_output_is_not_retried() {
    let fake = Fake::start().await;
    fake.script(
        CHAT,
        [Reply::sse_ending(&[text(0, "partial")], Ending::Abort), Reply::sse(&[text(0, "again"), finish(0, "stop")])],
    );
    let (result, events) = chat(&fake, request(true)).await;
    match result {
        // The abort reaches the client as a broken connection, not a clean end of body.
        Err(ProviderError::Truncated(why)) => assert!(why.contains("connection failed"), "{why}"),
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert_eq!(fake.requests_to(CHAT).len(), 1);
    assert_eq!(text_deltas(&events, 0), "partial");
}

#[tokio::test]
async fn finish_without_done_then_eof_is_complete() {
    let fake = Fake::start().await;
    fake.script(CHAT, [Reply::sse_ending(&[text(0, "fine"), finish(0, "stop")], Ending::Eof)]);
    let (result, _) = chat(&fake, request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "fine");
}

#[tokio::test]
async fn cancel_during_slow_stream() {
    let fake = Fake::start().await;
    let slow = Reply::sse_ending(&[text(0, "a"), text(0, "b"), text(0, "c")], Ending::Trickle)
        .with_gap(Duration::from_millis(30));
    fake.script(CHAT, [slow]);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let client = fake.client();
    let call = tokio::spawn({
        let cancel = cancel.clone();
        async move { client.chat(request(true), tx, cancel).await }
    });
    // Wait for streaming to have started.
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
    // The connection is closed, so the server notices the client went away.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !fake.stream_dropped() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(fake.stream_dropped(), "server still streaming after cancel");
}

#[tokio::test]
async fn cancel_while_waiting_for_headers() {
    let fake = Fake::start().await;
    fake.script(CHAT, [Reply::Hang]);
    let (tx, _rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let result = tokio::time::timeout(Duration::from_secs(2), fake.client().chat(request(true), tx, cancel))
        .await
        .expect("returns promptly");
    assert!(matches!(result, Err(ProviderError::Cancelled)), "{result:?}");
}

#[tokio::test]
async fn base_url_is_discovered_from_the_account() {
    let fake = Fake::start().await;
    let capi = format!("{}/capi/", fake.base);
    fake.script(
        "/copilot_internal/user",
        [Reply::json(
            200,
            json!({"login": "me", "copilot_plan": "individual_pro", "endpoints": {"api": capi, "telemetry": "x"}}),
        )],
    );
    fake.script(
        "/capi/chat/completions",
        [Reply::sse(&[text(0, "hi"), finish(0, "stop")]), Reply::sse(&[finish(0, "stop")])],
    );
    // Read twice: once before the first call (which API the model is on), once listed.
    let catalogue = || Reply::json(200, json!({"data": [{"id": "m1"}]}));
    fake.script("/capi/models", [catalogue(), catalogue()]);

    let mut config = CopilotConfig::new(Some("test-token".into()), "9.9.9");
    config.github_api_url = fake.base.clone();
    config.retry = fake::fast_retries(2);
    let client = fake::client_with(config);
    let cancel = CancellationToken::new();
    assert_eq!(client.base_url(&cancel).await.expect("base"), format!("{}/capi", fake.base));

    let (tx, _rx) = unbounded_channel();
    let resp = client.chat(request(true), tx.clone(), cancel.clone()).await.expect("reply");
    assert_eq!(resp.replies[0].content, "hi");
    client.chat(request(true), tx, cancel).await.expect("second reply");
    let models = client.list_models().await.expect("models");
    assert_eq!(models[0].id, "m1");

    let lookups = fake.requests_to("/copilot_internal/user");
    assert_eq!(lookups.len(), 1, "the discovered base is cached");
    assert_eq!(lookups[0].header("authorization"), Some("Bearer test-token"));
    assert_eq!(fake.requests_to("/capi/chat/completions").len(), 2);
    assert_eq!(fake.requests_to("/capi/models").len(), 2, "the catalogue is read once before the calls");
}

#[tokio::test]
async fn a_warm_up_reads_the_catalogue_the_first_call_then_goes_by() {
    let fake = Fake::start().await;
    fake.script("/models", [Reply::json(200, json!({"data": [{"id": "test-model"}]}))]);
    fake.script(CHAT, [Reply::sse(&[text(0, "hi"), finish(0, "stop")])]);
    let client = fake.client();
    client.warm_up().await;
    assert_eq!(fake.requests_to("/models").len(), 1, "the warm-up read the catalogue");
    let (tx, _rx) = unbounded_channel();
    let resp = client.chat(request(true), tx, CancellationToken::new()).await.expect("reply");
    assert_eq!(resp.replies[0].content, "hi");
    assert_eq!(fake.requests_to("/models").len(), 1, "the call did not read it again");
}

#[tokio::test]
async fn bad_credentials_on_account_lookup() {
    let fake = Fake::start().await;
    fake.script("/copilot_internal/user", [Reply::json(401, json!({"message": "Bad credentials"}))]);
    let mut config = CopilotConfig::new(Some("wrong".into()), "9.9.9");
    config.github_api_url = fake.base.clone();
    config.retry = fake::fast_retries(3);
    let client = fake::client_with(config);
    let err = client.list_models().await.expect_err("401");
    assert_eq!(err.error_type(), "authentication");
    assert!(err.to_string().contains("Bad credentials"), "{err}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn missing_token_is_an_auth_error() {
    let fake = Fake::start().await;
    let mut config = CopilotConfig::new(None, "9.9.9");
    config.api_url = Some(fake.base.clone());
    let (tx, _rx) = unbounded_channel();
    let err = fake::client_with(config).chat(request(true), tx, CancellationToken::new()).await.expect_err("no token");
    assert!(matches!(err, ProviderError::Auth(_)), "{err:?}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn model_list_tolerates_sparse_entries() {
    let fake = Fake::start().await;
    fake.script(
        "/models",
        [Reply::json(
            200,
            json!({"data": [
                {"id": "claude-sonnet-4.5", "name": "Claude Sonnet 4.5", "capabilities": {"supports": {"vision": true}, "limits": {"max_context_window_tokens": 128000}}},
                {"id": "bare"}
            ]}),
        )],
    );
    let models = fake.client().list_models().await.expect("models");
    assert_eq!(models.len(), 2);
    assert_eq!(models[0].name, "Claude Sonnet 4.5");
    assert_eq!(models[0].context_window(), Some(128000));
    assert_eq!(models[1].name, "bare");
    assert_eq!(models[1].capabilities, json!({}));
    let req = &fake.requests_to("/models")[0];
    assert_eq!(req.method, "GET");
    assert_eq!(req.header("authorization"), Some("Bearer test-token"));
}

#[tokio::test]
async fn request_headers_and_body_shape() {
    let fake = Fake::start().await;
    fake.script(CHAT, [Reply::sse(&[finish(0, "stop")]), Reply::sse(&[finish(0, "stop")])]);

    let mut req = request(true);
    req.history.push(Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "view".into(),
            arguments: "{\"path\":\"a.txt\"}".into(),
        }],
        reasoning: None,
    });
    req.history.push(Message::Tool { tool_call_id: "call_1".into(), content: ToolContent::Text("contents".into()) });
    req.initiator = Initiator::Agent;
    req.extra_headers = vec![("x-custom".into(), "yes".into())];
    req.tools = vec![ToolSpec {
        name: "view".into(),
        description: "View a file".into(),
        parameters: std::sync::Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
    }]
    .into();
    chat(&fake, req).await.0.expect("agent call");
    chat(&fake, request(true)).await.0.expect("user call");

    let calls = fake.requests_to(CHAT);
    let (agent, user) = (&calls[0], &calls[1]);
    assert_eq!(agent.method, "POST");
    for (name, value) in [
        ("authorization", "Bearer test-token"),
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("openai-intent", "conversation-agent"),
        ("x-initiator", "agent"),
        ("x-interaction-type", "conversation-agent"),
        ("x-interaction-id", "interaction-1"),
        ("x-client-session-id", "session-1"),
        ("editor-version", "copilot/9.9.9"),
        ("copilot-integration-id", "copilot-developer-cli"),
        ("x-custom", "yes"),
    ] {
        assert_eq!(agent.header(name), Some(value), "{name}");
    }
    assert!(agent.header("user-agent").is_some_and(|ua| ua.starts_with("copilot/9.9.9 ")));
    assert!(agent.header("x-github-api-version").is_some());
    assert_eq!(user.header("x-initiator"), Some("user"));
    assert_eq!(user.header("x-interaction-type"), Some("conversation-user"));

    let body = &agent.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["top_p"], 0.95);
    assert_eq!(body["snippy"], json!({"enabled": false}));
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "view", "description": "View a file",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "system prompt"},
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "view", "arguments": "{\"path\":\"a.txt\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "contents"}
        ])
    );
    assert!(user.body.get("tools").is_none(), "tools omitted when empty");
}
