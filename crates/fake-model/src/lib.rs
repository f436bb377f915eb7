//! A fake Copilot-API / OpenAI-compatible model server on loopback — the only thing Skipper's
//! tests fake.
//!
//! Two modes, usable together:
//! * **scripted**: a FIFO of [`Reply`]s, one consumed per `POST /chat/completions`;
//! * **replay**: a snapshot YAML in the official SDK harness' format; requests are normalised
//!   like the harness does (`normalize`) and answered with the stored assistant message.
//!
//! Queued scripted replies win over the snapshot. Everything is also reachable over HTTP
//! under `/_fake/` for SDK tests in other languages (endpoints listed on [`FakeModel`];
//! JSON shapes in the crate's README.md).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use fake_model::{FakeModel, Reply};
//! let fake = FakeModel::start().await?;
//! fake.push_reply(Reply::text("hello"));
//! // point the server under test at fake.url() (COPILOT_API_URL) ...
//! let reqs = fake.requests(); // [{"path","headers":{...},"body":{...}}]
//! # Ok(()) }
//! ```

pub mod normalize;
mod reply;
mod server;
pub mod snapshot;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use reply::{reply_to_json, Reply};
pub use server::DEFAULT_MODELS;
pub use snapshot::Snapshot;

/// A running fake model server. Dropping it stops the server (hanging responses are cut).
///
/// HTTP endpoints:
/// * `GET /copilot_internal/user`, `GET /models`, `POST /chat/completions` (also
///   `/v1/chat/completions`, `/openai/v1/chat/completions`,
///   `/openai/deployments/{d}/chat/completions`), `POST /responses` (OpenAI Responses API; also
///   `/v1/responses`, `/openai/v1/responses`, `/openai/responses`), memory stubs under
///   `/agents/*/memory/*`; anything else → 404 JSON.
/// * control: `POST /_fake/load {"snapshot","workdir"?}`, `POST /_fake/workdir {"workdir"}`,
///   `POST /_fake/replies {"replies":[…]}`, `GET /_fake/requests`, `DELETE /_fake/requests`,
///   `GET /_fake/exchanges`, `POST /_fake/reset`, `POST /_fake/models {"models":[…]|null, "supportedEndpoints"?: {id: […]}}`,
///   `POST /_fake/user {"token","response"}`.
/// * official-harness aliases: `POST /config {"filePath","workDir"}`, `GET /exchanges`,
///   `POST /copilot-user-config {"token","response"}`, `POST /stop`.
/// * `POST /v1/messages`: the Anthropic Messages API over the same replies and snapshots,
///   answered as Anthropic SSE events or a `message` object (errors in Anthropic's shape).
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    task: JoinHandle<()>,
}

impl FakeModel {
    /// Binds `127.0.0.1:0` and serves in a background tokio task.
    pub async fn start() -> Result<Self> {
        Self::start_on(0).await
    }

