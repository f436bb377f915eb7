//! File-change tracking for rewinds (`enableFileChangeTracking`): each user message is a rewind
//! point, and before a file tool first writes a file after that point, the file's content as it
//! was (or its absence) is kept. Rewinding to a point puts back, for every file the later
//! turns wrote, what it held before the earliest of them, and the conversation is truncated at
//! the point (`session.history.rewind`).
//!
//! A component with its own short lock beside the actor: the dispatch records before a tool
//! runs, the `session.history.*` handlers read and restore. Contents are kept in memory, for
//! the life of the loaded session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use protocol::generated::types as t;

/// The built-in tools whose `path` argument names a file they write.
pub const WRITING_TOOLS: &[&str] = &["create", "edit"];

/// One rewind point: a user message and what its turns changed.
#[derive(Debug, Clone)]
struct Point {
    event_id: String,
    user_message: String,
    timestamp: String,
    /// Each file written after this point (and before the next), as it was before: `None` when
    /// it did not exist.
    before: BTreeMap<PathBuf, Option<Vec<u8>>>,
}

#[derive(Debug, Default)]
struct State {
    enabled: bool,
    points: Vec<Point>,
}

#[derive(Debug, Default)]
pub struct FileTracker {
    state: Mutex<State>,
}

/// One file a rewind would put back, and how the discarded turns changed it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: PathBuf,
    pub change: t::HistoryRewindChangeType,
    pub lines_added: u64,
    pub lines_removed: u64,
    /// What the file held before the discarded turns (`None`: it did not exist).
    before: Option<Vec<u8>>,
}

impl FileTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn enable(&self) {
        self.lock().enabled = true;
    }

    pub fn enabled(&self) -> bool {
        self.lock().enabled
    }

    /// A user message was recorded as `event_id`: later writes belong to it.
    pub fn begin_point(&self, event_id: String, user_message: String, timestamp: String) {
        let mut s = self.lock();
        if s.enabled {
            s.points.push(Point { event_id, user_message, timestamp, before: BTreeMap::new() });
        }
    }

    /// A tool is about to write `path`: keep what it holds now, unless the current point
    /// already has it.
    pub fn before_write(&self, path: &Path) {
        let mut s = self.lock();
        if !s.enabled {
            return;
        }
        let Some(point) = s.points.last_mut() else { return };
        if point.before.contains_key(path) {
            return;
        }
        // Small synchronous read: the tool that follows reads the same file anyway.
        let content = std::fs::read(path).ok();
        point.before.insert(path.to_path_buf(), content);
    }

    /// The rewind points, newest first.
    pub fn points(&self) -> Vec<t::HistoryRewindPoint> {
        let s = self.lock();
        (0..s.points.len())
            .rev()
            .map(|i| {
                let p = &s.points[i];
                let changes = changes_from(&s.points[i..]);
                t::HistoryRewindPoint {
                    event_id: p.event_id.clone(),
                    user_message: p.user_message.clone(),
                    timestamp: p.timestamp.clone(),
                    can_restore_files: true,
                    file_count: changes.len() as u64,
                    turn_changed_files: !p.before.is_empty(),
                    lines_added: changes.iter().map(|c| c.lines_added).sum(),
                    lines_removed: changes.iter().map(|c| c.lines_removed).sum(),
                    is_autopilot_continuation: false,
                }
            })
            .collect()
    }

    /// What rewinding to `event_id` would put back; `None` when it is no rewind point.
    pub fn changes_since(&self, event_id: &str) -> Option<Vec<FileChange>> {
        let s = self.lock();
        let at = s.points.iter().position(|p| p.event_id == event_id)?;
        Some(changes_from(&s.points[at..]))
    }

    /// Forgets the points from `event_id` on (their turns were rewound).
    pub fn drop_from(&self, event_id: &str) {
        let mut s = self.lock();
        if let Some(at) = s.points.iter().position(|p| p.event_id == event_id) {
            s.points.truncate(at);
        }
    }
}

