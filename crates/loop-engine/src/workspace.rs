//! A session's workspace directory as clients read it (`session.workspaces.*`): its files,
//! checkpoints and `workspace.yaml`. The engine's layout decides where they live; writes that
//! emit an event go through the actor instead (`SessionHandle::write_workspace_file`).

use std::path::PathBuf;

use store::{Checkpoint, WorkspaceMeta, WorkspaceStat};

use crate::error::EngineError;
use crate::handle::SessionHandle;

impl SessionHandle {
    /// The directory client-managed files live in (`files/`).
    pub fn files_dir(&self) -> PathBuf {
        self.deps().layout.files_dir(self.id())
    }

    /// Every regular file under `files/`, sorted.
    pub async fn list_workspace_files(&self) -> Result<Vec<String>, EngineError> {
        Ok(self.deps().layout.list_workspace_files(self.id()).await?)
    }

    /// A workspace file's text; `path` is the client's, confined to `files/`.
    pub async fn read_workspace_file(&self, path: &str) -> Result<String, EngineError> {
        Ok(self.deps().layout.read_workspace_file(self.id(), path).await?)
    }

    pub async fn create_workspace_dir(&self, path: &str, recursive: bool) -> Result<(), EngineError> {
        Ok(self.deps().layout.create_workspace_dir(self.id(), path, recursive).await?)
    }

    pub async fn stat_workspace_path(&self, path: &str) -> Result<WorkspaceStat, EngineError> {
        Ok(self.deps().layout.stat_workspace_path(self.id(), path).await?)
    }

    pub async fn remove_workspace_path(&self, path: &str, recursive: bool, force: bool) -> Result<(), EngineError> {
        Ok(self.deps().layout.remove_workspace_path(self.id(), path, recursive, force).await?)
    }

    pub async fn rename_workspace_path(&self, source: &str, destination: &str) -> Result<(), EngineError> {
        Ok(self.deps().layout.rename_workspace_path(self.id(), source, destination).await?)
    }

    /// The session's `workspace.yaml`, `None` before it is written.
    pub async fn workspace_meta(&self) -> Result<Option<WorkspaceMeta>, EngineError> {
        Ok(self.deps().layout.workspace_meta(self.id()).await?)
    }

    /// The compaction checkpoints, oldest first.
    pub async fn list_checkpoints(&self) -> Result<Vec<Checkpoint>, EngineError> {
        Ok(self.deps().layout.list_checkpoints(self.id()).await?)
    }

    /// Checkpoint `number`'s text, `None` when there is no such checkpoint.
    pub async fn read_checkpoint(&self, number: u64) -> Result<Option<String>, EngineError> {
        Ok(self.deps().layout.read_checkpoint(self.id(), number).await?)
    }

    /// A summary written as the next checkpoint (`session.workspaces.addSummary`): its number,
    /// path and title (an empty title reads `Session <first 8 of the id>`, as the original's).
    pub async fn add_summary(&self, title: &str, content: &str) -> Result<(u32, PathBuf, String), EngineError> {
        let title = match title.trim() {
            "" => format!("Session {}", self.id().chars().take(8).collect::<String>()),
            _ => title.to_string(),
        };
        let (number, path) = self.deps().layout.write_checkpoint(self.id(), &title, content).await?;
        Ok((number, path, title))
    }

    /// Keeps the first `keep` checkpoints.
    pub async fn truncate_summaries(&self, keep: usize) -> Result<(), EngineError> {
        Ok(self.deps().layout.truncate_checkpoints(self.id(), keep).await?)
    }

    pub async fn read_autopilot_objective(&self) -> Result<Option<String>, EngineError> {
        Ok(self.deps().layout.read_autopilot_objective(self.id()).await?)
    }

    /// Whether it replaced one.
    pub async fn write_autopilot_objective(&self, content: &str) -> Result<bool, EngineError> {
        Ok(self.deps().layout.write_autopilot_objective(self.id(), content).await?)
    }

    /// Whether there was one.
    pub async fn delete_autopilot_objective(&self) -> Result<bool, EngineError> {
        Ok(self.deps().layout.delete_autopilot_objective(self.id()).await?)
    }
}
