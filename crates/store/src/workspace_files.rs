//! The session's workspace files (`session-state/<id>/files/`), which clients manage through
//! `session.workspaces.*`. Every path comes from a client, so each one is confined twice:
//! lexically (no absolute paths, no `..` above the root) and on disk (no symlink on the way
//! may lead outside the directory).
//!
//! The work runs on the blocking pool: a confinement check and the operation it guards are a
//! handful of syscalls that belong together.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use crate::error::{blocking, io_err, StoreError};
use crate::layout::{create_private_dir, Layout, WorkspaceMeta};

/// What `statFile` reports about one entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkspaceStat {
    pub is_file: bool,
    pub is_directory: bool,
    pub size: u64,
    pub mtime_ms: f64,
    pub birthtime_ms: f64,
}

/// A client path resolved inside the files directory.
struct Resolved {
    /// The normalized slash-separated relative path (empty for the directory itself).
    rel: String,
    abs: PathBuf,
}

fn outside(path: &str) -> StoreError {
    StoreError::OutsideWorkspace(path.to_string())
}

/// Splits a client path into plain components, resolving `.` and `..` without touching the
/// disk. Both separators count, so a Windows-style path cannot smuggle a `..` through.
fn normalize(path: &str) -> Result<Vec<String>, StoreError> {
    if path.contains('\0') || Path::new(path).has_root() || path.starts_with(['/', '\\']) {
        return Err(outside(path));
    }
    let mut parts: Vec<String> = Vec::new();
    for piece in path.split(['/', '\\']) {
        match piece {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(outside(path));
                }
            }
            // A drive prefix (`C:`) would make the join absolute on Windows.
            other => match Path::new(other).components().next() {
                Some(Component::Normal(_)) => parts.push(other.to_string()),
                _ => return Err(outside(path)),
            },
        }
    }
    Ok(parts)
}

/// Resolves `path` under `root` (which must exist) and checks that no existing entry on the
/// way is a symlink leading out of it. Entries that do not exist yet cannot be links, so the
/// walk stops at the first missing one.
fn resolve(root: &Path, path: &str) -> Result<Resolved, StoreError> {
    let parts = normalize(path)?;
    let canon_root = fs::canonicalize(root).map_err(io_err(root))?;
    let mut prefix = root.to_path_buf();
    for part in &parts {
        prefix.push(part);
        match fs::symlink_metadata(&prefix) {
            Ok(meta) if meta.file_type().is_symlink() => {
                // A dangling link cannot be checked, and writing through it would create its
                // target wherever it points: refuse it like an escaping one.
                let target = fs::canonicalize(&prefix).map_err(|_| outside(path))?;
                if !target.starts_with(&canon_root) {
                    return Err(outside(path));
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(io_err(&prefix)(e)),
        }
    }
    let abs = parts.iter().fold(root.to_path_buf(), |p, part| p.join(part));
    Ok(Resolved { rel: parts.join("/"), abs })
}

/// The same path, refused when it names the files directory itself (nothing may replace,
/// remove or rename the root).
fn resolve_entry(root: &Path, path: &str) -> Result<Resolved, StoreError> {
    let r = resolve(root, path)?;
    if r.rel.is_empty() {
        return Err(StoreError::InvalidWorkspacePath(path.to_string()));
    }
    Ok(r)
}

/// An I/O error, with "not found" told apart so the client sees which path is missing.
fn op_err<'a>(rel: &'a str, abs: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    let rel = rel.to_string();
    move |e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            StoreError::NoSuchWorkspacePath(rel)
        } else {
            io_err(abs)(e)
        }
    }
}

fn epoch_ms(t: std::io::Result<SystemTime>) -> Option<f64> {
    let d = t.ok()?.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some(d.as_secs_f64() * 1000.0)
}

