//! The OpenAI Responses client against the scripted fake: routes for OpenAI and both Azure
//! forms, credentials, the body, streamed and whole answers, a tool round trip carrying the
//! reasoning back, retries, dropped streams and cancellation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_providers::provider::{ProviderConfig, ProviderKind, Secret, WireApi};
use llm_providers::responses::ResponsesClient;
use llm_providers::transport::ReqwestTransport;
use llm_providers::{
    ChatRequest, ChatResponse, Message, ModelClient, ModelEvent, ProviderError, RetryReason, ToolCall, ToolContent,
    ToolSpec,
};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::fake::{fast_retries, Ending, Fake, Reply};
use crate::request;

fn client(config: ProviderConfig) -> ResponsesClient {
    let http = reqwest::Client::builder().no_proxy().build().expect("http client");
    ResponsesClient::new(config, Arc::new(ReqwestTransport::new(http)))
}

fn provider(kind: ProviderKind, base: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(kind, base);
    config.wire_api = WireApi::Responses;
    config.retry = llm_providers::retry::RetryPolicy { max_attempts: 6, auth_retries: 2, ..fast_retries(6) };
    config
}

async fn call(client: &ResponsesClient, req: ChatRequest) -> (Result<ChatResponse, ProviderError>, Vec<ModelEvent>) {
    let (tx, mut rx) = unbounded_channel();
    let result = client.chat(req, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (result, events)
}

/// A non-streaming `response` object saying `text`.
fn response_json(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "resp_json", "object": "response", "status": "completed", "model": "served-model",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14,
                      "input_tokens_details": {"cached_tokens": 8}}}),
    )
    .with_header("x-request-id", "req-openai-1")
}

/// Events as OpenAI frames them, each with its `sequence_number`.
fn frames(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let mut e = e.clone();
            e["sequence_number"] = json!(n);
            format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default())
        })
        .collect()
}

fn stream(events: &[Value], ending: Ending) -> Reply {
    Reply::Sse { events: frames(events), split: None, gap: Duration::ZERO, ending }
}

fn created(id: &str) -> Value {
    json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}})
}

fn completed(id: &str, output: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": id, "status": "completed", "model": "gpt-5",
        "output": output, "usage": {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52,
        "input_tokens_details": {"cached_tokens": 16}}}})
}

fn text_events(id: &str, text: &str) -> Vec<Value> {
    let message = json!({"type": "message", "id": "msg_t", "role": "assistant",
                         "content": [{"type": "output_text", "text": text, "annotations": []}]});
    vec![
        created(id),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_t", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_t", "output_index": 0, "content_index": 0, "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": message.clone()}),
        completed(id, json!([message])),
    ]
}

fn reasoning_item() -> Value {
    json!({"id": "rs_abc", "type": "reasoning",
           "summary": [{"type": "summary_text", "text": "I should list the files."}],
           "encrypted_content": "gAAAAB-opaque-reasoning-state"})
}

/// Reasoning, then two parallel function calls.
fn tool_call_events() -> Vec<Value> {
    let call = |n: u32, name: &str, args: &str| {
        json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
               "name": name, "arguments": args, "status": "completed"})
    };
    vec![
        created("resp_tools"),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_abc", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_abc", "output_index": 0,
               "summary_index": 0, "delta": "I should list "}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_abc", "output_index": 0,
               "summary_index": 0, "delta": "the files."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": call(1, "bash", "")}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": call(2, "view", "")}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"command\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 2, "delta": "{\"path\":\"a.txt\"}"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "\"ls\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"command\":\"ls\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 2, "arguments": "{\"path\":\"a.txt\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call(1, "bash", "{\"command\":\"ls\"}")}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": call(2, "view", "{\"path\":\"a.txt\"}")}),
        completed(
            "resp_tools",
            json!([reasoning_item(), call(1, "bash", "{\"command\":\"ls\"}"), call(2, "view", "{\"path\":\"a.txt\"}")]),
        ),
    ]
}

