//! Conversations against scripted fake-model replies; every event is schema-validated.

use std::time::{Duration, Instant};

use fake_model::Reply;
use serde_json::{json, Value};

use crate::harness::{with_timeout, RpcClient, TestEnv};

pub const T: Duration = Duration::from_secs(20);

pub const INTERRUPTED: &str = "The execution of this tool, or a previous tool was interrupted.";

/// Text of a chat message's `content` (string or list of text parts).
pub fn content_text(msg: &Value) -> String {
    match &msg["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// `(tool_call_id, text)` of every `role: tool` message of a model request body.
pub fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == json!("tool"))
                .map(|m| (m["tool_call_id"].as_str().unwrap_or("").to_string(), content_text(m)))
                .collect()
        })
        .unwrap_or_default()
}

/// Structural rules of events.md §2 for everything this connection saw of the session.
/// `sends` = number of `session.send` calls made.
pub fn check_invariants(c: &RpcClient, sid: &str, sends: usize, created_here: bool) {
    let evs = c.events(sid);
    let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap_or("?")).collect();
    let ctx = || format!("event sequence: {types:?}");
    if created_here {
        assert_eq!(types.first(), Some(&"session.start"), "{}", ctx());
        assert!(evs[0]["parentId"].is_null(), "session.start must have parentId null: {}", evs[0]);
    }
    // Every event's parent is the latest persisted event before it: ephemeral events are on
    // no disk, so nothing points at them. The log also holds records clients never see
    // (`session.usage_record`): a parent this client has not seen is one of those.
    let seen: std::collections::HashSet<&Value> = evs.iter().map(|e| &e["id"]).collect();
    let mut last_persisted = evs[0]["parentId"].clone();
    for e in &evs {
        if e["parentId"] != last_persisted && !e["parentId"].is_null() && !seen.contains(&e["parentId"]) {
            last_persisted = e["parentId"].clone();
        }
        assert_eq!(
            e["parentId"],
            last_persisted,
            "`{}` must point at the latest persisted event before it\n{}",
            e["type"],
            ctx()
        );
        if e.get("ephemeral") != Some(&json!(true)) {
            last_persisted = e["id"].clone();
        }
    }
    let mut ids = std::collections::HashSet::new();
    for e in &evs {
        assert!(ids.insert(e["id"].as_str().unwrap_or("").to_string()), "duplicate event id {}", e["id"]);
    }
    assert_eq!(types.last(), Some(&"session.idle"), "session.idle must be last; {}", ctx());
    assert_eq!(types.iter().filter(|t| **t == "session.idle").count(), sends, "one session.idle per send; {}", ctx());
    assert_eq!(types.iter().filter(|t| **t == "user.message").count(), sends, "one user.message per send; {}", ctx());
    let starts = types.iter().filter(|t| **t == "assistant.turn_start").count();
    let ends = types.iter().filter(|t| **t == "assistant.turn_end").count();
    assert_eq!(starts, ends, "turn_start/turn_end must pair; {}", ctx());
    if let (Some(u), Some(t)) =
        (types.iter().position(|t| *t == "user.message"), types.iter().position(|t| *t == "assistant.turn_start"))
    {
        assert!(u < t, "user.message must precede the first turn_start; {}", ctx());
    }
    // Every turn_end matches the open turn_start's turnId.
    let mut open: Option<String> = None;
    for e in &evs {
        match e["type"].as_str() {
            Some("assistant.turn_start") => {
                assert!(open.is_none(), "nested turn_start; {}", ctx());
                open = e["data"]["turnId"].as_str().map(str::to_string);
            }
            Some("assistant.turn_end") => {
                let id = e["data"]["turnId"].as_str().map(str::to_string);
                assert_eq!(open.take(), id, "turn_end turnId mismatch; {}", ctx());
            }
            _ => {}
        }
    }
    // tool.execution_complete follows its start and precedes the turn_end.
    for (i, e) in evs.iter().enumerate() {
        if e["type"] == json!("tool.execution_complete") {
            let id = &e["data"]["toolCallId"];
            let start =
                evs[..i].iter().any(|s| s["type"] == json!("tool.execution_start") && &s["data"]["toolCallId"] == id);
            assert!(start, "tool.execution_complete without a preceding start for {id}; {}", ctx());
        }
    }
    // Ephemeral flags where the spec says "always ephemeral".
    for e in &evs {
        let ty = e["type"].as_str().unwrap_or("");
        if ["session.idle", "assistant.message_delta", "assistant.usage", "session.usage_info", "session.title_changed"]
            .contains(&ty)
        {
            assert_eq!(e["ephemeral"], json!(true), "`{ty}` must be ephemeral: {e}");
        }
        if [
            "session.start",
            "user.message",
            "assistant.message",
            "assistant.turn_start",
            "assistant.turn_end",
            "tool.execution_start",
            "tool.execution_complete",
            "abort",
            "session.error",
        ]
        .contains(&ty)
        {
            assert!(e.get("ephemeral").is_none() || e["ephemeral"] == json!(false), "`{ty}` must be persisted: {e}");
        }
    }
}

