//! The connection token: nothing but `connect` before it, a wrong or missing token refused.

use rpc_server::Limits;
use serde_json::json;

use crate::support::Env;

#[tokio::test(flavor = "multi_thread")]
async fn connection_token_flow() {
    let env = Env::start(Some("secret"), Limits::default()).await;
    let (c, _task) = env.connect();
    for method in ["ping", "session.create", "no.such.method"] {
        let r = c.call(method, json!({})).await;
        assert_eq!(r["error"], json!({"code": -32001, "message": "AUTHENTICATION_REQUIRED"}), "{method}: {r}");
    }
    for params in [json!({"token": "wrong"}), json!({}), json!({"token": ""})] {
        let r = c.call("connect", params.clone()).await;
        assert_eq!(r["error"], json!({"code": -32002, "message": "AUTHENTICATION_FAILED"}), "{params}: {r}");
    }
    let r = c.call("ping", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32001), "a failed connect does not authenticate: {r}");
    let r = c.ok("connect", json!({"token": "secret"})).await;
    assert_eq!(r["ok"], json!(true));
    assert_eq!(c.ok("ping", json!({})).await["message"], json!("pong"));

    // Each connection has its own handshake.
    let (c2, _task2) = env.connect();
    assert_eq!(c2.call("ping", json!({})).await["error"]["code"], json!(-32001));

    // Without a configured token, no handshake is needed.
    let open = Env::start(None, Limits::default()).await;
    let (c3, _task3) = open.connect();
    assert_eq!(c3.ok("ping", json!({})).await["message"], json!("pong"));
}
