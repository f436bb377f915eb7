//! `events.jsonl`: the durable truth of a session (persistence.md §2).
//!
//! One compact JSON event per `\n`-terminated line, append-only. Each line goes to the kernel
//! in a single `write_all`, so a crash can tear at most the last line. A write that fails (a
//! full disk) is cut back to where the last whole line ended before anything else is appended,
//! and a torn line a crash left is cut off when the log is next opened: the file only ever
//! holds whole events, and nothing follows a partial one. Readers still skip a line that does
//! not parse instead of failing. Plain `std::fs`: writes are small and a blocking `write` is
//! cheaper than a hop to the blocking pool.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use protocol::event::Event;

use crate::error::{io_err, StoreError};
use crate::layout::private_file_options;

/// An open append handle on one session's `events.jsonl`.
#[derive(Debug)]
pub struct EventLog {
    file: File,
    path: PathBuf,
    /// Where the last whole line ends. A failed append is cut back to here.
    end: u64,
    /// A failed append could not be cut back yet: the file may end in a partial line past
    /// `end`, and nothing may be appended until it is.
    dirty: bool,
}

/// Everything [`EventLog::load`] read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedLog {
    /// Parsed events in file order.
    pub events: Vec<Event>,
    /// `events.len()`, kept for `session.resume {eventCount}`.
    pub count: usize,
    /// File size when read, for `session.resume {eventsFileSizeBytes}`.
    pub size_bytes: u64,
    /// Lines that did not parse (torn by a crash, or corrupt).
    pub skipped: usize,
}

