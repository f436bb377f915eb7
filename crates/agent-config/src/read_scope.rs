//! Where project configuration may be read from. On a team server a tenant's sessions and
//! requests read agents, skills, instructions and plugin manifests only inside that tenant's
//! workspace and configuration home: such a file there that is a symbolic link to elsewhere
//! (another tenant's workspace, the server's own files) is not read, since a tenant can make
//! links in its workspace. Single-user runs set no scope and read wherever the user's links lead.
//!
//! The scope holds on the calling thread for the length of one call ([`within`]): discovery is
//! synchronous file work, run by the session's actor or on a blocking thread.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

thread_local! {
    static ROOTS: RefCell<Option<Vec<PathBuf>>> = const { RefCell::new(None) };
}

/// Runs `f` with configuration files read only beneath `roots` (canonical directories;
/// `None`: anywhere). The previous scope is restored afterwards, also when `f` panics.
pub fn within<T>(roots: Option<&[PathBuf]>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Vec<PathBuf>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ROOTS.with(|r| *r.borrow_mut() = previous);
        }
    }
    let previous = ROOTS.with(|r| r.replace(roots.map(<[PathBuf]>::to_vec)));
    let _restore = Restore(previous);
    f()
}

/// A configuration file's text, where the scope allows it: the file is opened (links
/// followed), and what was opened — its real path, as the kernel names the open file — must be
/// beneath one of the roots. Checked on the open file, not on the name, so a link swapped in
/// between a check and the read cannot lead the read elsewhere.
pub(crate) fn read_to_string(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    let roots = ROOTS.with(|r| r.borrow().clone());
    let Some(roots) = roots else { return std::fs::read_to_string(path) };
    // Non-blocking: a FIFO planted under the name must not hold the reader.
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    if !roots.iter().any(|root| real.starts_with(root)) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "a link to a file outside this tenant's workspace is not read",
        ));
    }
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_roots_are_not_followed_inside_a_scope() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (mine, theirs) = (root.join("mine"), root.join("theirs"));
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::write(theirs.join("secret.md"), "THEIRS").unwrap();
        std::fs::write(mine.join("own.md"), "MINE").unwrap();
        std::os::unix::fs::symlink(theirs.join("secret.md"), mine.join("link.md")).unwrap();
        std::os::unix::fs::symlink(mine.join("own.md"), mine.join("inner.md")).unwrap();
        let scope = [mine.clone()];
        within(Some(&scope), || {
            assert_eq!(read_to_string(&mine.join("own.md")).unwrap(), "MINE");
            assert_eq!(read_to_string(&mine.join("inner.md")).unwrap(), "MINE", "links inside are fine");
            let refused = read_to_string(&mine.join("link.md")).unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
            let fifo = mine.join("fifo.md");
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            assert_eq!(read_to_string(&fifo).unwrap_err().kind(), std::io::ErrorKind::InvalidInput, "not waited on");
            within(None, || assert_eq!(read_to_string(&mine.join("link.md")).unwrap(), "THEIRS"));
            assert!(read_to_string(&mine.join("link.md")).is_err(), "the outer scope is back");
        });
        assert_eq!(read_to_string(&mine.join("link.md")).unwrap(), "THEIRS", "no scope, no limit");
    }
}
