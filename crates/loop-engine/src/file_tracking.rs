//! File-change tracking for rewinds (`enableFileChangeTracking`): each root user message in
//! the log is a rewind point, and before a file tool first writes a file after that point, the
//! file's content as it was (or its absence) is kept. Rewinding to a point puts back, for every
//! file the later turns wrote, what it held before the earliest of them, and the conversation
//! is truncated at the point (`session.history.rewind`).
//!
//! The points themselves are the log's user messages (as the original lists them), so they
//! survive a resume; the kept contents are written under the session directory (`rewind/`)
//! as they are taken, and read back when a resumed session enables tracking again.
//!
//! A component with its own short lock beside the actor: the dispatch records before a tool
//! runs, the `session.history.*` handlers read and restore.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use protocol::event::{Event, SessionEvent};
use protocol::generated::types as t;
use serde::{Deserialize, Serialize};

/// The built-in tools whose `path` argument names a file they write.
pub const WRITING_TOOLS: &[&str] = &["create", "edit"];

const INDEX: &str = "index.jsonl";

/// A root user message of the log: a point the conversation can be rewound to.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub event_id: String,
    pub user_message: String,
    pub timestamp: String,
    pub is_autopilot_continuation: bool,
}

/// The rewind points of a log, oldest first: user messages of the main agent that no system
/// part of the runtime sent (those carry a `source`).
pub fn turns(events: &[Event]) -> Vec<Turn> {
    events
        .iter()
        .filter(|e| e.agent_id.is_none())
        .filter_map(|e| match &e.payload {
            SessionEvent::UserMessage(d) if d.source.is_none() => Some(Turn {
                event_id: e.id.clone(),
                user_message: d.content.clone(),
                timestamp: e.timestamp.clone(),
                is_autopilot_continuation: d.is_autopilot_continuation == Some(true)
                    || (d.agent_mode == Some(t::UserMessageAgentMode::Autopilot) && d.content.trim().is_empty()),
            }),
            _ => None,
        })
        .collect()
}

/// One line of `rewind/index.jsonl`: a file's content before the turns of `point` wrote it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    point: String,
    path: PathBuf,
    /// File under `rewind/` holding the content; `None`: the file did not exist.
    blob: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    enabled: bool,
    /// Where kept contents go (`<session dir>/rewind`); `None` keeps them in memory only.
    dir: Option<PathBuf>,
    /// The user message later writes belong to.
    current: Option<String>,
    /// Per point (by event id), each file written after it, as it was before.
    before: BTreeMap<String, BTreeMap<PathBuf, Option<Vec<u8>>>>,
    blobs: usize,
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

    /// Turns tracking on, keeping what is taken under `dir` (`None`: in memory only); a
    /// resumed session reads back what it kept there before.
    pub fn enable(&self, dir: Option<PathBuf>) {
        let mut s = self.lock();
        if s.enabled {
            return;
        }
        s.enabled = true;
        s.dir = dir;
        if let Some(dir) = s.dir.clone() {
            read_back(&mut s, &dir);
        }
    }

    pub fn enabled(&self) -> bool {
        self.lock().enabled
    }

    /// A user message was recorded as `event_id`: later writes belong to it.
    pub fn begin_point(&self, event_id: String) {
        let mut s = self.lock();
        if s.enabled {
            s.current = Some(event_id);
        }
    }

    /// A tool is about to write `path`: keep what it holds now, unless the current point
    /// already has it.
    /// `files`: where the session's file tools reach (beneath its tenant's workspace on a shared
    /// server), read the same way.
    pub fn before_write(&self, path: &Path, files: &tools::Files) {
        let mut s = self.lock();
        if !s.enabled {
            return;
        }
        let Some(point) = s.current.clone() else { return };
        if s.before.get(&point).is_some_and(|files| files.contains_key(path)) {
            return;
        }
        // Small synchronous read: the tool that follows reads the same file anyway.
        let content = files.read(path).ok();
        if let Some(dir) = s.dir.clone() {
            let blob = content.as_ref().map(|_| format!("{}.blob", s.blobs));
            let entry = Entry { point: point.clone(), path: path.to_path_buf(), blob };
            if let Err(e) = keep(&dir, &entry, content.as_deref()) {
                tracing::warn!(dir = %dir.display(), error = %e, "keeping a file for rewinds failed");
            }
            s.blobs += 1;
        }
        s.before.entry(point).or_default().insert(path.to_path_buf(), content);
    }

    /// The rewind points of `turns` (the log's, oldest first), newest first.
    pub fn points(&self, turns: &[Turn], files: &tools::Files) -> Vec<t::HistoryRewindPoint> {
        let s = self.lock();
        (0..turns.len())
            .rev()
            .map(|i| {
                let turn = &turns[i];
                let changes = changes_from(&s, &turns[i..], files);
                t::HistoryRewindPoint {
                    event_id: turn.event_id.clone(),
                    user_message: turn.user_message.clone(),
                    timestamp: turn.timestamp.clone(),
                    can_restore_files: s.enabled,
                    file_count: changes.len() as u64,
                    turn_changed_files: s.before.get(&turn.event_id).is_some_and(|f| !f.is_empty()),
                    lines_added: changes.iter().map(|c| c.lines_added).sum(),
                    lines_removed: changes.iter().map(|c| c.lines_removed).sum(),
                    is_autopilot_continuation: turn.is_autopilot_continuation,
                }
            })
            .collect()
    }

    /// What rewinding to `event_id` would put back; `None` when it is none of `turns`.
    pub fn changes_since(&self, event_id: &str, turns: &[Turn], files: &tools::Files) -> Option<Vec<FileChange>> {
        let at = turns.iter().position(|t| t.event_id == event_id)?;
        Some(changes_from(&self.lock(), &turns[at..], files))
    }

    /// Forgets what was kept for points no longer in the log (`turns`: what is left of it).
    pub fn retain(&self, turns: &[Turn]) {
        let mut s = self.lock();
        s.before.retain(|point, _| turns.iter().any(|t| &t.event_id == point));
        if s.current.as_ref().is_some_and(|c| !turns.iter().any(|t| &t.event_id == c)) {
            s.current = None;
        }
        if let Some(dir) = s.dir.clone() {
            if let Err(e) = rewrite(&mut s, &dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "rewriting the rewind index failed");
            }
        }
    }
}

