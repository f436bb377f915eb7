//! Session state kept by the client (a sessionFs provider): the same files the file backend
//! writes — `events.jsonl`, `workspace.yaml`, `plan.md`, `checkpoints/index.md`, spilled
//! outputs under `temp/` — under the state directory the client named, read and written
//! through [`SessionFs`] (implemented over JSON-RPC by the engine).
//!
//! Appends keep the emitter's contract (persist before deliver, in order) without blocking
//! it: [`RemoteLog`] hands each line to one writer task that sends them in order.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::checkpoints::render_index;
use crate::error::StoreError;
use crate::event_log::LoadedLog;
use crate::layout::{parse_workspace_yaml, render_workspace_yaml, WorkspaceMeta};

/// File operations on the client's storage; paths are the client's (absolute, `/`-separated).
#[async_trait::async_trait]
pub trait SessionFs: Send + Sync {
    /// The file's text; `None` when it does not exist.
    async fn read_file(&self, path: &str) -> Result<Option<String>, String>;
    async fn write_file(&self, path: &str, content: &str) -> Result<(), String>;
    async fn append_file(&self, path: &str, content: &str) -> Result<(), String>;
    async fn exists(&self, path: &str) -> Result<bool, String>;
    async fn mkdir(&self, path: &str) -> Result<(), String>;
    async fn rm(&self, path: &str) -> Result<(), String>;
}

fn remote(path: &str) -> impl FnOnce(String) -> StoreError + '_ {
    move |message| StoreError::Io { path: path.to_string(), source: std::io::Error::other(message) }
}

/// What the writer task receives: a line to append, or a barrier answered once every line
/// before it was sent.
enum Msg {
    Line(Vec<u8>),
    Barrier(tokio::sync::oneshot::Sender<()>),
}

/// One session's state directory on the client.
#[derive(Clone)]
pub struct RemoteState {
    fs: Arc<dyn SessionFs>,
    dir: String,
    writer: Arc<std::sync::Mutex<Option<mpsc::Sender<Msg>>>>,
}

impl std::fmt::Debug for RemoteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteState").field("dir", &self.dir).finish()
    }
}

/// How many event lines may wait for the client before appends fail.
const QUEUE: usize = 4096;

impl RemoteState {
    pub fn new(fs: Arc<dyn SessionFs>, dir: &str) -> Self {
        Self { fs, dir: dir.trim_end_matches('/').to_string(), writer: Default::default() }
    }

    pub fn fs(&self) -> &Arc<dyn SessionFs> {
        &self.fs
    }

    /// `<dir>/<relative>`.
    pub fn path(&self, relative: &str) -> String {
        format!("{}/{}", self.dir, relative)
    }

    pub async fn log_exists(&self) -> Result<bool, StoreError> {
        let path = self.path("events.jsonl");
        self.fs.exists(&path).await.map_err(remote(&path))
    }

    /// Waits until every line appended so far was handed to the client.
    pub async fn flushed(&self) {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(tx) = writer {
            let (done, wait) = tokio::sync::oneshot::channel();
            if tx.send(Msg::Barrier(done)).await.is_ok() {
                let _ = wait.await;
            }
        }
    }

    /// The whole log, parsed as the file backend parses `events.jsonl` (after the appends
    /// still on their way).
    pub async fn load(&self, id: &str) -> Result<LoadedLog, StoreError> {
        self.flushed().await;
        let path = self.path("events.jsonl");
        let Some(text) = self.fs.read_file(&path).await.map_err(remote(&path))? else {
            return Err(StoreError::NotFound(id.to_string()));
        };
        Ok(crate::event_log::parse_log(text.as_bytes(), &path))
    }

    /// Creates the directory and starts the writer that appends to `events.jsonl`.
    pub async fn open_sink(&self) -> Result<RemoteLog, StoreError> {
        self.fs.mkdir(&self.dir).await.map_err(remote(&self.dir))?;
        let (tx, mut rx) = mpsc::channel::<Msg>(QUEUE);
        let (fs, path) = (self.fs.clone(), self.path("events.jsonl"));
        tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                match msg {
                    Msg::Line(line) => {
                        let text = String::from_utf8_lossy(&line);
                        if let Err(e) = fs.append_file(&path, &text).await {
                            tracing::warn!(path, error = %e, "sessionFs append failed");
                        }
                    }
                    Msg::Barrier(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx.clone());
        Ok(RemoteLog { tx })
    }

    pub async fn write(&self, relative: &str, content: &str) -> Result<(), StoreError> {
        let path = self.path(relative);
        if let Some((parent, _)) = path.rsplit_once('/') {
            if !parent.is_empty() {
                self.fs.mkdir(parent).await.map_err(remote(parent))?;
            }
        }
        self.fs.write_file(&path, content).await.map_err(remote(&path))
    }

    pub async fn read(&self, relative: &str) -> Result<Option<String>, StoreError> {
        let path = self.path(relative);
        self.fs.read_file(&path).await.map_err(remote(&path))
    }

    /// Removes `<dir>/<relative>`; `false` when it did not exist.
    pub async fn remove(&self, relative: &str) -> Result<bool, StoreError> {
        let path = self.path(relative);
        if !self.fs.exists(&path).await.map_err(remote(&path))? {
            return Ok(false);
        }
        self.fs.rm(&path).await.map_err(remote(&path))?;
        Ok(true)
    }

    pub async fn write_meta(&self, meta: &WorkspaceMeta) -> Result<(), StoreError> {
        self.write("workspace.yaml", &render_workspace_yaml(meta)).await
    }

    pub async fn read_meta(&self) -> Result<Option<WorkspaceMeta>, StoreError> {
        Ok(self.read("workspace.yaml").await?.map(|t| parse_workspace_yaml(&t)))
    }

    /// `checkpoints/index.md` with no checkpoint yet, unless there is one.
    pub async fn ensure_checkpoint_index(&self) -> Result<(), StoreError> {
        let path = self.path("checkpoints/index.md");
        if !self.fs.exists(&path).await.map_err(remote(&path))? {
            self.write("checkpoints/index.md", &render_index(&[])).await?;
        }
        Ok(())
    }
}

/// The append handle: lines go to the writer task in order.
#[derive(Debug)]
pub struct RemoteLog {
    tx: mpsc::Sender<Msg>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msg")
    }
}

impl RemoteLog {
    pub fn append(&mut self, json: &[u8]) -> Result<(), StoreError> {
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json);
        line.push(b'\n');
        self.tx.try_send(Msg::Line(line)).map_err(|e| StoreError::Io {
            path: "events.jsonl".into(),
            source: std::io::Error::other(format!("sessionFs writer: {e}")),
        })
    }
}