impl EventLog {
    /// Opens (creating, mode 0600) the log for appending. A last line without its `\n` (a
    /// crash mid-write) is cut off when it does not parse (its event was never delivered:
    /// delivery follows the write), or terminated when it is a whole event.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let file = private_file_options().read(true).append(true).open(&path).map_err(io_err(&path))?;
        let end = file.metadata().map_err(io_err(&path))?.len();
        let mut log = Self { file, path, end, dirty: false };
        log.repair_tail()?;
        Ok(log)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as a single line. The `ephemeral` key is never written: an
    /// ephemeral event reaching here is a caller bug, logged and persisted without the flag.
    pub fn append(&mut self, event: &Event) -> Result<(), StoreError> {
        let event: Cow<'_, Event> = if event.ephemeral {
            tracing::warn!(kind = %event.kind(), id = %event.id, "ephemeral event appended to log");
            let mut owned = event.clone();
            owned.ephemeral = false;
            Cow::Owned(owned)
        } else {
            Cow::Borrowed(event)
        };
        self.append_json(&serde_json::to_vec(event.as_ref())?)
    }

    /// Appends one persisted event already serialized (one line of compact JSON, without
    /// `ephemeral`), so the emitter serializes each event once for the log and its clients.
    pub fn append_json(&mut self, json: &[u8]) -> Result<(), StoreError> {
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json);
        line.push(b'\n');

        if self.dirty {
            self.cut_back()?;
        }
        match self.file.write_all(&line) {
            Ok(()) => {
                self.end += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Part of the line may be on disk: take it back now (a truncation needs no free
                // space), or before the next append if even that fails.
                self.dirty = true;
                if let Err(cut) = self.cut_back() {
                    tracing::warn!(path = %self.path.display(), error = %cut, "cannot cut a failed append back yet");
                }
                Err(io_err(&self.path)(e))
            }
        }
    }

    /// Cuts the file back to the end of its last whole line.
    fn cut_back(&mut self) -> Result<(), StoreError> {
        self.file.set_len(self.end).map_err(io_err(&self.path))?;
        self.dirty = false;
        Ok(())
    }

    /// Forces appended events to stable storage (survives power loss, not just `kill -9`).
    pub fn sync(&self) -> Result<(), StoreError> {
        self.file.sync_data().map_err(io_err(&self.path))
    }

    /// Reads the whole log. A missing file is `NotFound` (named by the session directory,
    /// which is the session id). Unparsable lines are skipped with a warning.
    pub fn load(path: impl AsRef<Path>) -> Result<LoadedLog, StoreError> {
        let path = path.as_ref();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(session_name(path)));
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        Ok(parse_log(&bytes, &path.display().to_string()))
    }

    /// Cuts the log just before the event `event_id`: it and every later event are removed.
    /// Returns the events that remain and how many went, or `None` when no event has that id
    /// (the log is then untouched). Appends continue at the new end.
    pub fn truncate_before(&mut self, event_id: &str) -> Result<Option<(Vec<Event>, usize)>, StoreError> {
        let bytes = std::fs::read(&self.path).map_err(io_err(&self.path))?;
        let mut kept = Vec::new();
        let mut offset = 0usize;
        let mut cut: Option<usize> = None;
        let mut removed = 0usize;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let start = offset;
            offset += line.len();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(event) = serde_json::from_slice::<Event>(line) else { continue };
            if cut.is_none() && event.id == event_id {
                cut = Some(start);
            }
            if cut.is_some() {
                removed += 1;
            } else {
                kept.push(event);
            }
        }
        let Some(at) = cut else { return Ok(None) };
        self.file.set_len(at as u64).map_err(io_err(&self.path))?;
        self.end = at as u64;
        self.dirty = false;
        self.file.sync_data().map_err(io_err(&self.path))?;
        Ok(Some((kept, removed)))
    }

    /// Makes sure the file is empty or ends with `\n`: a torn last line is cut off, a whole
    /// event missing only its `\n` gets one.
    fn repair_tail(&mut self) -> Result<(), StoreError> {
        if self.end == 0 {
            return Ok(());
        }
        let mut last = [0u8; 1];
        self.file
            .seek(SeekFrom::Start(self.end - 1))
            .and_then(|_| self.file.read_exact(&mut last))
            .map_err(io_err(&self.path))?;
        if last[0] == b'\n' {
            return Ok(());
        }
        // Rare (only after a crash): reading the whole file to find the line is fine.
        let bytes = std::fs::read(&self.path).map_err(io_err(&self.path))?;
        let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
        if serde_json::from_slice::<Event>(&bytes[start..]).is_ok() {
            // Append mode: this lands at the end whatever the read position is.
            self.file.write_all(b"\n").map_err(io_err(&self.path))?;
            self.end += 1;
        } else {
            tracing::warn!(path = %self.path.display(), bytes = bytes.len() - start, "cutting off the torn last line of the event log");
            self.end = start as u64;
            self.cut_back()?;
        }
        Ok(())
    }
}

