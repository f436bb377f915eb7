//! Integration tests: the fake model over real HTTP.
//!
//! Fixtures under `tests/fixtures/` are copies of snapshots recorded by the official SDK
//! harness (the shared snapshot set), so replay is checked against the real format.

#![allow(clippy::unwrap_used)]

mod responses;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

mod anthropic;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

const SYSTEM: &str = "You are the GitHub Copilot CLI...";

fn user(text: &str) -> Value {
    json!({"role": "user", "content": format!("<current_datetime>2026-11-22T11:29:03.560+00:00</current_datetime>\n\n{text}")})
}

fn chat_body(messages: Vec<Value>, stream: bool) -> Value {
    let mut body = json!({
        "model": "claude-sonnet-4.5",
        "messages": messages,
        "temperature": 0,
        "tools": [],
    });
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

async fn post_chat(fake: &FakeModel, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", fake.url()))
        .header("authorization", "Bearer fake-token")
        .header("x-initiator", "user")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Parses an SSE body into its `data:` payloads (`[DONE]` kept as a string).
fn sse_data(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or(Value::String(d.to_string())))
        .collect()
}

/// The assistant message assembled from chunks: (content, [(id, name, arguments)], finish).
fn assemble(events: &[Value]) -> (String, Vec<(String, String, String)>, Option<String>) {
    let mut content = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = None;
    for ev in events {
        let Some(choice) = ev.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        let delta = &choice["delta"];
        if let Some(c) = delta["content"].as_str() {
            content.push_str(c);
        }
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = tc["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push((
                    tc["id"].as_str().unwrap().to_string(),
                    tc["function"]["name"].as_str().unwrap().to_string(),
                    String::new(),
                ));
            }
            calls[index].2.push_str(tc["function"]["arguments"].as_str().unwrap());
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
    }
    (content, calls, finish)
}

async fn stream_reply(fake: &FakeModel, messages: Vec<Value>) -> (String, Vec<(String, String, String)>) {
    let res = post_chat(fake, &chat_body(messages, true)).await;
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    let events = sse_data(&text);
    assert_eq!(events.last(), Some(&json!("[DONE]")));
    let (content, calls, finish) = assemble(&events);
    assert!(finish.is_some());
    (content, calls)
}

fn assistant(content: Option<&str>, calls: &[(String, String, String)]) -> Value {
    let mut m = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        m["tool_calls"] = calls
            .iter()
            .map(
                |(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}),
            )
            .collect();
    }
    m
}

fn tool(id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

#[tokio::test]
async fn scripted_text_streaming() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("Hello there, streaming world of tests"));
    let res = post_chat(&fake, &chat_body(vec![user("hi")], true)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let request_id = res.headers()["x-github-request-id"].to_str().unwrap().to_string();
    assert!(request_id.starts_with("fake-req-"), "{request_id}");
    let text = res.text().await.unwrap();
    let events = sse_data(&text);
    let content_deltas = events.iter().filter(|e| e["choices"][0]["delta"]["content"].is_string()).count();
    assert!(content_deltas >= 2, "text should be split into several deltas: {text}");
    assert_eq!(events[0]["object"], "chat.completion.chunk");
    assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
    let usage = events.iter().find(|e| e["choices"] == json!([])).expect("usage chunk");
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let (content, calls, finish) = assemble(&events);
    assert_eq!(content, "Hello there, streaming world of tests");
    assert!(calls.is_empty());
    assert_eq!(finish.as_deref(), Some("stop"));
}

#[tokio::test]
async fn scripted_text_non_streaming() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("plain answer"));
    let res = post_chat(&fake, &chat_body(vec![user("hi")], false)).await;
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"].as_array().unwrap().len(), 1);
    assert_eq!(body["choices"][0]["message"]["content"], "plain answer");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    // No more replies and no snapshot: a 400 that says so.
    let res = post_chat(&fake, &chat_body(vec![user("hi")], false)).await;
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("no scripted reply"));
}

