//! Reading a transcript's attachment: a regular file under the transcript's directory, reached
//! without `..` or a symbolic link on the way (a transcript from elsewhere cannot pull in
//! `~/.ssh/id_rsa` through `../../` or a link), and no bigger than a limit.

use std::io::Read;
use std::path::{Component, Path};

#[derive(Debug)]
pub enum Refused {
    Escapes,
    NotRegular,
    TooLarge,
    NotFound,
    Unreadable(std::io::Error),
}

impl Refused {
    /// The original's code and text for it.
    pub fn diagnostic(&self) -> (&'static str, String) {
        match self {
            Refused::Escapes => (
                "attachment_path_traversal",
                "Attachment path must stay within the JSONL input directory without symlinks.".into(),
            ),
            Refused::NotRegular => ("invalid_attachment", "Attachment path must resolve to a regular file.".into()),
            Refused::TooLarge => {
                ("attachment_too_large", "Attachment exceeds the runtime's 10 MB inline attachment limit.".into())
            }
            Refused::NotFound => ("attachment_unreadable", "Attachment path does not exist.".into()),
            Refused::Unreadable(e) => ("attachment_unreadable", format!("Attachment could not be read: {e}")),
        }
    }
}

/// `relative` under `dir`, at most `limit` bytes.
pub fn read_beneath(dir: &Path, relative: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    let mut at = dir.to_path_buf();
    for part in relative.components() {
        match part {
            Component::Normal(p) => at.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(Refused::Escapes),
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(Refused::Escapes),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refused::NotFound),
            Err(e) => return Err(Refused::Unreadable(e)),
        }
    }
    let meta = std::fs::symlink_metadata(&at).map_err(Refused::Unreadable)?;
    if !meta.is_file() {
        return Err(Refused::NotRegular);
    }
    if meta.len() > limit {
        return Err(Refused::TooLarge);
    }
    let mut data = Vec::new();
    let file = std::fs::File::open(&at).map_err(Refused::Unreadable)?;
    // A file that grows while it is read stops at the limit and counts as too large.
    file.take(limit + 1).read_to_end(&mut data).map_err(Refused::Unreadable)?;
    if data.len() as u64 > limit {
        return Err(Refused::TooLarge);
    }
    Ok(data)
}
