//! A JSON configuration file with one typed owner: read it as `T`, or change it with
//! [`JsonFile::update`], a read-modify-write under a lock for that path, written through a
//! temporary file and a rename so a reader never sees half a file.
//!
//! The file's keys keep their order: a write puts each key back where it was and appends new
//! ones, so a file someone edited by hand still reads the same afterwards. What `T` does not
//! name survives because every owner's type keeps unknown keys (`#[serde(flatten)] extra`).
//!
//! Comments are read as blanks: the original CLI writes `// …` lines above `config.json`'s
//! object, and people comment the files they edit. The comment lines above the object are
//! written back with it; comments inside it are not kept.

use std::collections::HashMap;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    #[error("Failed to read {path}: {reason}")]
    Read { path: String, reason: String },
    /// The file is not what its owner reads (not JSON, not an object, a field of the wrong
    /// type). Such a file is never written over.
    #[error("Invalid {path}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("Failed to write {path}: {reason}")]
    Write { path: String, reason: String },
}

/// One configuration file, typed as `T`.
pub struct JsonFile<T> {
    path: PathBuf,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for JsonFile<T> {
    fn clone(&self) -> Self {
        Self { path: self.path.clone(), _type: PhantomData }
    }
}

impl<T> std::fmt::Debug for JsonFile<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonFile").field("path", &self.path).finish()
    }
}

impl<T: Serialize + DeserializeOwned + Default> JsonFile<T> {
    pub fn new(path: PathBuf) -> Self {
        Self { path, _type: PhantomData }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file as `T`; a missing or empty file is `T::default()`. Reads take no lock: a
    /// write replaces the file whole, so a read sees the old file or the new one.
    pub fn read(&self) -> Result<T, FileError> {
        self.typed(self.object()?.0)
    }

    /// Runs `f` on the file's value and writes the result back, all under the path's lock so
    /// two updates in this process never lose one another. Nothing is written when `f` fails,
    /// when the file cannot be read as `T`, or when `f` changed nothing.
    pub fn update<R, E: From<FileError>>(&self, f: impl FnOnce(&mut T) -> Result<R, E>) -> Result<R, E> {
        let lock = lock_for(&self.path);
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (before, header) = self.object()?;
        let mut value = self.typed(before.clone())?;
        let out = f(&mut value)?;
        let after = match serde_json::to_value(&value) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(self.invalid("its type does not write an object".into()).into()),
            Err(e) => return Err(self.invalid(e.to_string()).into()),
        };
        if after != before {
            self.write(&header, in_order(before, after))?;
        }
        Ok(out)
    }

    fn typed(&self, object: Map<String, Value>) -> Result<T, FileError> {
        serde_json::from_value(Value::Object(object)).map_err(|e| self.invalid(e.to_string()))
    }

    /// The file's object, keys in file order, and the comment lines above it.
    fn object(&self) -> Result<(Map<String, Value>, String), FileError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Map::new(), String::new())),
            Err(e) => return Err(FileError::Read { path: self.display(), reason: e.to_string() }),
        };
        let header = comment_header(&text).to_string();
        let mut json = String::new();
        // Comments become blanks, so positions in errors stay those of the file.
        std::io::Read::read_to_string(&mut json_comments::StripComments::new(text.as_bytes()), &mut json)
            .map_err(|e| self.invalid(e.to_string()))?;
        if json.trim().is_empty() {
            return Ok((Map::new(), header));
        }
        match serde_json::from_str::<Value>(&json) {
            Ok(Value::Object(m)) => Ok((m, header)),
            Ok(_) => Err(self.invalid("not a JSON object".into())),
            Err(e) => Err(self.invalid(e.to_string())),
        }
    }

    fn write(&self, header: &str, object: Map<String, Value>) -> Result<(), FileError> {
        let failed = |e: std::io::Error| FileError::Write { path: self.display(), reason: e.to_string() };
        let json = serde_json::to_string_pretty(&Value::Object(object)).map_err(|e| self.invalid(e.to_string()))?;
        let mut text = format!("{header}{json}");
        text.push('\n');
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        // A name of its own per write: another process (or another home's owner) writing the
        // same directory never shares the temporary file.
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = self.path.with_file_name(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let written = write_then_rename(&tmp, &self.path, text.as_bytes());
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(failed)
    }

    fn invalid(&self, reason: String) -> FileError {
        FileError::Invalid { path: self.display(), reason }
    }

    fn display(&self) -> String {
        self.path.display().to_string()
    }
}

/// Writes `bytes` to `tmp`, flushed to disk, then renames it over `path`: whoever reads
/// `path` sees the old file or the new one, and a crash leaves no half file in its place.
fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(tmp, path)
}

/// The `//` lines (and blank ones) before the object, as written.
fn comment_header(text: &str) -> &str {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.is_empty() || t.starts_with("//") {
            end += line.len();
        } else {
            break;
        }
    }
    // Blank lines alone are no header.
    if text[..end].trim().is_empty() {
        ""
    } else {
        &text[..end]
    }
}

/// `after`'s keys in `before`'s order, new keys last.
fn in_order(before: Map<String, Value>, mut after: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in before.keys() {
        if let Some(v) = after.remove(key) {
            out.insert(key.clone(), v);
        }
    }
    out.extend(after);
    out
}

/// The lock of one path, shared by every owner of that file in this process.
fn lock_for(path: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    locks.entry(path.to_path_buf()).or_default().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, serde::Deserialize)]
    struct Counter {
        #[serde(default)]
        count: u64,
        #[serde(flatten)]
        extra: Map<String, Value>,
    }

    #[test]
    fn the_originals_commented_file_is_read_and_its_header_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let original = "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"count\": 1, // one\n  \"url\": \"http://h/x\" /* not a comment inside */\n}\n";
        std::fs::write(&path, original).unwrap();
        let file = JsonFile::<Counter>::new(path.clone());
        let read = file.read().unwrap();
        assert_eq!(read.count, 1);
        assert_eq!(read.extra["url"], "http://h/x", "// inside a string is text");
        file.update(|c| {
            c.count = 2;
            Ok::<_, FileError>(())
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("// User settings belong in settings.json.\n// This file is managed automatically.\n{"),
            "{text}"
        );
        assert_eq!(file.read().unwrap().count, 2);
        std::fs::write(&path, "{\"count\": 1} /* never closed").unwrap();
        assert!(matches!(file.read(), Err(FileError::Invalid { .. })));
    }

    #[test]
    fn key_order_survives_a_write_and_no_change_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, r#"{"z": 1, "count": 2, "a": 3}"#).unwrap();
        let file = JsonFile::<Counter>::new(path.clone());
        file.update(|c| {
            c.count += 1;
            c.extra.insert("new".into(), Value::Bool(true));
            Ok::<_, FileError>(())
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text).unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "count", "a", "new"]);

        std::fs::write(&path, r#"{"count":   7}"#).unwrap();
        file.update(|_| Ok::<_, FileError>(())).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"count":   7}"#, "an unchanged file is not rewritten");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file stays behind");
    }

    #[test]
    fn a_failed_change_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = JsonFile::<Counter>::new(dir.path().join("c.json"));
        let r = file.update(|c| {
            c.count = 9;
            Err::<(), _>(FileError::Read { path: "x".into(), reason: "refused".into() })
        });
        assert!(r.is_err());
        assert!(!file.path().exists());
        assert_eq!(file.read().unwrap(), Counter::default());
    }
}