#[tokio::test]
async fn tool_call_reply_shape() {
    let fake = FakeModel::start().await.unwrap();
    let long = "x".repeat(450);
    fake.push_reply(Reply::ToolCalls(vec![
        ("bash".into(), json!({"command": long}).to_string()),
        ("view".into(), r#"{"path":"/a"}"#.into()),
    ]));
    fake.push_reply(Reply::Message {
        content: "Let me look.".into(),
        tool_calls: vec![("glob".into(), r#"{"pattern":"*.rs"}"#.into())],
    });

    let res = post_chat(&fake, &chat_body(vec![user("go")], true)).await;
    let events = sse_data(&res.text().await.unwrap());
    let fragments: Vec<&Value> = events.iter().filter_map(|e| e["choices"][0]["delta"]["tool_calls"].get(0)).collect();
    // 450+ chars of arguments → 3 fragments for call 0, then 1 for call 1.
    assert_eq!(fragments.len(), 4);
    assert_eq!(fragments[0]["function"]["name"], "bash");
    assert!(fragments[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(fragments[0]["type"], "function");
    assert!(fragments[1].get("id").is_none() && fragments[1]["function"].get("name").is_none());
    assert_eq!(fragments[1]["function"]["arguments"].as_str().unwrap().len(), 200);
    let (content, calls, finish) = assemble(&events);
    assert_eq!(content, "");
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].2, json!({"command": long}).to_string());
    assert_ne!(calls[0].0, calls[1].0);

    let res = post_chat(&fake, &chat_body(vec![user("go")], false)).await;
    let body: Value = res.json().await.unwrap();
    let msg = &body["choices"][0]["message"];
    assert_eq!(msg["content"], "Let me look.");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "glob");
    assert_eq!(msg["tool_calls"][0]["function"]["arguments"], r#"{"pattern":"*.rs"}"#);
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    // Ids are unique across the server's lifetime.
    let id = msg["tool_calls"][0]["id"].as_str().unwrap();
    assert!(calls.iter().all(|c| c.0 != id));
}

#[tokio::test]
async fn error_reply_with_retry_after() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::error(429, Some(1), "rate limited"));
    fake.push_reply(Reply::text("after retry"));
    let res = post_chat(&fake, &chat_body(vec![user("hi")], true)).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "1");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["message"], "rate limited");
    assert_eq!(body["error"]["type"], "rate_limited");
    let (content, _) = stream_reply(&fake, vec![user("hi")]).await;
    assert_eq!(content, "after retry");
}

#[tokio::test]
async fn drop_mid_stream_closes_without_done() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::DropMidStream { partial_text: "I was saying".into() });
    let mut res = post_chat(&fake, &chat_body(vec![user("hi")], true)).await;
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
    assert!(!text.contains("[DONE]"));
    assert!(!text.contains("finish_reason\":\"stop"));
    let (content, _, finish) = assemble(&sse_data(&text));
    assert_eq!(content, "I was saying");
    assert_eq!(finish, None);
}

#[tokio::test]
async fn delay_and_slow_text() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::Delay { ms: 300, then: Box::new(Reply::text("late")) });
    fake.push_reply(Reply::SlowText { chunks: vec!["a".into(), "b".into(), "c".into()], delay_ms: 150 });
    let start = Instant::now();
    let (content, _) = stream_reply(&fake, vec![user("hi")]).await;
    assert_eq!(content, "late");
    assert!(start.elapsed() >= Duration::from_millis(300));

    let start = Instant::now();
    let mut res = post_chat(&fake, &chat_body(vec![user("hi")], true)).await;
    let first = res.chunk().await.unwrap().unwrap();
    let first_at = start.elapsed();
    assert!(String::from_utf8_lossy(&first).contains("\"content\":\"a\""));
    let mut rest = Vec::new();
    while let Some(b) = res.chunk().await.unwrap() {
        rest.extend_from_slice(&b);
    }
    assert!(start.elapsed() - first_at >= Duration::from_millis(250));
    let text = format!("{}{}", String::from_utf8_lossy(&first), String::from_utf8_lossy(&rest));
    let (content, _, finish) = assemble(&sse_data(&text));
    assert_eq!(content, "abc");
    assert_eq!(finish.as_deref(), Some("stop"));
}

#[tokio::test]
async fn latency_counts_from_the_request_s_arrival() {
    let fake = FakeModel::start().await.unwrap();
    let json = serde_json::json!({"latency_ms": 200, "then": {"text": "steady"}});
    fake.push_reply(Reply::from_json(&json).unwrap());
    let start = Instant::now();
    let (content, _) = stream_reply(&fake, vec![user("hi")]).await;
    assert_eq!(content, "steady");
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(start.elapsed() < Duration::from_millis(1500), "{:?}", start.elapsed());
}