#[tokio::test]
async fn openai_posts_to_responses_with_the_key_headers_and_the_cli_body() {
    let fake = Fake::start().await;
    fake.script("/v1/responses", [response_json("hi")]);
    let mut config = provider(ProviderKind::OpenAi, &format!("{}/v1/", fake.base));
    config.api_key = Some(Secret::new("sk-test"));
    config.headers = vec![("X-Team".into(), "blue".into())];
    config.wire_model = Some("gpt-5-mini".into());
    config.max_output_tokens = Some(4096);
    let mut req = request(false);
    req.extra_headers = vec![("x-trace".into(), "t-1".into())];
    req.tools = vec![ToolSpec {
        name: "bash".into(),
        description: "Run a command".into(),
        parameters: Arc::new(json!({"type": "object", "properties": {"command": {"type": "string"}}})),
    }]
    .into();
    let (result, _) = call(&client(config), req).await;
    let resp = result.expect("reply");
    assert_eq!(resp.replies[0].content, "hi");
    assert_eq!(resp.replies[0].finish_reason.as_deref(), Some("stop"));
    assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.cache_read_tokens), (11, 3, 8));
    assert_eq!(resp.api_call_id.as_deref(), Some("resp_json"));
    assert_eq!(resp.provider_call_id.as_deref(), Some("req-openai-1"));
    assert!(resp.request_bytes > 0);

    let sent = fake.requests_to("/v1/responses");
    assert_eq!(sent.len(), 1);
    let sent = &sent[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.query, None);
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-team"), Some("blue"));
    assert_eq!(sent.header("x-trace"), Some("t-1"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-5-mini",
            "instructions": "system prompt",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}],
            "tools": [{"type": "function", "name": "bash", "description": "Run a command",
                       "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}],
            "reasoning": {"summary": "auto"},
            "prompt_cache_key": "session-1",
            "store": false,
            "stream": false,
            "include": ["reasoning.encrypted_content"],
            "parallel_tool_calls": true,
            "max_output_tokens": 4096
        })
    );
}