/// Asserts that `send` produced user.message/assistant.message with the same ids.
fn check_message_ids(c: &RpcClient, sid: &str, message_id: &str) {
    let um = c.events_of_type(sid, "user.message");
    assert!(um.iter().any(|u| u["data"]["messageId"] == json!(message_id)), "user.message.messageId != send result");
    for am in c.events_of_type(sid, "assistant.message") {
        assert_eq!(am["data"]["originatingMessageId"], json!(message_id), "originatingMessageId: {am}");
    }
}

async fn finish(env: &TestEnv, sid: &str, sends: usize) {
    check_invariants(&env.client, sid, sends, true);
    let msgs = env.client.get_messages(sid).await.unwrap();
    assert_eq!(msgs.first().map(|e| e["type"].clone()), Some(json!("session.start")));
    // getMessages = the persisted subset of the notifications, same order.
    let persisted: Vec<Value> = env
        .client
        .events(sid)
        .into_iter()
        .filter(|e| e.get("ephemeral") != Some(&json!(true)))
        .map(|e| e["id"].clone())
        .collect();
    let got: Vec<Value> = msgs.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(got, persisted, "getMessages ids must equal the persisted notifications, in order");
    env.client.assert_schema_clean();
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_text_reply() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::text("Hello from the fake model"));
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        let mid = c.send(&sid, "Say hello").await;
        let idle = c.wait_for_event(&sid, "session.idle", T).await;
        assert_ne!(idle["data"]["aborted"], json!(true));
        let am = c.events_of_type(&sid, "assistant.message");
        assert_eq!(am.len(), 1);
        assert_eq!(am[0]["data"]["content"], json!("Hello from the fake model"));
        let um = &c.events_of_type(&sid, "user.message")[0];
        assert_eq!(um["data"]["content"], json!("Say hello"));
        check_message_ids(c, &sid, &mid);
        assert_eq!(c.count(&sid, "assistant.message_delta"), 0, "no deltas without streaming");
        assert_eq!(c.count(&sid, "assistant.turn_start"), env.fake.requests().len());
        let reqs = env.model_requests();
        let last_user =
            reqs[0]["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == json!("user")).unwrap();
        assert!(content_text(last_user).contains("Say hello"));
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_and_view_tools_with_approved_permissions() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let file = env.workdir().join("hello.txt");
        std::fs::write(&file, "Hello file\nsecond line").unwrap();
        env.fake.push_reply(Reply::ToolCalls(vec![
            ("bash".into(), json!({"command": "echo hi", "description": "Say hi"}).to_string()),
            ("view".into(), json!({"path": file.to_string_lossy()}).to_string()),
        ]));
        env.fake.push_reply(Reply::text("All done"));
        let c = &env.client;
        let sid = c.create_session(json!({"requestPermission": true})).await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        let mid = c.send(&sid, "Run tools").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        approver.abort();

        let reqs = env.model_requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(c.count(&sid, "assistant.turn_start"), reqs.len(), "turn_start count == model requests");
        let tools = tool_messages(&reqs[1]);
        assert_eq!(tools.len(), 2, "{tools:?}");
        assert_eq!(tools[0].0, "call_1");
        assert_eq!(tools[1].0, "call_2");
        assert!(
            tools[0].1 == "hi\n<exited with exit code 0>" || tools[0].1.starts_with("hi\n<shellId: "),
            "bash result: {:?}",
            tools[0].1
        );
        assert_eq!(tools[1].1, "1. Hello file\n2. second line", "view result");

        let perms = c.events_of_type(&sid, "permission.requested");
        let kinds: Vec<_> = perms.iter().map(|p| p["data"]["permissionRequest"]["kind"].clone()).collect();
        assert!(kinds.contains(&json!("shell")), "{kinds:?}");
        assert!(kinds.contains(&json!("read")), "{kinds:?}");
        for pc in c.events_of_type(&sid, "permission.completed") {
            assert_eq!(pc["data"]["result"]["kind"], json!("approved"), "{pc}");
        }
        let completes = c.events_of_type(&sid, "tool.execution_complete");
        assert_eq!(completes.len(), 2);
        assert!(completes.iter().all(|e| e["data"]["success"] == json!(true)), "{completes:?}");
        let am = c.events_of_type(&sid, "assistant.message");
        assert_eq!(am.len(), 2);
        let reqs0 = am[0]["data"]["toolRequests"].as_array().unwrap();
        assert_eq!(reqs0.len(), 2);
        assert_eq!(reqs0[0]["name"], json!("bash"));
        assert_eq!(am[1]["data"]["content"], json!("All done"));
        check_message_ids(c, &sid, &mid);
        // turnIds restart at 0 per message and count model calls.
        let turns: Vec<_> =
            c.events_of_type(&sid, "assistant.turn_start").iter().map(|e| e["data"]["turnId"].clone()).collect();
        assert_eq!(turns, vec![json!("0"), json!("1")]);
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_with_feedback_goes_on_and_a_bare_one_ends_the_run() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let touch = json!({"command": "touch should_not_exist", "description": "touch"});
        env.fake.push_reply(Reply::tool_call("bash", touch.clone()));
        env.fake.push_reply(Reply::text("OK, I won't"));
        let c = &env.client;
        let sid = c.create_session(json!({"requestPermission": true})).await;
        // With the user's reasons (as the original): the model hears them and the turn goes on.
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "reject", "feedback": "no way"}));
        c.send(&sid, "touch a file").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        approver.abort();
        assert!(!env.workdir().join("should_not_exist").exists(), "a rejected command must not run");
        let reqs = env.model_requests();
        assert_eq!(reqs.len(), 2, "the turn went on");
        let tools = tool_messages(&reqs[1]);
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].1, "The user rejected this tool call. User feedback: no way");
        let pc = c.wait_for_event(&sid, "permission.completed", T).await;
        assert_eq!(pc["data"]["result"], json!({"kind": "denied-interactively-by-user", "feedback": "no way"}), "{pc}");
        let tc = c.wait_for_event(&sid, "tool.execution_complete", T).await;
        assert_eq!(tc["data"]["success"], json!(false), "{tc}");
        assert_eq!(tc["data"]["error"]["code"], json!("denied"), "{tc}");
        assert_eq!(
            c.events_of_type(&sid, "assistant.message").last().unwrap()["data"]["content"],
            json!("OK, I won't")
        );
        assert_eq!(c.count(&sid, "abort"), 0);

        // Without a word (as the recordings): no further model call; the run ends as an abort.
        env.fake.push_reply(Reply::tool_call("bash", touch));
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "reject"}));
        c.send(&sid, "touch it anyway").await;
        c.wait_for_nth_event(&sid, "session.idle", 2, T).await;
        approver.abort();
        assert!(!env.workdir().join("should_not_exist").exists());
        assert_eq!(env.model_requests().len(), 3);
        let tc = c.wait_for_nth_event(&sid, "tool.execution_complete", 2, T).await;
        assert_eq!(tc["data"]["error"]["code"], json!("rejected"), "{tc}");
        let tail: Vec<String> = c
            .events(&sid)
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .skip_while(|t| t != "tool.execution_complete")
            .skip(1)
            .skip_while(|t| t != "tool.execution_complete")
            .collect();
        let at = |t: &str| tail.iter().position(|x| x == t).unwrap_or(usize::MAX);
        assert!(at("assistant.turn_end") < at("abort") && at("abort") < at("session.info"), "{tail:?}");
        assert!(at("session.info") < at("session.idle"), "{tail:?}");
        let info = c.events_of_type(&sid, "session.info").last().cloned().unwrap();
        assert_eq!(info["data"], json!({"infoType": "cancellation", "message": "Operation cancelled by user"}));

        // Both rejections reach the model with the next message.
        env.fake.push_reply(Reply::text("ok"));
        c.send(&sid, "then just say ok").await;
        c.wait_for_nth_event(&sid, "session.idle", 3, T).await;
        let reqs = env.model_requests();
        let tools = tool_messages(reqs.last().unwrap());
        assert_eq!(tools.last().unwrap().1, "The user rejected this tool call.");
        assert_eq!(c.count(&sid, "assistant.turn_start"), reqs.len());
        finish(&env, &sid, 3).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tool_from_the_model() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::tool_call("x", json!({})));
        env.fake.push_reply(Reply::text("sorry"));
        let c = &env.client;
        let sid = c.create_session(json!({"requestPermission": true})).await;
        c.send(&sid, "call x").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let reqs = env.model_requests();
        assert_eq!(reqs.len(), 2);
        let tools = tool_messages(&reqs[1]);
        assert_eq!(tools.len(), 1);
        assert!(tools[0].1.starts_with("Tool 'x' does not exist."), "{:?}", tools[0].1);
        assert_eq!(c.count(&sid, "permission.requested"), 0, "no permission prompt for unknown tools");
        let tc = c.wait_for_event(&sid, "tool.execution_complete", T).await;
        assert_eq!(tc["data"]["success"], json!(false), "{tc}");
        assert_eq!(tc["data"]["error"]["message"], json!("Tool 'x' does not exist."), "{tc}");
        assert_eq!(c.count(&sid, "assistant.turn_start"), reqs.len());
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn external_tool_round_trip() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::tool_call("get_weather", json!({"city": "Paris"})));
        env.fake.push_reply(Reply::text("It is sunny in Paris"));
        let c = &env.client;
        let sid = c
            .create_session(json!({
                "requestPermission": true,
                "tools": [{
                    "name": "get_weather",
                    "description": "Gets the weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
                }]
            }))
            .await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        c.send(&sid, "weather in Paris?").await;
        let req = c.wait_for_event(&sid, "external_tool.requested", T).await;
        assert_eq!(req["data"]["toolName"], json!("get_weather"));
        assert_eq!(req["data"]["sessionId"], json!(sid));
        assert_eq!(req["data"]["arguments"], json!({"city": "Paris"}));
        let request_id = req["data"]["requestId"].clone();
        let r = c
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": sid, "requestId": request_id, "result": "Sunny, 22C"}),
            )
            .await;
        assert_eq!(r["success"], json!(true));
        let r = c
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": sid, "requestId": request_id, "result": "again"}),
            )
            .await;
        assert_eq!(r["success"], json!(false), "a second answer must not succeed: {r}");
        c.wait_for_event(&sid, "session.idle", T).await;
        approver.abort();
        let perm = c.wait_for_event(&sid, "permission.requested", T).await;
        assert_eq!(perm["data"]["permissionRequest"]["kind"], json!("custom-tool"), "{perm}");
        c.wait_for_event(&sid, "external_tool.completed", T).await;
        let reqs = env.model_requests();
        assert_eq!(reqs.len(), 2);
        // The tool is offered to the model.
        let offered =
            reqs[0]["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == json!("get_weather"));
        assert!(offered, "external tool not in the model's tool list");
        let tools = tool_messages(&reqs[1]);
        assert_eq!(tools, vec![("call_1".to_string(), "Sunny, 22C".to_string())]);
        let tc = c.wait_for_event(&sid, "tool.execution_complete", T).await;
        assert_eq!(tc["data"]["success"], json!(true), "{tc}");
        assert_eq!(c.count(&sid, "assistant.turn_start"), reqs.len());
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_deltas_concatenate_to_the_message() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let text = "Streaming is working: one, two, three, four, five, six.";
        env.fake.push_reply(Reply::text(text));
        let c = &env.client;
        let sid = c.create_session(json!({"streaming": true})).await;
        c.send(&sid, "stream please").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let am = c.events_of_type(&sid, "assistant.message");
        assert_eq!(am.len(), 1);
        assert_eq!(am[0]["data"]["content"], json!(text));
        let deltas = c.events_of_type(&sid, "assistant.message_delta");
        assert!(!deltas.is_empty(), "streaming:true must produce assistant.message_delta events");
        let joined: String = deltas.iter().map(|d| d["data"]["deltaContent"].as_str().unwrap_or("")).collect();
        assert_eq!(joined, text);
        for d in &deltas {
            assert_eq!(d["data"]["messageId"], am[0]["data"]["messageId"], "delta messageId: {d}");
        }
        // All deltas precede the final message.
        let evs = c.events(&sid);
        let pos_msg = evs.iter().position(|e| e["type"] == json!("assistant.message")).unwrap();
        let last_delta = evs.iter().rposition(|e| e["type"] == json!("assistant.message_delta")).unwrap();
        assert!(last_delta < pos_msg);
        assert_eq!(env.model_requests()[0]["stream"], json!(true));
        assert_eq!(c.count(&sid, "assistant.turn_start"), env.fake.requests().len());
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_then_success() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::error(429, Some(0), "rate limited"));
        env.fake.push_reply(Reply::text("after the retry"));
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        c.send(&sid, "hi").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(env.fake.requests().len(), 2, "429 must be retried");
        let am = c.events_of_type(&sid, "assistant.message");
        assert_eq!(am.len(), 1);
        assert_eq!(am[0]["data"]["content"], json!("after the retry"));
        assert_eq!(c.count(&sid, "session.error"), 0);
        assert_eq!(c.count(&sid, "assistant.turn_start"), 1, "a retried call is still one turn");
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_exhaust_retries() {
    with_timeout(90, async {
        let env = TestEnv::start().await;
        for _ in 0..20 {
            env.fake.push_reply(Reply::error(500, None, "boom"));
        }
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        let t0 = Instant::now();
        let mid = c.send(&sid, "hi").await;
        let err = c.wait_for_event(&sid, "session.error", Duration::from_secs(60)).await;
        c.wait_for_event(&sid, "session.idle", Duration::from_secs(10)).await;
        let took = t0.elapsed();
        eprintln!("500s: {} model requests, session.error after {took:?}", env.fake.requests().len());
        assert!(took < Duration::from_secs(30), "retries took {took:?} (> 30 s)");
        assert!(env.fake.requests().len() >= 2, "5xx must be retried");
        assert!(err["data"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{err}");
        assert!(err["data"]["errorType"].is_string(), "{err}");
        if let Some(orig) = err["data"].get("originatingMessageId") {
            assert_eq!(orig, &json!(mid));
        }
        let evs = c.events(&sid);
        let ie = evs.iter().position(|e| e["type"] == json!("session.error")).unwrap();
        let ii = evs.iter().position(|e| e["type"] == json!("session.idle")).unwrap();
        assert!(ie < ii, "session.error precedes session.idle");
        assert_eq!(c.count(&sid, "assistant.message"), 0);
        finish(&env, &sid, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_during_a_hanging_model_call() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::Hang);
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        c.send(&sid, "this will hang").await;
        env.fake.wait_for_requests(1, T).await.unwrap();
        c.wait_for_event(&sid, "assistant.turn_start", T).await;
        let t0 = Instant::now();
        let r = c.ok("session.abort", json!({"sessionId": sid})).await;
        assert_eq!(r["success"], json!(true));
        let idle = c.wait_for_event(&sid, "session.idle", Duration::from_secs(5)).await;
        assert!(t0.elapsed() < Duration::from_secs(2), "idle took {:?} after abort", t0.elapsed());
        assert_eq!(idle["data"]["aborted"], json!(true), "{idle}");
        let abort = c.wait_for_event(&sid, "abort", T).await;
        assert_eq!(abort["data"]["reason"], json!("user_initiated"));
        let evs = c.events(&sid);
        let types: Vec<_> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
        let ia = types.iter().position(|t| *t == "abort").unwrap();
        let ie = types.iter().rposition(|t| *t == "assistant.turn_end").expect("turn_end after abort");
        assert!(ia < ie, "abort precedes assistant.turn_end: {types:?}");
        assert_eq!(c.count(&sid, "session.error"), 0, "an abort is not an error: {types:?}");
        // The session still works afterwards.
        env.fake.push_reply(Reply::text("back again"));
        c.send(&sid, "again").await;
        c.wait_for_nth_event(&sid, "session.idle", 2, T).await;
        assert_eq!(c.events_of_type(&sid, "assistant.message").last().unwrap()["data"]["content"], json!("back again"));
        let turns: Vec<_> =
            c.events_of_type(&sid, "assistant.turn_start").iter().map(|e| e["data"]["turnId"].clone()).collect();
        assert_eq!(turns, vec![json!("0"), json!("0")], "turnId restarts at 0 for each send");
        finish(&env, &sid, 2).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_during_a_long_bash_call() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        env.fake.push_reply(Reply::tool_call("bash", json!({"command": "sleep 30", "description": "Sleep"})));
        let c = &env.client;
        let sid = c.create_session(json!({"requestPermission": true})).await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        c.send(&sid, "sleep").await;
        c.wait_for_event(&sid, "tool.execution_start", T).await;
        c.wait_for_event(&sid, "permission.completed", T).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t0 = Instant::now();
        c.ok("session.abort", json!({"sessionId": sid})).await;
        let idle = c.wait_for_event(&sid, "session.idle", Duration::from_secs(10)).await;
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(2), "idle took {took:?} after abort");
        assert_eq!(idle["data"]["aborted"], json!(true), "{idle}");
        approver.abort();
        env.fake.push_reply(Reply::text("ok, stopped"));
        c.send(&sid, "what happened?").await;
        c.wait_for_nth_event(&sid, "session.idle", 2, T).await;
        let reqs = env.model_requests();
        assert_eq!(reqs.len(), 2);
        let tools = tool_messages(&reqs[1]);
        assert_eq!(tools.len(), 1, "{tools:?}");
        assert_eq!(tools[0].1, INTERRUPTED);
        assert_eq!(c.count(&sid, "assistant.turn_start"), reqs.len());
        finish(&env, &sid, 2).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_state_methods_emit_schema_valid_events() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        for (level, ty) in [("info", "session.info"), ("warning", "session.warning"), ("error", "session.error")] {
            let r =
                c.ok("session.log", json!({"sessionId": sid, "message": format!("a {level}"), "level": level})).await;
            let ev = c.wait_for_event(&sid, ty, T).await;
            assert_eq!(r["eventId"], ev["id"], "{r} vs {ev}");
            assert_eq!(ev["data"]["message"], json!(format!("a {level}")));
        }
        c.ok("session.log", json!({"sessionId": sid, "message": "transient", "ephemeral": true})).await;
        let ev = c.wait_for_nth_event(&sid, "session.info", 2, T).await;
        assert_eq!(ev["ephemeral"], json!(true), "{ev}");
        let r = c.ok("session.model.switchTo", json!({"sessionId": sid, "modelId": "gpt-4.1"})).await;
        assert_eq!(r["modelId"], json!("gpt-4.1"), "{r}");
        let mc = c.wait_for_event(&sid, "session.model_change", T).await;
        assert_eq!(mc["data"]["newModel"], json!("gpt-4.1"));
        let r = c.ok("session.model.getCurrent", json!({"sessionId": sid})).await;
        assert_eq!(r["modelId"], json!("gpt-4.1"));
        c.ok("session.mode.set", json!({"sessionId": sid, "mode": "plan"})).await;
        let mc = c.wait_for_event(&sid, "session.mode_changed", T).await;
        assert_eq!(mc["data"]["newMode"], json!("plan"));
        assert_eq!(c.ok("session.mode.get", json!({"sessionId": sid})).await, json!("plan"));
        c.ok("session.mode.set", json!({"sessionId": sid, "mode": "interactive"})).await;
        c.ok("session.plan.update", json!({"sessionId": sid, "content": "# Plan\n1. do it"})).await;
        c.wait_for_event(&sid, "session.plan_changed", T).await;
        let r = c.ok("session.plan.read", json!({"sessionId": sid})).await;
        assert_eq!(r["exists"], json!(true), "{r}");
        assert_eq!(r["content"], json!("# Plan\n1. do it"), "{r}");
        c.ok("session.plan.delete", json!({"sessionId": sid})).await;
        c.wait_for_nth_event(&sid, "session.plan_changed", 2, T).await;
        let msgs = c.get_messages(&sid).await.unwrap();
        assert!(!msgs.iter().any(|m| m["data"]["message"] == json!("transient")), "ephemeral log persisted");
        // Then a normal exchange with the switched model.
        env.fake.push_reply(Reply::text("fine"));
        c.send(&sid, "hi").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(env.model_requests()[0]["model"], json!("gpt-4.1"), "switched model used for the call");
        check_invariants(c, &sid, 1, true);
        c.get_messages(&sid).await.unwrap();
        c.assert_schema_clean();
    })
    .await;
}
