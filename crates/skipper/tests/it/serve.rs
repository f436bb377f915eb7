//! `skipper serve`: health, readiness and metrics over HTTP, the `/rpc` WebSocket with its
//! bearer token, the SDK TCP port with `connect`'s token, and tenant isolation — all through
//! the real binary, against `fake-model`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake_model::Reply;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::harness::{with_timeout, Dirs, RpcClient};

const T: Duration = Duration::from_secs(20);
pub(crate) const ALPHA: &str = "alpha-secret-token";
pub(crate) const BETA: &str = "beta-secret-token";

pub(crate) fn sha256_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A running `skipper serve` with tenants alpha and beta, on free ports.
pub(crate) struct Serve {
    pub(crate) child: Child,
    pub(crate) fake: fake_model::FakeModel,
    dirs: Arc<Dirs>,
    http: String,
    sdk: String,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Serve {
    /// With tenants alpha and beta.
    pub(crate) async fn start() -> Self {
        let config = format!(
            "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\n",
            sha256_hex(ALPHA),
            sha256_hex(BETA)
        );
        Self::start_with(&config, &[]).await
    }

    async fn start_with(config: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with_args(config, env, &[]).await
    }

    /// Its own home, fake model and ports; `extra` flags (e.g. `--database-url`).
    pub(crate) async fn start_with_args(config: &str, env: &[(&str, &str)], extra: &[&str]) -> Self {
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let mut cmd = serve_command_with(&dirs, &fake.url(), config, "127.0.0.1:0", extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawning skipper serve");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let sink = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let line = tokio::time::timeout(T, async {
            loop {
                match lines.next_line().await.expect("reading stdout") {
                    Some(l) if l.contains("listening") => break l,
                    Some(_) => continue,
                    None => panic!(
                        "skipper serve exited before listening: {}",
                        String::from_utf8_lossy(&stderr.lock().unwrap())
                    ),
                }
            }
        })
        .await
        .expect("no `listening` line");
        let addr_after = |prefix: &str| {
            let rest = &line[line.find(prefix).unwrap_or_else(|| panic!("{prefix} in {line}")) + prefix.len()..];
            rest.split_whitespace().next().unwrap().to_string()
        };
        let (http, sdk) = (addr_after("http://"), addr_after("tcp://"));
        Self { child, fake, dirs, http, sdk, stderr }
    }

    /// Runs `skipper serve` as [`Serve::start_with_args`] would, expecting it to exit before
    /// listening: its exit status and stderr.
    pub(crate) async fn fails_to_start(config: &str, extra: &[&str]) -> (std::process::ExitStatus, String) {
        Self::fails_to_start_with_env(config, extra, &[]).await
    }

