//! Paths under `$COPILOT_HOME` (persistence.md §1) and the `workspace.yaml` writer (§3).
//!
//! Path getters are pure; the methods that touch the file system validate the session id
//! first, because ids come from clients and a `..` would otherwise reach outside
//! `session-state/` (and `delete_session_dir` removes recursively).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{io_err, StoreError};

/// The on-disk layout rooted at `$COPILOT_HOME`. Session directories are under
/// `<home>/session-state`, or elsewhere for `skipper serve` on several nodes (the volume they
/// share, [`Layout::with_session_state`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub home: PathBuf,
    session_state: PathBuf,
}

/// Contents of `session-state/<id>/workspace.yaml`. Optional fields are omitted when `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceMeta {
    pub id: String,
    pub cwd: String,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
    pub client_name: Option<String>,
    /// Auto title (first prompt) or the name given by `session.name.set`.
    pub name: Option<String>,
    pub user_named: bool,
    pub summary_count: u32,
    pub fork_count: u32,
    pub created_at: String,
    pub updated_at: String,
}

/// A session name as the original accepts one (`session.name.set`, `sessions import --name`):
/// the reason when it does not.
pub fn check_session_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("Session name cannot be empty.")
    } else if name.trim() != name {
        Err("Session name must not have leading or trailing whitespace.")
    } else if name.chars().count() > 100 {
        Err("Session name must be 100 characters or less.")
    } else if name.chars().any(char::is_control) {
        Err("Session name must not contain control characters.")
    } else if name.contains('"') {
        Err("Session name must not contain double quotes.")
    } else {
        Ok(())
    }
}

impl Layout {
    pub fn new(home: impl Into<PathBuf>) -> Self {
        let home = home.into();
        Self { session_state: home.join("session-state"), home }
    }

    /// `home` for configuration, and session directories under `session_state` instead.
    pub fn with_session_state(home: impl Into<PathBuf>, session_state: impl Into<PathBuf>) -> Self {
        Self { home: home.into(), session_state: session_state.into() }
    }

    pub fn session_state_dir(&self) -> PathBuf {
        self.session_state.clone()
    }

    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.session_state_dir().join(id)
    }

    pub fn events_path(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("events.jsonl")
    }

    pub fn workspace_yaml_path(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("workspace.yaml")
    }

    /// Where large tool outputs are spilled.
    pub fn temp_dir(&self) -> PathBuf {
        self.session_state_dir().join("temp")
    }

    pub fn db_path(&self) -> PathBuf {
        // Not the original's `session-store.db`: that file has a different `sessions` schema, and
        // pointing Skipper at a real ~/.copilot must not collide with it.
        self.home.join("skipper-index.db")
    }

    pub fn plan_path(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("plan.md")
    }

    pub fn files_dir(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("files")
    }

    pub fn checkpoints_dir(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("checkpoints")
    }

    /// Rejects ids that are not a single plain path component, or that name the
    /// housekeeping entries of `session-state/` (`temp`, dot-directories).
    pub fn check_id(id: &str) -> Result<(), StoreError> {
        let plain = !id.is_empty()
            && id.len() <= 200
            && !id.starts_with('.')
            && id != "temp"
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if plain {
            Ok(())
        } else {
            Err(StoreError::InvalidSessionId(id.to_string()))
        }
    }

    /// Creates `session-state/<id>/` (private: logs hold prompts and tool output).
    pub fn ensure_session_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        create_private_dir(&dir)?;
        Ok(dir)
    }

    /// Removes `session-state/<id>/` and everything in it; a missing directory is not an error.
    pub fn delete_session_dir(&self, id: &str) -> Result<(), StoreError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(&dir)(e)),
            _ => Ok(()),
        }
    }

    /// Writes `workspace.yaml` atomically (temp file + rename) so a crash never leaves a
    /// half-written file behind. Not fsynced: the file is as durable as the event log it
    /// describes (appends are not synced either), and a sync costs milliseconds per write on
    /// the `-p` path and every rename.
    pub fn write_workspace_yaml_blocking(&self, id: &str, meta: &WorkspaceMeta) -> Result<(), StoreError> {
        let dir = self.ensure_session_dir(id)?;
        replace_private_file(&dir.join("workspace.yaml"), render_workspace_yaml(meta).as_bytes())
    }

    /// Reads back a `workspace.yaml` written by [`Layout::write_workspace_yaml`] (or by the
    /// real CLI). `Ok(None)` when the file does not exist; unknown keys are ignored.
    pub fn read_workspace_yaml(&self, id: &str) -> Result<Option<WorkspaceMeta>, StoreError> {
        Self::check_id(id)?;
        let path = self.workspace_yaml_path(id);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(parse_workspace_yaml(&text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path)(e)),
        }
    }
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io_err(dir))
}

/// Options that create files readable by the owner only.
/// Replaces `path` (owner-only) with `content`: written to `.<name>.tmp` beside it, then renamed
/// over it, so a reader sees the old file or the new one. A failed write (a full disk) leaves the
/// old file as it was and no partial copy beside it.
pub(crate) fn replace_private_file(path: &Path, content: &[u8]) -> Result<(), StoreError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut f = private_file_options().write(true).truncate(true).open(&tmp)?;
        f.write_all(content)
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    fs::rename(&tmp, path).map_err(io_err(path))
}

pub(crate) fn private_file_options() -> fs::OpenOptions {
    let mut opts = fs::OpenOptions::new();
    opts.create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts
}

