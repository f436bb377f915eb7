//! Test harness: spawns the real `skipper` binary (stdio or TCP) against a `fake-model`
//! server and talks JSON-RPC 2.0 with `Content-Length` framing to it.
//!
//! Every `session.event` notification (and every event returned by `session.getMessages`
//! through [`RpcClient::get_messages`]) is validated against the official session-events
//! schema as it arrives; [`RpcClient::assert_schema_clean`] fails a test with the full list.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};

use crate::schema::{self, Violation};

/// Default timeout for one JSON-RPC call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs a test body with an overall deadline.
pub async fn with_timeout<F: Future<Output = ()>>(secs: u64, fut: F) {
    if tokio::time::timeout(Duration::from_secs(secs), fut).await.is_err() {
        panic!("test timed out after {secs} s");
    }
}

// ---------------------------------------------------------------------------------------------
// Directories

/// A temp root holding `COPILOT_HOME` (`home/.copilot`-like), `HOME` and the workdir. Shared
/// between processes for resume tests.
pub struct Dirs {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub copilot_home: PathBuf,
    pub workdir: PathBuf,
}

impl Dirs {
    pub fn new() -> Arc<Self> {
        let root = tempfile::Builder::new().prefix("skipper-it-").tempdir().expect("temp dir");
        let base = root.path().canonicalize().expect("canonical temp dir");
        let home = base.join("home");
        let copilot_home = base.join("copilot-home");
        let workdir = base.join("work");
        for d in [&home, &copilot_home, &workdir] {
            std::fs::create_dir_all(d).expect("create dir");
        }
        Arc::new(Self { _root: root, home, copilot_home, workdir })
    }

    pub fn session_dir(&self, session_id: &str) -> PathBuf {
        self.copilot_home.join("session-state").join(session_id)
    }
}

// ---------------------------------------------------------------------------------------------
// The child process

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transport {
    Stdio,
    Tcp,
}

pub struct Options {
    pub transport: Transport,
    pub extra_env: Vec<(String, String)>,
    pub extra_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self { transport: Transport::Stdio, extra_env: Vec::new(), extra_args: Vec::new() }
    }
}

/// A running `skipper` child. Killed on drop (its stderr is printed if the test panicked).
pub struct Skipper {
    pub child: Child,
    /// The stdio client (stdio transport only).
    client: Option<Arc<RpcClient>>,
    /// The TCP port (TCP transport only).
    pub port: Option<u16>,
    #[allow(dead_code)]
    pub dirs: Arc<Dirs>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Everything the child wrote to stdout after the port line (TCP mode).
    tcp_stdout: Arc<Mutex<Vec<u8>>>,
}

