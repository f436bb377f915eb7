//! Several nodes share no disk: the files in a session's directory besides its log (`plan.md`,
//! `checkpoints/`, `files/`, spilled outputs, the `sql` tool's `session.db`) are mirrored in the
//! database. The node running a session pushes what changed (after a client's change, after
//! each tool call before its completion event, after events were persisted, before it gives the
//! lease up); a node loading, following or taking over the session writes the database's copy
//! out first. Only the lease holder pushes, so the database's copy is the running node's.
//!
//! A push looks at every file's size and modification time and reads only those that changed
//! (or changed too recently for the time to tell), so a push after a tool that wrote nothing
//! costs a directory walk. Files over 16 MiB go in pieces, read and written one at a time.
//! `session.db` is live (its connection stays open): it goes as a consistent snapshot taken with
//! SQLite's backup, and is restored in place, so an open connection on the receiving node reads
//! the new content.
//!
//! The same machinery mirrors a tenant's workspace ([`FileScope::Workspace`], keyed by tenant):
//! every regular file under the root, `.git` included (a tool's commit is work too). Symlinks,
//! sockets and fifos are not shared (a link's target may mean nothing on another node, and a
//! file written through one could land outside the workspace). A file over
//! [`WORKSPACE_MAX_FILE_BYTES`], or past the first [`WORKSPACE_MAX_FILES`], stays local with a
//! warning. Paths from the database are confined: no `..`, not absolute, no symlink on the way.
//!
//! Writers: per file the last push wins. A pull leaves alone a file changed here since this
//! node last pushed or wrote it (its change is pushed next and wins), and skips rows that are
//! this node's own pushes.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use store::pg::{FileScope, PgEvents, SharedFile, INLINE_MAX_BYTES};
use store::StoreError;

use crate::lock;

/// The `sql` tool's database, shared as a snapshot.
const SESSION_DB: &str = "session.db";

/// Suffix of a file being written out from the database (renamed into place when complete).
const PULLING: &str = ".skipper-pull";

/// Where the snapshot of `session.db` is taken before it is sent (skipped by the scan).
const DB_SNAPSHOT: &str = "session.db.share";

/// A file modified this close to when it was read may change again without its modification
/// time changing (coarse file-system clocks): it is read again at the next push.
const SETTLE: Duration = Duration::from_secs(1);

/// A workspace file larger than this stays on its node (a build artefact, a data set).
pub(crate) const WORKSPACE_MAX_FILE_BYTES: u64 = 256 << 20;

/// A workspace with more files than this shares only the first ones found (and removes none).
pub(crate) const WORKSPACE_MAX_FILES: usize = 50_000;

/// Entries that are not mirrored: half-written pulls are not files; in a session directory the
/// log and metadata have tables of their own, and SQLite's side files are not the database.
fn skipped(scope: FileScope, relative: &str) -> bool {
    relative.ends_with(PULLING)
        || (scope == FileScope::Session
            && (matches!(relative, "events.jsonl" | "workspace.yaml")
                || (relative.starts_with(SESSION_DB) && relative != SESSION_DB)))
}

/// Whether `relative` is the live `session.db` (shared through snapshots).
fn is_db(scope: FileScope, relative: &str) -> bool {
    scope == FileScope::Session && relative == SESSION_DB
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self { len: meta.len(), modified: meta.modified().ok() }
    }
}

/// What this node knows a file's content to be, and the stat it had then.
#[derive(Debug, Clone)]
struct Seen {
    hash: u64,
    stat: Stat,
    /// The stat alone tells a later change (it was old enough when the file was read).
    settled: bool,
    /// The database version this content is (pushed or pulled here): rows up to it are known.
    version: i64,
}

impl Seen {
    fn new(hash: u64, stat: Stat, read_at: SystemTime, version: i64) -> Self {
        let settled = stat.modified.is_some_and(|m| m + SETTLE < read_at);
        Self { hash, stat, settled, version }
    }