pub(crate) fn render_workspace_yaml(m: &WorkspaceMeta) -> String {
    let mut out = String::new();
    let mut line = |key: &str, value: String| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&value);
        out.push('\n');
    };
    line("id", scalar(&m.id));
    line("cwd", scalar(&m.cwd));
    let optional = [
        ("git_root", &m.git_root),
        ("repository", &m.repository),
        ("branch", &m.branch),
        ("client_name", &m.client_name),
        ("name", &m.name),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            line(key, scalar(v));
        }
    }
    line("user_named", m.user_named.to_string());
    line("summary_count", m.summary_count.to_string());
    line("fork_count", m.fork_count.to_string());
    line("created_at", scalar(&m.created_at));
    line("updated_at", scalar(&m.updated_at));
    out
}

/// A string as a YAML scalar: plain when that reads back as the same string, otherwise
/// double-quoted. JSON string escapes are a subset of YAML double-quoted escapes, so
/// `serde_json` does the quoting.
fn scalar(s: &str) -> String {
    if needs_quoting(s) {
        serde_json::Value::String(s.to_string()).to_string()
    } else {
        s.to_string()
    }
}

fn needs_quoting(s: &str) -> bool {
    const RESERVED: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"];
    let Some(first) = s.chars().next() else {
        return true;
    };
    s.trim() != s
        || RESERVED.contains(&s.to_ascii_lowercase().as_str())
        || s.parse::<f64>().is_ok()
        || s.starts_with("0x")
        || s.starts_with("0o")
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.chars().any(|c| c.is_control())
}

pub(crate) fn parse_workspace_yaml(text: &str) -> WorkspaceMeta {
    let mut m = WorkspaceMeta::default();
    for raw in text.lines() {
        let Some((key, value)) = raw.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "id" => m.id = value,
            "cwd" => m.cwd = value,
            "git_root" => m.git_root = Some(value),
            "repository" => m.repository = Some(value),
            "branch" => m.branch = Some(value),
            "client_name" => m.client_name = Some(value),
            "name" => m.name = Some(value),
            "user_named" => m.user_named = value == "true",
            "summary_count" => m.summary_count = value.parse().unwrap_or(0),
            "fork_count" => m.fork_count = value.parse().unwrap_or(0),
            "created_at" => m.created_at = value,
            "updated_at" => m.updated_at = value,
            _ => {}
        }
    }
    m
}

fn unquote(v: &str) -> String {
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(v) {
            return s;
        }
    }
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return v[1..v.len() - 1].replace("''", "'");
    }
    v.to_string()
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn meta() -> WorkspaceMeta {
        WorkspaceMeta {
            id: "11111111-2222-3333-4444-555555555555".into(),
            cwd: "/home/user/project".into(),
            client_name: Some("sdk".into()),
            name: Some("Please do the things".into()),
            created_at: "2026-11-22T11:29:03.301Z".into(),
            updated_at: "2026-11-22T11:29:03.444Z".into(),
            ..Default::default()
        }
    }

    #[test]
    fn workspace_yaml_matches_observed_shape() {
        let expected = "id: 11111111-2222-3333-4444-555555555555\n\
                        cwd: /home/user/project\n\
                        client_name: sdk\n\
                        name: Please do the things\n\
                        user_named: false\n\
                        summary_count: 0\n\
                        fork_count: 0\n\
                        created_at: 2026-11-22T11:29:03.301Z\n\
                        updated_at: 2026-11-22T11:29:03.444Z\n";
        assert_eq!(render_workspace_yaml(&meta()), expected);
    }

    #[test]
    fn awkward_values_are_quoted_and_round_trip() {
        for name in ["fix: the bug", "true", "42", "", " x", "a\nb", "- item", "say \"hi\" #1"] {
            assert!(needs_quoting(name), "{name:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let mut m = meta();
        m.name = Some("fix: the \"bug\"\nnow".into());
        m.branch = Some("yes".into());
        layout.write_workspace_yaml_blocking(&m.id, &m).unwrap();
        assert_eq!(layout.read_workspace_yaml(&m.id).unwrap(), Some(m.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(layout.workspace_yaml_path(&m.id)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_rewrite_replaces_the_first_write_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let mut m = meta();
        layout.write_workspace_yaml_blocking(&m.id, &m).unwrap();
        m.name = Some("a longer name than the first write had".into());
        layout.write_workspace_yaml_blocking(&m.id, &m).unwrap();
        m.name = Some("short".into());
        layout.write_workspace_yaml_blocking(&m.id, &m).unwrap();
        assert_eq!(layout.read_workspace_yaml(&m.id).unwrap(), Some(m.clone()));
        let names: Vec<_> = fs::read_dir(layout.session_dir(&m.id))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["workspace.yaml"]);
    }

    #[test]
    fn ids_that_escape_session_state_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        for bad in ["", "..", "../x", "a/b", ".hidden", "temp", "a b"] {
            assert!(layout.delete_session_dir(bad).is_err(), "{bad:?}");
        }
        let id = "abc-123";
        layout.ensure_session_dir(id).unwrap();
        assert!(layout.session_dir(id).is_dir());
        layout.delete_session_dir(id).unwrap();
        assert!(!layout.session_dir(id).exists());
        layout.delete_session_dir(id).unwrap();
        assert_eq!(layout.read_workspace_yaml(id).unwrap(), None);
    }
}
