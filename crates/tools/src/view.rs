//! `view`: shows a text file with numbered lines, lists a directory, or hands an image to the
//! model.

use std::io::ErrorKind;
use std::path::Path;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::Value;

use crate::args::{optional_bool, required_str, ArgError};
use crate::context::{PermissionRequest, ToolContext};
use crate::output::ToolOutput;
use crate::tool::Tool;

/// Files above this size are refused unless `forceReadLargeFiles` (or a `view_range`) is given:
/// dumping them would flood the model's context.
pub const MAX_VIEW_BYTES: u64 = 10 * 1024 * 1024;

/// How many leading bytes are sniffed for NULs to decide that a file is binary (what git and
/// ripgrep do too).
const BINARY_SNIFF_BYTES: usize = 8000;

/// Files up to this size are read on the calling thread (tens of microseconds at most).
const READ_IN_PLACE_BYTES: u64 = 256 * 1024;

pub struct ViewTool;

/// The model-visible text for a path that does not exist (shared with the other file tools).
pub(crate) fn missing_path_output(shown: &str) -> ToolOutput {
    ToolOutput::fail_with(
        format!("Path {shown} does not exist. Please provide a valid path."),
        "Path does not exist",
        "failure",
    )
}

#[async_trait]
impl Tool for ViewTool {
    fn name(&self) -> &str {
        "view"
    }

    fn description(&self) -> &str {
        "Look at a file or directory. Text files come back with each line prefixed by its \
         1-based number (`N. text`); pass view_range [start, end] to see only part of a file \
         (end -1 means through the last line). Directories are listed one entry per line. \
         Image files (png, jpg, gif, webp) are attached for you to see. Very large files are \
         refused unless forceReadLargeFiles is true. Prefer absolute paths; relative paths are \
         taken from the working directory."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("view")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let raw_path = match required_str(&args, "path") {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let range = match parse_range(args.get("view_range")) {
            Ok(r) => r,
            Err(e) => return e.into(),
        };
        let force = match optional_bool(&args, "forceReadLargeFiles") {
            Ok(f) => f.unwrap_or(false),
            Err(e) => return e.into(),
        };
        let path = ctx.resolve(raw_path);
        let shown = path.display().to_string();

        // The file is opened before permission is asked and read through that handle after,
        // so what was approved is what is read. The open follows symlinks (a link to a file is
        // viewed as that file; a dangling one does not exist) and is made in place: the
        // blocking pool's hand-off costs more, and on a `-p` run's single thread the first one
        // waits for a thread to start.
        let file = match ctx.files.open_read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return missing_path_output(&shown),
            Err(e) if crate::files::is_outside(&e) => return crate::files::outside_output(&shown),
            Err(e) => return ToolOutput::fail(format!("Cannot access {shown}: {e}")),
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return ToolOutput::fail(format!("Cannot access {shown}: {e}")),
        };

        let intention = if meta.is_dir() { format!("List directory: {shown}") } else { format!("Read file: {shown}") };
        if let Err(denied) = ctx.ask_permission(PermissionRequest::Read { intention, path: shown.clone() }).await {
            return denied;
        }

        if meta.is_dir() {
            return list_directory(file, &shown).await;
        }

        if meta.len() > MAX_VIEW_BYTES && !force && range.is_none() {
            return ToolOutput::fail(format!(
                "File {shown} is too large to view at once ({:.1} MB, limit {} MB). Use view_range to \
                 read a portion of it, search it with grep, or set forceReadLargeFiles to true.",
                meta.len() as f64 / (1024.0 * 1024.0),
                MAX_VIEW_BYTES / (1024 * 1024)
            ));
        }

        // A small regular file is read in place too (see the open above), a large one on the
        // blocking pool. Anything else may block (a FIFO, a device): alone it is read as named
        // on the blocking pool; beneath a tenant's workspace it is not read at all.
        let read = if meta.is_file() && meta.len() <= READ_IN_PLACE_BYTES {
            crate::files::read_all(file)
        } else if meta.is_file() {
            tokio::task::spawn_blocking(move || crate::files::read_all(file))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        } else if ctx.files.is_confined() {
            return ToolOutput::fail(format!("{shown} is not a regular file."));
        } else {
            tokio::fs::read(&path).await
        };
        let bytes = match read {
            Ok(b) => b,
            Err(e) => return ToolOutput::fail(format!("Failed to read file {shown}: {e}")),
        };

        if let Some(mime) = image_mime(&path) {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let mut out = ToolOutput::ok("Viewed image file successfully.");
            out.image_data_urls.push(format!("data:{mime};base64,{data}"));
            return out;
        }

        if bytes.iter().take(BINARY_SNIFF_BYTES).any(|b| *b == 0) {
            return ToolOutput::fail(format!(
                "File {shown} appears to be a binary file and cannot be displayed as text. \
                 Use the bash tool (e.g. `file`, `xxd` or `hexdump`) to inspect it."
            ));
        }

        let content = String::from_utf8_lossy(&bytes);
        match number_lines(&content, range) {
            Ok(text) => ToolOutput::ok(text),
            Err(msg) => ToolOutput::fail(msg),
        }
    }
}

