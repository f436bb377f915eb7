//! `edit`: replaces exactly one occurrence of `old_str` with `new_str` in an existing file.

use std::io::{ErrorKind, Read as _, Seek as _, SeekFrom, Write as _};

use async_trait::async_trait;
use serde_json::Value;

use crate::args::{optional_str, required_str};
use crate::context::{PermissionRequest, ToolContext};
use crate::diff::unified_diff;
use crate::output::ToolOutput;
use crate::output::{FileEdit, FileEditKind};
use crate::tool::Tool;
use crate::view::missing_path_output;

pub struct EditTool;

/// How much of `old_str` is quoted back when it matches several places.
const AMBIGUOUS_PREFIX_CHARS: usize = 50;

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Change an existing file by replacing one exact piece of text. old_str must occur \
         exactly once in the file (include enough surrounding lines to make it unique, with \
         the same whitespace); it is replaced by new_str (empty or omitted to delete it). \
         Prefer absolute paths."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("edit")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let raw_path = match required_str(&args, "path") {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let (old_str, new_str) = match (optional_str(&args, "old_str"), optional_str(&args, "new_str")) {
            (Ok(o), Ok(n)) => (o.unwrap_or(""), n.unwrap_or("")),
            (Err(e), _) | (_, Err(e)) => return e.into(),
        };
        let path = ctx.resolve(raw_path);
        let shown = path.display().to_string();

        // The file is opened before permission is asked and written through that handle
        // after, so the file the user approved is the file changed. One it may only read is
        // still read (and shown); writing it fails below as it would have.
        let file = match ctx.files.open_read_write(&path) {
            Err(e) if e.kind() == ErrorKind::PermissionDenied && !crate::files::is_outside(&e) => {
                ctx.files.open_read(&path).map(|f| (f, Some(e)))
            }
            opened => opened.map(|f| (f, None)),
        };
        let (mut file, unwritable) = match file {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return missing_path_output(&shown),
            Err(e) if crate::files::is_outside(&e) => return crate::files::outside_output(&shown),
            Err(e) if e.kind() == ErrorKind::IsADirectory => {
                return ToolOutput::fail(format!("Path {shown} is a directory, not a file; only files can be edited."));
            }
            Err(e) => return ToolOutput::fail(format!("Failed to read file {shown}: {e}")),
        };
        let mut bytes = Vec::new();
        if let Err(e) = file.read_to_end(&mut bytes) {
            return ToolOutput::fail(format!("Failed to read file {shown}: {e}"));
        }
        let content = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => {
                return ToolOutput::fail(format!(
                    "File {shown} is not valid UTF-8 text and cannot be edited with this tool."
                ))
            }
        };

        let new_content = match replace_once(&content, old_str, new_str, &shown) {
            Ok(c) => c,
            Err(msg) => return ToolOutput::fail(msg),
        };

        let diff = unified_diff(&shown, &content, &new_content);
        let request = PermissionRequest::Write {
            intention: "Edit file".into(),
            file_name: shown.clone(),
            diff: diff.clone(),
            new_file_contents: new_content.clone(),
            old_file_contents: Some(content.clone()),
        };
        if let Err(denied) = ctx.ask_permission(request).await {
            return denied;
        }

        // Writing through the existing file (truncate + write) keeps its inode, so its mode,
        // owner and any hard or symbolic links to it stay as they were.
        let written = match unwritable {
            Some(e) => Err(e),
            None => tokio::task::spawn_blocking(move || {
                file.set_len(0)?;
                file.seek(SeekFrom::Start(0))?;
                file.write_all(new_content.as_bytes())
            })
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e))),
        };
        if let Err(e) = written {
            return ToolOutput::fail(format!("Failed to write file {shown}: {e}"));
        }

        let mut out = ToolOutput::ok(format!("File {shown} updated with changes."));
        out.detailed_content = Some(diff);
        out.file_edit = Some(FileEdit { path: shown.clone(), kind: FileEditKind::Edit });
        out
    }
}

