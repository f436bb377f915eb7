//! The team server's audit log: one JSON line per security-relevant act (a connection made or
//! refused, a session created, resumed, forked or deleted, a message sent, a tool call and its
//! outcome, a permission decision, a sandbox denial, a limit reached, the configuration
//! reloaded), with the tenant, the user, the session and the time. Never a token, a secret, a
//! message's text, a tool's arguments or output.
//!
//! Lines go through a bounded queue to a thread of their own, so that a slow disk never holds
//! up a request; a line that finds the queue full is dropped and counted. A file is rotated by
//! size (`audit.jsonl` → `audit.jsonl.1` … `.N`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};

use serde_json::{Map, Value};

use crate::tenancy::Principal;

/// Lines waiting for the writer at most.
const QUEUE: usize = 4096;

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    Stderr,
    /// A file, rotated past `max_bytes`, keeping `keep` older files.
    File {
        path: PathBuf,
        max_bytes: u64,
        keep: u32,
    },
}

#[derive(Default)]
pub struct Audit {
    tx: Option<SyncSender<String>>,
    dropped: AtomicU64,
}

impl Audit {
    /// Starts the writer. A file that cannot be opened is an error at start, not a lost log.
    pub fn start(target: AuditTarget) -> std::io::Result<Self> {
        let mut sink = Sink::open(target)?;
        let (tx, rx) = sync_channel::<String>(QUEUE);
        std::thread::Builder::new().name("audit".into()).spawn(move || {
            for line in rx {
                if let Err(e) = sink.write(&line) {
                    tracing::error!(error = %e, "audit log: a line could not be written");
                }
            }
        })?;
        Ok(Self { tx: Some(tx), dropped: AtomicU64::new(0) })
    }

    /// Records `act` by `who` (on `session`), with `detail`'s fields.
    pub fn record(&self, act: &str, who: Option<&Principal>, session: Option<&str>, detail: Value) {
        let who = who.map(|p| (p.tenant.name.as_str(), p.user_name()));
        self.record_as(act, who, session, detail);
    }

    /// [`Audit::record`] for a tenant and user known by name (`who`: tenant, user): what a
    /// session's work did, on behalf of the user who created it.
    pub fn record_as(&self, act: &str, who: Option<(&str, Option<&str>)>, session: Option<&str>, detail: Value) {
        let Some(tx) = &self.tx else { return };
        let mut line = Map::new();
        line.insert("time".into(), chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true).into());
        line.insert("act".into(), act.into());
        if let Some((tenant, user)) = who {
            line.insert("tenant".into(), tenant.into());
            line.insert("user".into(), user.into());
        }
        if let Some(session) = session {
            line.insert("session".into(), session.into());
        }
        if let Value::Object(detail) = detail {
            line.extend(detail);
        }
        match tx.try_send(Value::Object(line).to_string()) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!("audit log: the writer falls behind; lines are dropped (counted)");
                }
            }
        }
    }

    /// Lines dropped since start because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

enum Sink {
    Stderr,
    File { path: PathBuf, file: std::fs::File, size: u64, max_bytes: u64, keep: u32 },
}

impl Sink {
    fn open(target: AuditTarget) -> std::io::Result<Self> {
        match target {
            AuditTarget::Stderr => Ok(Self::Stderr),
            AuditTarget::File { path, max_bytes, keep } => {
                let file = open_append(&path)?;
                let size = file.metadata()?.len();
                Ok(Self::File { path, file, size, max_bytes, keep })
            }
        }
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        match self {
            Self::Stderr => writeln!(std::io::stderr().lock(), "{line}"),
            Self::File { path, file, size, max_bytes, keep } => {
                let len = line.len() as u64 + 1;
                if *size > 0 && *size + len > *max_bytes {
                    rotate(path, *keep)?;
                    *file = open_append(path)?;
                    *size = 0;
                }
                writeln!(file, "{line}")?;
                *size += len;
                Ok(())
            }
        }
    }
}

/// Readable by the server's user alone: the lines name tenants, users and sessions.
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

/// `path` → `path.1`, `path.1` → `path.2` … the oldest beyond `keep` removed.
fn rotate(path: &Path, keep: u32) -> std::io::Result<()> {
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        match std::fs::rename(numbered(n), numbered(n + 1)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    std::fs::rename(path, numbered(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn a_file_is_rotated_by_size_and_keeps_its_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut sink = Sink::open(AuditTarget::File { path: path.clone(), max_bytes: 100, keep: 2 }).unwrap();
        for n in 0..12 {
            sink.write(&serde_json::json!({"act": "x", "n": n}).to_string()).unwrap();
        }
        let (now, one, two) =
            (lines(&path), lines(&dir.path().join("audit.jsonl.1")), lines(&dir.path().join("audit.jsonl.2")));
        assert!(!dir.path().join("audit.jsonl.3").exists(), "only `keep` older files");
        let n = |v: &Vec<Value>| v.iter().map(|l| l["n"].as_u64().unwrap()).collect::<Vec<_>>();
        let all: Vec<u64> = [n(&two), n(&one), n(&now)].concat();
        assert_eq!(all.last(), Some(&11), "the newest line is in the current file");
        assert!(all.windows(2).all(|w| w[1] == w[0] + 1), "oldest to newest, nothing lost in between: {all:?}");
        assert!(std::fs::metadata(&path).unwrap().len() <= 100);
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn off_records_nothing_and_a_line_has_its_fields() {
        Audit::default().record("connect", None, None, serde_json::json!({}));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::start(AuditTarget::File { path: path.clone(), max_bytes: 1 << 20, keep: 1 }).unwrap();
        audit.record("session.create", None, Some("alpha.s1"), serde_json::json!({"transport": "tcp"}));
        drop(audit); // closes the queue; the writer drains it
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while lines(&path).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let line = &lines(&path)[0];
        assert_eq!((line["act"].as_str(), line["session"].as_str()), (Some("session.create"), Some("alpha.s1")));
        assert_eq!(line["transport"], "tcp");
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
    }
}