    fn unchanged(&self, now: &Stat) -> bool {
        self.settled && self.stat == *now
    }
}

/// What this node last pushed or wrote out, per session (or per tenant's workspace): each
/// file's content hash by path, and the newest version read from the database.
pub(crate) struct Mirror {
    scope: FileScope,
    known: std::sync::Mutex<HashMap<String, Known>>,
    /// One push or pull at a time: two would race on the same files.
    busy: tokio::sync::Mutex<()>,
}

#[derive(Default, Clone)]
struct Known {
    files: HashMap<String, Seen>,
    version: i64,
    /// The session's persisted event count at the last push (a push after new events only).
    events: usize,
    /// The caps were hit at the last push (warned once, until they no longer are).
    capped: bool,
}

fn hash_reader(mut from: impl Read) -> std::io::Result<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf)? {
            0 => return Ok(h.finish()),
            n => h.write(&buf[..n]),
        }
    }
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

/// The mirrored files under a directory, as one walk found them.
#[derive(Default)]
struct Scan {
    found: HashMap<String, Stat>,
    /// Files left local for their size (not removed elsewhere either).
    too_large: Vec<String>,
    /// The walk stopped at the file cap: a file not found may exist, so none is removed.
    truncated: bool,
}

/// Every mirrored file under `dir`, by relative path, with its stat. Symlinks are not followed
/// nor shared; only regular files are.
fn scan(dir: &Path, scope: FileScope) -> Scan {
    let mut out = Scan::default();
    let (max_files, max_bytes) = match scope {
        FileScope::Session => (usize::MAX, u64::MAX),
        FileScope::Workspace => (WORKSPACE_MAX_FILES, WORKSPACE_MAX_FILE_BYTES),
    };
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else { continue };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let rel = rel.join(entry.file_name());
            let Some(name) = rel.to_str().map(|s| s.replace('\\', "/")) else { continue };
            if kind.is_dir() {
                stack.push(rel);
            } else if kind.is_file() && !skipped(scope, &name) {
                let Ok(meta) = entry.metadata() else { continue };
                if meta.len() > max_bytes {
                    out.too_large.push(name);
                } else if out.found.len() >= max_files {
                    out.truncated = true;
                    return out;
                } else {
                    out.found.insert(name, Stat::of(&meta));
                }
            }
        }
    }
    out
}

/// `dir/relative`, refusing a path from the database that would leave `dir`: anything but
/// plain names (`..`, an absolute path), or a symlink on the way (a directory of the path, or
/// the file itself, being a link here).
fn inside(dir: &Path, relative: &str) -> Option<PathBuf> {
    let rel = Path::new(relative);
    let plain = rel.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || relative.is_empty() {
        return None;
    }
    let mut at = dir.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return None,
            Ok(_) => {}
            // The rest does not exist yet: it is made as plain directories.
            Err(_) => break,
        }
    }
    Some(dir.join(rel))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.display().to_string(), source }
}

/// A file read for a push: its stat before reading, its hash, and its content when small.
struct ForPush {
    stat: Stat,
    read_at: SystemTime,
    hash: u64,
    /// `None`: larger than a row; sent in pieces from `source`.
    inline: Option<Vec<u8>>,
    source: PathBuf,
    len: u64,
}

/// Reads one file of `dir` for a push (`session.db` through a snapshot). `None`: it is gone.
fn read_for_push(dir: &Path, relative: &str, db: bool) -> Result<Option<ForPush>, StoreError> {
    let path = dir.join(relative);
    let read_at = SystemTime::now();
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&path)(e)),
    };
    let stat = Stat::of(&meta);
    let source = if db {
        let snap = dir.join(DB_SNAPSHOT);
        let _ = std::fs::remove_file(&snap);
        store::session_db::snapshot(&path, &snap).map_err(|e| StoreError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })?;
        snap
    } else {
        path
    };
    let len = std::fs::metadata(&source).map_err(io_error(&source))?.len();
    let (hash, inline) = if len <= INLINE_MAX_BYTES {
        let bytes = match std::fs::read(&source) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&source)(e)),
        };
        (hash_bytes(&bytes), Some(bytes))
    } else {
        let file = std::fs::File::open(&source).map_err(io_error(&source))?;
        (hash_reader(file).map_err(io_error(&source))?, None)
    };
    Ok(Some(ForPush { stat, read_at, hash, inline, source, len }))
}

