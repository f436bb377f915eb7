//! Several nodes share no disk: the files in a session's directory besides its log (`plan.md`,
//! `checkpoints/`, `files/`, spilled outputs) are mirrored in the database. The node running a
//! session pushes what changed (after a client's change, after events were persisted, before it
//! gives the lease up); a node loading, following or taking over the session writes the
//! database's copy out first. Only the lease holder pushes, so the database's copy is the
//! running node's.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use store::pg::PgEvents;
use store::StoreError;

use crate::lock;

/// Files larger than this stay local (a log of their own would not fit a row well).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Entries of a session directory that are not mirrored: the log and metadata have tables of
/// their own, and a live SQLite database cannot be copied file by file.
fn skipped(relative: &str) -> bool {
    matches!(relative, "events.jsonl" | "workspace.yaml") || relative.starts_with("session.db")
}

/// What this node last pushed or wrote out, per session: a file's content hash by path, and
/// the newest version read from the database.
#[derive(Default)]
pub(crate) struct Mirror {
    known: std::sync::Mutex<HashMap<String, Known>>,
    /// One push or pull at a time: two would race on the same files.
    busy: tokio::sync::Mutex<()>,
}

#[derive(Default, Clone)]
struct Known {
    hashes: HashMap<String, u64>,
    version: i64,
    /// The session's persisted event count at the last push (a push after new events only).
    events: usize,
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Every mirrored file under `dir`, by relative path.
fn scan(dir: &Path) -> HashMap<String, Vec<u8>> {
    let mut found = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else { continue };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let rel = rel.join(entry.file_name());
            let Some(name) = rel.to_str().map(|s| s.replace('\\', "/")) else { continue };
            if kind.is_dir() {
                stack.push(rel);
            } else if kind.is_file() && !skipped(&name) {
                let small = entry.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
                if let (true, Ok(bytes)) = (small, std::fs::read(entry.path())) {
                    found.insert(name, bytes);
                }
            }
        }
    }
    found
}

/// `dir/relative`, refusing a path from the database that would leave `dir`.
fn inside(dir: &Path, relative: &str) -> Option<PathBuf> {
    let rel = Path::new(relative);
    let plain = rel.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    (plain && !relative.is_empty()).then(|| dir.join(rel))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.display().to_string(), source }
}

impl Mirror {
    /// Forgets a session (deleted, or no longer loaded here).
    pub(crate) fn forget(&self, id: &str) {
        lock(&self.known).remove(id);
    }

    /// Whether the session persisted events since the last push (`events`: its count now).
    pub(crate) fn stale(&self, id: &str, events: usize) -> bool {
        lock(&self.known).get(id).is_none_or(|k| k.events != events)
    }

    /// Sends what changed in `dir` since the last push.
    pub(crate) async fn push(&self, pg: &PgEvents, id: &str, dir: &Path, events: usize) -> Result<(), StoreError> {
        let _one = self.busy.lock().await;
        let scan_dir = dir.to_path_buf();
        let files = tokio::task::spawn_blocking(move || scan(&scan_dir)).await.unwrap_or_default();
        let mut known = lock(&self.known).get(id).cloned().unwrap_or_default();
        for (path, bytes) in &files {
            let h = hash(bytes);
            if known.hashes.get(path) != Some(&h) {
                pg.put_file(id, path, Some(bytes)).await?;
                known.hashes.insert(path.clone(), h);
            }
        }
        let removed: Vec<String> = known.hashes.keys().filter(|p| !files.contains_key(*p)).cloned().collect();
        for path in removed {
            pg.put_file(id, &path, None).await?;
            known.hashes.remove(&path);
        }
        known.events = events;
        lock(&self.known).insert(id.to_string(), known);
        Ok(())
    }

    /// Writes out what the database holds for the session that this node has not seen yet.
    pub(crate) async fn pull(&self, pg: &PgEvents, id: &str, dir: &Path) -> Result<(), StoreError> {
        let _one = self.busy.lock().await;
        let mut known = lock(&self.known).get(id).cloned().unwrap_or_default();
        let changed = pg.files_after(id, known.version).await?;
        if changed.is_empty() {
            return Ok(());
        }
        for file in changed {
            known.version = known.version.max(file.version);
            let Some(path) = inside(dir, &file.path) else {
                tracing::warn!(session = %id, path = %file.path, "ignoring a shared file outside the session");
                continue;
            };
            match &file.content {
                Some(bytes) => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(io_error(parent))?;
                    }
                    std::fs::write(&path, bytes).map_err(io_error(&path))?;
                    known.hashes.insert(file.path.clone(), hash(bytes));
                }
                None => {
                    match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(io_error(&path)(e));
                        }
                        _ => {}
                    }
                    known.hashes.remove(&file.path);
                }
            }
        }
        lock(&self.known).insert(id.to_string(), known);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_metadata_and_database_stay_local_and_paths_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("events.jsonl"), "{}\n").unwrap();
        std::fs::write(dir.path().join("workspace.yaml"), "id: x\n").unwrap();
        std::fs::write(dir.path().join("session.db"), "x").unwrap();
        std::fs::write(dir.path().join("plan.md"), "# Plan").unwrap();
        std::fs::create_dir_all(dir.path().join("files/notes")).unwrap();
        std::fs::write(dir.path().join("files/notes/a.txt"), "a").unwrap();
        let mut found: Vec<String> = scan(dir.path()).into_keys().collect();
        found.sort();
        assert_eq!(found, ["files/notes/a.txt", "plan.md"]);
        assert!(inside(dir.path(), "../escape").is_none());
        assert!(inside(dir.path(), "/etc/passwd").is_none());
        assert_eq!(inside(dir.path(), "files/a").unwrap(), dir.path().join("files/a"));
    }
}