    /// Binds `127.0.0.1:<port>` (0 = any free port).
    pub async fn start_on(port: u16) -> Result<Self> {
        let listener =
            TcpListener::bind(("127.0.0.1", port)).await.with_context(|| format!("binding 127.0.0.1:{port}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(server::Shared::new(format!("http://{addr}")));
        let app = server::router(shared.clone());
        let task = tokio::spawn(async move {
            // Without TCP_NODELAY every long SSE reply on a reused connection waits ~40 ms for a
            // delayed ACK, which slows every streaming test and skews the benchmarks.
            let listener = axum::serve::ListenerExt::tap_io(listener, |t| {
                let _ = t.set_nodelay(true);
            });
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("fake-model server failed: {e}");
            }
        });
        tracing::info!("fake-model listening on http://{addr}");
        Ok(Self { addr, shared, task })
    }

    /// Base URL, e.g. `http://127.0.0.1:43123` (no trailing slash).
    pub fn url(&self) -> String {
        self.shared.base_url.clone()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Loads a snapshot YAML to replay; `workdir` is the test's working directory (its path
    /// in requests becomes `${workdir}`, and `${workdir}` in replies becomes it).
    pub fn load_snapshot(&self, path: impl AsRef<Path>, workdir: impl AsRef<Path>) -> Result<()> {
        self.shared.lock().load_snapshot(path.as_ref(), Some(workdir.as_ref()))
    }

    /// Sets the working directory without (re)loading a snapshot.
    pub fn set_workdir(&self, dir: impl AsRef<Path>) {
        self.shared.lock().set_workdir(Some(dir.as_ref()));
    }

    /// Queues a scripted reply (FIFO; takes priority over a loaded snapshot).
    pub fn push_reply(&self, reply: Reply) {
        self.shared.lock().replies.push_back(reply);
    }

    pub fn push_replies(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().replies.extend(replies);
    }

    /// Queues a reply for the next compaction summary call (FIFO, before the other replies; see
    /// [`Reply`]).
    pub fn push_summary_reply(&self, reply: Reply) {
        self.shared.lock().summary_replies.push_back(reply);
    }

    /// Scripted replies not yet consumed.
    pub fn pending_replies(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// Overrides the `/models` list (`None` = snapshot's list or [`DEFAULT_MODELS`]).
    pub fn set_models(&self, models: Option<Vec<String>>) {
        self.shared.lock().models = models;
    }

    /// Lists `supported_endpoints` for model `id` in `/models` (e.g. `["/responses"]`).
    pub fn set_model_endpoints(&self, id: impl Into<String>, endpoints: Vec<String>) {
        self.shared.lock().model_endpoints.insert(id.into(), endpoints);
    }

    /// Answers `/copilot_internal/user` for `Authorization: Bearer <token>` with `response`;
    /// `{"status": 401}` (any error status) refuses the token instead.
    pub fn set_user_for_token(&self, token: impl Into<String>, response: Value) {
        self.shared.lock().users_by_token.insert(token.into(), response);
    }

    /// Every model request received so far, oldest first:
    /// `{"path": "/chat/completions", "headers": {"name": "value", …}, "body": {…}}`
    /// (header names lower-case; a body that is not JSON is kept as a string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.iter().map(server::CapturedRequest::to_json).collect()
    }

    /// Request/response pairs in the harness' `/exchanges` shape:
    /// `{"request": body, "response": chat.completion | null, "requestHeaders": {…}}` (on the
    /// Responses endpoints, `response` is the Responses `response` object).
    pub fn exchanges(&self) -> Vec<Value> {
        self.shared.lock().exchanges.iter().map(server::Exchange::to_json).collect()
    }

    /// Waits until at least `n` model requests were captured; returns them all.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Result<Vec<Value>> {
        let wait = async {
            loop {
                let notified = self.shared.captured.notified();
                let reqs = self.requests();
                if reqs.len() >= n {
                    return reqs;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .with_context(|| format!("timed out waiting for {n} model requests (have {})", self.requests().len()))
    }

    /// Every request to the GitHub MCP endpoint (`/mcp`, `/mcp/readonly`) so far, oldest first:
    /// `{"method": "POST", "path": "/mcp", "headers": {…}, "body": {…}}`.
    pub fn mcp_requests(&self) -> Vec<Value> {
        self.shared.lock().mcp_requests.clone()
    }

    /// Forgets captured requests/exchanges only.
    pub fn clear_requests(&self) {
        let mut st = self.shared.lock();
        st.requests.clear();
        st.exchanges.clear();
    }

    /// Back to the initial state: no snapshot, workdir, queued replies, captured requests,
    /// model override or registered users.
    pub fn clear(&self) {
        self.shared.lock().reset();
    }

    /// Resolves once `POST /stop` was received (the binary exits then).
    pub async fn stopped(&self) {
        let mut rx = self.shared.shutdown.subscribe();
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        // Ends hanging responses so clients blocked on them see the connection close.
        self.shared.shutdown.send_replace(true);
        self.task.abort();
    }
}
