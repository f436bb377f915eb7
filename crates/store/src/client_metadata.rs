//! A session's client metadata: string pairs an SDK client keeps with a local session
//! (`session.metadata.getClientMetadata` / `updateClientMetadata`, `sessions.getClientMetadata`).
//! Kept where and as the original 1.0.102 keeps it: `client-metadata.json` in the session's
//! directory, `{"version":1,"metadata":{…}}`, readable by the owner only, its keys sorted; a
//! change holds an exclusive lock on `.client-metadata.lock` beside it, so two processes sharing
//! the directory (two nodes on one volume) never lose each other's change. It never reaches the
//! model, an event or an export.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::error::io_err;
use crate::layout::{private_file_options, replace_private_file, Layout};
use crate::StoreError;

const FILE: &str = "client-metadata.json";
const LOCK: &str = ".client-metadata.lock";
const VERSION: u64 = 1;
pub const MAX_ENTRIES: usize = 128;
pub const MAX_KEY_BYTES: usize = 256;
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// The whole file, as written.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// Namespaces the original keeps for itself.
const RESERVED: &[&str] = &["copilot/", "github/"];

pub type Bag = BTreeMap<String, String>;

/// A change: `clear`, then `remove`, then `set` (so `set` wins over `remove`).
#[derive(Debug, Default, Clone)]
pub struct Patch {
    pub clear: bool,
    pub remove: Vec<String>,
    pub set: Bag,
}

/// What reading one session's metadata found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Ok(Bag),
    /// No such session directory.
    NotFound,
    /// The file is not the original's JSON, or holds a value that is not a string.
    Corrupt,
    UnsupportedVersion,
}