impl Skipper {
    /// Spawns `skipper --headless --stdio …` (or TCP with `--port 0`) against `model_url`.
    pub async fn spawn(model_url: &str, dirs: Arc<Dirs>, opts: Options) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skipper"));
        cmd.arg("--headless");
        match opts.transport {
            Transport::Stdio => {
                cmd.arg("--stdio");
            }
            Transport::Tcp => {
                cmd.args(["--port", "0"]);
            }
        }
        cmd.args(["--no-auto-update", "--auth-token-env", "COPILOT_SDK_AUTH_TOKEN"]);
        cmd.args(&opts.extra_args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
        cmd.env("HOME", &dirs.home);
        cmd.env("COPILOT_HOME", &dirs.copilot_home);
        cmd.env("XDG_CONFIG_HOME", dirs.home.join(".config"));
        cmd.env("XDG_STATE_HOME", dirs.home.join(".local/state"));
        cmd.env("GH_CONFIG_DIR", dirs.home.join(".config/gh"));
        cmd.env("COPILOT_API_URL", model_url);
        cmd.env("COPILOT_DEBUG_GITHUB_API_URL", model_url);
        cmd.env("COPILOT_SDK_AUTH_TOKEN", "fake");
        if let Ok(v) = std::env::var("SKIPPER_LOG") {
            cmd.env("SKIPPER_LOG", v);
        }
        for (k, v) in &opts.extra_env {
            cmd.env(k, v);
        }
        cmd.current_dir(&dirs.workdir);
        cmd.stdin(match opts.transport {
            Transport::Stdio => Stdio::piped(),
            Transport::Tcp => Stdio::null(),
        });
        cmd.stdout(Stdio::piped());
        cmd.stderr(Stdio::piped());
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawning skipper");

        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let sink = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    sink.lock().expect("stderr lock").extend_from_slice(&buf[..n]);
                }
            });
        }

        let tcp_stdout = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().expect("stdout");
        let (client, port) = match opts.transport {
            Transport::Stdio => {
                let stdin = child.stdin.take().expect("stdin");
                (Some(RpcClient::new(stdout, stdin)), None)
            }
            Transport::Tcp => {
                let mut lines = BufReader::new(stdout);
                let mut line = String::new();
                let port = tokio::time::timeout(Duration::from_secs(15), async {
                    loop {
                        line.clear();
                        let n = lines.read_line(&mut line).await.expect("reading stdout");
                        assert!(n > 0, "skipper closed stdout before printing the port line");
                        if let Some(rest) = line.trim_end().strip_prefix("CLI server listening on port ") {
                            break rest.parse::<u16>().expect("port number");
                        }
                        tcp_stdout.lock().expect("lock").extend_from_slice(line.as_bytes());
                    }
                })
                .await
                .expect("no `CLI server listening on port N` line within 15 s");
                let sink = tcp_stdout.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = lines.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        sink.lock().expect("lock").extend_from_slice(&buf[..n]);
                    }
                });
                (None, Some(port))
            }
        };
        Self { child, client, port, dirs, stderr, tcp_stdout }
    }

    /// Stdio client.
    pub fn client(&self) -> Arc<RpcClient> {
        self.client.clone().expect("stdio transport has a client")
    }

    /// Opens a new TCP connection (TCP transport).
    pub async fn connect_tcp(&self) -> Arc<RpcClient> {
        let port = self.port.expect("TCP transport");
        let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connecting to skipper");
        let (r, w) = stream.into_split();
        RpcClient::new(r, w)
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("lock")).into_owned()
    }

    pub fn tcp_stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.tcp_stdout.lock().expect("lock")).into_owned()
    }

    /// Waits for the process to exit (returns `None` on timeout).
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait()).await.ok().and_then(Result::ok)
    }
}

impl Drop for Skipper {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if std::thread::panicking() {
            let err = self.stderr_text();
            if !err.is_empty() {
                let tail: String = err.chars().rev().take(6000).collect::<Vec<_>>().into_iter().rev().collect();
                eprintln!("----- skipper stderr (tail) -----\n{tail}\n---------------------------------");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC client

#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub raw: Value,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

#[derive(Default)]
struct State {
    pending: HashMap<i64, oneshot::Sender<Value>>,
    /// Server-initiated messages (notifications and requests), in arrival order.
    inbound: Vec<Value>,
    /// Every response, in arrival order (including those with `id: null`).
    responses: Vec<Value>,
    violations: Vec<Violation>,
    /// Framing / protocol problems seen by the reader.
    protocol_errors: Vec<String>,
    raw: Vec<u8>,
    closed: bool,
}

pub struct RpcClient {
    state: Mutex<State>,
    bump: watch::Sender<u64>,
    writer: tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Unpin + Send>>>,
    next_id: AtomicI64,
}

impl RpcClient {
    pub fn new<R, W>(reader: R, writer: W) -> Arc<Self>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (bump, _) = watch::channel(0u64);
        let client = Arc::new(Self {
            state: Mutex::new(State::default()),
            bump,
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            next_id: AtomicI64::new(1),
        });
        let weak = Arc::downgrade(&client);
        tokio::spawn(async move {
            let mut reader = reader;
            let mut buf = vec![0u8; 64 * 1024];
            let mut pending: Vec<u8> = Vec::new();
            loop {
                let n = reader.read(&mut buf).await.unwrap_or(0);
                let Some(client) = weak.upgrade() else { return };
                if n == 0 {
                    if !pending.is_empty() {
                        client
                            .lock()
                            .protocol_errors
                            .push(format!("stream ended inside a frame: {:?}", String::from_utf8_lossy(&pending)));
                    }
                    client.lock().closed = true;
                    client.bump.send_modify(|c| *c += 1);
                    return;
                }
                client.lock().raw.extend_from_slice(&buf[..n]);
                pending.extend_from_slice(&buf[..n]);
                loop {
                    match take_frame(&mut pending) {
                        FrameResult::Incomplete => break,
                        FrameResult::Bad(msg) => {
                            client.lock().protocol_errors.push(msg);
                            // Resynchronise at the next header.
                            match find(&pending[1..], b"Content-Length: ") {
                                Some(i) => {
                                    pending.drain(..i + 1);
                                }
                                None => {
                                    pending.clear();
                                    break;
                                }
                            }
                        }
                        FrameResult::Frame(body) => client.handle(&body),
                    }
                }
                client.bump.send_modify(|c| *c += 1);
            }
        });
        client
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self, body: &[u8]) {
        let msg: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                self.lock()
                    .protocol_errors
                    .push(format!("frame body is not JSON ({e}): {}", String::from_utf8_lossy(body)));
                return;
            }
        };
        if msg.get("jsonrpc") != Some(&json!("2.0")) {
            self.lock().protocol_errors.push(format!("message without jsonrpc 2.0: {msg}"));
        }
        let has_method = msg.get("method").is_some();
        if !has_method {
            // A response.
            let mut st = self.lock();
            st.responses.push(msg.clone());
            if let Some(id) = msg.get("id").and_then(Value::as_i64) {
                if let Some(tx) = st.pending.remove(&id) {
                    let _ = tx.send(msg);
                }
            }
            return;
        }
        let mut violations = Vec::new();
        if msg.get("method") == Some(&json!("session.event")) {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            if !params.get("sessionId").is_some_and(Value::is_string) {
                violations.push(Violation::protocol("session.event notification without a string `sessionId`", &msg));
            }
            match params.get("event") {
                Some(ev) => violations.extend(schema::validate_event(ev, "session.event notification")),
                None => violations.push(Violation::protocol("session.event notification without `event`", &msg)),
            }
        }
        let mut st = self.lock();
        st.violations.extend(violations);
        st.inbound.push(msg);
    }