impl Mirror {
    pub(crate) fn new(scope: FileScope) -> Self {
        Self { scope, known: Default::default(), busy: Default::default() }
    }

    /// Whether a push or pull is under way.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy.try_lock().is_err()
    }

    /// Forgets a session (deleted, or no longer loaded here).
    pub(crate) fn forget(&self, id: &str) {
        lock(&self.known).remove(id);
    }

    /// Whether the session persisted events since the last push (`events`: its count now).
    pub(crate) fn stale(&self, id: &str, events: usize) -> bool {
        lock(&self.known).get(id).is_none_or(|k| k.events != events)
    }

    /// The persisted event count recorded at the session's last push (0: none yet).
    pub(crate) fn pushed_events(&self, id: &str) -> usize {
        lock(&self.known).get(id).map_or(0, |k| k.events)
    }

    /// Sends what changed in `dir` since the last push.
    pub(crate) async fn push(&self, pg: &PgEvents, id: &str, dir: &Path, events: usize) -> Result<(), StoreError> {
        let _one = self.busy.lock().await;
        let scope = self.scope;
        let scan_dir = dir.to_path_buf();
        let scanned = tokio::task::spawn_blocking(move || scan(&scan_dir, scope)).await.unwrap_or_default();
        let mut known = lock(&self.known).get(id).cloned().unwrap_or_default();
        let capped = scanned.truncated || !scanned.too_large.is_empty();
        if capped && !known.capped {
            tracing::warn!(
                key = %id,
                too_large = scanned.too_large.len(),
                first_too_large = scanned.too_large.first().map(String::as_str).unwrap_or(""),
                max_bytes = WORKSPACE_MAX_FILE_BYTES,
                truncated = scanned.truncated,
                max_files = WORKSPACE_MAX_FILES,
                "some workspace files stay on this node"
            );
        }
        known.capped = capped;
        let found = scanned.found;
        for (path, stat) in &found {
            if known.files.get(path).is_some_and(|s| s.unchanged(stat)) {
                continue;
            }
            let (read_dir, rel, db) = (dir.to_path_buf(), path.clone(), is_db(scope, path));
            let read = tokio::task::spawn_blocking(move || read_for_push(&read_dir, &rel, db))
                .await
                .map_err(|e| StoreError::Io { path: path.clone(), source: std::io::Error::other(e) })??;
            let Some(read) = read else { continue };
            let mut version = known.files.get(path).map_or(0, |s| s.version);
            if known.files.get(path).map(|s| s.hash) != Some(read.hash) {
                let sent = match &read.inline {
                    Some(bytes) => pg.put_file(scope, id, path, Some(bytes)).await,
                    None => {
                        tracing::debug!(key = %id, path = %path, bytes = read.len, "sharing a large file in pieces");
                        let mut file = tokio::fs::File::open(&read.source).await.map_err(io_error(&read.source))?;
                        pg.put_file_chunked(scope, id, path, &mut file).await
                    }
                };
                if db {
                    let _ = tokio::fs::remove_file(&read.source).await;
                }
                version = sent?;
            } else if db {
                let _ = tokio::fs::remove_file(&read.source).await;
            }
            known.files.insert(path.clone(), Seen::new(read.hash, read.stat, read.read_at, version));
        }
        let removed: Vec<String> = if scanned.truncated {
            Vec::new()
        } else {
            let kept: std::collections::HashSet<&String> = scanned.too_large.iter().collect();
            known.files.keys().filter(|p| !found.contains_key(*p) && !kept.contains(p)).cloned().collect()
        };
        for path in removed {
            pg.put_file(scope, id, &path, None).await?;
            known.files.remove(&path);
        }
        known.events = events;
        lock(&self.known).insert(id.to_string(), known);
        Ok(())
    }

    /// Writes out what the database holds for the session (or workspace) that this node has
    /// not seen yet.
    pub(crate) async fn pull(&self, pg: &PgEvents, id: &str, dir: &Path) -> Result<(), StoreError> {
        let _one = self.busy.lock().await;
        let scope = self.scope;
        let mut known = lock(&self.known).get(id).cloned().unwrap_or_default();
        let changed = pg.files_after(scope, id, known.version).await?;
        if changed.is_empty() {
            return Ok(());
        }
        for file in changed {
            known.version = known.version.max(file.version);
            let seen = known.files.get(&file.path);
            if seen.is_some_and(|s| s.version >= file.version) || skipped(scope, &file.path) {
                continue; // this node's own push (or a name this scope never shares)
            }
            let Some(target) = inside(dir, &file.path) else {
                tracing::warn!(key = %id, path = %file.path, "refusing a shared file path that leaves its directory");
                continue;
            };
            let here = std::fs::symlink_metadata(&target).ok();
            if let (Some(seen), Some(meta)) = (seen, &here) {
                if seen.stat != Stat::of(meta) {
                    // Changed here since this node pushed or wrote it: its push comes next and wins.
                    continue;
                }
            }
            if file.removed() {
                if here.as_ref().is_some_and(|m| m.is_file()) {
                    match std::fs::remove_file(&target) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(&target)(e)),
                        _ => {}
                    }
                }
                known.files.remove(&file.path);
                continue;
            }
            if here.as_ref().is_some_and(|m| !m.is_file()) {
                tracing::warn!(key = %id, path = %file.path, "a shared file's place is taken by a directory here");
                continue;
            }
            let read_at = SystemTime::now();
            let same = match (&file.content, &here) {
                (Some(bytes), Some(meta)) if meta.len() == bytes.len() as u64 => {
                    std::fs::read(&target).is_ok_and(|local| local == *bytes)
                }
                _ => false,
            };
            let (hash, stat) = match (same, &here, &file.content) {
                (true, Some(meta), Some(bytes)) => (hash_bytes(bytes), Stat::of(meta)),
                _ => write_out(pg, scope, id, &file, &target).await?,
            };
            known.files.insert(file.path.clone(), Seen::new(hash, stat, read_at, file.version));
        }
        lock(&self.known).insert(id.to_string(), known);
        Ok(())
    }
}