#[tokio::test]
async fn azure_uses_the_versioned_and_the_v1_routes_with_the_api_key_header() {
    let fake = Fake::start().await;
    fake.script("/openai/responses", [response_json("a")]);
    fake.script("/openai/v1/responses", [response_json("b")]);
    let mut config = provider(ProviderKind::Azure, &fake.base);
    config.api_key = Some(Secret::new("azure-key"));
    config.wire_model = Some("gpt-5-deployment".into());
    config.azure_api_version = Some("2025-04-01-preview".into());
    let (a, _) = call(&client(config.clone()), request(false)).await;
    assert_eq!(a.expect("versioned route").replies[0].content, "a");
    config.azure_api_version = None;
    let (b, _) = call(&client(config), request(false)).await;
    assert_eq!(b.expect("v1 route").replies[0].content, "b");

    let requests = fake.requests();
    assert_eq!(requests[0].path, "/openai/responses");
    assert_eq!(requests[0].query.as_deref(), Some("api-version=2025-04-01-preview"));
    assert_eq!(requests[1].path, "/openai/v1/responses");
    assert_eq!(requests[1].query, None);
    for r in &requests {
        assert_eq!(r.header("api-key"), Some("azure-key"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.body["model"], "gpt-5-deployment", "the deployment is named in the body");
    }
}

#[tokio::test]
async fn a_streamed_reply_arrives_as_deltas_whatever_the_cuts() {
    let fake = Fake::start().await;
    fake.script("/responses", [Reply::raw_sse(&frames(&tool_call_events()).concat(), 5)]);
    let (result, events) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(true)).await;
    let resp = result.expect("reply");
    assert_eq!(fake.requests()[0].body["stream"], true);

    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "I should list the files.");
    let firsts: Vec<(usize, Option<&str>, Option<&str>)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallDelta { index, id: Some(id), name, .. } => {
                Some((*index, Some(id.as_str()), name.as_deref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(firsts, [(0, Some("call_1"), Some("bash")), (1, Some("call_2"), Some("view"))]);
    assert!(events.iter().any(|e| matches!(e, ModelEvent::Bytes { total } if *total > 0)));

    let reply = &resp.replies[0];
    assert_eq!(reply.content, "");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.reasoning.as_deref(), Some("I should list the files."));
    assert_eq!(
        reply.tool_calls,
        [
            ToolCall { id: "call_1".into(), name: "bash".into(), arguments: "{\"command\":\"ls\"}".into() },
            ToolCall { id: "call_2".into(), name: "view".into(), arguments: "{\"path\":\"a.txt\"}".into() },
        ]
    );
    assert_eq!(reply.reasoning_blocks.as_ref().map(|b| b.blocks.clone()), Some(vec![reasoning_item()]));
    assert_eq!((resp.api_call_id.as_deref(), resp.model.as_deref()), (Some("resp_tools"), Some("gpt-5")));
    assert_eq!(resp.usage.cache_read_tokens, 16);
}

#[tokio::test]
async fn a_tool_round_trip_sends_the_calls_their_outputs_and_the_encrypted_reasoning_back() {
    let fake = Fake::start().await;
    fake.script(
        "/responses",
        [stream(&tool_call_events(), Ending::Eof), stream(&text_events("resp_2", "Two entries."), Ending::Eof)],
    );
    let client = client(provider(ProviderKind::OpenAi, &fake.base));
    let mut req = request(true);
    let (first, _) = call(&client, req.clone()).await;
    let reply = first.expect("first reply").replies.remove(0);
    req.history.push(Message::Assistant {
        content: None,
        tool_calls: reply.tool_calls.clone(),
        reasoning: reply.reasoning_blocks.clone().map(Box::new),
    });
    for (call, output) in reply.tool_calls.iter().zip(["a.txt\nb.txt", "contents"]) {
        req.history.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text(output.into()) });
    }
    let (second, _) = call(&client, req).await;
    assert_eq!(second.expect("second reply").replies[0].content, "Two entries.");

    let sent = fake.requests_to("/responses");
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            reasoning_item(),
            {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "view", "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"},
            {"type": "function_call_output", "call_id": "call_2", "output": "contents"},
        ])
    );
    assert_eq!(sent[1].body["prompt_cache_key"], sent[0].body["prompt_cache_key"]);
}

#[tokio::test]
async fn persistent_401_ends_with_an_authentication_error_naming_the_provider_not_the_key() {
    let fake = Fake::start().await;
    let denied = || Reply::json(401, json!({"error": {"message": "Incorrect API key provided: sk-live-987654"}}));
    fake.script("/responses", [denied(), denied(), denied(), response_json("never")]);
    let mut config = provider(ProviderKind::OpenAi, &fake.base);
    config.api_key = Some(Secret::new("sk-live-987654"));
    config.credential_hint = "COPILOT_PROVIDER_API_KEY".into();
    let (result, events) = call(&client(config), request(true)).await;
    let err = result.expect_err("gives up");
    assert_eq!(fake.requests().len(), 3, "the first try and two retries");
    assert_eq!(events.iter().filter(|e| matches!(e, ModelEvent::Retry { reason: RetryReason::Auth, .. })).count(), 2);
    assert_eq!((err.status_code(), err.error_type()), (Some(401), "authentication"));
    let text = err.to_string();
    assert!(text.contains(&fake.base) && text.contains("COPILOT_PROVIDER_API_KEY"), "{text}");
    assert!(!text.contains("sk-live-987654"), "{text}");
}

#[tokio::test]
async fn a_500_is_retried_then_reported_as_a_query_error() {
    let fake = Fake::start().await;
    let boom = || Reply::json(500, json!({"error": {"message": "upstream exploded", "type": "server_error"}}));
    fake.script("/responses", (0..7).map(|_| boom()));
    let (result, events) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(false)).await;
    let err = result.expect_err("gives up");
    assert_eq!(fake.requests().len(), 6, "the first try and five retries");
    assert_eq!(events.iter().filter(|e| matches!(e, ModelEvent::Retry { status: Some(500), .. })).count(), 5);
    assert_eq!((err.status_code(), err.error_type()), (Some(500), "query"));
    assert!(err.to_string().contains("upstream exploded"), "{err}");
}

