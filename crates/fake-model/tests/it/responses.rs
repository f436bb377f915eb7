//! `POST /responses`: the Responses API over the same scripted replies and snapshots, and
//! Skipper's own Responses client talking to it.

use std::sync::Arc;
use std::time::Duration;

use fake_model::{FakeModel, Reply};
use llm_providers::provider::{ProviderConfig, ProviderKind, WireApi};
use llm_providers::responses::ResponsesClient;
use llm_providers::transport::ReqwestTransport;
use llm_providers::{ChatRequest, History, Initiator, Message, ModelClient, ToolContent, UserContent};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::{client, fixture, SYSTEM};

fn user_item(text: &str) -> Value {
    let text = format!("<current_datetime>2026-11-22T11:29:03.560+00:00</current_datetime>\n\n{text}");
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn body(input: Vec<Value>, stream: bool) -> Value {
    json!({
        "model": "gpt-5", "instructions": SYSTEM, "input": input, "reasoning": {"summary": "auto"},
        "store": false, "stream": stream, "include": ["reasoning.encrypted_content"], "parallel_tool_calls": true,
    })
}

async fn post(fake: &FakeModel, path: &str, body: &Value) -> reqwest::Response {
    client().post(format!("{}{path}", fake.url())).bearer_auth("sk-fake").json(body).send().await.unwrap()
}

/// `(event name, data)` of each SSE frame.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let name = frame.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or_default().to_string();
            let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// Text and `(call_id, name, arguments)` assembled from the deltas, plus the final response.
fn assemble(events: &[(String, Value)]) -> (String, Vec<(String, String, String)>, Value) {
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut item_ids = Vec::new();
    let mut completed = Value::Null;
    for (_, e) in events {
        match e["type"].as_str().unwrap() {
            "response.output_text.delta" => text.push_str(e["delta"].as_str().unwrap()),
            "response.output_item.added" if e["item"]["type"] == "function_call" => {
                item_ids.push(e["item"]["id"].as_str().unwrap().to_string());
                let item = &e["item"];
                calls.push((
                    item["call_id"].as_str().unwrap().into(),
                    item["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            "response.function_call_arguments.delta" => {
                let index = item_ids.iter().position(|id| e["item_id"] == id.as_str()).unwrap();
                calls[index].2.push_str(e["delta"].as_str().unwrap());
            }
            "response.completed" => completed = e["response"].clone(),
            _ => {}
        }
    }
    (text, calls, completed)
}

#[tokio::test]
async fn scripted_text_streams_as_responses_events() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("Hello from the Responses fake"));
    let res = post(&fake, "/responses", &body(vec![user_item("hi")], true)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let evs = events(&res.text().await.unwrap());
    let kinds: Vec<&str> = evs.iter().map(|(name, _)| name.as_str()).collect();
    let deltas = kinds.iter().filter(|k| **k == "response.output_text.delta").count();
    assert!(deltas >= 2, "text arrives in several deltas: {kinds:?}");
    let mut expected =
        vec!["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"];
    expected.extend(std::iter::repeat_n("response.output_text.delta", deltas));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(kinds, expected);
    for (n, (name, data)) in evs.iter().enumerate() {
        assert_eq!(data["type"], name.as_str());
        assert_eq!(data["sequence_number"], n);
    }
    let (text, calls, completed) = assemble(&evs);
    assert_eq!(text, "Hello from the Responses fake");
    assert!(calls.is_empty());
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output_text"], "Hello from the Responses fake");
    assert!(completed["id"].as_str().unwrap().starts_with("resp_"));
    assert!(completed["usage"]["input_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn scripted_tool_calls_stream_their_arguments_in_pieces() {
    let fake = FakeModel::start().await.unwrap();
    let long = "x".repeat(450);
    fake.push_reply(Reply::Message {
        content: "Running.".into(),
        tool_calls: vec![
            ("bash".into(), json!({"command": long}).to_string()),
            ("view".into(), r#"{"path":"a"}"#.into()),
        ],
    });
    let res = post(&fake, "/v1/responses", &body(vec![user_item("go")], true)).await;
    let evs = events(&res.text().await.unwrap());
    let arg_deltas = evs.iter().filter(|(n, _)| n == "response.function_call_arguments.delta").count();
    assert_eq!(arg_deltas, 3 + 1, "464 characters in pieces of 200, then the short call in one");
    let (text, calls, completed) = assemble(&evs);
    assert_eq!(text, "Running.");
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].1.as_str(), calls[0].2.clone()), ("bash", json!({"command": long}).to_string()));
    assert_eq!(calls[1].2, r#"{"path":"a"}"#);
    let output = completed["output"].as_array().unwrap();
    assert_eq!(output.len(), 3);
    assert_eq!(output[1]["type"], "function_call");
    assert_eq!(output[1]["id"], format!("fc_{}", calls[0].0));
}

#[tokio::test]
async fn non_streaming_answers_one_response_object() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::tool_call("grep", json!({"pattern": "x"})));
    let res =
        post(&fake, "/openai/responses?api-version=2025-04-01-preview", &body(vec![user_item("find")], false)).await;
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"][0]["type"], "function_call");
    assert_eq!(v["output"][0]["name"], "grep");
    assert_eq!(v["output"][0]["arguments"], r#"{"pattern":"x"}"#);
    assert!(v["output"][0]["call_id"].as_str().unwrap().starts_with("call_"));

    // The request is recorded as sent (path with its query), the exchange with the answer.
    let reqs = fake.requests();
    assert_eq!(reqs[0]["path"], "/openai/responses?api-version=2025-04-01-preview");
    assert_eq!(reqs[0]["body"]["input"][0]["type"], "message");
    assert_eq!(reqs[0]["headers"]["authorization"], "Bearer sk-fake");
    let ex = fake.exchanges();
    assert_eq!(ex[0]["request"]["instructions"], SYSTEM);
    assert_eq!(ex[0]["response"]["output"][0]["name"], "grep");
}

#[tokio::test]
async fn errors_and_dropped_streams_behave_as_on_chat() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies([
        Reply::error(429, Some(2), "slow down"),
        Reply::DropMidStream { partial_text: "half an answer".into() },
    ]);
    let res = post(&fake, "/openai/v1/responses", &body(vec![user_item("a")], true)).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "2");
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["message"], "slow down");

    let res = post(&fake, "/responses", &body(vec![user_item("b")], true)).await;
    assert_eq!(res.status(), 200);
    let mut text = Vec::new();
    let mut res = res;
    let failed = loop {
        match res.chunk().await {
            Ok(Some(piece)) => text.extend_from_slice(&piece),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(failed, "the connection is cut, not closed cleanly");
    let evs = events(&String::from_utf8_lossy(&text));
    let (partial, _, completed) = assemble(&evs);
    assert_eq!(partial, "half an answer");
    assert_eq!(completed, Value::Null, "no response.completed");
}

/// A snapshot recorded through chat completions replays to a Responses conversation: the
/// function calls, their outputs (in another order) and a reasoning item in between.
#[tokio::test]
async fn snapshots_replay_to_responses_requests() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_capture_exit_code_in_output.yaml"), wd.path()).unwrap();
    let prompt = "Run 'echo hello && echo world'. Tell me the exact output.";
    let res = post(&fake, "/responses", &body(vec![user_item(prompt)], true)).await;
    let (text, calls, _) = assemble(&events(&res.text().await.unwrap()));
    assert_eq!(text, "");
    assert_eq!(calls.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["report_intent", "bash"]);

    let input = vec![
        user_item(prompt),
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}),
        json!({"type": "function_call", "call_id": "call_7", "name": "report_intent", "arguments": r#"{"intent": "Running echo commands"}"#}),
        json!({"type": "function_call", "call_id": "call_8", "name": "bash", "arguments": calls[1].2}),
        json!({"type": "function_call_output", "call_id": "call_8", "output": "hello\nworld\n<shellId: 0 completed with exit code 0>"}),
        json!({"type": "function_call_output", "call_id": "call_7", "output": "Tool 'report_intent' does not exist. Available tools that can be called are bash, read_bash, write_bash, stop_bash, list_bash, view, create, edit, grep, glob, task."}),
    ];
    let res = post(&fake, "/responses", &body(input, false)).await;
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["output_text"], "The exact output is:\n```\nhello\nworld\n```");
}