/// Regular files under `dir`, as slash-separated paths relative to `root`. Symlinks are not
/// followed: a linked directory could loop or lead outside.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), StoreError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let kind = entry.file_type().map_err(io_err(&entry.path()))?;
        let path = entry.path();
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if kind.is_file() {
            if let Ok(rel) = path.strip_prefix(root) {
                let parts: Vec<_> = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    Ok(())
}

impl Layout {
    /// The files directory, created if missing (private, like the rest of the session).
    fn files_root(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        let root = self.files_dir(id);
        create_private_dir(&root)?;
        Ok(root)
    }

    /// Every regular file in the workspace, sorted; none when the directory does not exist.
    pub async fn list_workspace_files(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Self::check_id(id)?;
        let root = self.files_dir(id);
        blocking(move || {
            let mut out = Vec::new();
            if root.is_dir() {
                walk(&root, &root, &mut out)?;
            }
            out.sort();
            Ok(out)
        })
        .await
    }

    /// A workspace file's text (it must be UTF-8).
    pub async fn read_workspace_file(&self, id: &str, path: &str) -> Result<String, StoreError> {
        let (root, path) = (self.files_root(id)?, path.to_string());
        blocking(move || {
            let r = resolve_entry(&root, &path)?;
            fs::read_to_string(&r.abs).map_err(op_err(&r.rel, &r.abs))
        })
        .await
    }

    /// Creates or replaces a workspace file, creating its parent directories. Returns the
    /// normalized relative path and whether the file existed before.
    pub async fn write_workspace_file(
        &self,
        id: &str,
        path: &str,
        content: String,
    ) -> Result<(String, bool), StoreError> {
        let (root, path) = (self.files_root(id)?, path.to_string());
        blocking(move || {
            let r = resolve_entry(&root, &path)?;
            if let Some(parent) = r.abs.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            // Parents created just now are plain directories, but check again so a link
            // swapped in meanwhile is still caught before writing.
            let r = resolve_entry(&root, &path)?;
            let existed = r.abs.exists();
            fs::write(&r.abs, content).map_err(io_err(&r.abs))?;
            Ok((r.rel, existed))
        })
        .await
    }

    /// Creates a directory; without `recursive` its parent must exist and it must not.
    pub async fn create_workspace_dir(&self, id: &str, path: &str, recursive: bool) -> Result<(), StoreError> {
        let (root, path) = (self.files_root(id)?, path.to_string());
        blocking(move || {
            let r = resolve_entry(&root, &path)?;
            let made = if recursive { fs::create_dir_all(&r.abs) } else { fs::create_dir(&r.abs) };
            made.map_err(op_err(&r.rel, &r.abs))
        })
        .await
    }

    /// Metadata of a file or directory (the directory itself for an empty path).
    pub async fn stat_workspace_path(&self, id: &str, path: &str) -> Result<WorkspaceStat, StoreError> {
        let (root, path) = (self.files_root(id)?, path.to_string());
        blocking(move || {
            let r = resolve(&root, &path)?;
            let meta = fs::metadata(&r.abs).map_err(op_err(&r.rel, &r.abs))?;
            let mtime_ms = epoch_ms(meta.modified()).unwrap_or(0.0);
            Ok(WorkspaceStat {
                is_file: meta.is_file(),
                is_directory: meta.is_dir(),
                size: meta.len(),
                mtime_ms,
                // Not every file system records a birth time; the original reports the
                // modification time then, as Node's `stat` does.
                birthtime_ms: epoch_ms(meta.created()).unwrap_or(mtime_ms),
            })
        })
        .await
    }

    /// Removes a file or directory. A non-empty directory needs `recursive`; a missing path
    /// is an error unless `force`.
    pub async fn remove_workspace_path(
        &self,
        id: &str,
        path: &str,
        recursive: bool,
        force: bool,
    ) -> Result<(), StoreError> {
        let (root, path) = (self.files_root(id)?, path.to_string());
        blocking(move || {
            let r = resolve_entry(&root, &path)?;
            let meta = match fs::symlink_metadata(&r.abs) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && force => return Ok(()),
                Err(e) => return Err(op_err(&r.rel, &r.abs)(e)),
            };
            let removed = if !meta.is_dir() {
                fs::remove_file(&r.abs)
            } else if recursive {
                fs::remove_dir_all(&r.abs)
            } else {
                fs::remove_dir(&r.abs)
            };
            removed.map_err(op_err(&r.rel, &r.abs))
        })
        .await
    }

    /// Moves an entry within the workspace, creating the destination's parent directories.
    pub async fn rename_workspace_path(&self, id: &str, source: &str, destination: &str) -> Result<(), StoreError> {
        let root = self.files_root(id)?;
        let (source, destination) = (source.to_string(), destination.to_string());
        blocking(move || {
            let from = resolve_entry(&root, &source)?;
            let to = resolve_entry(&root, &destination)?;
            if !from.abs.exists() {
                return Err(StoreError::NoSuchWorkspacePath(from.rel));
            }
            if let Some(parent) = to.abs.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            fs::rename(&from.abs, &to.abs).map_err(op_err(&from.rel, &from.abs))
        })
        .await
    }

    /// `workspace.yaml`, read off the async workers.
    pub async fn workspace_meta(&self, id: &str) -> Result<Option<WorkspaceMeta>, StoreError> {
        let (layout, id) = (self.clone(), id.to_string());
        blocking(move || layout.read_workspace_yaml(&id)).await
    }
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        layout.ensure_session_dir("s1").unwrap();
        (dir, layout)
    }

    fn is_outside(e: &StoreError) -> bool {
        matches!(e, StoreError::OutsideWorkspace(_)) && e.to_string().contains("workspace files directory")
    }

    #[tokio::test]
    async fn dot_dot_and_absolute_paths_are_refused() {
        let (dir, layout) = setup();
        for bad in ["../escaped.txt", "../../escaped.txt", "nested/../../../escaped.txt", "/etc/passwd", "..\\x"] {
            let e = layout.write_workspace_file("s1", bad, "x".into()).await.unwrap_err();
            assert!(is_outside(&e), "{bad}: {e}");
            let e = layout.read_workspace_file("s1", bad).await.unwrap_err();
            assert!(is_outside(&e), "{bad}: {e}");
        }
        assert!(!dir.path().join("session-state/s1/escaped.txt").exists());
        // `..` that stays inside is fine.
        layout.write_workspace_file("s1", "a/../b.txt", "ok".into()).await.unwrap();
        assert_eq!(layout.read_workspace_file("s1", "b.txt").await.unwrap(), "ok");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_leading_out_are_refused() {
        let (dir, layout) = setup();
        let outside_dir = dir.path().join("elsewhere");
        fs::create_dir_all(&outside_dir).unwrap();
        fs::write(outside_dir.join("secret.txt"), "secret").unwrap();
        let files = layout.files_dir("s1");
        fs::create_dir_all(&files).unwrap();
        std::os::unix::fs::symlink(&outside_dir, files.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), files.join("dangling")).unwrap();

        let e = layout.read_workspace_file("s1", "out/secret.txt").await.unwrap_err();
        assert!(is_outside(&e), "{e}");
        let e = layout.write_workspace_file("s1", "out/new.txt", "x".into()).await.unwrap_err();
        assert!(is_outside(&e), "{e}");
        let e = layout.write_workspace_file("s1", "dangling", "x".into()).await.unwrap_err();
        assert!(is_outside(&e), "{e}");
        assert!(!outside_dir.join("new.txt").exists());
        assert!(!dir.path().join("nowhere").exists());
        // The listing does not follow the link either.
        assert!(layout.list_workspace_files("s1").await.unwrap().is_empty());

        // A link that stays inside is an ordinary path.
        fs::create_dir_all(files.join("real")).unwrap();
        std::os::unix::fs::symlink(files.join("real"), files.join("alias")).unwrap();
        layout.write_workspace_file("s1", "alias/f.txt", "in".into()).await.unwrap();
        assert_eq!(layout.read_workspace_file("s1", "real/f.txt").await.unwrap(), "in");
    }

    #[tokio::test]
    async fn create_read_list_and_update() {
        let (_dir, layout) = setup();
        assert!(layout.list_workspace_files("s1").await.unwrap().is_empty());
        let (rel, existed) = layout.write_workspace_file("s1", "n/sub/file.txt", "one".into()).await.unwrap();
        assert_eq!((rel.as_str(), existed), ("n/sub/file.txt", false));
        let (_, existed) = layout.write_workspace_file("s1", "n/sub/file.txt", "two".into()).await.unwrap();
        assert!(existed);
        layout.write_workspace_file("s1", "top.txt", "t".into()).await.unwrap();
        assert_eq!(layout.read_workspace_file("s1", "n/sub/file.txt").await.unwrap(), "two");
        assert_eq!(layout.list_workspace_files("s1").await.unwrap(), vec!["n/sub/file.txt", "top.txt"]);
        let e = layout.read_workspace_file("s1", "missing.txt").await.unwrap_err();
        assert!(matches!(e, StoreError::NoSuchWorkspacePath(_)), "{e}");
        let e = layout.write_workspace_file("s1", "", "x".into()).await.unwrap_err();
        assert!(matches!(e, StoreError::InvalidWorkspacePath(_)), "{e}");
    }

    #[tokio::test]
    async fn directories_stat_remove_and_rename() {
        let (_dir, layout) = setup();
        assert!(layout.create_workspace_dir("s1", "a/b", false).await.is_err());
        layout.create_workspace_dir("s1", "a/b", true).await.unwrap();
        layout.create_workspace_dir("s1", "c", false).await.unwrap();
        layout.write_workspace_file("s1", "a/b/f.txt", "12345".into()).await.unwrap();

        let st = layout.stat_workspace_path("s1", "a/b/f.txt").await.unwrap();
        assert!(st.is_file && !st.is_directory);
        assert_eq!(st.size, 5);
        assert!(st.mtime_ms > 0.0 && st.birthtime_ms > 0.0);
        assert!(layout.stat_workspace_path("s1", "a").await.unwrap().is_directory);
        assert!(layout.stat_workspace_path("s1", "nope").await.is_err());

        layout.rename_workspace_path("s1", "a/b/f.txt", "moved/g.txt").await.unwrap();
        assert_eq!(layout.read_workspace_file("s1", "moved/g.txt").await.unwrap(), "12345");
        assert!(layout.rename_workspace_path("s1", "a/b/f.txt", "x.txt").await.is_err());
        let e = layout.rename_workspace_path("s1", "moved/g.txt", "../g.txt").await.unwrap_err();
        assert!(is_outside(&e), "{e}");

        // A non-empty directory needs `recursive`; a missing path needs `force`.
        layout.write_workspace_file("s1", "a/b/h.txt", "h".into()).await.unwrap();
        assert!(layout.remove_workspace_path("s1", "a", false, false).await.is_err());
        layout.remove_workspace_path("s1", "a", true, false).await.unwrap();
        assert!(layout.stat_workspace_path("s1", "a").await.is_err());
        assert!(layout.remove_workspace_path("s1", "a", true, false).await.is_err());
        layout.remove_workspace_path("s1", "a", true, true).await.unwrap();
        layout.remove_workspace_path("s1", "moved/g.txt", false, false).await.unwrap();
        // The root itself cannot be removed.
        assert!(layout.remove_workspace_path("s1", ".", true, true).await.is_err());
        assert!(layout.files_dir("s1").is_dir());
        assert_eq!(layout.list_workspace_files("s1").await.unwrap(), Vec::<String>::new());
    }
}