/// Every file the given points' turns wrote, with its content before the first of them.
fn changes_from(points: &[Point]) -> Vec<FileChange> {
    let mut first: BTreeMap<&Path, &Option<Vec<u8>>> = BTreeMap::new();
    for p in points {
        for (path, before) in &p.before {
            first.entry(path.as_path()).or_insert(before);
        }
    }
    first.into_iter().filter_map(|(path, before)| change_of(path, before.clone())).collect()
}

/// How `path` differs now from `before`; `None` when it is unchanged.
fn change_of(path: &Path, before: Option<Vec<u8>>) -> Option<FileChange> {
    let now = std::fs::read(path).ok();
    if now == before {
        return None;
    }
    let old = before.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let new = now.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let (mut added, mut removed) = (0u64, 0u64);
    for op in similar::TextDiff::from_lines(old.as_ref(), new.as_ref()).iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let change = match (&before, &now) {
        (None, _) => t::HistoryRewindChangeType::Created,
        (Some(_), None) => t::HistoryRewindChangeType::Deleted,
        (Some(_), Some(_)) => t::HistoryRewindChangeType::Modified,
    };
    Some(FileChange { path: path.to_path_buf(), change, lines_added: added, lines_removed: removed, before })
}

/// Puts `changes` back. Returns the files restored, or the first failure after undoing what
/// was already put back (`Err(complete)`: whether that undo succeeded).
pub fn restore(changes: &[FileChange]) -> Result<Vec<PathBuf>, bool> {
    let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for c in changes {
        let current = std::fs::read(&c.path).ok();
        if put(&c.path, c.before.as_deref()).is_err() {
            let undone = done.iter().rev().all(|(path, was)| put(path, was.as_deref()).is_ok());
            return Err(undone);
        }
        done.push((c.path.clone(), current));
    }
    Ok(done.into_iter().map(|(p, _)| p).collect())
}

fn put(path: &Path, content: Option<&[u8]>) -> std::io::Result<()> {
    match content {
        Some(bytes) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, bytes)
        }
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewind_puts_back_what_files_held_before_the_point() {
        let dir = tempfile::tempdir().expect("tempdir");
        let created = dir.path().join("new.txt");
        let edited = dir.path().join("old.txt");
        std::fs::write(&edited, "one\ntwo\n").expect("write");
        let tracker = FileTracker::default();
        tracker.enable();
        tracker.begin_point("p1".into(), "first".into(), "t1".into());
        tracker.before_write(&edited);
        std::fs::write(&edited, "one\nTWO\nthree\n").expect("write");
        tracker.begin_point("p2".into(), "second".into(), "t2".into());
        tracker.before_write(&created);
        std::fs::write(&created, "hello\n").expect("write");
        tracker.before_write(&edited);
        std::fs::write(&edited, "changed again\n").expect("write");

        let points = tracker.points();
        assert_eq!(points.iter().map(|p| p.event_id.as_str()).collect::<Vec<_>>(), ["p2", "p1"]);
        assert_eq!((points[0].file_count, points[1].file_count), (2, 2));

        let changes = tracker.changes_since("p1").expect("a point");
        let kinds: Vec<_> = changes.iter().map(|c| c.change).collect();
        assert_eq!(kinds, [t::HistoryRewindChangeType::Created, t::HistoryRewindChangeType::Modified]);
        assert_eq!(restore(&changes).map(|f| f.len()), Ok(2));
        assert!(!created.exists());
        assert_eq!(std::fs::read_to_string(&edited).expect("read"), "one\ntwo\n");
        tracker.drop_from("p1");
        assert!(tracker.points().is_empty());
        assert!(tracker.changes_since("p1").is_none());
    }

    #[test]
    fn nothing_is_kept_unless_tracking_is_enabled() {
        let tracker = FileTracker::default();
        tracker.begin_point("p1".into(), "first".into(), "t1".into());
        assert!(tracker.points().is_empty());
    }
}