    // ----- sending

    pub async fn send_raw(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().await;
        let w = w.as_mut().expect("writer closed");
        w.write_all(bytes).await.expect("write to skipper");
        w.flush().await.expect("flush");
    }

    pub async fn send_json(&self, msg: &Value) {
        let body = serde_json::to_vec(msg).expect("serialise");
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.send_raw(&frame).await;
    }

    /// Closes our writing half (stdin EOF for the child).
    pub async fn close(&self) {
        if let Some(mut w) = self.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    /// Sends a request and waits for its response message (raw).
    pub async fn request_raw(&self, method: &str, params: Value, timeout: Duration) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().pending.insert(id, tx);
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(v)) => v,
            Ok(Err(_)) => panic!("connection dropped while waiting for `{method}`"),
            Err(_) => panic!("no response to `{method}` within {timeout:?}"),
        }
    }

    /// Sends a request; `Ok(result)` or `Err(error)`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let resp = self.request_raw(method, params, CALL_TIMEOUT).await;
        if let Some(err) = resp.get("error") {
            return Err(RpcError {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                raw: err.clone(),
            });
        }
        match resp.get("result") {
            Some(r) => Ok(r.clone()),
            None => panic!("response to `{method}` has neither result nor error: {resp}"),
        }
    }

    /// Like [`call`](Self::call) but panics on an error.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        match self.call(method, params.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("`{method}` {params} failed: {e} ({})", e.raw),
        }
    }

    // ----- convenience

    pub async fn connect(&self) -> Value {
        self.ok("connect", json!({})).await
    }

    /// `session.create` with sensible defaults merged with `extra`; returns the session id.
    pub async fn create_session(&self, extra: Value) -> String {
        let mut params = json!({"model": "claude-sonnet-4.5"});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                p.insert(k.clone(), v.clone());
            }
        }
        let r = self.ok("session.create", params).await;
        r.get("sessionId").and_then(Value::as_str).expect("session.create result has sessionId").to_string()
    }

    pub async fn send(&self, session_id: &str, prompt: &str) -> String {
        let r = self.ok("session.send", json!({"sessionId": session_id, "prompt": prompt})).await;
        r.get("messageId").and_then(Value::as_str).expect("session.send result has messageId").to_string()
    }

    /// `session.getMessages`, validating every returned event against the schema.
    pub async fn get_messages(&self, session_id: &str) -> Result<Vec<Value>, RpcError> {
        let r = self.call("session.getMessages", json!({"sessionId": session_id})).await?;
        let events = r.get("events").and_then(Value::as_array).cloned().unwrap_or_else(|| {
            panic!("session.getMessages result has no `events` array: {r}");
        });
        let mut v = Vec::new();
        for ev in &events {
            v.extend(schema::validate_event(ev, "session.getMessages"));
            if ev.get("ephemeral").is_some() {
                v.push(Violation::protocol("session.getMessages returned an event with an `ephemeral` key", ev));
            }
        }
        self.lock().violations.extend(v);
        Ok(events)
    }

    // ----- inspection

    /// Server-initiated messages so far.
    pub fn inbound(&self) -> Vec<Value> {
        self.lock().inbound.clone()
    }

    pub fn responses(&self) -> Vec<Value> {
        self.lock().responses.clone()
    }

    /// Server-initiated messages from the `start`-th on (clones only those).
    pub fn inbound_from(&self, start: usize) -> Vec<Value> {
        self.lock().inbound.get(start..).map(<[Value]>::to_vec).unwrap_or_default()
    }

    /// How many responses arrived so far (cheap: no clone).
    pub fn response_count(&self) -> usize {
        self.lock().responses.len()
    }

    /// Responses from the `start`-th on (clones only those).
    pub fn responses_from(&self, start: usize) -> Vec<Value> {
        self.lock().responses.get(start..).map(<[Value]>::to_vec).unwrap_or_default()
    }

    pub fn raw_bytes(&self) -> Vec<u8> {
        self.lock().raw.clone()
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub fn protocol_errors(&self) -> Vec<String> {
        self.lock().protocol_errors.clone()
    }

    /// All session events received for `session_id`, in order.
    pub fn events(&self, session_id: &str) -> Vec<Value> {
        self.lock()
            .inbound
            .iter()
            .filter(|m| m.get("method") == Some(&json!("session.event")))
            .filter(|m| m["params"]["sessionId"] == json!(session_id))
            .map(|m| m["params"]["event"].clone())
            .collect()
    }

    pub fn events_of_type(&self, session_id: &str, ty: &str) -> Vec<Value> {
        self.events(session_id).into_iter().filter(|e| e["type"] == json!(ty)).collect()
    }

    pub fn count(&self, session_id: &str, ty: &str) -> usize {
        self.events_of_type(session_id, ty).len()
    }

    /// Waits until `pred` finds something in the inbound messages; `Err` says why not
    /// (timeout or connection closed).
    pub async fn try_wait_until<T>(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&Self) -> Option<T>,
    ) -> Result<T, String> {
        let mut rx = self.bump.subscribe();
        let fut = async {
            loop {
                rx.borrow_and_update();
                if let Some(t) = pred(self) {
                    return Ok(t);
                }
                if self.is_closed() {
                    return pred(self).ok_or_else(|| "connection closed".to_string());
                }
                if rx.changed().await.is_err() {
                    return Err("reader gone".to_string());
                }
            }
        };
        tokio::time::timeout(timeout, fut).await.unwrap_or_else(|_| Err(format!("timed out after {timeout:?}")))
    }

    /// Waits until `pred` finds something in the inbound messages; panics otherwise.
    pub async fn wait_until<T>(&self, timeout: Duration, what: &str, pred: impl FnMut(&Self) -> Option<T>) -> T {
        match self.try_wait_until(timeout, pred).await {
            Ok(t) => t,
            Err(why) => panic!("{why} while waiting for {what}"),
        }
    }

    /// The `n`-th (1-based) event of `ty` for the session.
    pub async fn wait_for_nth_event(&self, session_id: &str, ty: &str, n: usize, timeout: Duration) -> Value {
        let what = format!("event #{n} of type `{ty}` in session {session_id}");
        let r = self.wait_until(timeout, &what, |c| c.events_of_type(session_id, ty).into_iter().nth(n - 1)).await;
        r
    }

    /// The first event of `ty` for the session (from the start of the connection).
    pub async fn wait_for_event(&self, session_id: &str, ty: &str, timeout: Duration) -> Value {
        self.wait_for_nth_event(session_id, ty, 1, timeout).await
    }

    /// Schema/protocol violations recorded so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.lock().violations.clone()
    }

    /// Every recorded schema/protocol violation (deduplicated by type+path+message), or `None`.
    pub fn schema_report(&self) -> Option<String> {
        let v = self.violations();
        let errs = self.protocol_errors();
        for u in v.iter().filter(|x| x.unknown_type) {
            eprintln!("note: event type not in the schema (tolerated by clients): {}", u.event_type);
        }
        let real: Vec<_> = v.iter().filter(|x| !x.unknown_type).collect();
        if real.is_empty() && errs.is_empty() {
            return None;
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = String::new();
        for x in real {
            let key = format!("{}|{}|{}", x.event_type, x.path, x.message);
            if seen.insert(key) {
                out.push_str(&x.to_string());
                out.push('\n');
            }
        }
        for e in errs {
            out.push_str(&format!("protocol: {e}\n"));
        }
        Some(out)
    }

    /// Fails with every recorded schema violation.
    pub fn assert_schema_clean(&self) {
        assert_all_clean(&[self]);
    }

    /// Spawns a task answering every `permission.requested` event of the session with
    /// `result` (e.g. `{"kind":"approve-once"}`).
    pub fn auto_answer_permissions(self: &Arc<Self>, session_id: &str, result: Value) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        let sid = session_id.to_string();
        tokio::spawn(async move {
            let mut n = 0;
            loop {
                n += 1;
                let Ok(ev) = me
                    .try_wait_until(Duration::from_secs(3600), |c| {
                        c.events_of_type(&sid, "permission.requested").into_iter().nth(n - 1)
                    })
                    .await
                else {
                    return;
                };
                if me.is_closed() {
                    return;
                }
                let request_id = ev["data"]["requestId"].clone();
                let _ = me
                    .call(
                        "session.permissions.handlePendingPermissionRequest",
                        json!({"sessionId": sid, "requestId": request_id, "result": result}),
                    )
                    .await;
            }
        })
    }
}

