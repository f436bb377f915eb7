//! A session's autopilot objective, as a client writes it (`session.workspaces.*AutopilotObjective`):
//! `autopilot-objective.json` in the session's folder, holding the client's text as given (the
//! original's name, and its content unchanged: not necessarily JSON).

use std::path::PathBuf;

use crate::error::{blocking, io_err, read_if_present, remove_if_present, StoreError};
use crate::layout::Layout;

const FILE: &str = "autopilot-objective.json";

impl Layout {
    fn objective_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        Ok(self.session_dir(id).join(FILE))
    }

    /// The objective's text, `None` when none was written.
    pub async fn read_autopilot_objective(&self, id: &str) -> Result<Option<String>, StoreError> {
        read_if_present(&self.objective_path(id)?).await
    }

    /// Writes the objective (owner-only, replaced whole); whether one was there before.
    pub async fn write_autopilot_objective(&self, id: &str, content: &str) -> Result<bool, StoreError> {
        let path = self.objective_path(id)?;
        let existed = tokio::fs::try_exists(&path).await.map_err(io_err(&path))?;
        let content = content.to_string();
        blocking(move || crate::layout::replace_private_file(&path, content.as_bytes())).await?;
        Ok(existed)
    }

    /// Removes the objective; whether there was one.
    pub async fn delete_autopilot_objective(&self, id: &str) -> Result<bool, StoreError> {
        remove_if_present(&self.objective_path(id)?).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_objective_is_written_read_back_as_given_and_removed_once() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        std::fs::create_dir_all(layout.session_dir("s1")).unwrap();
        assert_eq!(layout.read_autopilot_objective("s1").await.unwrap(), None);
        assert!(!layout.write_autopilot_objective("s1", "# Goal\nnot json").await.unwrap());
        assert!(layout.write_autopilot_objective("s1", "").await.unwrap(), "a second write replaces");
        assert_eq!(layout.read_autopilot_objective("s1").await.unwrap().as_deref(), Some(""));
        let path = layout.session_dir("s1").join(FILE);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(layout.delete_autopilot_objective("s1").await.unwrap());
        assert!(!layout.delete_autopilot_objective("s1").await.unwrap());
        assert!(layout.read_autopilot_objective("../x").await.is_err(), "ids never leave the state directory");
    }
}
