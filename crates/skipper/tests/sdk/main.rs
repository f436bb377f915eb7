//! The official Rust SDK (`github-copilot-sdk`, no bundled CLI) as the client of the real
//! `skipper` binary: it spawns skipper over stdio exactly as it spawns the original CLI. The
//! model is `fake-model` on loopback; nothing else is faked.

mod flows;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use fake_model::FakeModel;
use github_copilot_sdk::handler::ApproveAllHandler;
use github_copilot_sdk::types::{MessageOptions, SessionConfig, SessionEvent};
use github_copilot_sdk::Client;
use serde_json::Value;
use tempfile::TempDir;

/// One test's world: temp dirs, a fake model, and a way to start SDK clients on them.
pub struct World {
    pub fake: FakeModel,
    _root: TempDir,
    pub work: PathBuf,
    home: PathBuf,
    copilot_home: PathBuf,
}

impl World {
    pub async fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let work = root.path().join("work");
        let home = root.path().join("home");
        let copilot_home = root.path().join("copilot-home");
        for d in [&work, &home, &copilot_home] {
            std::fs::create_dir_all(d).expect("dirs");
        }
        let fake = FakeModel::start().await.expect("fake model");
        fake.set_workdir(&work);
        Self { fake, _root: root, work, home, copilot_home }
    }

    /// An SDK client of a fresh `skipper` process in this world's dirs. The SDK is built
    /// without its runtime feature (no bundled CLI, no launcher), so the test spawns skipper
    /// with the command line and environment the SDK's launcher uses for the original and
    /// hands the pipes to `Client::from_streams`.
    pub async fn client(&self) -> Sdk {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skipper"));
        cmd.args(["--server", "--stdio", "--no-auto-update", "--auth-token-env", "COPILOT_SDK_AUTH_TOKEN"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("GH_CONFIG_DIR", self.home.join(".config/gh"))
            .env("COPILOT_HOME", &self.copilot_home)
            .env("COPILOT_SDK_AUTH_TOKEN", "fake-token-for-sdk-tests")
            .env("COPILOT_API_URL", self.fake.url())
            .env("COPILOT_DEBUG_GITHUB_API_URL", self.fake.url())
            .current_dir(&self.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawning skipper");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let client = Client::from_streams(stdout, stdin, self.work.clone()).expect("client over the pipes");
        client.verify_protocol_version().await.expect("protocol handshake");
        Sdk { client, child }
    }

    pub fn config(&self) -> SessionConfig {
        SessionConfig::default().with_permission_handler(Arc::new(ApproveAllHandler))
    }

    /// Chat-completion request bodies the model received so far.
    pub fn model_requests(&self) -> Vec<Value> {
        self.fake.requests().into_iter().map(|r| r["body"].clone()).collect()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }
}

/// An SDK client and the skipper process behind it.
pub struct Sdk {
    client: Client,
    child: tokio::process::Child,
}

impl Deref for Sdk {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Sdk {
    /// Stops the client as an application does; skipper must then exit by itself (its stdin
    /// closed), as the original does.
    pub async fn stop(mut self) {
        self.client.stop().await.expect("client stop");
        drop(self.client);
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("skipper exits once its client has stopped")
            .expect("wait");
        assert!(status.success(), "skipper exit status {status}");
    }
}

/// Sends a prompt and waits (bounded) for the turn to go idle.
pub async fn ask(session: &github_copilot_sdk::session::Session, prompt: &str) -> Option<SessionEvent> {
    session
        .send_and_wait(MessageOptions::new(prompt).with_wait_timeout(Duration::from_secs(30)))
        .await
        .expect("send_and_wait")
}

/// The `content` of an event's data, as text.
pub fn content(event: &SessionEvent) -> String {
    event.data.get("content").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Every message text of a chat-completion request body, in order, with its role.
pub fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    let text = match &m["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => {
                            parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("")
                        }
                        _ => String::new(),
                    };
                    (m["role"].as_str().unwrap_or_default().to_string(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}
