//! `POST /v1/messages`: Anthropic requests answered from the same scripted replies and
//! snapshots, in Anthropic's SSE / message / error shapes.

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

use crate::{client, fixture, SYSTEM};

const DATETIME: &str = "<current_datetime>2026-11-22T11:29:03.560+00:00</current_datetime>\n\n";

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn user(blocks: Vec<Value>) -> Value {
    json!({"role": "user", "content": blocks})
}

fn prompt(text_: &str) -> Value {
    user(vec![text(&format!("{DATETIME}{text_}"))])
}

fn tool_use(id: &str, name: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn tool_result(id: &str, content: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content})
}

fn body(messages: Vec<Value>, stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4.5",
        "max_tokens": 8192,
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": messages,
        "tools": [{"name": "view", "description": "View a file", "input_schema": {"type": "object"}}],
        "temperature": 0,
        "stream": stream,
    })
}

async fn post(fake: &FakeModel, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", fake.url()))
        .header("x-api-key", "sk-ant-fake")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// `(event name, data)` per SSE event; the name must match the data's `type`.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let (name, data) = frame.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_string();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str());
            (name, data)
        })
        .collect()
}

/// A streamed message: text, tool uses `(id, name, input JSON text)`, stop reason, and how
/// many text deltas carried the text.
#[derive(Debug, Default)]
struct Assembled {
    text: String,
    text_deltas: usize,
    tools: Vec<(String, String, String)>,
    stop_reason: Option<String>,
    complete: bool,
}

