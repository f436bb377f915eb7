//! A session's own files besides the log (`workspace.yaml`, `plan.md`), for callers on the
//! async runtime. `workspace.yaml` is written in place, as the log is opened and appended: a
//! few hundred bytes, a temporary file and a rename (tens of microseconds) cost less than the
//! hand-off to the blocking pool and back, and on a single-threaded runtime (a `-p` run) the
//! hand-off waited for a pool thread to start.

use crate::error::{io_err, read_if_present, remove_if_present, StoreError};
use crate::layout::{Layout, WorkspaceMeta};

impl Layout {
    /// Writes `workspace.yaml` atomically (temp file, rename).
    pub async fn write_workspace_yaml(&self, id: &str, meta: &WorkspaceMeta) -> Result<(), StoreError> {
        self.write_workspace_yaml_blocking(id, meta)
    }

    /// `plan.md`, or `None` when the session has none.
    pub async fn read_plan(&self, id: &str) -> Result<Option<String>, StoreError> {
        Self::check_id(id)?;
        read_if_present(&self.plan_path(id)).await
    }

    /// Replaces `plan.md`; returns whether it existed before.
    pub async fn write_plan(&self, id: &str, content: &str) -> Result<bool, StoreError> {
        Self::check_id(id)?;
        let path = self.plan_path(id);
        let existed = tokio::fs::try_exists(&path).await.map_err(io_err(&path))?;
        tokio::fs::write(&path, content).await.map_err(io_err(&path))?;
        Ok(existed)
    }

    /// Removes `plan.md`; returns whether there was one.
    pub async fn delete_plan(&self, id: &str) -> Result<bool, StoreError> {
        Self::check_id(id)?;
        remove_if_present(&self.plan_path(id)).await
    }
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plan_lifecycle() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        layout.ensure_session_dir("s1").unwrap();
        assert_eq!(layout.read_plan("s1").await.unwrap(), None);
        assert!(!layout.write_plan("s1", "# Plan").await.unwrap());
        assert!(layout.write_plan("s1", "# Plan 2").await.unwrap());
        assert_eq!(layout.read_plan("s1").await.unwrap().as_deref(), Some("# Plan 2"));
        assert!(layout.delete_plan("s1").await.unwrap());
        assert!(!layout.delete_plan("s1").await.unwrap());
        assert!(layout.read_plan("../escape").await.is_err());
    }

    #[tokio::test]
    async fn workspace_yaml_round_trips_through_the_async_writer() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let meta = WorkspaceMeta { id: "s2".into(), cwd: "/w".into(), ..Default::default() };
        layout.write_workspace_yaml("s2", &meta).await.unwrap();
        assert_eq!(layout.read_workspace_yaml("s2").unwrap(), Some(meta));
    }
}