#[tokio::test]
async fn scripted_hang_holds_request_open() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::Hang);
    let res = client()
        .post(format!("{}/chat/completions", fake.url()))
        .json(&chat_body(vec![user("hi")], true))
        .timeout(Duration::from_millis(400))
        .send()
        .await;
    // Headers may arrive; the body never completes.
    let outcome = match res {
        Err(e) => Err(e),
        Ok(r) => r.text().await.map(|_| ()),
    };
    assert!(outcome.unwrap_err().is_timeout());
}

#[tokio::test]
async fn replay_stateful_conversation_both_turns() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_have_stateful_conversation.yaml"), wd.path()).unwrap();
    let system = json!({"role": "system", "content": SYSTEM});
    let (first, _) = stream_reply(&fake, vec![system.clone(), user("What is 1+1?")]).await;
    assert_eq!(first, "1+1 = 2");
    // Second turn, non-streaming this time.
    let body = chat_body(
        vec![
            system,
            user("What is 1+1?"),
            assistant(Some(&first), &[]),
            user("Now if you double that, what do you get?"),
        ],
        false,
    );
    let res = post_chat(&fake, &body).await;
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "2 doubled is 4.");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn replay_exit_code_with_real_ids_and_long_texts() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_capture_exit_code_in_output.yaml"), wd.path()).unwrap();
    let system = json!({"role": "system", "content": SYSTEM});
    let prompt = "Run 'echo hello && echo world'. Tell me the exact output.";
    let (content, calls) = stream_reply(&fake, vec![system.clone(), user(prompt)]).await;
    // Both stored assistant messages come back as one message.
    assert_eq!(content, "");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, "report_intent");
    assert_eq!(calls[1].1, "bash", "${{shell}} expands to the real tool name");
    assert_eq!(calls[1].2, r#"{"command":"echo hello && echo world","description":"Run echo hello && echo world"}"#);

    // The client's next request uses its own ids, the live runtime's texts, and pretty
    // printed arguments; results arrive in the opposite order.
    let ids = [("call_7".to_string()), ("call_8".to_string())];
    let sent_calls = vec![
        (ids[0].clone(), "report_intent".to_string(), r#"{"intent": "Running echo commands"}"#.to_string()),
        (ids[1].clone(), "bash".to_string(), calls[1].2.clone()),
    ];
    let messages = vec![
        system,
        user(prompt),
        assistant(None, &sent_calls),
        tool("call_8", "hello\nworld\n<shellId: 0 completed with exit code 0>"),
        tool(
            "call_7",
            "Tool 'report_intent' does not exist. Available tools that can be called are bash, read_bash, write_bash, stop_bash, list_bash, view, create, edit, grep, glob, task.",
        ),
    ];
    let (content, calls) = stream_reply(&fake, messages).await;
    assert_eq!(content, "The exact output is:\n```\nhello\nworld\n```");
    assert!(calls.is_empty());
}

#[tokio::test]
async fn replay_substitutes_workdir_both_ways() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    let wd_str = wd.path().to_str().unwrap().to_string();
    fake.load_snapshot(fixture("should_create_a_new_file.yaml"), wd.path()).unwrap();
    let system = json!({"role": "system", "content": SYSTEM});
    let prompt =
        "Create a file called 'new_file.txt' with the content 'Created by test'. Then read it back to confirm.";
    let (_, calls) = stream_reply(&fake, vec![system.clone(), user(prompt)]).await;
    assert_eq!(calls[1].2, format!(r#"{{"path":"{wd_str}/new_file.txt","file_text":"Created by test"}}"#));
    let messages = vec![
        system,
        user(prompt),
        assistant(None, &calls),
        tool(&calls[0].0, "Tool 'report_intent' does not exist."),
        tool(&calls[1].0, &format!("Created file {wd_str}/new_file.txt with 15 characters")),
    ];
    let (_, next) = stream_reply(&fake, messages).await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].1, "view");
    assert_eq!(next[0].2, format!(r#"{{"path":"{wd_str}/new_file.txt"}}"#));
}

#[tokio::test]
async fn replay_abort_snapshot_merges_and_maps_interrupted_results() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_abort_a_session.yaml"), wd.path()).unwrap();
    let system = json!({"role": "system", "content": SYSTEM});
    let prompt = "run the shell command 'sleep 100' (note this works on both bash and PowerShell)";
    let res = post_chat(&fake, &chat_body(vec![system.clone(), user(prompt)], false)).await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["choices"].as_array().unwrap().len(), 1);
    let msg = &body["choices"][0]["message"];
    assert_eq!(msg["content"], "I'll run the sleep command for 100 seconds.");
    let calls: Vec<(String, String, String)> = msg["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tc| {
            (
                tc["id"].as_str().unwrap().to_string(),
                tc["function"]["name"].as_str().unwrap().to_string(),
                tc["function"]["arguments"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(calls.len(), 2);
    let messages = vec![
        system,
        user(prompt),
        assistant(msg["content"].as_str(), &calls),
        tool(&calls[0].0, "Tool 'report_intent' does not exist. Available tools that can be called are bash, view."),
        tool(
            &calls[1].0,
            "Failed to execute `bash` tool with arguments: {\"command\":\"sleep 100\"} due to error: Error: Session aborted",
        ),
        user("What is 2+2?"),
    ];
    let (content, _) = stream_reply(&fake, messages).await;
    assert_eq!(content, "2 + 2 = 4");
}

#[tokio::test]
async fn replay_errors_entries() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_invoke_auto_mode_switch_handler_when_rate_limited.yaml"), wd.path()).unwrap();
    let messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        user("Explain that auto mode recovered from a rate limit in one short sentence."),
    ];
    // The error entry answers every time (retries fail the same way).
    for _ in 0..2 {
        let res = post_chat(&fake, &chat_body(messages.clone(), true)).await;
        assert_eq!(res.status(), 429);
        assert_eq!(res.headers()["retry-after"], "1");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "user_weekly_rate_limited");
        assert_eq!(body["error"]["message"], "You've reached your weekly rate limit.");
    }
    // A different model is not covered by the error entry.
    let mut body = chat_body(messages, true);
    body["model"] = json!("auto");
    let res = post_chat(&fake, &body).await;
    assert_eq!(res.status(), 200);
    let (content, _, _) = assemble(&sse_data(&res.text().await.unwrap()));
    assert_eq!(content, "Auto mode recovered from the rate limit and the session can continue.");
    // `/models` lists the snapshot's models.
    let models: Value = client().get(format!("{}/models", fake.url())).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["claude-sonnet-4.5", "auto"]);
}