/// Fails with the schema/protocol violations of all `clients` together.
pub fn assert_all_clean(clients: &[&RpcClient]) {
    let reports: Vec<String> = clients.iter().filter_map(|c| c.schema_report()).collect();
    if !reports.is_empty() {
        panic!("schema/protocol violations:\n{}", reports.join(""));
    }
}

// ---------------------------------------------------------------------------------------------
// Framing

pub enum FrameResult {
    Incomplete,
    Bad(String),
    Frame(Vec<u8>),
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Takes one frame off the front of `buf`. Server frames must be exactly
/// `Content-Length: N\r\n\r\n<body>` (the Python SDK's reader depends on it).
pub fn take_frame(buf: &mut Vec<u8>) -> FrameResult {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        if buf.len() >= 16 && !buf.starts_with(b"Content-Length: ") {
            return FrameResult::Bad(format!("unexpected bytes on the stream: {:?}", String::from_utf8_lossy(buf)));
        }
        return FrameResult::Incomplete;
    };
    let header = String::from_utf8_lossy(&buf[..end]).into_owned();
    let Some(len) = header.strip_prefix("Content-Length: ").and_then(|l| l.parse::<usize>().ok()) else {
        return FrameResult::Bad(format!("bad header block {header:?} (only `Content-Length: N` is allowed)"));
    };
    if buf.len() < end + 4 + len {
        return FrameResult::Incomplete;
    }
    let body = buf[end + 4..end + 4 + len].to_vec();
    buf.drain(..end + 4 + len);
    FrameResult::Frame(body)
}