/// Appends one kept content to the session's rewind directory.
fn keep(dir: &Path, entry: &Entry, content: Option<&[u8]>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if let (Some(blob), Some(bytes)) = (&entry.blob, content) {
        std::fs::write(dir.join(blob), bytes)?;
    }
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    std::fs::OpenOptions::new().create(true).append(true).open(dir.join(INDEX))?.write_all(&line)
}

/// Reads back what an earlier run of the session kept. Unreadable lines are skipped: a rewind
/// then misses that file, which is no worse than having no tracking for it.
fn read_back(s: &mut State, dir: &Path) {
    let Ok(text) = std::fs::read_to_string(dir.join(INDEX)) else { return };
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Entry>(line) else { continue };
        let content = match &entry.blob {
            Some(blob) => match std::fs::read(dir.join(blob)) {
                Ok(bytes) => Some(bytes),
                Err(_) => continue,
            },
            None => None,
        };
        s.blobs += 1;
        s.before.entry(entry.point).or_default().entry(entry.path).or_insert(content);
    }
}

/// Writes the index again with only what is still kept, and removes the rest.
fn rewrite(s: &mut State, dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    std::fs::remove_dir_all(dir)?;
    s.blobs = 0;
    let kept: Vec<(String, PathBuf, Option<Vec<u8>>)> = s
        .before
        .iter()
        .flat_map(|(point, files)| files.iter().map(move |(path, c)| (point.clone(), path.clone(), c.clone())))
        .collect();
    for (point, path, content) in kept {
        let blob = content.as_ref().map(|_| format!("{}.blob", s.blobs));
        keep(dir, &Entry { point, path, blob }, content.as_deref())?;
        s.blobs += 1;
    }
    Ok(())
}

/// Every file the turns from the first of `turns` on wrote, with its content before the
/// first of them.
fn changes_from(s: &State, turns: &[Turn], files: &tools::Files) -> Vec<FileChange> {
    let mut first: BTreeMap<&Path, &Option<Vec<u8>>> = BTreeMap::new();
    for turn in turns {
        for (path, before) in s.before.get(&turn.event_id).into_iter().flatten() {
            first.entry(path.as_path()).or_insert(before);
        }
    }
    first.into_iter().filter_map(|(path, before)| change_of(path, before.clone(), files)).collect()
}