/// `session-state/<id>/events.jsonl` → `<id>`; otherwise the path itself.
fn session_name(path: &Path) -> String {
    path.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Parses a log's bytes (from a file or a sessionFs provider); unparsable lines are skipped
/// with a warning naming `path`.
pub(crate) fn parse_log(bytes: &[u8], path: &str) -> LoadedLog {
    let mut loaded = LoadedLog { size_bytes: bytes.len() as u64, ..Default::default() };
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => loaded.events.push(event),
            Err(e) => {
                loaded.skipped += 1;
                tracing::warn!(path = %path, line = n + 1, error = %e,
                    "skipping unparsable line in event log");
            }
        }
    }
    loaded.count = loaded.events.len();
    loaded
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, n: u32) -> Event {
        Event::from_parts(kind, json!({ "n": n, "content": format!("msg {n}") }), false)
    }

    #[test]
    fn append_then_load_round_trips_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s1").join("events.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let written: Vec<Event> = (0..5).map(|n| event("user.message", n)).collect();
        let mut log = EventLog::open(&path).unwrap();
        for e in &written {
            log.append(e).unwrap();
        }
        let loaded = EventLog::load(&path).unwrap();
        assert_eq!(loaded.events, written);
        assert_eq!(loaded.count, 5);
        assert_eq!(loaded.skipped, 0);
        assert_eq!(loaded.size_bytes, std::fs::metadata(&path).unwrap().len());

        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(text.ends_with('\n'));
        assert!(text.starts_with(r#"{"type":"user.message","data":{"#));
        let first = text.lines().next().unwrap();
        let keys: Vec<_> = ["\"type\"", "\"data\"", "\"id\"", "\"timestamp\"", "\"parentId\""]
            .iter()
            .map(|k| first.rfind(k).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order: {first}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn truncation_cuts_at_an_event_and_appends_continue_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let written: Vec<Event> = (0..5).map(|n| event("user.message", n)).collect();
        let mut log = EventLog::open(&path).unwrap();
        for e in &written {
            log.append(e).unwrap();
        }
        assert!(log.truncate_before("no-such-id").unwrap().is_none());
        assert_eq!(EventLog::load(&path).unwrap().count, 5, "an unknown id changes nothing");

        let (kept, removed) = log.truncate_before(&written[2].id).unwrap().unwrap();
        assert_eq!((kept.as_slice(), removed), (&written[..2], 3));
        let next = event("user.message", 9);
        log.append(&next).unwrap();
        let loaded = EventLog::load(&path).unwrap();
        assert_eq!(loaded.events, vec![written[0].clone(), written[1].clone(), next]);
        assert_eq!(loaded.skipped, 0);
    }

    #[test]
    fn a_torn_last_line_is_cut_off_when_the_log_is_opened_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).unwrap();
        log.append(&event("user.message", 1)).unwrap();
        drop(log);
        // Simulate a crash mid-write.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"assistant.message","data":{"cont"#).unwrap();
        drop(f);

        let loaded = EventLog::load(&path).unwrap();
        assert_eq!((loaded.count, loaded.skipped), (1, 1), "a reader skips it");

        let mut log = EventLog::open(&path).unwrap();
        let next = event("assistant.message", 2);
        log.append(&next).unwrap();
        let loaded = EventLog::load(&path).unwrap();
        assert_eq!((loaded.count, loaded.skipped), (2, 0));
        assert_eq!(loaded.events[1], next);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(!text.contains("cont\""), "the torn line is gone: {text}");
    }

    #[test]
    fn a_whole_last_event_missing_its_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let first = event("user.message", 1);
        std::fs::write(&path, serde_json::to_vec(&first).unwrap()).unwrap();
        let mut log = EventLog::open(&path).unwrap();
        let next = event("assistant.message", 2);
        log.append(&next).unwrap();
        let loaded = EventLog::load(&path).unwrap();
        assert_eq!(loaded.events, vec![first, next]);
        assert_eq!(loaded.skipped, 0);
    }

    #[test]
    fn a_failed_append_is_taken_back_before_anything_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).unwrap();
        let first = event("user.message", 1);
        log.append(&first).unwrap();
        // What a short write on a full disk leaves when even the truncation failed: part of a
        // line past the last whole one.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"assistant.message","da"#).unwrap();
        drop(f);
        log.dirty = true;

        let next = event("assistant.message", 2);
        log.append(&next).unwrap();
        let loaded = EventLog::load(&path).unwrap();
        assert_eq!(loaded.events, vec![first, next]);
        assert_eq!(loaded.skipped, 0, "no partial line between whole ones");
        assert_eq!(loaded.size_bytes, log.end);
    }

    #[test]
    fn ephemeral_key_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).unwrap();
        log.append(&event("user.message", 1)).unwrap();
        log.append(&Event::from_parts("session.idle", json!({}), true)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("ephemeral"));
        assert_eq!(EventLog::load(&path).unwrap().count, 2);
    }

    #[test]
    fn missing_log_is_not_found_by_session_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc").join("events.jsonl");
        match EventLog::load(&path) {
            Err(StoreError::NotFound(id)) => assert_eq!(id, "abc"),
            other => panic!("expected NotFound, got {other:?}"),
        }
    }
}