/// Strictly parses a whole byte stream as frames; error on anything else.
pub fn parse_all_frames(mut bytes: Vec<u8>) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        match take_frame(&mut bytes) {
            FrameResult::Incomplete => {
                return Err(format!("trailing bytes that are not a whole frame: {:?}", String::from_utf8_lossy(&bytes)))
            }
            FrameResult::Bad(m) => return Err(m),
            FrameResult::Frame(body) => {
                let v: Value = serde_json::from_slice(&body)
                    .map_err(|e| format!("frame body is not JSON ({e}): {:?}", String::from_utf8_lossy(&body)))?;
                out.push(v);
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Test environment: a fake model + dirs + one stdio skipper.

pub struct TestEnv {
    pub fake: fake_model::FakeModel,
    pub dirs: Arc<Dirs>,
    pub skipper: Skipper,
    pub client: Arc<RpcClient>,
}

impl TestEnv {
    /// Fake model, temp dirs, a stdio skipper, `connect` done.
    pub async fn start() -> Self {
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let skipper = Skipper::spawn(&fake.url(), dirs.clone(), Options::default()).await;
        let client = skipper.client();
        client.connect().await;
        Self { fake, dirs, skipper, client }
    }

    /// Another stdio skipper on the same dirs and fake model (resume tests).
    pub async fn restart(&mut self) {
        self.client.close().await;
        let _ = self.skipper.wait_exit(Duration::from_secs(5)).await;
        let skipper = Skipper::spawn(&self.fake.url(), self.dirs.clone(), Options::default()).await;
        let client = skipper.client();
        client.connect().await;
        // The old process is killed when its handle drops.
        self.skipper = skipper;
        self.client = client;
    }

    pub fn workdir(&self) -> &Path {
        &self.dirs.workdir
    }

    /// Model requests captured so far (`/chat/completions` bodies).
    pub fn model_requests(&self) -> Vec<Value> {
        self.fake.requests().into_iter().map(|r| r["body"].clone()).collect()
    }
}
