//! SDK-hosted inference (`llmInference.*`) through the binary: a client that registered serves
//! the model's HTTP requests itself; one client at a time; cancellation reaches it; its
//! disconnect hands requests back to the network.

use std::sync::Arc;

use fake_model::Reply;
use serde_json::{json, Value};

use crate::conversation::T;
use crate::harness::{with_timeout, Dirs, Options, RpcClient, Skipper, Transport};

/// The `n`th (0-based) request the server sent this client with `method`.
async fn nth_request(c: &RpcClient, method: &str, n: usize) -> Value {
    c.wait_until(T, method, |c| c.inbound().into_iter().filter(|m| m["method"] == json!(method)).nth(n)).await
}

async fn ack(c: &RpcClient, request: &Value) {
    c.send_json(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {}})).await;
}

fn completion(text: &str) -> String {
    json!({"id": "cmpl-sdk", "model": "claude-sonnet-4.5", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    .to_string()
}

/// Serves the `n`th model request with `answer` (a JSON completion), checking what was asked.
async fn serve(c: &RpcClient, n: usize, session_id: &str, answer: &str) {
    let start = nth_request(c, "llmInference.httpRequestStart", n).await;
    ack(c, &start).await;
    let chunk = nth_request(c, "llmInference.httpRequestChunk", n).await;
    ack(c, &chunk).await;
    let p = &start["params"];
    let request_id = p["requestId"].clone();
    assert_eq!(chunk["params"]["requestId"], request_id);
    assert_eq!(chunk["params"]["end"], json!(true));
    assert_eq!(p["method"], json!("POST"));
    assert!(p["url"].as_str().unwrap().ends_with("/chat/completions"), "{p}");
    assert_eq!(p["sessionId"], json!(session_id));
    assert_eq!(p["headers"]["authorization"], json!(["Bearer fake"]));
    assert!(p["agentId"].is_string() && p["interactionType"].is_string(), "{p}");
    let body: Value = serde_json::from_str(chunk["params"]["data"].as_str().unwrap()).unwrap();
    assert!(body["messages"].is_array());
    let head = c
        .ok(
            "llmInference.httpResponseStart",
            json!({"requestId": request_id, "status": 200, "headers": {"content-type": ["application/json"]}}),
        )
        .await;
    assert_eq!(head["accepted"], json!(true));
    // The body in two pieces, then the end.
    let (a, b) = answer.split_at(answer.len() / 2);
    for piece in [a, b] {
        let r = c.ok("llmInference.httpResponseChunk", json!({"requestId": request_id, "data": piece})).await;
        assert_eq!(r["accepted"], json!(true));
    }
    c.ok("llmInference.httpResponseChunk", json!({"requestId": request_id, "data": "", "end": true})).await;
}

async fn tcp_server() -> (fake_model::FakeModel, Skipper) {
    let fake = fake_model::FakeModel::start().await.unwrap();
    let dirs = Dirs::new();
    fake.set_workdir(&dirs.workdir);
    let opts = Options { transport: Transport::Tcp, ..Default::default() };
    let skipper = Skipper::spawn(&fake.url(), dirs, opts).await;
    (fake, skipper)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registered_client_serves_the_model_requests() {
    with_timeout(60, async {
        let (fake, sk) = tcp_server().await;
        let provider = sk.connect_tcp().await;
        provider.connect().await;
        // The catalogue is read over the network first (which API each model is on), so the
        // client is asked for the model calls alone.
        provider.ok("models.list", json!({})).await;
        assert_eq!(provider.ok("llmInference.setProvider", json!({})).await["success"], json!(true));
        // Idempotent for the same client; refused for another while the first is connected.
        provider.ok("llmInference.setProvider", json!({})).await;
        let other = sk.connect_tcp().await;
        other.connect().await;
        let err = other.call("llmInference.setProvider", json!({})).await.expect_err("taken");
        assert!(err.message.contains("Another client is already the LLM inference provider"), "{err:?}");

        let sid = provider.create_session(json!({})).await;
        provider.send(&sid, "hello").await;
        serve(&provider, 0, &sid, &completion("served by the SDK")).await;
        provider.wait_for_event(&sid, "session.idle", T).await;
        let messages = provider.events_of_type(&sid, "assistant.message");
        assert_eq!(messages[0]["data"]["content"], json!("served by the SDK"));
        assert!(fake.requests().is_empty(), "nothing reached the network");

        // Unknown ids are not accepted (and hurt nothing).
        let r = provider.ok("llmInference.httpResponseChunk", json!({"requestId": "nope", "data": "x"})).await;
        assert_eq!(r["accepted"], json!(false));

        // Once the provider leaves, another client may register, and requests go to the
        // network again until one does.
        provider.close().await;
        fake.push_reply(Reply::text("from the network"));
        let sid2 = other.create_session(json!({})).await;
        other.send(&sid2, "hi").await;
        other.wait_for_event(&sid2, "session.idle", T).await;
        assert_eq!(other.events_of_type(&sid2, "assistant.message")[0]["data"]["content"], json!("from the network"));
        assert_eq!(other.ok("llmInference.setProvider", json!({})).await["success"], json!(true));
        other.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_cancels_the_request_the_client_is_serving() {
    with_timeout(60, async {
        let (_fake, sk) = tcp_server().await;
        let c = sk.connect_tcp().await;
        c.connect().await;
        // The catalogue is read over the network first (which API each model is on), so the
        // client is asked for the model calls alone.
        c.ok("models.list", json!({})).await;
        c.ok("llmInference.setProvider", json!({})).await;
        let sid = c.create_session(json!({})).await;
        c.send(&sid, "never answered").await;
        let start = nth_request(&c, "llmInference.httpRequestStart", 0).await;
        ack(&c, &start).await;
        let chunk = nth_request(&c, "llmInference.httpRequestChunk", 0).await;
        ack(&c, &chunk).await;
        c.ok("session.abort", json!({"sessionId": sid})).await;
        let cancel = nth_request(&c, "llmInference.httpRequestChunk", 1).await;
        assert_eq!(cancel["params"]["requestId"], start["params"]["requestId"]);
        assert_eq!(cancel["params"]["cancel"], json!(true));
        ack(&c, &cancel).await;
        let idle = c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(idle["data"]["aborted"], json!(true));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transport_error_from_the_client_is_retried_then_served() {
    with_timeout(60, async {
        let (_fake, sk) = tcp_server().await;
        let c: Arc<RpcClient> = sk.connect_tcp().await;
        c.connect().await;
        // The catalogue is read over the network first (which API each model is on), so the
        // client is asked for the model calls alone.
        c.ok("models.list", json!({})).await;
        c.ok("llmInference.setProvider", json!({})).await;
        let sid = c.create_session(json!({})).await;
        c.send(&sid, "hello").await;
        // First attempt: the client's upstream call fails.
        let start = nth_request(&c, "llmInference.httpRequestStart", 0).await;
        ack(&c, &start).await;
        ack(&c, &nth_request(&c, "llmInference.httpRequestChunk", 0).await).await;
        let id = start["params"]["requestId"].clone();
        c.ok("llmInference.httpResponseStart", json!({"requestId": id, "status": 502, "headers": {}})).await;
        c.ok(
            "llmInference.httpResponseChunk",
            json!({"requestId": id, "data": "", "end": true, "error": {"message": "upstream refused"}}),
        )
        .await;
        // The retry is served.
        serve(&c, 1, &sid, &completion("second time lucky")).await;
        c.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(c.count(&sid, "assistant.turn_retry"), 1);
        assert_eq!(c.events_of_type(&sid, "assistant.message")[0]["data"]["content"], json!("second time lucky"));
    })
    .await;
}