/// Writes one shared file to `target` whole or not at all: into a side file first, then renamed
/// into place (`session.db`: restored into the database already there). Returns the content's
/// hash and the written file's stat.
async fn write_out(
    pg: &PgEvents,
    scope: FileScope,
    id: &str,
    file: &SharedFile,
    target: &Path,
) -> Result<(u64, Stat), StoreError> {
    if let Some(parent) = target.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(io_error(parent))?;
    }
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let side = target.with_file_name(format!("{name}{PULLING}"));
    match &file.content {
        Some(bytes) => tokio::fs::write(&side, bytes).await.map_err(io_error(&side))?,
        None => {
            let mut out = tokio::fs::File::create(&side).await.map_err(io_error(&side))?;
            pg.copy_file_chunks(scope, id, &file.path, &mut out).await?;
            out.sync_all().await.map_err(io_error(&side))?;
        }
    }
    let (side_c, target_c, is_db) = (side.clone(), target.to_path_buf(), is_db(scope, &file.path));
    let placed = tokio::task::spawn_blocking(move || -> Result<(u64, Stat), StoreError> {
        let hash = hash_reader(std::fs::File::open(&side_c).map_err(io_error(&side_c))?).map_err(io_error(&side_c))?;
        if is_db && target_c.exists() {
            let restored = store::session_db::restore(&target_c, &side_c);
            let _ = std::fs::remove_file(&side_c);
            restored.map_err(|e| StoreError::Io {
                path: target_c.display().to_string(),
                source: std::io::Error::other(e.to_string()),
            })?;
        } else {
            std::fs::rename(&side_c, &target_c).map_err(io_error(&target_c))?;
        }
        let stat = Stat::of(&std::fs::metadata(&target_c).map_err(io_error(&target_c))?);
        Ok((hash, stat))
    })
    .await
    .map_err(|e| StoreError::Io { path: side.display().to_string(), source: std::io::Error::other(e) })?;
    if placed.is_err() {
        let _ = tokio::fs::remove_file(&side).await;
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_metadata_and_side_files_stay_local_and_paths_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("events.jsonl"), "{}\n").unwrap();
        std::fs::write(dir.path().join("workspace.yaml"), "id: x\n").unwrap();
        std::fs::write(dir.path().join("session.db"), "x").unwrap();
        std::fs::write(dir.path().join("session.db-journal"), "x").unwrap();
        std::fs::write(dir.path().join(DB_SNAPSHOT), "x").unwrap();
        std::fs::write(dir.path().join("plan.md"), "# Plan").unwrap();
        std::fs::write(dir.path().join(format!("plan.md{PULLING}")), "# Pl").unwrap();
        std::fs::create_dir_all(dir.path().join("files/notes")).unwrap();
        std::fs::write(dir.path().join("files/notes/a.txt"), "a").unwrap();
        let mut found: Vec<String> = scan(dir.path(), FileScope::Session).found.into_keys().collect();
        found.sort();
        assert_eq!(found, ["files/notes/a.txt", "plan.md", "session.db"]);
        // A workspace shares every regular file but half-written pulls.
        let mut all: Vec<String> = scan(dir.path(), FileScope::Workspace).found.into_keys().collect();
        all.sort();
        assert_eq!(all.len(), 7, "{all:?}");
        assert!(inside(dir.path(), "../escape").is_none());
        assert!(inside(dir.path(), "/etc/passwd").is_none());
        assert_eq!(inside(dir.path(), "files/a").unwrap(), dir.path().join("files/a"));
    }

    #[test]
    fn a_file_read_just_after_it_changed_is_read_again_and_an_old_one_is_trusted_by_its_stat() {
        let now = SystemTime::now();
        let stat = Stat { len: 3, modified: Some(now) };
        assert!(!Seen::new(1, stat, now, 0).unchanged(&stat), "modified as it was read");
        let old = Stat { len: 3, modified: Some(now - Duration::from_secs(5)) };
        assert!(Seen::new(1, old, now, 0).unchanged(&old));
        assert!(!Seen::new(1, old, now, 0).unchanged(&Stat { len: 4, ..old }));
        // Hashing in pieces agrees with hashing the whole.
        assert_eq!(hash_reader(&b"abcdef"[..]).unwrap(), hash_bytes(b"abcdef"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_neither_shared_nor_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a.txt"), dir.path().join("link.txt")).unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let found: Vec<String> = scan(dir.path(), FileScope::Workspace).found.into_keys().collect();
        assert_eq!(found, ["a.txt"]);
        assert!(inside(dir.path(), "out/secret").is_none(), "a linked directory on the way");
        assert!(inside(dir.path(), "link.txt").is_none(), "the file itself a link");
        assert_eq!(inside(dir.path(), "new/dir/b.txt").unwrap(), dir.path().join("new/dir/b.txt"));
    }

    #[test]
    fn a_workspace_over_the_caps_keeps_the_rest_local() {
        let dir = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(dir.path().join("big.bin")).unwrap();
        big.set_len(WORKSPACE_MAX_FILE_BYTES + 1).unwrap();
        std::fs::write(dir.path().join("small.txt"), "s").unwrap();
        let scanned = scan(dir.path(), FileScope::Workspace);
        assert_eq!(scanned.too_large, ["big.bin"]);
        assert!(scanned.found.contains_key("small.txt") && !scanned.truncated);
    }
}
