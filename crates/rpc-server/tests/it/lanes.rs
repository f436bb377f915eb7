//! Per-session lanes: a session's requests run in arrival order, other sessions are not held
//! up, and a full lane answers `-32005` instead of queueing without bound.
//!
//! What holds a lane: `session.detach` of a session created with `hooks: true` invokes its
//! `sessionEnd` hook — a request to the client — and waits for the answer. The client decides
//! when to answer, so the lane stays busy exactly as long as the test needs (no timing).

use rpc_server::Limits;
use serde_json::{json, Value};

use crate::support::{request, Client, Env};

async fn hold_lane(c: &Client, sid: &str) -> Value {
    c.send_raw(&request("detach", "session.detach", json!({"sessionId": sid}))).await;
    c.wait_for("the sessionEnd hook request", |m| {
        m.iter().find(|v| v["method"] == json!("hooks.invoke") && v["params"]["sessionId"] == json!(sid)).cloned()
    })
    .await
}

/// Ids (with `prefix`) of the responses among `messages`, in arrival order.
fn answered(messages: &[Value], prefix: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|v| v.get("method").is_none())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .filter(|id| id.starts_with(prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_lane_is_refused_and_the_queue_runs_in_order() {
    let env = Env::start(None, Limits { lane_capacity: 2, ..Limits::default() }).await;
    let (c, _task) = env.connect();
    let a = c.ok("session.create", json!({"hooks": true})).await["sessionId"].as_str().unwrap().to_string();
    let b = c.ok("session.create", json!({})).await["sessionId"].as_str().unwrap().to_string();

    let hook = hold_lane(&c, &a).await;
    // The detach runs; two requests fit in A's lane behind it, the third is refused at once.
    for i in 0..3 {
        c.send_raw(&request(format!("a-{i}"), "session.mode.get", json!({"sessionId": a}))).await;
    }
    let refused = c.response(&json!("a-2")).await;
    assert_eq!(refused["error"]["code"], json!(-32005), "{refused}");
    let msg = refused["error"]["message"].as_str().unwrap();
    assert!(msg.contains("too many requests queued for session") && msg.contains("retry later"), "{msg}");

    // Another session is not held up by A's lane.
    assert_eq!(c.ok("session.mode.get", json!({"sessionId": b})).await, json!("interactive"));
    assert_eq!(answered(&c.messages(), "a-"), vec!["a-2"], "A's queued requests ran before the detach finished");
    assert!(answered(&c.messages(), "detach").is_empty());

    // The hook is answered: the detach completes, then A's queue in order.
    c.send_raw(&protocol::frame::encode(
        json!({"jsonrpc": "2.0", "id": hook["id"], "result": {}}).to_string().as_bytes(),
    ))
    .await;
    let order = c
        .wait_for("the detach and A's queue", |m| {
            let ids: Vec<String> =
                answered(m, "").into_iter().filter(|id| id == "detach" || id == "a-0" || id == "a-1").collect();
            (ids.len() == 3).then_some(ids)
        })
        .await;
    assert_eq!(order, vec!["detach", "a-0", "a-1"]);

    // The lane has room again.
    let r = c.call("session.mode.get", json!({"sessionId": a})).await;
    assert_ne!(r["error"]["code"], json!(-32005), "{r}");
}

/// Many different session ids on one connection, each answered: lanes are per session and
/// come and go with the work.
#[tokio::test(flavor = "multi_thread")]
async fn many_session_ids_are_all_answered() {
    let env = Env::start(None, Limits { lane_capacity: 1, ..Limits::default() }).await;
    let (c, _task) = env.connect();
    let mut batch = Vec::new();
    for i in 0..3_000 {
        batch.extend(request(format!("s-{i}"), "session.plan.read", json!({"sessionId": format!("missing-{i}")})));
    }
    c.send_raw(&batch).await;
    let answers = c
        .wait_for("3,000 answers", |m| {
            let v: Vec<Value> =
                m.iter().filter(|v| v["id"].as_str().is_some_and(|id| id.starts_with("s-"))).cloned().collect();
            (v.len() == 3_000).then_some(v)
        })
        .await;
    for a in answers {
        // Not one `-32005`: each id has its own lane (capacity 1 is plenty).
        assert!(a["error"]["message"].as_str().unwrap().contains("Session not found"), "{a}");
    }
}