    /// [`Serve::fails_to_start`] with `env` over the usual environment.
    pub(crate) async fn fails_to_start_with_env(
        config: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (std::process::ExitStatus, String) {
        let dirs = Dirs::new();
        let mut cmd = serve_command_with(&dirs, "http://127.0.0.1:9", config, "127.0.0.1:0", extra);
        cmd.envs(env.iter().copied());
        let out = cmd.output();
        let out =
            tokio::time::timeout(T, out).await.expect("skipper serve kept running").expect("running skipper serve");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("listening"), "it started: {stdout}");
        (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    pub(crate) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// An SDK TCP connection, not yet `connect`ed.
    async fn tcp(&self) -> Arc<RpcClient> {
        let stream = TcpStream::connect(&self.sdk).await.expect("connecting to --sdk-listen");
        let (r, w) = stream.into_split();
        RpcClient::new(r, w)
    }

    /// An SDK TCP connection authenticated with `token`.
    pub(crate) async fn tenant(&self, token: &str) -> Arc<RpcClient> {
        let c = self.tcp().await;
        c.ok("connect", json!({"token": token})).await;
        c
    }

    pub(crate) fn workspace(&self, tenant: &str) -> PathBuf {
        self.dirs.copilot_home.join("workspaces").join(tenant)
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, String) {
        http_get(&self.http, path).await
    }

    async fn metrics(&self) -> String {
        let (status, body) = self.get("/metrics").await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

/// `skipper serve` on free ports (HTTP on `listen`, SDK TCP on loopback) with `config` as its
/// configuration file.
fn serve_command(dirs: &Dirs, model_url: &str, config: &str, listen: &str) -> Command {
    serve_command_with(dirs, model_url, config, listen, &[])
}

fn serve_command_with(dirs: &Dirs, model_url: &str, config: &str, listen: &str, extra: &[&str]) -> Command {
    let config_path = dirs.home.join("server.toml");
    std::fs::write(&config_path, config).expect("config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skipper"));
    cmd.args(["serve", "--listen", listen, "--sdk-listen", "127.0.0.1:0", "--config"]);
    cmd.arg(&config_path).arg("--home").arg(&dirs.copilot_home).args(extra);
    cmd.env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    cmd.env("HOME", &dirs.home);
    cmd.env("COPILOT_API_URL", model_url);
    cmd.env("COPILOT_DEBUG_GITHUB_API_URL", model_url);
    cmd.env("GH_TOKEN", "fake");
    if let Ok(v) = std::env::var("SKIPPER_LOG") {
        cmd.env("SKIPPER_LOG", v);
    }
    cmd.current_dir(&dirs.workdir);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    cmd
}

/// Reads one `Content-Length` frame's body as JSON.
async fn read_frame(stream: &mut TcpStream) -> Value {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(T, stream.read(&mut byte)).await.expect("a frame in time").unwrap();
        assert_eq!(n, 1, "closed before a whole frame: {}", String::from_utf8_lossy(&raw));
        raw.push(byte[0]);
    }
    let header = String::from_utf8_lossy(&raw);
    let len: usize = header.trim().strip_prefix("Content-Length: ").and_then(|l| l.parse().ok()).expect("length");
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// A plain HTTP/1.1 GET; the status and the body.
async fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.expect("connecting to --listen");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// The value of one sample line (`name{labels} value`) in a Prometheus exposition.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn health_readiness_and_metrics_follow_real_turns() {
    with_timeout(60, async {
        let s = Serve::start().await;
        assert_eq!(s.get("/healthz").await.0, 200);
        assert_eq!(s.get("/readyz").await.0, 200);
        let before = s.metrics().await;
        assert_eq!(sample(&before, "skipper_sessions_active"), 0.0);
        assert_eq!(sample(&before, "skipper_turns_total"), 0.0);
        assert_eq!(sample(&before, "skipper_model_latency_seconds_count"), 0.0);
        assert_eq!(sample(&before, "skipper_errors_total{kind=\"auth\"}"), 0.0);

        let file = s.workspace("alpha").join("notes.txt");
        let c = s.tenant(ALPHA).await;
        std::fs::write(&file, "one line").unwrap();
        s.fake.push_reply(Reply::tool_call("view", json!({"path": file.to_string_lossy()})));
        s.fake.push_reply(Reply::text("Read it"));
        s.fake.push_reply(Reply::error(400, None, "bad request from the fake"));
        let sid = c.create_session(json!({"requestPermission": true})).await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        c.send(&sid, "read the notes").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        c.send(&sid, "again").await;
        c.wait_for_nth_event(&sid, "session.idle", 2, T).await;
        approver.abort();
        let _ = s.tcp().await.call("connect", json!({"token": "wrong"})).await;

        let after = s.metrics().await;
        assert_eq!(sample(&after, "skipper_sessions_active"), 1.0, "{after}");
        assert_eq!(sample(&after, "skipper_turns_total"), 3.0, "two turns for the tool, one failed call");
        assert_eq!(sample(&after, "skipper_model_latency_seconds_count"), 3.0);
        assert_eq!(sample(&after, "skipper_tool_duration_seconds_count{tool=\"view\"}"), 1.0, "{after}");
        assert_eq!(sample(&after, "skipper_errors_total{kind=\"model\"}"), 1.0, "{after}");
        assert_eq!(sample(&after, "skipper_errors_total{kind=\"auth\"}"), 1.0, "{after}");
    })
    .await;
}

/// A WebSocket JSON-RPC client: one object per text frame.
struct Ws {
    stream: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    next_id: i64,
    /// Everything that was not the answer being waited for.
    seen: Vec<Value>,
}

impl Ws {
    async fn open(addr: &str, token: Option<&str>) -> Result<Self, u16> {
        let mut req = format!("ws://{addr}/rpc").into_client_request().unwrap();
        if let Some(t) = token {
            req.headers_mut().insert("Authorization", format!("Bearer {t}").parse().unwrap());
        }
        match tokio_tungstenite::connect_async(req).await {
            Ok((stream, _)) => Ok(Self { stream, next_id: 1, seen: Vec::new() }),
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
            Err(e) => panic!("WebSocket connect failed: {e}"),
        }
    }

    /// Reads one text frame as one JSON value (failing the test on anything else).
    async fn read(&mut self) -> Value {
        loop {
            let msg = tokio::time::timeout(T, self.stream.next()).await.expect("a frame in time");
            match msg.expect("socket open").expect("frame") {
                Message::Text(t) => {
                    assert!(!t.starts_with("Content-Length"), "no headers on a WebSocket: {t}");
                    return serde_json::from_str(&t).unwrap_or_else(|e| panic!("one JSON object per frame: {e}: {t}"));
                }
                Message::Ping(_) | Message::Pong(_) => continue,
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stream.send(Message::Text(req.to_string().into())).await.unwrap();
        loop {
            let v = self.read().await;
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return v;
            }
            self.seen.push(v);
        }
    }

    async fn wait_event(&mut self, sid: &str, ty: &str) -> Value {
        let matches = |v: &Value| {
            v["method"] == json!("session.event")
                && v["params"]["sessionId"] == json!(sid)
                && v["params"]["event"]["type"] == json!(ty)
        };
        if let Some(v) = self.seen.iter().find(|v| matches(v)) {
            return v.clone();
        }
        loop {
            let v = self.read().await;
            self.seen.push(v.clone());
            if matches(&v) {
                return v;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_websocket_needs_a_bearer_token_then_speaks_json_rpc_per_frame() {
    with_timeout(60, async {
        let s = Serve::start().await;
        assert_eq!(Ws::open(&s.http, None).await.err(), Some(401));
        assert_eq!(Ws::open(&s.http, Some("not-a-tenant")).await.err(), Some(401));
        let mut ws = Ws::open(&s.http, Some(ALPHA)).await.expect("upgrade with alpha's token");
        // The header authenticated the connection: no `connect` needed.
        let pong = ws.call("ping", json!({"message": "ws"})).await;
        assert_eq!(pong["result"]["message"], json!("pong: ws"), "{pong}");
        s.fake.push_reply(Reply::text("Hello over a WebSocket"));
        let created = ws.call("session.create", json!({})).await;
        let sid = created["result"]["sessionId"].as_str().expect("session id").to_string();
        let start = ws.wait_event(&sid, "session.start").await;
        let cwd = PathBuf::from(start["params"]["event"]["data"]["context"]["cwd"].as_str().unwrap());
        assert_eq!(cwd, s.workspace("alpha").canonicalize().unwrap(), "sessions run in the tenant's workspace");
        let sent = ws.call("session.send", json!({"sessionId": sid, "prompt": "hi"})).await;
        assert!(sent["result"]["messageId"].is_string(), "{sent}");
        let msg = ws.wait_event(&sid, "assistant.message").await;
        assert_eq!(msg["params"]["event"]["data"]["content"], json!("Hello over a WebSocket"));
        ws.wait_event(&sid, "session.idle").await;
        // A malformed frame is answered with a parse error and the socket stays usable.
        ws.stream.send(Message::Text("{not json".into())).await.unwrap();
        let err = ws.read().await;
        assert_eq!(err["error"]["code"], json!(-32700), "{err}");
        assert_eq!(ws.call("ping", json!({})).await["result"]["message"], json!("pong"));
        // The session is alpha's: beta's SDK connection does not see it.
        let beta = s.tenant(BETA).await;
        let listed = beta.ok("session.list", json!({})).await;
        assert_eq!(listed["sessions"], json!([]), "{listed}");

        // Server→client requests and their answers are frames too: detaching a session with
        // hooks asks the client for its sessionEnd hook before answering the detach.
        let hooked = ws.call("session.create", json!({"hooks": true})).await;
        let hsid = hooked["result"]["sessionId"].as_str().expect("session id").to_string();
        let detach =
            json!({"jsonrpc": "2.0", "id": "detach-1", "method": "session.detach", "params": {"sessionId": hsid}});
        ws.stream.send(Message::Text(detach.to_string().into())).await.unwrap();
        let hook = loop {
            let v = ws.read().await;
            assert_ne!(v["id"], json!("detach-1"), "the detach waits for the hook's answer: {v}");
            if v["method"] == json!("hooks.invoke") {
                break v;
            }
        };
        assert_eq!(hook["params"]["sessionId"], json!(hsid), "{hook}");
        let answer = json!({"jsonrpc": "2.0", "id": hook["id"], "result": {}});
        ws.stream.send(Message::Text(answer.to_string().into())).await.unwrap();
        let detached = loop {
            let v = ws.read().await;
            if v["id"] == json!("detach-1") {
                break v;
            }
        };
        assert_eq!(detached["result"]["success"], json!(true), "{detached}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_port_requires_connect_with_a_tenant_token_first() {
    with_timeout(60, async {
        let s = Serve::start().await;
        let c = s.tcp().await;
        for (method, params) in [("ping", json!({})), ("session.create", json!({})), ("session.list", json!({}))] {
            let e = c.call(method, params).await.expect_err("refused before connect");
            assert_eq!(e.code, -32001, "{method}: {e}");
        }
        let missing = c.call("connect", json!({})).await.expect_err("connect without a token");
        assert_eq!(missing.code, -32002, "never -32601: an SDK would fall back to ping: {missing}");
        let wrong = c.call("connect", json!({"token": "guess"})).await.expect_err("a wrong token");
        assert_eq!(wrong.code, -32002, "{wrong}");
        assert!(!wrong.raw.to_string().contains("guess"), "the token is not echoed: {}", wrong.raw);
        assert_eq!(c.call("ping", json!({})).await.expect_err("still refused").code, -32001);
        let ok = c.ok("connect", json!({"token": ALPHA})).await;
        assert_eq!(ok["ok"], json!(true), "{ok}");
        c.ok("ping", json!({})).await;
        // Authenticated as alpha, the connection cannot become beta.
        assert_eq!(c.call("connect", json!({"token": BETA})).await.expect_err("switch").code, -32002);
        assert!(!s.stderr_text().contains(ALPHA) && !s.stderr_text().contains("guess"), "tokens are never logged");
    })
    .await;
}

/// A method's params naming a given session id.
type ParamsFor = fn(&str) -> Value;

/// `(result or error)` of a response with `from` replaced by `to`, for comparing answers.
fn answer(resp: &Value, from: &str, to: &str) -> String {
    let part = resp.get("error").or_else(|| resp.get("result")).unwrap_or(&Value::Null);
    part.to_string().replace(from, to)
}

#[tokio::test(flavor = "multi_thread")]
async fn another_tenants_sessions_are_answered_as_unknown_ids() {
    with_timeout(90, async { foreign_ids_are_unknown(&Serve::start().await).await }).await;
}

/// Every session method beta calls with alpha's session id answers as for an id nobody uses;
/// lists and notifications show each tenant only its own (on either backend: `cluster.rs`
/// runs this on PostgreSQL).
pub(crate) async fn foreign_ids_are_unknown(s: &Serve) {
    {
        let alpha = s.tenant(ALPHA).await;
        let beta = s.tenant(BETA).await;
        s.fake.push_reply(Reply::text("alpha's answer"));
        let sid = alpha.create_session(json!({})).await;
        alpha.send(&sid, "alpha's secret prompt").await;
        alpha.wait_for_event(&sid, "session.idle", T).await;
        let beta_sid = beta.create_session(json!({})).await;
        let unknown = "00000000-0000-4000-8000-000000000000";

        let calls: Vec<(&str, ParamsFor)> = vec![
            ("session.send", |id| json!({"sessionId": id, "prompt": "steal"})),
            ("session.abort", |id| json!({"sessionId": id})),
            ("session.log", |id| json!({"sessionId": id, "message": "x"})),
            ("session.getMessages", |id| json!({"sessionId": id})),
            ("session.getMetadata", |id| json!({"sessionId": id})),
            ("session.model.getCurrent", |id| json!({"sessionId": id})),
            ("session.mode.get", |id| json!({"sessionId": id})),
            ("session.plan.read", |id| json!({"sessionId": id})),
            ("session.permissions.pendingRequests", |id| json!({"sessionId": id})),
            ("session.history.compact", |id| json!({"sessionId": id})),
            (
                "session.history.truncate",
                |id| json!({"sessionId": id, "eventId": "00000000-0000-4000-8000-000000000001"}),
            ),
            ("session.history.cancelBackgroundCompaction", |id| json!({"sessionId": id})),
            ("session.workspaces.listCheckpoints", |id| json!({"sessionId": id})),
            ("session.resume", |id| json!({"sessionId": id})),
            ("session.detach", |id| json!({"sessionId": id})),
            ("session.delete", |id| json!({"sessionId": id})),
        ];
        for (method, params) in &calls {
            let foreign = beta.request_raw(method, params(&sid), T).await;
            let missing = beta.request_raw(method, params(unknown), T).await;
            assert_eq!(
                answer(&foreign, &sid, "ID"),
                answer(&missing, unknown, "ID"),
                "{method}: {foreign} vs {missing}"
            );
        }
        // Listing and the last id show only the caller's own sessions.
        s.fake.push_reply(Reply::text("beta's answer"));
        beta.send(&beta_sid, "beta's prompt").await;
        beta.wait_for_event(&beta_sid, "session.idle", T).await;
        let ids = |v: Value| -> Vec<String> {
            v["sessions"].as_array().unwrap().iter().map(|e| e["sessionId"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(ids(beta.ok("session.list", json!({})).await), vec![beta_sid.clone()]);
        assert_eq!(ids(alpha.ok("session.list", json!({})).await), vec![sid.clone()]);
        assert_eq!(beta.ok("session.getLastId", json!({})).await["sessionId"], json!(beta_sid));
        assert_eq!(alpha.ok("session.getLastId", json!({})).await["sessionId"], json!(sid));
        // Nothing beta tried touched alpha's session; beta never heard of it.
        let events = alpha.get_messages(&sid).await.expect("alpha still has its session");
        assert!(events.iter().all(|e| !e.to_string().contains("steal")), "beta's send did not land");
        assert!(beta.inbound().iter().all(|m| !m.to_string().contains(&sid)), "no notification names alpha's session");
        // A tenant's sessions stay in its workspace.
        let outside = beta.call("session.create", json!({"workingDirectory": "/"})).await.expect_err("outside");
        assert_eq!(outside.code, -32602, "{outside}");
        let escape = beta.call("session.create", json!({"workingDirectory": "../alpha"})).await.expect_err("..");
        assert_eq!(escape.code, -32602, "{escape}");
    }
}

/// Every string in `v` (keys included) that starts with `prefix`.
fn strings_starting_with(v: &Value, prefix: &str) -> Vec<String> {
    match v {
        Value::String(s) => s.starts_with(prefix).then(|| s.clone()).into_iter().collect(),
        Value::Array(items) => items.iter().flat_map(|i| strings_starting_with(i, prefix)).collect(),
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| {
                let key = k.starts_with(prefix).then(|| k.clone());
                key.into_iter().chain(strings_starting_with(v, prefix))
            })
            .collect(),
        _ => vec![],
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tenant_names_its_sessions_in_its_own_namespace() {
    with_timeout(90, async { ids_are_per_tenant(&Serve::start().await).await }).await;
}

/// Two tenants choosing one session id get a session each, as with a free id; nothing either
/// hears names a session the server's way (on either backend: `cluster.rs` runs this on
/// PostgreSQL).
pub(crate) async fn ids_are_per_tenant(s: &Serve) {
    {
        let alpha = s.tenant(ALPHA).await;
        let beta = s.tenant(BETA).await;
        // Both pick the same id: each gets its own session, as with a free id.
        let id = "build-42";
        assert_eq!(beta.create_session(json!({"sessionId": id})).await, id);
        assert_eq!(alpha.create_session(json!({"sessionId": id})).await, id);
        s.fake.push_reply(Reply::text("alpha's answer"));
        alpha.send(id, "alpha's prompt").await;
        alpha.wait_for_event(id, "session.idle", T).await;
        s.fake.push_reply(Reply::text("beta's answer"));
        beta.send(id, "beta's prompt").await;
        beta.wait_for_event(id, "session.idle", T).await;

        // An id only beta uses answers alpha exactly as an id nobody uses does.
        beta.create_session(json!({"sessionId": "betas-own"})).await;
        let taken = alpha.create_session(json!({"sessionId": "betas-own"})).await;
        let free = alpha.create_session(json!({"sessionId": "nobodys"})).await;
        assert_eq!((taken.as_str(), free.as_str()), ("betas-own", "nobodys"));
        let again = alpha.call("session.create", json!({"sessionId": id})).await.expect_err("its own id twice");
        assert!(again.message.contains(id) && !again.message.contains("alpha."), "{again}");

        // Each sees its own conversation under the id it chose, and nothing of the other's.
        let text = |events: Vec<Value>| Value::Array(events).to_string();
        let alphas = text(alpha.get_messages(id).await.expect("alpha's session"));
        assert!(alphas.contains("alpha's prompt") && !alphas.contains("beta's prompt"), "{alphas}");
        let start = alpha.wait_for_event(id, "session.start", T).await;
        assert_eq!(start["data"]["sessionId"], json!(id), "{start}");
        let listed = alpha.ok("session.list", json!({})).await;
        // (sessions with no conversation yet are not listed)
        let ids: Vec<&str> =
            listed["sessions"].as_array().unwrap().iter().map(|e| e["sessionId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["build-42"]);

        // A session is found by a prefix of the id its tenant knows; a fork is named alike.
        let found = alpha.ok("sessions.findByPrefix", json!({"prefix": "build-4"})).await;
        assert_eq!(found["sessionId"], json!(id), "{found}");
        let fork = alpha.ok("sessions.fork", json!({"sessionId": id})).await["sessionId"].as_str().unwrap().to_string();
        assert!(uuid::Uuid::parse_str(&fork).is_ok(), "{fork}");
        alpha.ok("session.resume", json!({"sessionId": &fork})).await;
        let forked = text(alpha.get_messages(&fork).await.expect("the fork"));
        assert!(forked.contains("alpha's prompt"), "{forked}");
        let sizes = alpha.ok("sessions.getSizes", json!({})).await;
        assert!(sizes["sizes"].get(id).is_some(), "{sizes}");

        // beta deleting its `build-42` leaves alpha's alone.
        beta.ok("session.delete", json!({"sessionId": id})).await;
        assert!(beta.get_messages(id).await.is_err());
        let alphas = text(alpha.get_messages(id).await.expect("alpha's session is still there"));
        assert!(alphas.contains("alpha's answer"), "{alphas}");

        // Nothing either was sent names a session the server's way.
        for (c, tenant) in [(&alpha, "alpha."), (&beta, "beta.")] {
            for m in c.inbound().iter().chain(c.responses().iter()) {
                let inner = strings_starting_with(m, tenant);
                assert!(inner.is_empty(), "{inner:?} in {m}");
            }
        }
        assert!(beta.inbound().iter().all(|m| !m.to_string().contains("nobodys")), "beta never hears of alpha's");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_tenants_configured_the_default_tenant_uses_skipper_token_on_loopback_only() {
    with_timeout(60, async {
        let config = "[cluster]\nnode_id = \"a\"\n";
        let s = Serve::start_with(config, &[("SKIPPER_TOKEN", "the-default-token")]).await;
        assert_eq!(s.tcp().await.call("connect", json!({"token": "other"})).await.expect_err("wrong").code, -32002);
        let c = s.tenant("the-default-token").await;
        let sid = c.create_session(json!({})).await;
        assert_eq!(
            c.ok("session.getMessages", json!({"sessionId": sid})).await["events"][0]["type"],
            json!("session.start")
        );
        assert!(s.workspace("default").is_dir(), "the default tenant's workspace is under home");

        // The same configuration refuses to listen beyond loopback.
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let dirs = Dirs::new();
        let mut cmd = serve_command(&dirs, &fake.url(), config, "0.0.0.0:0");
        cmd.env("SKIPPER_TOKEN", "the-default-token");
        let out = tokio::time::timeout(T, cmd.output()).await.expect("exits in time").expect("runs");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no tenants are configured"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));

        // --log-format json: every stderr line is one JSON object.
        let mut cmd = serve_command_with(&dirs, &fake.url(), config, "0.0.0.0:0", &["--log-format", "json"]);
        cmd.env("SKIPPER_TOKEN", "the-default-token");
        cmd.env("SKIPPER_LOG", "info");
        let out = tokio::time::timeout(T, cmd.output()).await.expect("exits in time").expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let logged: Vec<Value> = stderr
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert!(logged.iter().any(|l| l["fields"]["message"] == json!("cluster settings")), "{stderr}");
        assert_eq!(logged.len(), stderr.lines().count(), "only JSON lines: {stderr}");
        assert!(stderr.contains("no tenants are configured"), "the reason it stopped is logged: {stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_server_cleanly() {
    with_timeout(60, async {
        let mut s = Serve::start().await;
        let c = s.tenant(ALPHA).await;
        c.create_session(json!({})).await;
        let pid = s.child.id().expect("running").to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().await.expect("kill");
        assert!(killed.success());
        let status = tokio::time::timeout(T, s.child.wait()).await.expect("exits after SIGTERM").expect("status");
        assert!(status.success(), "{status:?}: {}", s.stderr_text());
        c.wait_until(T, "the connection to close", |c| c.is_closed().then_some(())).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn file_tools_stay_inside_the_tenants_workspace_even_when_everything_is_approved() {
    with_timeout(60, async {
        let s = Serve::start().await;
        let secret = s.workspace("beta").join("secret.txt");
        std::fs::create_dir_all(s.workspace("beta")).unwrap();
        std::fs::write(&secret, "TOP-SECRET-OF-BETA").unwrap();
        let own = s.workspace("alpha").join("mine.txt");
        std::fs::write(&own, "alpha's own").unwrap();
        s.fake.push_reply(Reply::ToolCalls(vec![
            ("view".into(), json!({"path": secret.to_string_lossy()}).to_string()),
            ("view".into(), json!({"path": "../beta/secret.txt"}).to_string()),
            ("view".into(), json!({"path": "mine.txt"}).to_string()),
        ]));
        s.fake.push_reply(Reply::text("done"));
        let c = s.tenant(ALPHA).await;
        let sid = c.create_session(json!({"requestPermission": true})).await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        c.send(&sid, "read beta's secret").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        approver.abort();
        let done = c.events_of_type(&sid, "tool.execution_complete");
        let success: Vec<_> = done.iter().map(|e| e["data"]["success"].clone()).collect();
        assert_eq!(success, vec![json!(false), json!(false), json!(true)], "{done:?}");
        assert!(done[0]["data"]["error"]["message"].as_str().unwrap().contains("outside this session's workspace"));
        let requests = s.fake.requests();
        let seen_by_model = requests.last().unwrap().to_string();
        assert!(!seen_by_model.contains("TOP-SECRET-OF-BETA"), "the model never saw it");
        assert!(seen_by_model.contains("alpha's own"));
        // Only the allowed read was offered for approval.
        assert_eq!(c.count(&sid, "permission.requested"), 1);
    })
    .await;
}

/// Moving a session's working directory cannot leave the tenant's workspace either: file tools
/// are confined to the workspace holding the cwd, so a cwd in another tenant's would reach it.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_cannot_move_its_working_directory_out_of_the_tenants_workspace() {
    with_timeout(60, async {
        let s = Serve::start().await;
        std::fs::create_dir_all(s.workspace("beta")).unwrap();
        let own = s.workspace("alpha").join("sub");
        std::fs::create_dir_all(&own).unwrap();
        let c = s.tenant(ALPHA).await;
        let sid = c.create_session(json!({})).await;
        let beta = s.workspace("beta").to_string_lossy().into_owned();
        for (method, params) in [
            ("session.options.update", json!({"sessionId": sid, "workingDirectory": beta})),
            ("session.metadata.setWorkingDirectory", json!({"sessionId": sid, "workingDirectory": beta})),
            ("session.options.update", json!({"sessionId": sid, "workingDirectory": "/"})),
            ("session.commands.invoke", json!({"sessionId": sid, "name": "cwd", "input": beta})),
        ] {
            let err = c.call(method, params).await.expect_err(method);
            assert!(err.message.contains("is not a directory in this tenant's workspace"), "{method}: {}", err.message);
        }
        let moved = own.canonicalize().unwrap().to_string_lossy().into_owned();
        c.ok("session.metadata.setWorkingDirectory", json!({"sessionId": sid, "workingDirectory": moved})).await;
        let shown = c.ok("session.commands.invoke", json!({"sessionId": sid, "name": "cwd"})).await;
        assert_eq!(shown["text"], json!(format!("Current working directory: {moved}")), "{shown}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clients_sending_to_one_session_are_served_in_order_and_both_see_everything() {
    with_timeout(60, async {
        let s = Serve::start().await;
        let (a, b) = (s.tenant(ALPHA).await, s.tenant(ALPHA).await);
        let sid = a.create_session(json!({})).await;
        b.ok("session.resume", json!({"sessionId": sid})).await;
        // The first reply is slow, so the second message arrives while the first runs.
        s.fake.push_reply(Reply::Latency { ms: 300, then: Box::new(Reply::text("first answer")) });
        s.fake.push_reply(Reply::text("second answer"));
        let (ma, mb) = tokio::join!(a.send(&sid, "from a"), b.send(&sid, "from b"));
        assert_ne!(ma, mb);
        let settled = |c: &RpcClient| {
            let msgs = c.events_of_type(&sid, "assistant.message");
            (msgs.len() == 2 && c.events(&sid).last().is_some_and(|e| e["type"] == json!("session.idle"))).then_some(())
        };
        a.wait_until(T, "both replies on a", settled).await;
        b.wait_until(T, "both replies on b", settled).await;
        // One conversation: each prompt is answered before the next one starts, never interleaved.
        let story: Vec<String> = a
            .events(&sid)
            .iter()
            .filter_map(|e| match e["type"].as_str()? {
                "user.message" => Some(format!("user:{}", e["data"]["content"].as_str()?)),
                "assistant.message" => Some(format!("assistant:{}", e["data"]["content"].as_str()?)),
                _ => None,
            })
            .collect();
        let first = story.first().cloned().unwrap_or_default();
        let other = if first == "user:from a" { "user:from b" } else { "user:from a" };
        assert_eq!(
            story,
            vec![first.clone(), "assistant:first answer".into(), other.into(), "assistant:second answer".into()]
        );
        // Both clients saw the same events, in the same order, from the resume on.
        let ids = |c: &RpcClient| -> Vec<Value> { c.events(&sid).iter().map(|e| e["id"].clone()).collect() };
        let (ia, ib) = (ids(&a), ids(&b));
        let from = ia.iter().position(|id| *id == ib[0]).expect("b's first event is one a saw");
        assert_eq!(ia[from..], ib[..], "both clients see every event, in one order");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_connection_limit_clients_are_told_and_refused() {
    with_timeout(60, async {
        let config = format!(
            "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[limits]\nmax_connections = 2\n",
            sha256_hex(ALPHA)
        );
        let s = Serve::start_with(&config, &[]).await;
        let first = s.tenant(ALPHA).await;
        let mut ws = Ws::open(&s.http, Some(ALPHA)).await.expect("the second connection fits");
        assert_eq!(ws.call("ping", json!({})).await["result"]["message"], json!("pong"));
        // The third is told why, then closed.
        let mut third = TcpStream::connect(&s.sdk).await.unwrap();
        let body = read_frame(&mut third).await;
        assert_eq!(body["error"]["code"], json!(-32005), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("too many connections"), "{body}");
        let mut rest = Vec::new();
        tokio::time::timeout(T, third.read_to_end(&mut rest)).await.expect("then closed").unwrap();
        assert!(rest.is_empty());
        assert_eq!(Ws::open(&s.http, Some(ALPHA)).await.err(), Some(503));
        // The ones inside keep working; once one leaves, a new client gets in.
        first.ok("ping", json!({})).await;
        first.close().await;
        let admitted = tokio::time::timeout(T, async {
            loop {
                // The first answer on a new connection: the response to `connect`, or the refusal.
                let mut c = TcpStream::connect(&s.sdk).await.unwrap();
                let req =
                    json!({"jsonrpc": "2.0", "id": 1, "method": "connect", "params": {"token": ALPHA}}).to_string();
                c.write_all(format!("Content-Length: {}\r\n\r\n{req}", req.len()).as_bytes()).await.unwrap();
                let first = read_frame(&mut c).await;
                if first["id"] == json!(1) {
                    break first;
                }
                // Refused while the server has not yet seen the first client go.
                assert_eq!(first["error"]["code"], json!(-32005), "{first}");
            }
        })
        .await
        .expect("a slot frees up once a client leaves");
        assert_eq!(admitted["result"]["ok"], json!(true), "{admitted}");
    })
    .await;
}

/// One tenant cannot take every connection: past its own limit alpha is refused (`connect`:
/// `-32005`, and the connection stays unauthenticated; a WebSocket: 503) while beta still gets
/// in, and a place alpha frees is alpha's again.
#[tokio::test(flavor = "multi_thread")]
async fn one_tenant_cannot_take_every_connection() {
    with_timeout(60, async {
        let s = Serve::start_with(&tenants_config("\n[limits]\nmax_connections_per_tenant = 2\n"), &[]).await;
        let first = s.tenant(ALPHA).await;
        let mut ws = Ws::open(&s.http, Some(ALPHA)).await.expect("alpha's second connection fits");
        assert_eq!(ws.call("ping", json!({})).await["result"]["message"], json!("pong"));
        assert_eq!(Ws::open(&s.http, Some(ALPHA)).await.err(), Some(503));
        let mut third = TcpStream::connect(&s.sdk).await.unwrap();
        write_request(&mut third, 1, "connect", json!({"token": ALPHA})).await;
        let refused = read_frame(&mut third).await;
        assert_eq!(refused["error"]["code"], json!(-32005), "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("for this tenant"), "{refused}");
        write_request(&mut third, 2, "session.list", json!({})).await;
        assert_eq!(read_frame(&mut third).await["error"]["code"], json!(-32001), "refused means not let in");
        // Beta is not affected.
        let beta = s.tenant(BETA).await;
        beta.ok("ping", json!({})).await;
        let _beta_ws = Ws::open(&s.http, Some(BETA)).await.expect("beta's WebSocket");
        // Alpha's first leaves: the third connection may try again and gets in.
        first.close().await;
        let admitted = tokio::time::timeout(T, async {
            for id in 3.. {
                write_request(&mut third, id, "connect", json!({"token": ALPHA})).await;
                let answer = read_frame(&mut third).await;
                if answer["result"]["ok"] == json!(true) {
                    return;
                }
                assert_eq!(answer["error"]["code"], json!(-32005), "{answer}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(admitted.is_ok(), "a place alpha freed is alpha's again");
        write_request(&mut third, 1000, "session.list", json!({})).await;
        assert!(read_frame(&mut third).await["result"].is_object());
    })
    .await;
}

/// Writes one request frame on a raw connection.
async fn write_request(c: &mut TcpStream, id: u64, method: &str, params: Value) {
    let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    c.write_all(format!("Content-Length: {}\r\n\r\n{req}", req.len()).as_bytes()).await.unwrap();
}

/// Before it authenticates a connection gets a small budget, a deadline and small frames: a
/// crowd of strangers that never `connect` holds neither the server's slots nor its memory.
#[tokio::test(flavor = "multi_thread")]
async fn before_authenticating_a_connection_gets_almost_nothing() {
    with_timeout(60, async {
        let config = format!(
            "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[limits]\nmax_unauthenticated = 2\n\
             handshake_timeout_s = 2\nunauthenticated_frame_bytes = 1024\n",
            sha256_hex(ALPHA)
        );
        let s = Serve::start_with(&config, &[]).await;
        let member = s.tenant(ALPHA).await;
        // Two strangers that say nothing take the whole budget: a third is told and closed.
        let mut idle = [TcpStream::connect(&s.sdk).await.unwrap(), TcpStream::connect(&s.sdk).await.unwrap()];
        let mut third = TcpStream::connect(&s.sdk).await.unwrap();
        let refused = read_frame(&mut third).await;
        assert_eq!(refused["error"]["code"], json!(-32005), "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("waiting to authenticate"), "{refused}");
        // A stranger's large frame is refused unread; it stays in sync and may still connect.
        let big = "x".repeat(4096);
        write_request(&mut idle[0], 1, "ping", json!({"message": big})).await;
        let too_big = read_frame(&mut idle[0]).await;
        assert_eq!(too_big["error"]["code"], json!(-32700), "{too_big}");
        write_request(&mut idle[0], 2, "connect", json!({"token": ALPHA})).await;
        let connected = read_frame(&mut idle[0]).await;
        assert_eq!(connected["result"]["ok"], json!(true), "{connected}");
        // Authenticated, it gets full-size frames and no deadline.
        write_request(&mut idle[0], 3, "ping", json!({"message": big})).await;
        assert_eq!(read_frame(&mut idle[0]).await["id"], json!(3));
        // The other, silent past the deadline, is told why and closed.
        let late = read_frame(&mut idle[1]).await;
        assert!(late["error"]["message"].as_str().unwrap().contains("no successful connect within 2 s"), "{late}");
        let mut rest = Vec::new();
        tokio::time::timeout(T, idle[1].read_to_end(&mut rest)).await.expect("then closed").unwrap();
        // The budget came back (one authenticated, one closed): a new stranger gets in.
        let mut next = TcpStream::connect(&s.sdk).await.unwrap();
        write_request(&mut next, 1, "connect", json!({"token": ALPHA})).await;
        assert_eq!(read_frame(&mut next).await["result"]["ok"], json!(true));
        tokio::time::sleep(Duration::from_secs(3)).await;
        write_request(&mut idle[0], 4, "ping", json!({})).await;
        assert_eq!(read_frame(&mut idle[0]).await["id"], json!(4), "an authenticated connection has no deadline");
        member.ok("ping", json!({})).await;
    })
    .await;
}

pub(crate) fn tenants_config(extra: &str) -> String {
    format!(
        "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\n{extra}",
        sha256_hex(ALPHA),
        sha256_hex(BETA)
    )
}

async fn sigterm(child: &Child) {
    let pid = child.id().expect("running").to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().await.expect("kill");
    assert!(killed.success());
}

/// SIGTERM drains: the listeners close at once, a running turn streams to its end (the
/// client sees its whole answer and `session.idle`), then the server exits cleanly.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_running_turns_finish_before_exiting() {
    with_timeout(90, async {
        let mut s = Serve::start().await;
        let c = s.tenant(ALPHA).await;
        let sid = c.create_session(json!({"streaming": true})).await;
        // Long enough that a loaded machine still sees the port close well before the end.
        let chunks: Vec<String> = (0..30).map(|i| format!("part{i} ")).collect();
        s.fake.push_reply(Reply::SlowText { chunks: chunks.clone(), delay_ms: 200 });
        c.send(&sid, "Tell me a long story.").await;
        c.wait_for_event(&sid, "assistant.message_delta", T).await;
        sigterm(&s.child).await;

        // New connections are refused while the turn still runs.
        let mut refused = false;
        for _ in 0..200 {
            if TcpStream::connect(&s.sdk).await.is_err() {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(refused, "the SDK port still accepts connections after SIGTERM");
        assert_eq!(c.count(&sid, "session.idle"), 0, "the turn was still running when the port closed");

        let idle = c.wait_for_event(&sid, "session.idle", T).await;
        assert!(idle.is_object());
        let message = c.wait_for_event(&sid, "assistant.message", T).await;
        assert_eq!(message["data"]["content"], json!(chunks.concat()), "the whole answer arrived");
        let status = tokio::time::timeout(T, s.child.wait()).await.expect("exits after draining").expect("status");
        assert!(status.success(), "{status:?}: {}", s.stderr_text());
        assert!(s.stderr_text().contains("drained"), "{}", s.stderr_text());
        c.wait_until(T, "the connection to close", |c| c.is_closed().then_some(())).await;
        // The answer is on disk too: the next process resumes with it.
        let log = std::fs::read_to_string(s.dirs.session_dir(&format!("alpha.{sid}")).join("events.jsonl")).unwrap();
        assert!(log.contains("part29"), "the drained turn's message is in the log");
    })
    .await;
}

/// A turn that would run forever is cancelled at the drain deadline; the server still exits.
#[tokio::test(flavor = "multi_thread")]
async fn the_drain_deadline_cancels_a_hung_turn() {
    with_timeout(90, async {
        let mut s = Serve::start_with(&tenants_config("\n[limits]\ndrain_timeout_s = 1\n"), &[]).await;
        let c = s.tenant(ALPHA).await;
        let sid = c.create_session(json!({})).await;
        s.fake.push_reply(Reply::Hang);
        c.send(&sid, "Never answered.").await;
        c.wait_for_event(&sid, "assistant.turn_start", T).await;
        sigterm(&s.child).await;
        let status = tokio::time::timeout(T, s.child.wait()).await.expect("exits at the deadline").expect("status");
        assert!(status.success(), "{status:?}: {}", s.stderr_text());
        assert!(s.stderr_text().contains("drain deadline passed"), "{}", s.stderr_text());
    })
    .await;
}

/// The server's own GitHub token reaches no tenant: `account.*` shows no account on a shared
/// server, and switching it is refused.
#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_sees_or_changes_the_servers_account() {
    with_timeout(60, async {
        let s = Serve::start_with(&tenants_config(""), &[("GH_TOKEN", "gho_SERVER_SECRET")]).await;
        let c = s.tenant(ALPHA).await;
        let current = c.ok("account.getCurrentAuth", json!({})).await;
        let users = c.ok("account.getAllUsers", json!({})).await;
        assert!(current.get("authInfo").is_none_or(Value::is_null), "{current}");
        assert_eq!(users, json!([]));
        let login = json!({"host": "https://github.com", "login": "mallory", "token": "gho_mallory"});
        let err = c.call("account.login", login).await.expect_err("login on a shared server");
        assert!(err.message.contains("cannot be switched on a shared server"), "{}", err.message);
        for text in [current.to_string(), users.to_string()] {
            assert!(!text.contains("gho_SERVER_SECRET"), "{text}");
        }
    })
    .await;
}