#[tokio::test]
async fn replay_mismatch_is_400_with_diagnostics() {
    let fake = FakeModel::start().await.unwrap();
    let wd = tempfile::tempdir().unwrap();
    fake.load_snapshot(fixture("should_have_stateful_conversation.yaml"), wd.path()).unwrap();
    let res =
        post_chat(&fake, &chat_body(vec![json!({"role": "system", "content": "x"}), user("What is 3+3?")], true)).await;
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("mismatch at message 1"), "{msg}");
    assert!(msg.contains("What is 3+3?") && msg.contains("What is 1+1?"), "{msg}");
    // Malformed requests are 400s too, never a crash.
    for bad in [json!({"messages": "nope"}), json!({"messages": [{"content": "no role"}]}), json!([1])] {
        let res = post_chat(&fake, &bad).await;
        assert_eq!(res.status(), 400);
    }
    let res = client().post(format!("{}/chat/completions", fake.url())).body("not json").send().await.unwrap();
    assert_eq!(res.status(), 400);
}

#[tokio::test]
async fn replay_request_only_conversation_hangs() {
    let fake = FakeModel::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hang.yaml");
    std::fs::write(
        &path,
        "models: [claude-sonnet-4.5]\nconversations:\n  - messages:\n      - role: system\n        content: ${system}\n      - role: user\n        content: never answered\n",
    )
    .unwrap();
    fake.load_snapshot(&path, dir.path()).unwrap();
    let res = client()
        .post(format!("{}/chat/completions", fake.url()))
        .json(&chat_body(vec![json!({"role": "system", "content": SYSTEM}), user("never answered")], true))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    let outcome = match res {
        Err(e) => Err(e),
        Ok(r) => {
            assert_eq!(r.status(), 200);
            r.text().await.map(|_| ())
        }
    };
    assert!(outcome.unwrap_err().is_timeout());
}