/// How `path` differs now from `before`; `None` when it is unchanged.
fn change_of(path: &Path, before: Option<Vec<u8>>, files: &tools::Files) -> Option<FileChange> {
    let now = files.read(path).ok();
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

/// Puts `changes` back, through `files` (a recorded path is a name: on a shared server it is
/// written only beneath the tenant's workspace, wherever its links point by now). Returns the
/// files restored, or the first failure after undoing what was already put back
/// (`Err(complete)`: whether that undo succeeded).
pub fn restore(changes: &[FileChange], files: &tools::Files) -> Result<Vec<PathBuf>, bool> {
    let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for c in changes {
        let current = files.read(&c.path).ok();
        if put(&c.path, c.before.as_deref(), files).is_err() {
            let undone = done.iter().rev().all(|(path, was)| put(path, was.as_deref(), files).is_ok());
            return Err(undone);
        }
        done.push((c.path.clone(), current));
    }
    Ok(done.into_iter().map(|(p, _)| p).collect())
}

fn put(path: &Path, content: Option<&[u8]>, files: &tools::Files) -> std::io::Result<()> {
    match content {
        Some(bytes) => {
            if let Some(dir) = path.parent() {
                files.create_dir_all(dir)?;
            }
            files.write(path, bytes)
        }
        None => match files.remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, message: &str) -> Turn {
        Turn {
            event_id: id.into(),
            user_message: message.into(),
            timestamp: "t".into(),
            is_autopilot_continuation: false,
        }
    }

    #[test]
    fn a_rewind_puts_back_what_files_held_before_the_point() {
        let dir = tempfile::tempdir().expect("tempdir");
        let created = dir.path().join("new.txt");
        let edited = dir.path().join("old.txt");
        std::fs::write(&edited, "one\ntwo\n").expect("write");
        let tracker = FileTracker::default();
        tracker.enable(None);
        tracker.begin_point("p1".into());
        tracker.before_write(&edited, &tools::Files::default());
        std::fs::write(&edited, "one\nTWO\nthree\n").expect("write");
        tracker.begin_point("p2".into());
        tracker.before_write(&created, &tools::Files::default());
        std::fs::write(&created, "hello\n").expect("write");
        tracker.before_write(&edited, &tools::Files::default());
        std::fs::write(&edited, "changed again\n").expect("write");

        let turns = [turn("p1", "first"), turn("p2", "second")];
        let points = tracker.points(&turns, &tools::Files::default());
        assert_eq!(points.iter().map(|p| p.event_id.as_str()).collect::<Vec<_>>(), ["p2", "p1"]);
        assert_eq!((points[0].file_count, points[1].file_count), (2, 2));

        let changes = tracker.changes_since("p1", &turns, &tools::Files::default()).expect("a point");
        let kinds: Vec<_> = changes.iter().map(|c| c.change).collect();
        assert_eq!(kinds, [t::HistoryRewindChangeType::Created, t::HistoryRewindChangeType::Modified]);
        assert_eq!(restore(&changes, &tools::Files::default()).map(|f| f.len()), Ok(2));
        assert!(!created.exists());
        assert_eq!(std::fs::read_to_string(&edited).expect("read"), "one\ntwo\n");
        tracker.retain(&[]);
        assert!(tracker.points(&[], &tools::Files::default()).is_empty());
        assert!(tracker.changes_since("p1", &[], &tools::Files::default()).is_none());
    }

    #[test]
    fn what_was_kept_is_read_back_by_a_resumed_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kept = dir.path().join("session/rewind");
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "before\n").expect("write");
        let first = FileTracker::default();
        first.enable(Some(kept.clone()));
        first.begin_point("p1".into());
        first.before_write(&file, &tools::Files::default());
        first.before_write(&dir.path().join("absent.txt"), &tools::Files::default());
        std::fs::write(&file, "after\n").expect("write");
        std::fs::write(dir.path().join("absent.txt"), "new\n").expect("write");

        let resumed = FileTracker::default();
        let turns = [turn("p1", "first")];
        assert!(
            resumed.changes_since("p1", &turns, &tools::Files::default()).expect("a point").is_empty(),
            "nothing before enabling"
        );
        resumed.enable(Some(kept.clone()));
        let changes = resumed.changes_since("p1", &turns, &tools::Files::default()).expect("a point");
        assert_eq!(changes.len(), 2);
        assert_eq!(restore(&changes, &tools::Files::default()).map(|f| f.len()), Ok(2));
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "before\n");
        assert!(!dir.path().join("absent.txt").exists());

        resumed.retain(&[]);
        let again = FileTracker::default();
        again.enable(Some(kept));
        assert!(
            again.changes_since("p1", &turns, &tools::Files::default()).expect("a point").is_empty(),
            "a rewound point is forgotten"
        );
    }

    #[test]
    fn nothing_is_kept_unless_tracking_is_enabled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.txt");
        let tracker = FileTracker::default();
        tracker.begin_point("p1".into());
        tracker.before_write(&file, &tools::Files::default());
        std::fs::write(&file, "x").expect("write");
        let turns = [turn("p1", "first")];
        assert!(tracker.changes_since("p1", &turns, &tools::Files::default()).expect("a point").is_empty());
        assert!(!tracker.points(&turns, &tools::Files::default())[0].can_restore_files);
    }
}
