//! Raw protocol: framing, errors, handshake, stdout hygiene, shutdown, TCP + connection token.

use std::time::{Duration, Instant};

use fake_model::Reply;
use serde_json::{json, Value};

use crate::harness::{parse_all_frames, with_timeout, Dirs, Options, RpcClient, Skipper, TestEnv, Transport};

const T: Duration = Duration::from_secs(10);

/// Waits for a response with `id: null` (parse/invalid-request errors) beyond the first `seen`.
async fn wait_null_id_response(c: &RpcClient, seen: usize) -> Value {
    c.wait_until(T, "an error response with id null", |c| {
        c.responses().into_iter().filter(|r| r.get("id") == Some(&Value::Null)).nth(seen)
    })
    .await
}

async fn ping_ok(c: &RpcClient, msg: &str) {
    let r = c.ok("ping", json!({"message": msg})).await;
    assert_eq!(r["message"], json!(format!("pong: {msg}")), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_body_gets_parse_error_and_connection_survives() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        c.send_raw(b"Content-Length: 9\r\n\r\n{bad json").await;
        let r = wait_null_id_response(c, 0).await;
        assert_eq!(r["error"]["code"], json!(-32700), "{r}");
        assert!(r.get("id").is_some_and(Value::is_null), "id must be present and null: {r}");
        assert_eq!(r["jsonrpc"], json!("2.0"));
        ping_ok(c, "after-bad-json").await;
        assert!(c.protocol_errors().is_empty(), "{:?}", c.protocol_errors());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_header_block_is_skipped() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        // A header block without Content-Length, then one with a non-numeric length.
        c.send_raw(b"X-Garbage: yes\r\n\r\n").await;
        c.send_raw(b"Content-Length: abc\r\n\r\n").await;
        ping_ok(c, "after-bad-header").await;
        // Header name case-insensitive and an extra Content-Type header are accepted from clients.
        let body = br#"{"jsonrpc":"2.0","id":"str-id-1","method":"ping","params":{"message":"ct"}}"#;
        let mut frame = format!(
            "content-length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
            body.len()
        )
        .into_bytes();
        frame.extend_from_slice(body);
        c.send_raw(&frame).await;
        let r = c
            .wait_until(T, "response to string id", |c| {
                c.responses().into_iter().find(|r| r.get("id") == Some(&json!("str-id-1")))
            })
            .await;
        assert_eq!(r["result"]["message"], json!("pong: ct"), "string ids are echoed verbatim: {r}");
        ping_ok(c, "still-alive").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn json_array_body_gets_error_response() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let body = br#"[{"jsonrpc":"2.0","id":77,"method":"ping","params":{}}]"#;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        let before = c.responses().len();
        c.send_raw(&frame).await;
        let r = c.wait_until(T, "a response to the batch", |c| c.responses().into_iter().nth(before)).await;
        assert!(r.get("error").is_some(), "a JSON array must get an error response, got {r}");
        assert!(r["error"]["code"].is_i64(), "{r}");
        ping_ok(c, "after-array").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_method_is_32601() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let e = env.client.call("foo", json!({})).await.unwrap_err();
        assert_eq!(e.code, -32601, "{e}");
        assert_eq!(e.message, "Unhandled method foo");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_params_name_the_field() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let e = env.client.call("session.create", json!({"model": 123})).await.unwrap_err();
        assert!(e.message.contains("model"), "error must name `model`: {e}");
        assert!(e.code == -32602 || e.code == -32603, "{e}");
        let e = env
            .client
            .call("session.send", json!({"sessionId": "00000000-0000-4000-8000-000000000000", "prompt": "hi"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
        let e = env
            .client
            .call("session.getMessages", json!({"sessionId": "00000000-0000-4000-8000-000000000000"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
        let e = env
            .client
            .call("session.resume", json!({"sessionId": "00000000-0000-4000-8000-000000000000"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connect_and_ping() {
    with_timeout(30, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let sk = Skipper::spawn(&fake.url(), Dirs::new(), Options::default()).await;
        let c = sk.client();
        let r = c.ok("connect", json!({"supportedTaskKinds": ["agent", "client", "shell"]})).await;
        assert_eq!(r["ok"], json!(true), "{r}");
        assert_eq!(r["protocolVersion"], json!(3), "{r}");
        assert!(r["version"].is_string(), "{r}");
        let r = c.ok("ping", json!({"message": "hi"})).await;
        assert_eq!(r["message"], json!("pong: hi"));
        assert_eq!(r["protocolVersion"], json!(3));
        assert!(r["timestamp"].is_string(), "timestamp must be an ISO string: {r}");
        let r = c.ok("ping", json!({})).await;
        assert_eq!(r["message"], json!("pong"));
        let r = c.ok("status.get", json!({})).await;
        assert_eq!(r["protocolVersion"], json!(3), "{r}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_carries_only_frames() {
    with_timeout(60, async {
        let mut env = TestEnv::start().await;
        env.fake.push_reply(Reply::tool_call(
            "bash",
            json!({"command": "echo to-stdout; echo to-stderr >&2", "description": "echo"}),
        ));
        env.fake.push_reply(Reply::text("done"));
        let c = env.client.clone();
        let sid = c.create_session(json!({"requestPermission": true})).await;
        let _approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        c.send(&sid, "run something").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        c.send_raw(b"Content-Length: 3\r\n\r\n{x}").await; // provoke an error frame too
        ping_ok(&c, "last").await;
        c.close().await;
        let status = env.skipper.wait_exit(Duration::from_secs(10)).await;
        assert!(status.is_some(), "skipper did not exit after stdin EOF");
        // Let the reader drain.
        c.wait_until(T, "stdout EOF", |c| c.is_closed().then_some(())).await;
        let frames = parse_all_frames(c.raw_bytes()).unwrap_or_else(|e| panic!("stdout is not pure frames: {e}"));
        assert!(frames.len() > 5);
        for f in &frames {
            assert_eq!(f["jsonrpc"], json!("2.0"), "{f}");
        }
        assert!(c.protocol_errors().is_empty(), "{:?}", c.protocol_errors());
        c.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_eof_exits_promptly() {
    with_timeout(30, async {
        let mut env = TestEnv::start().await;
        let c = env.client.clone();
        c.create_session(json!({})).await;
        let t0 = Instant::now();
        c.close().await;
        let status = env.skipper.wait_exit(Duration::from_secs(5)).await;
        assert!(status.is_some(), "skipper still running 5 s after stdin EOF");
        eprintln!("exited {:?} after stdin EOF in {:?}", status, t0.elapsed());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_eof_exits_promptly_while_a_model_call_hangs() {
    with_timeout(30, async {
        let mut env = TestEnv::start().await;
        env.fake.push_reply(Reply::Hang);
        let c = env.client.clone();
        let sid = c.create_session(json!({})).await;
        c.send(&sid, "hang please").await;
        env.fake.wait_for_requests(1, T).await.unwrap();
        c.close().await;
        let status = env.skipper.wait_exit(Duration::from_secs(5)).await;
        assert!(status.is_some(), "skipper still running 5 s after stdin EOF (model call hanging)");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_port_line_and_ping() {
    with_timeout(30, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let sk =
            Skipper::spawn(&fake.url(), Dirs::new(), Options { transport: Transport::Tcp, ..Default::default() }).await;
        assert!(sk.port.unwrap() > 0);
        let c1 = sk.connect_tcp().await;
        let c2 = sk.connect_tcp().await;
        assert_eq!(c1.connect().await["protocolVersion"], json!(3));
        assert_eq!(c2.connect().await["protocolVersion"], json!(3));
        ping_ok(&c1, "one").await;
        ping_ok(&c2, "two").await;
        assert!(sk.tcp_stdout_text().is_empty(), "unexpected stdout after the port line: {:?}", sk.tcp_stdout_text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_connection_token() {
    with_timeout(30, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let sk = Skipper::spawn(
            &fake.url(),
            Dirs::new(),
            Options {
                transport: Transport::Tcp,
                extra_env: vec![("COPILOT_CONNECTION_TOKEN".into(), "secret".into())],
                ..Default::default()
            },
        )
        .await;
        let c = sk.connect_tcp().await;
        let e = c.call("ping", json!({})).await.unwrap_err();
        assert_eq!(e.code, -32001, "{e}");
        assert_eq!(e.message, "AUTHENTICATION_REQUIRED");
        let e = c.call("session.create", json!({})).await.unwrap_err();
        assert_eq!(e.code, -32001, "{e}");
        let e = c.call("connect", json!({"token": "wrong"})).await.unwrap_err();
        assert_eq!(e.code, -32002, "{e}");
        assert_eq!(e.message, "AUTHENTICATION_FAILED");
        let e = c.call("connect", json!({})).await.unwrap_err();
        assert_eq!(e.code, -32002, "missing token: {e}");
        let e = c.call("ping", json!({})).await.unwrap_err();
        assert_eq!(e.code, -32001, "still unauthenticated after a failed connect: {e}");
        let r = c.ok("connect", json!({"token": "secret"})).await;
        assert_eq!(r["protocolVersion"], json!(3));
        ping_ok(&c, "authed").await;
        // Another connection has its own handshake state.
        let c2 = sk.connect_tcp().await;
        assert_eq!(c2.call("ping", json!({})).await.unwrap_err().code, -32001);
    })
    .await;
}