#[tokio::test]
async fn requests_capture_bodies_and_headers() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("ok"));
    let body = chat_body(vec![user("capture me")], true);
    let _ = post_chat(&fake, &body).await.text().await.unwrap();
    let reqs = fake.wait_for_requests(1, Duration::from_secs(5)).await.unwrap();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["body"], body);
    assert_eq!(reqs[0]["path"], "/chat/completions");
    assert_eq!(reqs[0]["headers"]["x-initiator"], "user");
    assert_eq!(reqs[0]["headers"]["authorization"], "Bearer fake-token");
    let ex = fake.exchanges();
    assert_eq!(ex[0]["response"]["choices"][0]["message"]["content"], "ok");
    fake.clear_requests();
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn control_api_over_http() {
    let fake = FakeModel::start().await.unwrap();
    let c = client();
    let url = fake.url();

    // Account and catalogue.
    let user_info: Value =
        c.get(format!("{url}/copilot_internal/user")).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!(user_info["login"], "fake-user");
    assert_eq!(user_info["endpoints"]["api"], url);
    let models: Value = c.get(format!("{url}/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["data"][0]["id"], "claude-sonnet-4.5");
    assert_eq!(models["data"][1]["id"], "gpt-4.1");
    assert_eq!(models["data"][0]["capabilities"]["limits"]["max_context_window_tokens"], 128000);
    assert_eq!(models["data"][0]["policy"]["state"], "enabled");
    let res = c.get(format!("{url}/nope")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.json::<Value>().await.is_ok());

    // Scripted replies in JSON form.
    let res = c
        .post(format!("{url}/_fake/replies"))
        .json(&json!({"replies": [
            {"text": "one"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
            {"error": {"status": 500, "message": "boom"}},
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["queued"], 3);
    let (content, _) = stream_reply(&fake, vec![user("a")]).await;
    assert_eq!(content, "one");
    let (_, calls) = stream_reply(&fake, vec![user("b")]).await;
    assert_eq!(calls[0].1, "bash");
    assert_eq!(calls[0].2, r#"{"command":"ls"}"#);
    let res = post_chat(&fake, &chat_body(vec![user("c")], false)).await;
    assert_eq!(res.status(), 500);
    assert!(res.headers().get("retry-after").is_none());
    let res = c.post(format!("{url}/_fake/replies")).json(&json!({"replies": [{"bogus": true}]})).send().await.unwrap();
    assert_eq!(res.status(), 400);

    // Captured requests.
    let reqs: Value = c.get(format!("{url}/_fake/requests")).send().await.unwrap().json().await.unwrap();
    assert_eq!(reqs.as_array().unwrap().len(), 3);
    assert_eq!(reqs[0]["body"]["messages"][0]["role"], "user");
    assert!(reqs[0]["headers"].is_object());

    // Snapshot loading.
    let wd = tempfile::tempdir().unwrap();
    let res = c
        .post(format!("{url}/_fake/load"))
        .json(&json!({"snapshot": fixture("should_have_stateful_conversation.yaml"), "workdir": wd.path()}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let models: Value = c.get(format!("{url}/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["data"].as_array().unwrap().len(), 1);
    let (content, _) = stream_reply(&fake, vec![json!({"role": "system", "content": "s"}), user("What is 1+1?")]).await;
    assert_eq!(content, "1+1 = 2");
    let res = c
        .post(format!("{url}/_fake/load"))
        .json(&json!({"snapshot": "/does/not/exist.yaml", "workdir": "/tmp"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);

    // Reset: everything forgotten.
    let res = c.post(format!("{url}/_fake/reset")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(fake.requests().is_empty());
    let res = post_chat(&fake, &chat_body(vec![user("What is 1+1?")], false)).await;
    assert_eq!(res.status(), 400);

    // Harness-compatible aliases.
    let res = c
        .post(format!("{url}/config"))
        .json(&json!({"filePath": fixture("should_have_stateful_conversation.yaml"), "workDir": wd.path()}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let _ = stream_reply(&fake, vec![json!({"role": "system", "content": "s"}), user("What is 1+1?")]).await;
    let ex: Value = c.get(format!("{url}/exchanges")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ex[0]["response"]["choices"][0]["message"]["content"], "1+1 = 2");
    let res = c
        .post(format!("{url}/copilot-user-config"))
        .json(&json!({"token": "tok-a", "response": {"login": "alice"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let alice: Value =
        c.get(format!("{url}/copilot_internal/user")).bearer_auth("tok-a").send().await.unwrap().json().await.unwrap();
    assert_eq!(alice, json!({"login": "alice", "is_mcp_enabled": true}));
}

#[tokio::test]
async fn binary_prints_url_line_and_serves() {
    use tokio::io::AsyncBufReadExt;
    let wd = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-model"))
        .arg("--snapshot")
        .arg(fixture("should_have_stateful_conversation.yaml"))
        .arg("--workdir")
        .arg(wd.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    let url = line.strip_prefix("FAKE_MODEL_URL=").expect("URL line").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let res = client()
        .post(format!("{url}/chat/completions"))
        .json(&chat_body(vec![json!({"role": "system", "content": "s"}), user("What is 1+1?")], false))
        .send()
        .await
        .unwrap();
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "1+1 = 2");
    // POST /stop makes the binary exit; nothing else was printed to stdout.
    let _ = client().post(format!("{url}/stop")).send().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    assert!(status.success());
    assert_eq!(lines.next_line().await.unwrap(), None);
}

/// Every stored conversation in the shared snapshot corpus (if present) must be replayable:
/// each prefix that precedes an assistant message is turned back into a realistic live
/// request (own ids, real tool names and paths, timestamps) and must find a reply.
#[test]
fn corpus_prefixes_are_replayable() {
    use fake_model::normalize::{merge_assistant_runs, normalize_messages, Side};
    use fake_model::snapshot::Match;
    let dir = std::env::var("SKIPPER_SNAPSHOTS_DIR").unwrap_or_else(|_| "/work/shared/snapshots".to_string());
    let dir = PathBuf::from(dir);
    if !dir.is_dir() {
        eprintln!("skipping: no snapshot corpus at {}", dir.display());
        return;
    }
    let workdir = "/tmp/some/Work Dir";
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                files.push(p);
            }
        }
    }
    let (mut checked, mut failures) = (0, Vec::new());
    for file in files {
        let snap = match fake_model::Snapshot::load(&file) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: {e:#}", file.display()));
                continue;
            }
        };
        for conv in &snap.conversations {
            for i in 0..conv.len() {
                if conv[i].role != "assistant" {
                    continue;
                }
                let raw: Vec<Value> = conv[..i].iter().map(|m| denormalize(m, workdir)).collect();
                let normalized =
                    merge_assistant_runs(normalize_messages(&raw, Side::Request, &[workdir.to_string()]).unwrap());
                checked += 1;
                match snap.find(&normalized, snap.models.first().map(String::as_str)) {
                    Match::Reply(_) | Match::Error(_) => {}
                    other => failures.push(format!("{} prefix {i}: {other:?}", file.display())),
                }
            }
        }
    }
    eprintln!("checked {checked} replayable prefixes");
    assert!(failures.is_empty(), "{} of {checked} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Turns a stored message back into what a live client would send.
fn denormalize(m: &fake_model::normalize::NormMessage, workdir: &str) -> Value {
    let expand = |s: &str, json_escape: bool| fake_model::normalize::expand_workdir(s, Some(workdir), json_escape);
    let id = |s: &str| s.replace("toolcall_", "tooluse_abcXYZ_");
    match m.role.as_str() {
        "system" => json!({"role": "system", "content": SYSTEM}),
        "user" => {
            let text = m.content.clone().unwrap_or_default();
            json!({"role": "user", "content": format!("<current_datetime>2026-01-01T00:00:00Z</current_datetime>\n\n{}", expand(&text, false))})
        }
        "tool" => {
            let text = expand(m.content.as_deref().unwrap_or_default(), false);
            // JSON-looking results reach the snapshot only via the SDK's success envelope
            // (raw JSON would have been key-sorted); send them that way.
            let content = if serde_json::from_str::<Value>(&text).is_ok() {
                json!({"resultType": "success", "textResultForLlm": text}).to_string()
            } else {
                text
            };
            json!({"role": "tool", "tool_call_id": id(m.tool_call_id.as_deref().unwrap_or_default()), "content": content})
        }
        _ => {
            let calls: Vec<(String, String, String)> = m
                .tool_calls
                .iter()
                .map(|tc| {
                    (
                        id(&tc.id),
                        fake_model::normalize::expand_tool_name(&tc.function.name),
                        expand(&tc.function.arguments, true),
                    )
                })
                .collect();
            let mut v = assistant(m.content.as_deref().map(|c| expand(c, false)).as_deref(), &calls);
            v["role"] = json!(m.role);
            v
        }
    }
}

#[tokio::test]
async fn drop_mid_stream_non_streaming_is_truncated_json() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::DropMidStream { partial_text: "héllo wörld ✓".into() });
    let res = post_chat(&fake, &chat_body(vec![user("hi")], false)).await;
    assert_eq!(res.status(), 200);
    assert!(res.json::<Value>().await.is_err());
}