/// `[start, end]`, both 1-based; `end == -1` means "to the end of the file".
type ViewRange = (i64, i64);

fn parse_range(value: Option<&Value>) -> Result<Option<ViewRange>, ArgError> {
    let bad = |v: &Value| {
        ArgError(format!(
            "Invalid view_range {v}: expected an array of two integers [start, end] (1-based, end -1 for the end of the file)."
        ))
    };
    let value = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    // Some models send the array as a JSON string.
    let parsed;
    let value = match value {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).map_err(|_| bad(value))?;
            &parsed
        }
        v => v,
    };
    let items = value.as_array().ok_or_else(|| bad(value))?;
    let ints: Vec<i64> = items
        .iter()
        .map(|v| v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)))
        .collect::<Option<_>>()
        .ok_or_else(|| bad(value))?;
    match ints.as_slice() {
        [start, end] => Ok(Some((*start, *end))),
        _ => Err(bad(value)),
    }
}

/// Numbers the lines of `content` (`N. text`), optionally restricted to `range`.
///
/// Lines are split on `\n`, so a trailing newline yields a last empty line; a CR before the
/// newline is dropped so CRLF files read like LF files. The whole result is trimmed at the
/// end, which is what the recorded conversations contain (`3.` for a final empty line).
fn number_lines(content: &str, range: Option<ViewRange>) -> Result<String, String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let total = lines.len();
    let (start, end) = match range {
        None => (1, total),
        Some((start, end)) => {
            if start < 1 || start as u64 > total as u64 {
                return Err(format!(
                    "Invalid view_range [{start}, {end}]: start line {start} is out of range; the file has {total} line{}.",
                    if total == 1 { "" } else { "s" }
                ));
            }
            let end = if end == -1 {
                total
            } else if end < start {
                return Err(format!(
                    "Invalid view_range [{start}, {end}]: the end line must be at least the start line, or -1 to read to the end of the file."
                ));
            } else {
                // An end past the last line just means "to the end".
                (end as u64).min(total as u64) as usize
            };
            (start as usize, end)
        }
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        if !out.is_empty() {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{}. {line}", i + 1));
    }
    Ok(out.trim_end().to_string())
}