#[tokio::test]
async fn an_overloaded_response_failed_event_is_retried_like_a_500() {
    let fake = Fake::start().await;
    let failed = json!({"type": "response.failed", "response": {"id": "resp_f", "status": "failed",
        "error": {"code": "server_error", "message": "The model is overloaded"}}});
    fake.script(
        "/responses",
        [stream(&[created("resp_f"), failed], Ending::Eof), stream(&text_events("resp_ok", "fine"), Ending::Eof)],
    );
    let (result, events) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(true)).await;
    assert_eq!(result.expect("second try answers").replies[0].content, "fine");
    assert!(events.iter().any(|e| matches!(e, ModelEvent::Retry { reason: RetryReason::ServerError, .. })));
}

#[tokio::test]
async fn a_stream_dropped_before_any_output_is_retried() {
    let fake = Fake::start().await;
    fake.script(
        "/responses",
        [stream(&[created("resp_x")], Ending::Abort), stream(&text_events("resp_y", "second try"), Ending::Eof)],
    );
    let (result, events) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(true)).await;
    assert_eq!(result.expect("reply").replies[0].content, "second try");
    assert!(events.iter().any(|e| matches!(e, ModelEvent::Retry { reason: RetryReason::Network, status: None, .. })));
}

#[tokio::test]
async fn a_stream_dropped_after_output_is_truncated_and_not_retried() {
    let fake = Fake::start().await;
    let partial = &text_events("resp_x", "partial")[..3];
    fake.script("/responses", [stream(partial, Ending::Abort), stream(&text_events("resp_y", "again"), Ending::Eof)]);
    let (result, events) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(true)).await;
    assert!(matches!(result, Err(ProviderError::Truncated(_))), "{result:?}");
    assert_eq!(fake.requests().len(), 1, "a retry would show the text twice");
    assert!(events.contains(&ModelEvent::TextDelta { choice: 0, text: "partial".into() }));

    // A clean end of body without `response.completed` is just as incomplete.
    let fake = Fake::start().await;
    fake.script("/responses", [stream(partial, Ending::Eof)]);
    let (result, _) = call(&client(provider(ProviderKind::OpenAi, &fake.base)), request(true)).await;
    assert!(matches!(result, Err(ProviderError::Truncated(_))), "{result:?}");
}

#[tokio::test]
async fn cancelling_a_slow_stream_ends_the_call_and_the_connection() {
    let fake = Fake::start().await;
    let slow = stream(&text_events("resp_slow", "a")[..3], Ending::Trickle).with_gap(Duration::from_millis(20));
    fake.script("/responses", [slow]);
    let client = Arc::new(client(provider(ProviderKind::OpenAi, &fake.base)));
    let cancel = CancellationToken::new();
    let (tx, mut rx) = unbounded_channel();
    let task = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move { client.chat(request(true), tx, cancel).await }
    });
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("deltas arrive") {
            Some(ModelEvent::TextDelta { .. }) => break,
            Some(_) => {}
            None => panic!("stream ended before any text"),
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), task).await.expect("returns").expect("no panic");
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
async fn cancelling_while_waiting_for_headers() {
    let fake = Fake::start().await;
    fake.script("/responses", [Reply::Hang]);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let (tx, _rx) = unbounded_channel();
    let client = client(provider(ProviderKind::OpenAi, &fake.base));
    let result = tokio::time::timeout(Duration::from_secs(2), client.chat(request(true), tx, cancel))
        .await
        .expect("cancel is prompt");
    assert!(matches!(result, Err(ProviderError::Cancelled)), "{result:?}");
}

#[tokio::test]
async fn the_model_list_is_the_configured_one() {
    let mut config = provider(ProviderKind::OpenAi, "http://127.0.0.1:9");
    config.models = vec![llm_providers::provider::configured_model("gpt-5", "GPT-5", Some(200_000), None, None)];
    let models = client(config).list_models().await.expect("listed");
    assert_eq!(models.len(), 1);
    assert_eq!(models[0].id, "gpt-5");
}
