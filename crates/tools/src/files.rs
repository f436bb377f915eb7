//! How file tools reach the file system. Alone (`--headless`, `-p`) a path is opened as named.
//! Beneath a root (a tenant's workspace on a shared server) every path is resolved and opened
//! in one step by `cap-std` (`openat2` with `RESOLVE_BENEATH` where the kernel has it): no
//! `..`, absolute path or symlink leads out, and neither does a symlink swapped in after a
//! check. Tools open what they act on before they ask for permission and act through that
//! handle afterwards, so the file the user approved is the file that is used.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};

use crate::output::ToolOutput;

/// A directory that file tools may not leave.
#[derive(Debug)]
pub struct Beneath {
    root: PathBuf,
    dir: Dir,
}

impl Beneath {
    pub fn open(root: &Path) -> io::Result<Self> {
        let root = root.canonicalize()?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self { root, dir })
    }

    /// `path` (absolute) as a name below the root. Only the name is worked out here; whether
    /// it stays beneath the root is what `cap-std` checks as it opens.
    fn relative(&self, path: &Path) -> io::Result<PathBuf> {
        if let Ok(rel) = path.strip_prefix(&self.root) {
            return Ok(dot_if_empty(rel));
        }
        // Named through a symlink above the root (a cwd given in another spelling): the real
        // location of the deepest existing ancestor says where below the root it is.
        let mut existing = path;
        let mut rest = Vec::new();
        loop {
            if let Ok(real) = existing.canonicalize() {
                let rel = real.strip_prefix(&self.root).map_err(|_| outside())?;
                let mut rel = rel.to_path_buf();
                rel.extend(rest.iter().rev());
                return Ok(dot_if_empty(&rel));
            }
            let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
                return Err(outside());
            };
            rest.push(name.to_os_string());
            existing = parent;
        }
    }
}

fn dot_if_empty(rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel.to_path_buf()
    }
}

/// The error for a path that leads out of the root (`cap-std` reports its own the same way).
fn outside() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a path led outside of the filesystem")
}