fn assemble(events: &[(String, Value)]) -> Assembled {
    let mut out = Assembled::default();
    let mut tool_at = std::collections::HashMap::new();
    for (name, data) in events {
        match name.as_str() {
            "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                let block = &data["content_block"];
                tool_at.insert(data["index"].as_u64().unwrap(), out.tools.len());
                out.tools.push((
                    block["id"].as_str().unwrap().into(),
                    block["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            "content_block_delta" => match data["delta"]["type"].as_str().unwrap() {
                "text_delta" => {
                    out.text.push_str(data["delta"]["text"].as_str().unwrap());
                    out.text_deltas += 1;
                }
                "input_json_delta" => {
                    let at = tool_at[&data["index"].as_u64().unwrap()];
                    out.tools[at].2.push_str(data["delta"]["partial_json"].as_str().unwrap());
                }
                other => panic!("unexpected delta {other}"),
            },
            "message_delta" => out.stop_reason = data["delta"]["stop_reason"].as_str().map(str::to_string),
            "message_stop" => out.complete = true,
            _ => {}
        }
    }
    out
}

async fn stream(fake: &FakeModel, messages: Vec<Value>) -> Assembled {
    let res = post(fake, &body(messages, true)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    let events = events(&text);
    assert_eq!(events[0].0, "message_start");
    let assembled = assemble(&events);
    assert!(assembled.complete, "{text}");
    assembled
}

#[tokio::test]
async fn scripted_tool_round_trip_in_anthropic_shape() {
    let fake = FakeModel::start().await.unwrap();
    let long_path = format!("/tmp/{}", "d/".repeat(150));
    let args = json!({"path": long_path});
    fake.push_replies([Reply::tool_call("view", args.clone()), Reply::text("All good here. ".repeat(20))]);

    let res = post(&fake, &body(vec![prompt("read it")], true)).await;
    assert_eq!(res.status(), 200);
    let request_id = res.headers()["request-id"].to_str().unwrap().to_string();
    assert!(request_id.starts_with("req_fake_"), "{request_id}");
    let events = events(&res.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..4], ["message_start", "ping", "content_block_start", "content_block_delta"]);
    assert_eq!(names[names.len() - 3..], ["content_block_stop", "message_delta", "message_stop"]);
    let start = &events[0].1["message"];
    assert_eq!((start["role"].as_str(), start["model"].as_str()), (Some("assistant"), Some("claude-sonnet-4.5")));
    assert!(start["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let first = assemble(&events);
    assert_eq!(first.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(first.text, "");
    assert_eq!(first.tools.len(), 1);
    let (id, name, input) = first.tools[0].clone();
    assert_eq!(name, "view");
    assert_eq!(serde_json::from_str::<Value>(&input).unwrap(), args);
    let pieces = events.iter().filter(|(_, d)| d["delta"]["type"] == "input_json_delta").count();
    assert!(pieces >= 2, "input longer than 200 chars arrives in pieces");

    // The next request carries the tool use and its result.
    let second = stream(
        &fake,
        vec![
            prompt("read it"),
            json!({"role": "assistant", "content": [tool_use(&id, &name, &args)]}),
            user(vec![tool_result(&id, "1. hello"), text("and be brief")]),
        ],
    )
    .await;
    assert_eq!(second.text, "All good here. ".repeat(20));
    assert!(second.text_deltas >= 2, "text over 200 chars is split");
    assert_eq!(second.stop_reason.as_deref(), Some("end_turn"));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["path"], "/v1/messages");
    assert_eq!(requests[1]["headers"]["x-api-key"], "sk-ant-fake");
    assert_eq!(requests[1]["body"]["messages"][2]["content"][0]["type"], "tool_result", "recorded as sent");
    let exchanges = fake.exchanges();
    assert_eq!(exchanges[0]["response"]["content"][0]["type"], "tool_use");
    assert_eq!(exchanges[1]["response"]["content"][0]["text"], "All good here. ".repeat(20));
}

#[tokio::test]
async fn replays_a_snapshot_through_the_anthropic_endpoint() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    let wd_str = wd.path().to_str().unwrap().to_string();
    fake.load_snapshot(fixture("should_create_a_new_file.yaml"), wd.path()).unwrap();
    let ask = "Create a file called 'new_file.txt' with the content 'Created by test'. Then read it back to confirm.";

    let first = stream(&fake, vec![prompt(ask)]).await;
    // Both stored assistant messages come back as one message.
    let names: Vec<&str> = first.tools.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, ["report_intent", "create"]);
    let create_input: Value = serde_json::from_str(&first.tools[1].2).unwrap();
    assert_eq!(create_input["path"], format!("{wd_str}/new_file.txt"));

    let mut history = vec![prompt(ask)];
    let uses: Vec<Value> =
        first.tools.iter().map(|(id, name, input)| tool_use(id, name, &serde_json::from_str(input).unwrap())).collect();
    history.push(json!({"role": "assistant", "content": uses}));
    history.push(user(vec![
        tool_result(&first.tools[0].0, "Tool 'report_intent' does not exist."),
        tool_result(&first.tools[1].0, &format!("Created file {wd_str}/new_file.txt with 15 characters")),
    ]));
    let second = stream(&fake, history.clone()).await;
    assert_eq!(second.tools.len(), 1);
    assert_eq!(second.tools[0].1, "view");

    // The last turn without streaming: one message object.
    history.push(json!({"role": "assistant", "content": [
        tool_use(&second.tools[0].0, "view", &serde_json::from_str(&second.tools[0].2).unwrap())
    ]}));
    history.push(user(vec![tool_result(&second.tools[0].0, "1. Created by test")]));
    let res = post(&fake, &body(history, false)).await;
    assert_eq!(res.status(), 200);
    let message: Value = res.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["stop_reason"], "end_turn");
    let text = message["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("✓ Done! Created `new_file.txt`"), "{text}");
}

#[tokio::test]
async fn errors_drops_and_mismatches_in_anthropic_shape() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies([
        Reply::error(529, Some(2), "Overloaded"),
        Reply::DropMidStream { partial_text: "half an answer".into() },
    ]);
    let res = post(&fake, &body(vec![prompt("hi")], true)).await;
    assert_eq!(res.status(), 529);
    assert_eq!(res.headers()["retry-after"], "2");
    let error: Value = res.json().await.unwrap();
    assert_eq!(error, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));

    let mut res = post(&fake, &body(vec![prompt("hi")], true)).await;
    assert_eq!(res.status(), 200);
    let mut received = Vec::new();
    let mut failed = false;
    loop {
        match res.chunk().await {
            Ok(Some(bytes)) => received.extend_from_slice(&bytes),
            Ok(None) => break,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let text = String::from_utf8(received).unwrap();
    assert!(failed, "the connection should be cut, not ended cleanly: {text}");
    let dropped = assemble(&events(&text));
    assert_eq!((dropped.text.as_str(), dropped.complete), ("half an answer", false));

    // No reply queued and no snapshot: a 400 in Anthropic's shape.
    let res = post(&fake, &body(vec![prompt("hi")], true)).await;
    assert_eq!(res.status(), 400);
    let error: Value = res.json().await.unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");

    let res = post(&fake, &json!({"model": "m", "messages": [{"role": "user", "content": 7}]})).await;
    assert_eq!(res.status(), 400);
    let error: Value = res.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("messages[0]"), "{error}");
    assert_eq!(fake.requests().len(), 4, "every request is recorded, malformed ones too");
}

#[tokio::test]
async fn a_hang_holds_the_anthropic_request_open() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::Hang);
    let res = client()
        .post(format!("{}/v1/messages", fake.url()))
        .json(&body(vec![prompt("wait")], true))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    let outcome = match res {
        Err(e) => Err(e),
        Ok(r) => r.text().await.map(|_| ()),
    };
    assert!(outcome.unwrap_err().is_timeout());
}

#[tokio::test]
async fn slow_and_delayed_replies_stream_as_anthropic_events() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies([
        Reply::SlowText { chunks: vec!["one ".into(), "two".into()], delay_ms: 20 },
        Reply::Delay { ms: 10, then: Box::new(Reply::text("later")) },
        Reply::SlowText { chunks: vec!["not ".into(), "streamed".into()], delay_ms: 1 },
    ]);
    let slow = stream(&fake, vec![prompt("go")]).await;
    assert_eq!((slow.text.as_str(), slow.text_deltas), ("one two", 2));
    assert_eq!(slow.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(stream(&fake, vec![prompt("go")]).await.text, "later");
    let message: Value = post(&fake, &body(vec![prompt("go")], false)).await.json().await.unwrap();
    assert_eq!(message["content"], json!([{"type": "text", "text": "not streamed"}]));
}