/// Skipper's Responses client against this endpoint: a streamed tool call, then the answer.
#[tokio::test]
async fn the_skipper_client_completes_a_tool_round_trip() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies([Reply::tool_call("bash", json!({"command": "ls"})), Reply::text("Two files.")]);
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", fake.url()));
    config.wire_api = WireApi::Responses;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let client = ResponsesClient::new(config, Arc::new(ReqwestTransport::new(http)));
    let mut req = ChatRequest {
        model: "gpt-5".into(),
        github_token: None,
        system: SYSTEM.into(),
        history: History::new(vec![Message::User { content: UserContent::Text("list".into()) }]),
        tools: Default::default(),
        stream: true,
        initiator: Initiator::User,
        interaction_id: "i-1".into(),
        session_id: "s-1".into(),
        extra_headers: vec![],
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
        purpose: Default::default(),
        reasoning_effort: None,
    };
    let (tx, _rx) = unbounded_channel();
    let first = client.chat(req.clone(), tx.clone(), CancellationToken::new()).await.unwrap();
    let call = first.replies[0].tool_calls[0].clone();
    assert_eq!((call.name.as_str(), call.arguments.as_str()), ("bash", r#"{"command":"ls"}"#));
    assert_eq!(first.replies[0].finish_reason.as_deref(), Some("tool_calls"));
    req.history.push(Message::Assistant { content: None, tool_calls: vec![call.clone()], reasoning: None });
    req.history.push(Message::Tool { tool_call_id: call.id.clone(), content: ToolContent::Text("a\nb".into()) });
    req.stream = false;
    let second = client.chat(req, tx, CancellationToken::new()).await.unwrap();
    assert_eq!(second.replies[0].content, "Two files.");
    assert!(second.usage.input_tokens > 0);

    let reqs = fake.wait_for_requests(2, Duration::from_secs(5)).await.unwrap();
    assert_eq!(reqs[1]["path"], "/v1/responses");
    assert_eq!(reqs[1]["body"]["input"][1]["type"], "function_call");
    assert_eq!(
        reqs[1]["body"]["input"][2],
        json!({"type": "function_call_output", "call_id": call.id, "output": "a\nb"})
    );
}
