//! A server over a real engine, and a minimal framed JSON-RPC client on a duplex pipe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::frame::{encode, FrameDecoder};
use rpc_server::{AuthInfo, Limits, Server};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub const T: Duration = Duration::from_secs(20);

pub struct Env {
    /// Kept alive for the engine's model client.
    _fake: fake_model::FakeModel,
    pub server: Arc<Server>,
    _root: tempfile::TempDir,
}

impl Env {
    pub async fn start(token: Option<&str>, limits: Limits) -> Self {
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let root = tempfile::tempdir().expect("temp dir");
        let workdir = root.path().join("work");
        std::fs::create_dir_all(&workdir).unwrap();
        fake.set_workdir(&workdir);
        let env: HashMap<String, String> =
            [("COPILOT_API_URL".to_string(), fake.url()), ("COPILOT_DEBUG_GITHUB_API_URL".to_string(), fake.url())]
                .into();
        let config = llm_providers::copilot::CopilotConfig::from_env_map(&env, Some("fake".into()), "0.0.0-test");
        let model = Arc::new(llm_providers::copilot::CopilotClient::new(config).expect("model client"));
        let engine = loop_engine::Engine::open(loop_engine::EngineConfig {
            home: root.path().join("copilot-home"),
            version: "0.0.0-test".into(),
            default_model: "claude-sonnet-4.5".into(),
            default_cwd: workdir,
            allow_all_tools: false,
            tool_env: Vec::new(),
            model,
            http: Arc::new(llm_providers::transport::ReqwestTransport::new(
                llm_providers::transport::ReqwestTransport::default_client().expect("http client"),
            )),
            builtins: tools::Registry::builtins(),
            pending_grace: Duration::from_secs(1),
            telemetry: None,
            sandbox: None,
            tenants: Vec::new(),
            trusted_folders: Vec::new(),
        })
        .await
        .expect("engine");
        let auth = AuthInfo {
            token_present: true,
            auth_type: "token".into(),
            host: "https://github.com".into(),
            expose_provider_endpoint: false,
            ..Default::default()
        };
        let network = Arc::new(llm_providers::transport::ReqwestTransport::new(
            llm_providers::transport::ReqwestTransport::default_client().expect("http client"),
        ));
        let inference = rpc_server::inference::InferenceBridge::new(network);
        let server = Server::new(Arc::new(engine), auth, token.map(str::to_string), limits, inference);
        Self { _fake: fake, server, _root: root }
    }

    /// A new connection served by `serve`; returns the client end and the serving task.
    pub fn pipe(&self, buffer: usize) -> (DuplexStream, JoinHandle<()>) {
        let (client, server_end) = tokio::io::duplex(buffer);
        let (r, w) = tokio::io::split(server_end);
        let task = tokio::spawn(rpc_server::connection::serve(self.server.clone(), r, w));
        (client, task)
    }

    /// A connection with a reading client.
    pub fn connect(&self) -> (Client, JoinHandle<()>) {
        let (pipe, task) = self.pipe(1 << 16);
        (Client::new(pipe), task)
    }
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Vec<u8> {
    encode(json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string().as_bytes())
}

/// A client that reads every frame into a list (responses and server-initiated messages).
pub struct Client {
    writer: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    seen: Arc<Mutex<Vec<Value>>>,
    bump: watch::Receiver<u64>,
    next_id: std::sync::atomic::AtomicI64,
}

impl Client {
    pub fn new(pipe: DuplexStream) -> Self {
        let (r, w) = tokio::io::split(pipe);
        Self::new_from_halves(r, w)
    }

    pub fn new_from_halves(r: ReadHalf<DuplexStream>, w: WriteHalf<DuplexStream>) -> Self {
        let c = Self::reading(r);
        *c.writer.try_lock().expect("new client") = Some(w);
        c
    }

    /// A client that reads; it can write once [`Client::set_writer`] gave it a writer.
    pub fn reading(r: ReadHalf<DuplexStream>) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, bump) = watch::channel(0u64);
        tokio::spawn(read_loop(r, seen.clone(), tx));
        // Ids of `call` start high, clear of ids a test writes itself.
        Self { writer: tokio::sync::Mutex::new(None), seen, bump, next_id: 1_000_000_000.into() }
    }

    pub async fn set_writer(&self, w: WriteHalf<DuplexStream>) {
        *self.writer.lock().await = Some(w);
    }

    pub async fn send_raw(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().await;
        w.as_mut().expect("a writer").write_all(bytes).await.expect("write");
    }

    pub fn messages(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `pred` finds something among the messages seen so far.
    pub async fn wait_for<R>(&self, what: &str, mut pred: impl FnMut(&[Value]) -> Option<R>) -> R {
        let mut bump = self.bump.clone();
        let fut = async {
            loop {
                bump.borrow_and_update();
                if let Some(r) = pred(&self.messages()) {
                    return r;
                }
                if bump.changed().await.is_err() {
                    if let Some(r) = pred(&self.messages()) {
                        return r;
                    }
                    panic!("connection closed while waiting for {what}");
                }
            }
        };
        tokio::time::timeout(T, fut).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    }

    pub async fn response(&self, id: &Value) -> Value {
        self.wait_for(&format!("the response to {id}"), |m| {
            m.iter().find(|v| &v["id"] == id && v.get("method").is_none()).cloned()
        })
        .await
    }

    /// Sends a request; returns the whole response message.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.send_raw(&request(id, method, params)).await;
        self.response(&json!(id)).await
    }

    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let r = self.call(method, params.clone()).await;
        r.get("result").cloned().unwrap_or_else(|| panic!("{method} {params} failed: {r}"))
    }
}

async fn read_loop(mut r: ReadHalf<DuplexStream>, seen: Arc<Mutex<Vec<Value>>>, bump: watch::Sender<u64>) {
    let mut dec = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return; // dropping `bump` wakes waiters, which then see the connection closed
        }
        dec.push(&buf[..n]);
        while let Ok(Some(body)) = dec.next_frame() {
            let v: Value = serde_json::from_slice(&body).expect("server frames are JSON");
            seen.lock().unwrap().push(v);
        }
        bump.send_modify(|b| *b += 1);
    }
}