/// The new file contents, or the model-visible reason why nothing was changed.
fn replace_once(content: &str, old_str: &str, new_str: &str, shown: &str) -> Result<String, String> {
    if old_str.is_empty() {
        // Nothing to anchor on; only an empty file can be "edited" this way.
        if content.is_empty() {
            return Ok(new_str.to_string());
        }
        return Err(format!(
            "old_str must not be empty when editing {shown}, which is not empty; no changes made. \
             Provide the exact text to replace."
        ));
    }

    let mut old = old_str.to_string();
    let mut new = new_str.to_string();
    let mut starts: Vec<usize> = content.match_indices(old.as_str()).map(|(i, _)| i).collect();
    // Models write `\n`; a CRLF file needs the same edit with its own line endings, and the
    // replacement must keep them.
    if starts.is_empty() && content.contains("\r\n") && old.contains('\n') {
        old = to_crlf(&old);
        new = to_crlf(&new);
        starts = content.match_indices(old.as_str()).map(|(i, _)| i).collect();
    }

    match starts.as_slice() {
        [] => Err(format!(
            "No match found: old_str not found in {shown}; no changes made; you might want to try again with correct old_str"
        )),
        [at] => {
            let mut out = String::with_capacity(content.len() + new.len());
            out.push_str(&content[..*at]);
            out.push_str(&new);
            out.push_str(&content[at + old.len()..]);
            Ok(out)
        }
        many => {
            let lines: Vec<String> =
                many.iter().map(|i| (content[..*i].matches('\n').count() + 1).to_string()).collect();
            let first_line = old_str.lines().next().unwrap_or("");
            let prefix: String = first_line.chars().take(AMBIGUOUS_PREFIX_CHARS).collect();
            Err(format!(
                "Ambiguous match for old_str in {shown}: pattern starting with \"{prefix}\" matched at lines {}. No changes made; try again with a more specific old_str.",
                lines.join(", ")
            ))
        }
    }
}

/// `\n` → `\r\n`, leaving existing `\r\n` alone.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    use super::*;
    use crate::context::{PermissionDecision, PermissionGate};
    use serde_json::json;

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext, String) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("edit_me.txt");
        std::fs::write(&p, content).unwrap();
        let ctx = ToolContext::simple(dir.path());
        (dir, ctx, p.display().to_string())
    }

    #[tokio::test]
    async fn replaces_single_occurrence() {
        let (_d, ctx, p) = setup("Hello World\nGoodbye World\n");
        let out = EditTool.run(json!({"path": p, "old_str": "Hello World", "new_str": "Hi Universe"}), &ctx).await;
        assert!(out.success);
        assert_eq!(out.text_for_llm, format!("File {p} updated with changes."));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "Hi Universe\nGoodbye World\n");
        let diff = out.detailed_content.unwrap();
        assert!(diff.contains("-Hello World\n+Hi Universe\n"), "{diff}");
        assert_eq!(out.file_edit, Some(FileEdit { path: p.clone(), kind: FileEditKind::Edit }));
    }

    #[tokio::test]
    async fn no_match() {
        let (_d, ctx, p) = setup("abc\n");
        let out = EditTool.run(json!({"path": p, "old_str": "zzz", "new_str": "y"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(
            out.text_for_llm,
            format!("No match found: old_str not found in {p}; no changes made; you might want to try again with correct old_str")
        );
    }

    #[tokio::test]
    async fn ambiguous_reports_lines() {
        let (_d, ctx, p) = setup("one\ntwo\ntwo\nthree\n");
        let out = EditTool.run(json!({"path": p, "old_str": "two", "new_str": "2"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(
            out.text_for_llm,
            format!("Ambiguous match for old_str in {p}: pattern starting with \"two\" matched at lines 2, 3. No changes made; try again with a more specific old_str.")
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one\ntwo\ntwo\nthree\n");
        // Only the first line of a multi-line old_str is quoted.
        let (_d, ctx, p) = setup("a\nb\na\nb\n");
        let out = EditTool.run(json!({"path": p, "old_str": "a\nb", "new_str": ""}), &ctx).await;
        assert!(
            out.text_for_llm.contains("pattern starting with \"a\" matched at lines 1, 3."),
            "{}",
            out.text_for_llm
        );
    }

    #[tokio::test]
    async fn missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let p = dir.path().join("nope.txt").display().to_string();
        let out = EditTool.run(json!({"path": p, "old_str": "a", "new_str": "b"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, format!("Path {p} does not exist. Please provide a valid path."));
    }

    #[tokio::test]
    async fn keeps_crlf_and_mode() {
        let (_d, ctx, p) = setup("first\r\nsecond\r\nthird\r\n");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = EditTool.run(json!({"path": p, "old_str": "first\nsecond", "new_str": "1st\n2nd"}), &ctx).await;
        assert!(out.success, "{}", out.text_for_llm);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1st\r\n2nd\r\nthird\r\n");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
    }

    #[tokio::test]
    async fn delete_with_missing_new_str() {
        let (_d, ctx, p) = setup("keep drop keep");
        let out = EditTool.run(json!({"path": p, "old_str": " drop"}), &ctx).await;
        assert!(out.success);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep keep");
    }

    struct Deny;
    #[async_trait]
    impl PermissionGate for Deny {
        async fn request(&self, req: PermissionRequest) -> PermissionDecision {
            assert!(matches!(&req, PermissionRequest::Write { intention, .. } if intention == "Edit file"));
            PermissionDecision::Denied { text_for_llm: "denied!".into(), code: "denied".into() }
        }
    }

    #[tokio::test]
    async fn denial_prevents_writing() {
        let (_d, mut ctx, p) = setup("abc");
        ctx.permissions = Arc::new(Deny);
        let out = EditTool.run(json!({"path": p, "old_str": "b", "new_str": "x"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, "denied!");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "abc");
    }
}
