//! Every method in the table is routed to its handler; the wire's error shapes.

use protocol::frame::encode;
use rpc_server::methods::METHODS;
use rpc_server::Limits;
use serde_json::{json, Value};

use crate::support::{Env, T};

/// A JSON-RPC 2.0 response: `jsonrpc`, the id, and exactly one of `result` / `error`; an
/// error has an integer code and a string message.
fn assert_response_shape(r: &Value) {
    assert_eq!(r["jsonrpc"], json!("2.0"), "{r}");
    assert!(r.get("id").is_some(), "{r}");
    assert!(r.get("result").is_some() != r.get("error").is_some(), "exactly one of result/error: {r}");
    if let Some(e) = r.get("error") {
        assert!(e["code"].is_i64() && e["message"].is_string(), "{r}");
    }
}

/// Every method of the table is answered by its handler (never `-32601`), with `{}` params;
/// `runtime.shutdown` last, which answers and then ends the connection.
#[tokio::test(flavor = "multi_thread")]
async fn every_method_in_the_table_is_routed() {
    let env = Env::start(None, Limits::default()).await;
    let (c, task) = env.connect();
    assert!(METHODS.len() >= 30, "the table lists {} methods", METHODS.len());
    for entry in METHODS.iter().filter(|e| e.name != "runtime.shutdown") {
        let r = c.call(entry.name, json!({})).await;
        assert_response_shape(&r);
        assert_ne!(r["error"]["code"], json!(-32601), "{} is not routed: {r}", entry.name);
    }
    let r = c.call("runtime.shutdown", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    tokio::time::timeout(T, task).await.expect("runtime.shutdown ends the connection").unwrap();
}

/// The error of each kind of bad input, with its code, message and id.
#[tokio::test(flavor = "multi_thread")]
async fn error_shapes() {
    let env = Env::start(None, Limits { max_frame_bytes: 1024, ..Limits::default() }).await;
    let (c, _task) = env.connect();

    let r = c.call("no.such.method", json!({})).await;
    assert_response_shape(&r);
    assert_eq!(r["error"], json!({"code": -32601, "message": "Unhandled method no.such.method"}));

    let r = c.call("session.send", json!({"sessionId": 5, "prompt": "x"})).await;
    assert_response_shape(&r);
    assert_eq!(r["error"]["code"], json!(-32602));
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("Request session.send failed with message: sessionId: invalid type"), "{msg}");

    let r = c.call("session.send", json!([1])).await;
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("params must be an object"), "{r}");

    let r = c.call("session.getMessages", json!({"sessionId": "nope"})).await;
    assert_response_shape(&r);
    assert_eq!(r["error"]["code"], json!(-32603));
    assert_eq!(
        r["error"]["message"],
        json!("Request session.getMessages failed with message: Session not found: nope")
    );

    // Frame-level errors carry id null.
    let null_errors = |m: &[Value]| -> Vec<Value> {
        m.iter().filter(|v| v["id"].is_null() && v.get("error").is_some()).cloned().collect()
    };
    c.send_raw(&encode(b"{not json")).await;
    c.send_raw(&encode(b"[{\"id\":1,\"method\":\"ping\"}]")).await;
    c.send_raw(&encode(br#"{"id":{},"method":"ping"}"#)).await;
    c.send_raw(&encode(&[b' '; 2000])).await;
    c.send_raw(b"Content-Length: -1\r\n\r\n").await;
    let errs = c.wait_for("five frame errors", |m| Some(null_errors(m)).filter(|e| e.len() >= 5)).await;
    let codes: Vec<i64> = errs.iter().map(|e| e["error"]["code"].as_i64().unwrap()).collect();
    assert_eq!(codes, vec![-32700, -32600, -32600, -32700, -32700], "{errs:?}");
    assert!(errs[3]["error"]["message"].as_str().unwrap().contains("exceeds the limit of 1024 bytes"), "{errs:?}");
    for e in &errs {
        assert_response_shape(e);
    }
    let r = c.ok("ping", json!({"message": "still here"})).await;
    assert_eq!(r["message"], json!("pong: still here"));
}
