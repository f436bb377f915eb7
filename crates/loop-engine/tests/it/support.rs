//! The engine in-process against the fake model on loopback: a session is driven through its
//! handle, its events are collected as a client would see them, and every model request is
//! captured by the fake.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loop_engine::{Engine, EngineConfig, EventSubscriber, QueuedMessage, SessionHandle};
use protocol::event::Event;
use protocol::methods::SessionConfigParams;
use serde_json::Value;
use tokio::sync::Notify;

/// How long a test waits for something the engine should do at once.
pub const T: Duration = Duration::from_secs(20);

pub struct TestEngine {
    pub fake: fake_model::FakeModel,
    pub engine: Arc<Engine>,
    /// The sessions' default working directory.
    pub workdir: PathBuf,
    _root: tempfile::TempDir,
}

impl TestEngine {
    /// An engine whose model is the fake, allowed every tool (no client to ask).
    pub async fn start() -> Self {
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let root = tempfile::tempdir().expect("temp dir");
        let workdir = root.path().join("work");
        std::fs::create_dir_all(&workdir).expect("workdir");
        fake.set_workdir(&workdir);
        let env = [("COPILOT_API_URL".to_string(), fake.url())].into_iter().collect();
        let config = llm_providers::copilot::CopilotConfig::from_env_map(&env, Some("fake".into()), "0.0.0-test");
        let model = Arc::new(llm_providers::copilot::CopilotClient::new(config).expect("model client"));
        let http = llm_providers::transport::ReqwestTransport::default_client().expect("http client");
        let engine = Engine::open(EngineConfig {
            home: root.path().join("home"),
            version: "0.0.0-test".into(),
            default_model: "claude-sonnet-4.5".into(),
            default_cwd: workdir.clone(),
            allow_all_tools: true,
            tool_env: Vec::new(),
            model,
            http: Arc::new(llm_providers::transport::ReqwestTransport::new(http)),
            builtins: tools::Registry::builtins(),
            pending_grace: Duration::from_secs(1),
            telemetry: None,
            sandbox: None,
            tenants: Vec::new(),
            trusted_folders: Vec::new(),
        })
        .await
        .expect("engine");
        Self { fake, engine: Arc::new(engine), workdir, _root: root }
    }

    /// A new session with these `session.create` params (JSON, as a client sends them).
    pub async fn session(&self, params: Value) -> TestSession {
        let params: SessionConfigParams = serde_json::from_value(params).expect("session params");
        let events = Arc::new(Collector::default());
        let handle = self.engine.create(&params, Some(events.clone())).await.expect("session");
        TestSession { handle, events }
    }

    /// The captured model requests, oldest first, each with its `x-interaction-type`.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.fake
            .exchanges()
            .into_iter()
            .map(|e| {
                let kind = e["requestHeaders"]["x-interaction-type"].as_str().unwrap_or_default().to_string();
                (kind, e["request"].clone())
            })
            .collect()
    }

    /// The captured model requests whose `x-interaction-type` is `kind`, oldest first.
    pub fn requests_of(&self, kind: &str) -> Vec<Value> {
        self.requests().into_iter().filter(|(k, _)| k == kind).map(|(_, r)| r).collect()
    }

    /// The captured turns (not summary calls), oldest first.
    pub fn turn_requests(&self) -> Vec<Value> {
        self.requests().into_iter().filter(|(k, _)| k != "conversation-compaction").map(|(_, r)| r).collect()
    }
}

pub struct TestSession {
    pub handle: SessionHandle,
    pub events: Arc<Collector>,
}

impl TestSession {
    /// Sends a prompt and waits for the session to be idle again.
    pub async fn send_and_wait(&self, prompt: &str) {
        let idle_before = self.events.count("session.idle");
        let msg = QueuedMessage { prompt: prompt.into(), ..Default::default() };
        self.handle.send(msg, false).await.expect("send");
        self.events.wait_until(|events| count(events, "session.idle") > idle_before).await;
    }
}

/// Every event a session delivers, as JSON.
#[derive(Default)]
pub struct Collector {
    events: Mutex<Vec<Value>>,
    changed: Notify,
}

impl Collector {
    pub fn all(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    pub fn of_type(&self, ty: &str) -> Vec<Value> {
        self.all().into_iter().filter(|e| e["type"] == ty).collect()
    }

    pub fn count(&self, ty: &str) -> usize {
        count(&self.events.lock().unwrap(), ty)
    }

    pub async fn wait_until(&self, mut done: impl FnMut(&[Value]) -> bool) {
        let waited = tokio::time::timeout(T, async {
            loop {
                let changed = self.changed.notified();
                if done(&self.events.lock().unwrap()) {
                    return;
                }
                changed.await;
            }
        })
        .await;
        let types: Vec<Value> = self.all().iter().map(|e| e["type"].clone()).collect();
        assert!(waited.is_ok(), "timed out; events so far: {types:?}");
    }
}

fn count(events: &[Value], ty: &str) -> usize {
    events.iter().filter(|e| e["type"] == ty).count()
}

impl EventSubscriber for Collector {
    fn subscriber_id(&self) -> u64 {
        1
    }

    fn deliver(&self, _session_id: &str, _event: &Event, json: &str) -> bool {
        let value: Value = serde_json::from_str(json).expect("event JSON");
        self.events.lock().unwrap().push(value);
        self.changed.notify_waiters();
        true
    }
}
