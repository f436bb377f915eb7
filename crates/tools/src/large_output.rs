//! Spilling results that are too large to hand to the model in one piece.

use std::path::{Path, PathBuf};

use rand::Rng;

/// Results longer than this many bytes are written to a file (threshold observed in the
/// original's telemetry).
pub const LARGE_OUTPUT_THRESHOLD: usize = 20 * 1024;

/// How many characters of a spilled result the model still sees inline.
const PREVIEW_CHARS: usize = 500;

/// If `text` exceeds [`LARGE_OUTPUT_THRESHOLD`], saves it under `temp_dir` as
/// `<epoch-ms>-copilot-tool-output-<rand6>.txt` and returns the short text that replaces it.
/// Returns `None` when the text is small enough. When the file cannot be written the caller
/// keeps the full text (better a long result than a lost one).
pub fn spill_if_large(text: &str, temp_dir: &Path) -> Option<String> {
    if text.len() <= LARGE_OUTPUT_THRESHOLD {
        return None;
    }
    let path = spill_path(temp_dir);
    if let Err(e) = std::fs::create_dir_all(temp_dir).and_then(|_| std::fs::write(&path, text)) {
        tracing::warn!(path = %path.display(), error = %e, "could not save large tool output");
        return None;
    }
    Some(large_output_text(text, &path))
}

/// The replacement text for a result of `text` saved at `path`.
pub fn large_output_text(text: &str, path: &Path) -> String {
    let kb = text.len() as f64 / 1024.0;
    let preview: String = text.chars().take(PREVIEW_CHARS).collect();
    format!(
        "Output too large to read at once ({kb:.1} KB). Saved to: {}\n\
         Consider using tools like grep (for searching), head/tail (for viewing start/end), view with view_range (for specific sections), or jq (for JSON) to examine portions of the output.\n\
         \n\
         Preview (first 500 chars):\n\
         {preview}",
        path.display()
    )
}

fn spill_path(temp_dir: &Path) -> PathBuf {
    temp_dir.join(spill_name())
}

/// A fresh spill file name: `<epoch-ms>-copilot-tool-output-<rand6>.txt`.
pub fn spill_name() -> String {
    let ms = chrono::Utc::now().timestamp_millis();
    let mut rng = rand::thread_rng();
    let suffix: String = (0..6)
        .map(|_| {
            let i = rng.gen_range(0..36u8);
            char::from(if i < 10 { b'0' + i } else { b'a' + i - 10 })
        })
        .collect();
    format!("{ms}-copilot-tool-output-{suffix}.txt")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn small_text_is_kept() {
        assert!(spill_if_large("short", Path::new("/nonexistent")).is_none());
    }

    #[test]
    fn large_text_is_saved_with_preview() {
        let dir = tempfile::tempdir().unwrap();
        let text = "x".repeat(100_000);
        let out = spill_if_large(&text, dir.path()).unwrap();
        let (head, rest) = out.split_once(" Saved to: ").unwrap();
        assert_eq!(head, "Output too large to read at once (97.7 KB).");
        let (path, tail) = rest.split_once('\n').unwrap();
        assert!(path.starts_with(dir.path().to_str().unwrap()));
        let name = Path::new(path).file_name().unwrap().to_str().unwrap();
        assert!(name.contains("-copilot-tool-output-") && name.ends_with(".txt"), "{name}");
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        assert_eq!(
            tail,
            format!(
                "Consider using tools like grep (for searching), head/tail (for viewing start/end), view with view_range (for specific sections), or jq (for JSON) to examine portions of the output.\n\nPreview (first 500 chars):\n{}",
                "x".repeat(500)
            )
        );
    }
}
