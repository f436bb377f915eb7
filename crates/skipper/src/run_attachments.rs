//! `--attachment PATH`: an image or a PDF handed to the model with the task, as the bytes an
//! SDK would send (a blob attachment). Anything else is refused before the run starts.

use std::path::Path;

use base64::Engine as _;
use protocol::generated::types::{Attachment, AttachmentBlob};

/// The kinds a model takes as content, by extension.
const KINDS: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("pdf", "application/pdf"),
];

/// Reads each path (relative to `cwd`). `Err` is the message for stderr.
pub fn read(paths: &[String], cwd: &Path) -> Result<Vec<Attachment>, String> {
    paths.iter().map(|p| one(p, cwd)).collect()
}

fn one(given: &str, cwd: &Path) -> Result<Attachment, String> {
    let path = cwd.join(given);
    if !path.is_file() {
        return Err(format!("--attachment file not found: {given}"));
    }
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let Some((_, mime)) = KINDS.iter().find(|(ext, _)| *ext == extension) else {
        return Err(format!("--attachment file type not supported (must be an image or a PDF): {given}"));
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("--attachment {given}: {e}"))?;
    let kind = if mime.starts_with("image/") { "Image" } else { "Document" };
    Ok(Attachment::Blob(AttachmentBlob {
        data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        mime_type: mime.to_string(),
        display_name: Some(format!("{kind} file at path {}", path.display())),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_and_pdfs_go_as_their_bytes_other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.PNG"), [0x89, b'P', b'N', b'G']).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
        let got = read(&["shot.PNG".into()], dir.path()).unwrap();
        let Attachment::Blob(b) = &got[0] else { panic!("{got:?}") };
        assert_eq!((b.mime_type.as_str(), b.data.as_deref()), ("image/png", Some("iVBORw==")));
        assert!(b.display_name.as_deref().unwrap().ends_with("/shot.PNG"));
        assert_eq!(
            read(&["notes.txt".into()], dir.path()).unwrap_err(),
            "--attachment file type not supported (must be an image or a PDF): notes.txt"
        );
        assert_eq!(read(&["gone.png".into()], dir.path()).unwrap_err(), "--attachment file not found: gone.png");
    }
}