impl Found {
    /// The bag of a session being read or changed: none stored yet is an empty bag; a file this
    /// runtime cannot read is an error (never taken for an empty bag, so never overwritten).
    pub fn into_bag(self) -> Result<Bag, ClientMetadataError> {
        match self {
            Found::Ok(bag) => Ok(bag),
            Found::NotFound => Ok(Bag::new()),
            Found::Corrupt => Err(ClientMetadataError::Unreadable("corrupt")),
            Found::UnsupportedVersion => Err(ClientMetadataError::Unreadable("of an unsupported version")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientMetadataError {
    /// The patch or the bag it would make breaks a limit; the original's texts.
    #[error("client metadata is invalid: {0}")]
    Invalid(String),
    /// The stored file cannot be changed without losing what it holds.
    #[error("client metadata file is {0}")]
    Unreadable(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Layout {
    /// Reads a session's metadata without opening the session.
    pub fn read_client_metadata(&self, id: &str) -> Result<Found, StoreError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        if !dir.is_dir() {
            return Ok(Found::NotFound);
        }
        read(&dir.join(FILE))
    }

    /// Applies `patch` under the file's lock and returns the bag as stored.
    pub fn update_client_metadata(&self, id: &str, patch: &Patch) -> Result<Bag, ClientMetadataError> {
        check_patch(patch)?;
        let dir = self.ensure_session_dir(id)?;
        let lock_path = dir.join(LOCK);
        let lock = private_file_options().write(true).open(&lock_path).map_err(io_err(&lock_path))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io_err(&lock_path)(e.into()))?;
        let path = dir.join(FILE);
        let mut bag = read(&path)?.into_bag()?;
        if patch.clear {
            bag.clear();
        }
        for key in &patch.remove {
            bag.remove(key);
        }
        bag.extend(patch.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        if bag.len() > MAX_ENTRIES {
            return Err(invalid(format!("bag exceeds {MAX_ENTRIES} entries")));
        }
        let text = document(&bag);
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(invalid(format!("serialized document exceeds {MAX_DOCUMENT_BYTES} bytes")));
        }
        replace_private_file(&path, text.as_bytes())?;
        // The lock goes with the file handle.
        drop(lock);
        Ok(bag)
    }
}

/// The file's text: `version` first, as the original writes it.
fn document(bag: &Bag) -> String {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        version: u64,
        metadata: &'a Bag,
    }
    // Strings and a map of strings always serialize.
    serde_json::to_string(&Doc { version: VERSION, metadata: bag }).unwrap_or_default()
}

fn invalid(what: String) -> ClientMetadataError {
    ClientMetadataError::Invalid(what)
}

fn check_key(key: &str) -> Result<(), ClientMetadataError> {
    if key.is_empty() {
        return Err(invalid("keys must not be empty".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(invalid(format!("key exceeds {MAX_KEY_BYTES} bytes")));
    }
    if RESERVED.iter().any(|p| key.starts_with(p)) {
        return Err(invalid(format!("key '{key}' uses a reserved prefix")));
    }
    Ok(())
}

fn check_patch(patch: &Patch) -> Result<(), ClientMetadataError> {
    if patch.set.len() > MAX_ENTRIES {
        return Err(invalid(format!("set exceeds {MAX_ENTRIES} entries")));
    }
    if patch.remove.len() > MAX_ENTRIES {
        return Err(invalid(format!("remove exceeds {MAX_ENTRIES} entries")));
    }
    for key in &patch.remove {
        check_key(key)?;
    }
    for (key, value) in &patch.set {
        check_key(key)?;
        if value.len() > MAX_VALUE_BYTES {
            return Err(invalid(format!("value for key '{key}' exceeds {MAX_VALUE_BYTES} bytes")));
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Found, StoreError> {
    let text = match fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Ok(Bag::new())),
        Err(e) => return Err(io_err(path)(e)),
    };
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: u64,
        metadata: serde_json::Value,
    }
    let Ok(doc) = serde_json::from_slice::<Versioned>(&text) else { return Ok(Found::Corrupt) };
    if doc.version != VERSION {
        return Ok(Found::UnsupportedVersion);
    }
    Ok(serde_json::from_value::<Bag>(doc.metadata).map_or(Found::Corrupt, Found::Ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().expect("tempdir");
        let layout = Layout::new(dir.path().to_path_buf());
        (dir, layout)
    }

    fn set(pairs: &[(&str, &str)]) -> Patch {
        Patch { set: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), ..Patch::default() }
    }

    #[test]
    fn a_patch_clears_then_removes_then_sets_and_is_stored_as_the_original_stores_it() {
        let (_d, l) = layout();
        assert_eq!(l.read_client_metadata("s1").unwrap(), Found::NotFound);
        l.ensure_session_dir("s1").unwrap();
        assert_eq!(l.read_client_metadata("s1").unwrap(), Found::Ok(Bag::new()));
        l.update_client_metadata("s1", &set(&[("b", "2"), ("a", "1")])).unwrap();
        let patch = Patch { remove: vec!["a".into(), "c".into()], ..set(&[("c", "3")]) };
        let bag = l.update_client_metadata("s1", &patch).unwrap();
        assert_eq!(bag, set(&[("b", "2"), ("c", "3")]).set);
        let text = fs::read_to_string(l.session_dir("s1").join(FILE)).unwrap();
        assert_eq!(text, r#"{"version":1,"metadata":{"b":"2","c":"3"}}"#);
        let cleared = l.update_client_metadata("s1", &Patch { clear: true, ..set(&[("d", "4")]) }).unwrap();
        assert_eq!(cleared, set(&[("d", "4")]).set);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(l.session_dir("s1").join(FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn limits_are_refused_with_the_originals_texts_and_nothing_is_written() {
        let (_d, l) = layout();
        l.update_client_metadata("s1", &set(&[("keep", "me")])).unwrap();
        let long_key = "k".repeat(MAX_KEY_BYTES + 1);
        let long_value = "é".repeat(MAX_VALUE_BYTES / 2 + 1);
        let many: Vec<(String, String)> = (0..=MAX_ENTRIES).map(|i| (format!("k{i}"), "v".into())).collect();
        let cases: Vec<(Patch, &str)> = vec![
            (set(&[("", "x")]), "keys must not be empty"),
            (set(&[(&long_key, "x")]), "key exceeds 256 bytes"),
            (set(&[("copilot/x", "1")]), "key 'copilot/x' uses a reserved prefix"),
            (Patch { remove: vec!["github/x".into()], ..Patch::default() }, "key 'github/x' uses a reserved prefix"),
            (set(&[("k0", &long_value)]), "value for key 'k0' exceeds 16384 bytes"),
            (Patch { set: many.into_iter().collect(), ..Patch::default() }, "set exceeds 128 entries"),
        ];
        for (patch, text) in cases {
            let e = l.update_client_metadata("s1", &patch).unwrap_err();
            assert_eq!(e.to_string(), format!("client metadata is invalid: {text}"));
        }
        // A bag too large only once merged.
        let first: Bag = (0..100).map(|i| (format!("m{i}"), "v".into())).collect();
        l.update_client_metadata("s1", &Patch { set: first, ..Patch::default() }).unwrap();
        let more: Bag = (0..40).map(|i| (format!("n{i}"), "v".into())).collect();
        let e = l.update_client_metadata("s1", &Patch { set: more, ..Patch::default() }).unwrap_err();
        assert_eq!(e.to_string(), "client metadata is invalid: bag exceeds 128 entries");
        let big: Bag = (0..10).map(|i| (format!("b{i}"), "x".repeat(16_000))).collect();
        let e = l.update_client_metadata("s1", &Patch { clear: true, set: big, ..Patch::default() }).unwrap_err();
        assert_eq!(e.to_string(), "client metadata is invalid: serialized document exceeds 65536 bytes");
        let Found::Ok(bag) = l.read_client_metadata("s1").unwrap() else { panic!("unreadable") };
        assert_eq!((bag.len(), bag.get("keep").map(String::as_str)), (101, Some("me")));
    }

    #[test]
    fn a_file_the_runtime_cannot_read_is_reported_not_overwritten() {
        let (_d, l) = layout();
        let dir = l.ensure_session_dir("s1").unwrap();
        for (text, found) in [
            ("{nope", Found::Corrupt),
            (r#"{"version":1,"metadata":{"a":5}}"#, Found::Corrupt),
            (r#"{"version":2,"metadata":{"a":"b"}}"#, Found::UnsupportedVersion),
        ] {
            fs::write(dir.join(FILE), text).unwrap();
            assert_eq!(l.read_client_metadata("s1").unwrap(), found, "{text}");
            assert!(l.update_client_metadata("s1", &set(&[("x", "y")])).is_err(), "{text}");
            assert_eq!(fs::read_to_string(dir.join(FILE)).unwrap(), text);
        }
        assert!(matches!(l.read_client_metadata("../x"), Err(StoreError::InvalidSessionId(_))));
    }

    #[test]
    fn concurrent_changes_from_two_threads_both_land() {
        let (_d, l) = layout();
        l.ensure_session_dir("s1").unwrap();
        let l = std::sync::Arc::new(l);
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        l.update_client_metadata("s1", &set(&[(&format!("t{t}-{i}"), "v")])).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let Found::Ok(bag) = l.read_client_metadata("s1").unwrap() else { panic!("unreadable") };
        assert_eq!(bag.len(), 50);
    }
}