/// The directory's own entries (not recursive), sorted by name, one per line.
async fn list_directory(dir: std::fs::File, shown: &str) -> ToolOutput {
    let names = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<String>> {
        let dir = cap_std::fs::Dir::from_std_file(dir);
        let mut names = Vec::new();
        for entry in dir.entries()? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    match names {
        Ok(mut names) => {
            names.sort();
            ToolOutput::ok(names.join("\n"))
        }
        Err(e) => ToolOutput::fail(format!("Failed to list directory {shown}: {e}")),
    }
}

fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::context::{PermissionDecision, PermissionGate};
    use serde_json::json;

    async fn view(ctx: &ToolContext, args: Value) -> ToolOutput {
        ViewTool.run(args, ctx).await
    }

    fn setup(name: &str, content: &[u8]) -> (tempfile::TempDir, ToolContext, String) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        let ctx = ToolContext::simple(dir.path());
        (dir, ctx, p.display().to_string())
    }

    #[tokio::test]
    async fn single_line_without_newline() {
        let (_d, ctx, p) = setup("new_file.txt", b"Created by test");
        let out = view(&ctx, json!({"path": p})).await;
        assert!(out.success);
        assert_eq!(out.text_for_llm, "1. Created by test");
    }

    #[tokio::test]
    async fn trailing_newline_gives_last_empty_line() {
        let (_d, ctx, p) = setup("edit_me.txt", b"Hi Universe\nGoodbye World\n");
        let out = view(&ctx, json!({"path": p})).await;
        assert_eq!(out.text_for_llm, "1. Hi Universe\n2. Goodbye World\n3.");
    }

    #[tokio::test]
    async fn line_range() {
        let (_d, ctx, p) = setup("lines.txt", b"line1\nline2\nline3\nline4\nline5\n");
        let out = view(&ctx, json!({"path": p, "view_range": [2, 4]})).await;
        assert_eq!(out.text_for_llm, "2. line2\n3. line3\n4. line4");
        let out = view(&ctx, json!({"path": p, "view_range": [4, -1]})).await;
        assert_eq!(out.text_for_llm, "4. line4\n5. line5\n6.");
        // An end past the last line is clamped.
        let out = view(&ctx, json!({"path": p, "view_range": [5, 100]})).await;
        assert_eq!(out.text_for_llm, "5. line5\n6.");
        // Stringified arrays are accepted.
        let out = view(&ctx, json!({"path": p, "view_range": "[1, 1]"})).await;
        assert_eq!(out.text_for_llm, "1. line1");
    }

    #[tokio::test]
    async fn invalid_ranges_are_errors() {
        let (_d, ctx, p) = setup("lines.txt", b"a\nb\nc");
        let out = view(&ctx, json!({"path": p, "view_range": [7, 9]})).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, "Invalid view_range [7, 9]: start line 7 is out of range; the file has 3 lines.");
        let out = view(&ctx, json!({"path": p, "view_range": [0, 2]})).await;
        assert!(!out.success);
        let out = view(&ctx, json!({"path": p, "view_range": [3, 2]})).await;
        assert!(!out.success);
        assert!(out.text_for_llm.contains("end line must be at least the start line"), "{}", out.text_for_llm);
        let out = view(&ctx, json!({"path": p, "view_range": [1]})).await;
        assert!(!out.success);
        assert!(out.text_for_llm.starts_with("Invalid view_range [1]"), "{}", out.text_for_llm);
    }

    #[tokio::test]
    async fn crlf_unicode_and_empty() {
        let (_d, ctx, p) = setup("crlf.txt", "héllo\r\nwörld ✓\r\n".as_bytes());
        assert_eq!(view(&ctx, json!({"path": p})).await.text_for_llm, "1. héllo\n2. wörld ✓\n3.");
        let (_d, ctx, p) = setup("empty.txt", b"");
        let out = view(&ctx, json!({"path": p})).await;
        assert!(out.success);
        assert_eq!(out.text_for_llm, "1.");
    }

    #[tokio::test]
    async fn relative_path_resolves_against_cwd() {
        let (_d, ctx, _p) = setup("order.txt", b"ORDER_CONTENT_42");
        assert_eq!(view(&ctx, json!({"path": "order.txt"})).await.text_for_llm, "1. ORDER_CONTENT_42");
    }

    #[tokio::test]
    async fn missing_path() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let p = dir.path().join("does_not_exist.txt").display().to_string();
        let out = view(&ctx, json!({"path": p})).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, format!("Path {p} does not exist. Please provide a valid path."));
        assert_eq!(out.error_message.as_deref(), Some("Path does not exist"));
    }

    #[tokio::test]
    async fn directory_lists_first_level_sorted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("readme.txt"), "x").unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/inner.txt"), "x").unwrap();
        let ctx = ToolContext::simple(dir.path());
        let out = view(&ctx, json!({"path": dir.path()})).await;
        assert_eq!(out.text_for_llm, "a.txt\nreadme.txt\nsub");
    }

    #[tokio::test]
    async fn image_is_attached() {
        let (_d, ctx, p) = setup("test.PNG", &[0x89, b'P', b'N', b'G', 0, 1]);
        let out = view(&ctx, json!({"path": p})).await;
        assert!(out.success);
        assert_eq!(out.text_for_llm, "Viewed image file successfully.");
        assert_eq!(out.image_data_urls, vec!["data:image/png;base64,iVBORwAB".to_string()]);
    }

    #[tokio::test]
    async fn binary_file_is_refused() {
        let (_d, ctx, p) = setup("blob.bin", &[1, 2, 0, 3]);
        let out = view(&ctx, json!({"path": p})).await;
        assert!(!out.success);
        assert!(out.text_for_llm.contains("binary file"), "{}", out.text_for_llm);
    }

    #[tokio::test]
    async fn symlink_is_followed() {
        let (d, ctx, p) = setup("target.txt", b"through the link");
        let link = d.path().join("link.txt");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(view(&ctx, json!({"path": link})).await.text_for_llm, "1. through the link");
    }

    #[tokio::test]
    async fn huge_file_guard() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("huge.txt");
        let f = std::fs::File::create(&p).unwrap();
        // Sparse: no real disk use.
        f.set_len(MAX_VIEW_BYTES + 1).unwrap();
        let ctx = ToolContext::simple(dir.path());
        let out = view(&ctx, json!({"path": p})).await;
        assert!(!out.success);
        assert!(out.text_for_llm.contains("too large"), "{}", out.text_for_llm);
        assert!(out.text_for_llm.contains("forceReadLargeFiles"), "{}", out.text_for_llm);
    }

    struct Recorder {
        seen: Mutex<Vec<PermissionRequest>>,
        deny: bool,
    }

    #[async_trait]
    impl PermissionGate for Recorder {
        async fn request(&self, req: PermissionRequest) -> PermissionDecision {
            self.seen.lock().unwrap().push(req);
            if self.deny {
                PermissionDecision::Denied { text_for_llm: "nope".into(), code: "denied".into() }
            } else {
                PermissionDecision::Approved
            }
        }
    }

    #[tokio::test]
    async fn asks_read_permission_and_honours_denial() {
        let (d, mut ctx, p) = setup("secret.txt", b"s3cret");
        let gate = Arc::new(Recorder { seen: Mutex::new(Vec::new()), deny: true });
        ctx.permissions = gate.clone();
        let out = view(&ctx, json!({"path": p})).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, "nope");
        assert_eq!(out.error_code.as_deref(), Some("denied"));
        let _ = view(&ctx, json!({"path": d.path()})).await;
        let seen = gate.seen.lock().unwrap();
        assert_eq!(seen[0], PermissionRequest::Read { intention: format!("Read file: {p}"), path: p.clone() });
        let dp = d.path().display().to_string();
        assert_eq!(seen[1], PermissionRequest::Read { intention: format!("List directory: {dp}"), path: dp });
    }
}