/// Whether `e` says a path led out of the root, as opposed to the system refusing access: the
/// system's own errors carry an OS error number, a refused escape has none.
pub fn is_outside(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// The whole content of an open file.
pub(crate) fn read_all(mut file: std::fs::File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(bytes)
}

/// What the model is told for a path outside the root.
pub fn outside_output(shown: &str) -> ToolOutput {
    ToolOutput::fail(format!(
        "Path \"{shown}\" is outside this session's workspace; on this server file tools only reach files inside it."
    ))
    .sandbox_denied()
}

/// Where file tools open files: anywhere, beneath one root, or nowhere; and what their
/// searches never walk into (a session sandbox's denied paths).
#[derive(Debug, Clone, Default)]
pub struct Files {
    reach: Reach,
    hidden: Arc<[PathBuf]>,
}

#[derive(Debug, Clone, Default)]
enum Reach {
    #[default]
    Anywhere,
    Beneath(Arc<Beneath>),
    /// A session on a shared server outside every tenant's workspace.
    Nowhere,
}

impl Files {
    pub fn beneath(root: Arc<Beneath>) -> Self {
        Self { reach: Reach::Beneath(root), hidden: Arc::new([]) }
    }

    pub fn nowhere() -> Self {
        Self { reach: Reach::Nowhere, hidden: Arc::new([]) }
    }

    /// These, with what is beneath them, are left out of `grep` and `glob` walks (each as
    /// given and resolved, since a walk names entries as it reaches them). A search or read
    /// naming one directly is refused before this (the session's sandbox check).
    pub fn hiding(mut self, paths: &[PathBuf]) -> Self {
        let resolved = paths.iter().filter_map(|p| std::fs::canonicalize(p).ok());
        self.hidden = paths.iter().cloned().chain(resolved).collect();
        self
    }

    pub(crate) fn hides_any(&self) -> bool {
        !self.hidden.is_empty()
    }

    /// Whether a walk leaves `path` out ([`Files::hiding`]).
    pub fn hides(&self, path: &Path) -> bool {
        self.hidden.iter().any(|h| path.starts_with(h))
    }

    pub fn is_confined(&self) -> bool {
        !matches!(self.reach, Reach::Anywhere)
    }

    /// The root and `path`'s name below it, when confined.
    fn below(&self, path: &Path) -> io::Result<Option<(&Dir, PathBuf)>> {
        match &self.reach {
            Reach::Anywhere => Ok(None),
            Reach::Beneath(b) => Ok(Some((&b.dir, b.relative(path)?))),
            Reach::Nowhere => Err(outside()),
        }
    }

    /// Opens `path` (absolute) to read; a directory opens too. Non-blocking, so a FIFO does
    /// not hold the open; regular files read as usual.
    pub fn open_read(&self, path: &Path) -> io::Result<std::fs::File> {
        self.open(path, false)
    }

    /// Opens an existing file to read and write it in place.
    pub fn open_read_write(&self, path: &Path) -> io::Result<std::fs::File> {
        self.open(path, true)
    }

    fn open(&self, path: &Path, write: bool) -> io::Result<std::fs::File> {
        let flags = if write { 0 } else { libc::O_NONBLOCK };
        match self.below(path)? {
            Some((dir, rel)) => {
                let mut options = OpenOptions::new();
                options.read(true).write(write).custom_flags(flags);
                Ok(dir.open_with(rel, &options)?.into_std())
            }
            None => {
                let mut options = std::fs::OpenOptions::new();
                std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, flags);
                options.read(true).write(write).open(path)
            }
        }
    }

    /// Opens the directory `path` (absolute); what is created in it afterwards is created in
    /// this directory, wherever its name points by then.
    pub fn open_dir(&self, path: &Path) -> io::Result<Dir> {
        match self.below(path)? {
            Some((dir, rel)) => dir.open_dir(rel),
            None => Dir::open_ambient_dir(path, ambient_authority()),
        }
    }

    /// Whether `path` exists (a symlink as itself) beneath the root; always, anywhere.
    pub fn reaches(&self, path: &Path) -> bool {
        match self.below(path) {
            Ok(Some((dir, rel))) => dir.symlink_metadata(rel).is_ok(),
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Whether `path` exists, following symlinks (beneath the root when there is one).
    pub fn exists(&self, path: &Path) -> io::Result<()> {
        match self.below(path)? {
            Some((dir, rel)) => dir.metadata(rel).map(drop),
            None => std::fs::metadata(path).map(drop),
        }
    }

    /// The whole content of the file `path`.
    pub fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_all(self.open_read(path)?)
    }

    /// Writes `bytes` as the whole content of `path` (created if missing; an existing file
    /// keeps its inode). The parent directory must exist.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent(path)?;
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        io::Write::write_all(&mut dir.open_with(name, &options)?, bytes)
    }

    pub fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        match self.below(path)? {
            Some((dir, rel)) => dir.create_dir_all(rel),
            None => std::fs::create_dir_all(path),
        }
    }

    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.parent(path)?;
        dir.remove_file(name)
    }

    fn parent<'p>(&self, path: &'p Path) -> io::Result<(Dir, &'p std::ffi::OsStr)> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Ok((self.open_dir(parent)?, name)),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file path")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read as _;
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("root/sub")).unwrap();
        std::fs::create_dir_all(base.join("other")).unwrap();
        std::fs::write(base.join("root/sub/a.txt"), "inside").unwrap();
        std::fs::write(base.join("other/secret"), "outside").unwrap();
        symlink("sub/a.txt", base.join("root/relative")).unwrap();
        symlink("../other", base.join("root/up")).unwrap();
        symlink(base.join("other"), base.join("root/away")).unwrap();
        (dir, base)
    }

    fn read(files: &Files, path: &Path) -> io::Result<String> {
        let mut s = String::new();
        files.open_read(path)?.read_to_string(&mut s)?;
        Ok(s)
    }

    #[test]
    fn beneath_a_root_only_what_lies_inside_opens() {
        let (_d, base) = tree();
        let files = Files::beneath(Arc::new(Beneath::open(&base.join("root")).unwrap()));
        let root = base.join("root");
        assert_eq!(read(&files, &root.join("sub/a.txt")).unwrap(), "inside");
        assert_eq!(read(&files, &root.join("relative")).unwrap(), "inside");
        assert_eq!(read(&files, &root.join("sub/../sub/a.txt")).unwrap(), "inside");
        for escape in ["up/secret", "away/secret", "../other/secret", "sub/../../other/secret"] {
            let e = read(&files, &root.join(escape)).unwrap_err();
            assert!(is_outside(&e), "{escape}: {e}");
        }
        assert!(is_outside(&read(&files, &base.join("other/secret")).unwrap_err()));
        assert!(is_outside(&files.open_dir(&root.join("away")).unwrap_err()));
        assert_eq!(files.open_read(&root.join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(files.reaches(&root.join("away")), "the link itself is inside");
        assert!(!files.reaches(&root.join("away/secret")));
        assert!(files.exists(&root.join("sub")).is_ok());
        assert!(is_outside(&files.write(&root.join("away/planted"), b"x").unwrap_err()));
        assert!(is_outside(&files.remove_file(&root.join("up/secret")).unwrap_err()));
        assert!(base.join("other/secret").exists() && !base.join("other/planted").exists());
        files.write(&root.join("sub/new.txt"), b"new").unwrap();
        assert_eq!(files.read(&root.join("sub/new.txt")).unwrap(), b"new");
        files.remove_file(&root.join("sub/new.txt")).unwrap();
    }

    #[test]
    fn nowhere_opens_nothing() {
        let (_d, base) = tree();
        let files = Files::nowhere();
        assert!(is_outside(&files.open_read(&base.join("root/sub/a.txt")).unwrap_err()));
        assert!(!files.reaches(&base.join("root")));
    }

    #[test]
    fn a_root_named_through_a_symlink_is_still_the_root() {
        let (_d, base) = tree();
        symlink(base.join("root"), base.join("alias")).unwrap();
        let files = Files::beneath(Arc::new(Beneath::open(&base.join("alias")).unwrap()));
        assert_eq!(read(&files, &base.join("alias/sub/a.txt")).unwrap(), "inside");
        assert_eq!(read(&files, &base.join("root/sub/a.txt")).unwrap(), "inside");
    }

    #[test]
    fn a_directory_opened_before_its_name_is_swapped_keeps_pointing_at_itself() {
        let (_d, base) = tree();
        let files = Files::beneath(Arc::new(Beneath::open(&base.join("root")).unwrap()));
        let held = files.open_dir(&base.join("root/sub")).unwrap();
        std::fs::rename(base.join("root/sub"), base.join("root/moved")).unwrap();
        symlink(base.join("other"), base.join("root/sub")).unwrap();
        held.write("new.txt", "x").unwrap();
        assert!(base.join("root/moved/new.txt").exists());
        assert!(!base.join("other/new.txt").exists());
    }

    #[test]
    fn alone_every_path_opens_as_named() {
        let (_d, base) = tree();
        let files = Files::default();
        assert_eq!(read(&files, &base.join("root/away/secret")).unwrap(), "outside");
        assert!(files.open_dir(&base.join("other")).is_ok());
        assert!(files.reaches(&base.join("nowhere")));
        assert!(files.open_read(Path::new("/")).is_ok());
    }

    #[test]
    fn the_systems_own_refusals_are_not_taken_for_escapes() {
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert!(!is_outside(&e));
        assert!(is_outside(&outside()));
    }
}
