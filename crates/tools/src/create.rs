//! `create`: writes a new file; never overwrites an existing one.

use std::io::{ErrorKind, Write as _};

use async_trait::async_trait;
use serde_json::Value;

use crate::args::required_str;
use crate::context::{PermissionRequest, ToolContext};
use crate::diff::unified_diff;
use crate::output::ToolOutput;
use crate::output::{FileEdit, FileEditKind};
use crate::tool::Tool;

pub struct CreateTool;

#[async_trait]
impl Tool for CreateTool {
    fn name(&self) -> &str {
        "create"
    }

    fn description(&self) -> &str {
        "Make a new file with the given contents. The file must not exist yet (use `edit` to \
         change existing files) and its parent directory must already exist. Prefer absolute \
         paths."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("create")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let (raw_path, file_text) = match (required_str(&args, "path"), required_str(&args, "file_text")) {
            (Ok(p), Ok(t)) => (p, t),
            (Err(e), _) | (_, Err(e)) => return e.into(),
        };
        let path = ctx.resolve(raw_path);
        let shown = path.display().to_string();

        // The parent directory is opened before permission is asked and the file is created
        // in it after: a name swapped for a link meanwhile does not redirect the write.
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return ToolOutput::fail(format!(
                "Path {shown} already exists as a directory. Choose a file path that does not exist yet."
            ));
        };
        let dir = match ctx.files.open_dir(parent) {
            Ok(d) => d,
            Err(e) if crate::files::is_outside(&e) => return crate::files::outside_output(&shown),
            Err(_) => {
                return ToolOutput::fail(format!(
                    "Parent directory {} does not exist. You need to create it before creating the file.",
                    parent.display()
                ))
            }
        };
        match dir.metadata(name) {
            Ok(m) if m.is_dir() => {
                return ToolOutput::fail(format!(
                    "Path {shown} already exists as a directory. Choose a file path that does not exist yet."
                ))
            }
            Ok(_) => {
                return ToolOutput::fail(format!(
                    "Path {shown} already exists as a file. Use `view` to check contents then edit it."
                ))
            }
            Err(e) if crate::files::is_outside(&e) => return crate::files::outside_output(&shown),
            Err(_) => {}
        }

        let diff = unified_diff(&shown, "", file_text);
        let request = PermissionRequest::Write {
            intention: "Create file".into(),
            file_name: shown.clone(),
            diff: diff.clone(),
            new_file_contents: file_text.to_string(),
            old_file_contents: None,
        };
        if let Err(denied) = ctx.ask_permission(request).await {
            return denied;
        }

        // `create_new` (no link followed) so a file that appeared while the user was deciding
        // is not clobbered.
        let write = {
            let name = name.to_os_string();
            let text = file_text.to_string();
            tokio::task::spawn_blocking(move || {
                let mut options = cap_std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                let mut f = dir.open_with(name, &options)?;
                f.write_all(text.as_bytes())
            })
            .await
        };
        match write {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.kind() == ErrorKind::AlreadyExists => {
                return ToolOutput::fail(format!(
                    "Path {shown} already exists as a file. Use `view` to check contents then edit it."
                ))
            }
            Ok(Err(e)) => return ToolOutput::fail(format!("Failed to create file {shown}: {e}")),
            Err(e) => return ToolOutput::fail(format!("Failed to create file {shown}: {e}")),
        }

        // The original counts JavaScript string length (UTF-16 code units).
        let count = file_text.encode_utf16().count();
        let mut out = ToolOutput::ok(format!("Created file {shown} with {count} characters"));
        out.detailed_content = Some(diff);
        out.file_edit = Some(FileEdit { path: shown.clone(), kind: FileEditKind::Create });
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::context::{PermissionDecision, PermissionGate};
    use serde_json::json;

    #[tokio::test]
    async fn creates_file() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let p = dir.path().join("new_file.txt").display().to_string();
        let out = CreateTool.run(json!({"path": p, "file_text": "Created by test"}), &ctx).await;
        assert!(out.success);
        assert_eq!(out.text_for_llm, format!("Created file {p} with 15 characters"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "Created by test");
        let diff = out.detailed_content.unwrap();
        assert!(diff.starts_with(&format!("diff --git a{p} b{p}\n")), "{diff}");
        assert!(diff.contains("+Created by test"), "{diff}");
        assert_eq!(out.file_edit, Some(FileEdit { path: p.clone(), kind: FileEditKind::Create }));
    }

    #[tokio::test]
    async fn relative_path_and_utf16_count() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let out = CreateTool.run(json!({"path": "e.txt", "file_text": "a😀"}), &ctx).await;
        let p = dir.path().join("e.txt").display().to_string();
        assert_eq!(out.text_for_llm, format!("Created file {p} with 3 characters"));
    }

    #[tokio::test]
    async fn refuses_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let p = dir.path().join("x.txt");
        std::fs::write(&p, "old").unwrap();
        let p = p.display().to_string();
        let out = CreateTool.run(json!({"path": p, "file_text": "new"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(
            out.text_for_llm,
            format!("Path {p} already exists as a file. Use `view` to check contents then edit it.")
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
    }

    #[tokio::test]
    async fn parent_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::simple(dir.path());
        let parent = dir.path().join("nope");
        let p = parent.join("x.txt").display().to_string();
        let out = CreateTool.run(json!({"path": p, "file_text": "new"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(
            out.text_for_llm,
            format!(
                "Parent directory {} does not exist. You need to create it before creating the file.",
                parent.display()
            )
        );
    }

    struct Deny;
    #[async_trait]
    impl PermissionGate for Deny {
        async fn request(&self, req: PermissionRequest) -> PermissionDecision {
            match req {
                PermissionRequest::Write { intention, new_file_contents, .. } => {
                    assert_eq!(intention, "Create file");
                    assert_eq!(new_file_contents, "body");
                }
                other => panic!("unexpected {other:?}"),
            }
            PermissionDecision::Denied {
                text_for_llm: "The user rejected this tool call.".into(),
                code: "denied".into(),
            }
        }
    }

    #[tokio::test]
    async fn denial_prevents_writing() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::simple(dir.path());
        ctx.permissions = Arc::new(Deny);
        let p = dir.path().join("x.txt");
        let out = CreateTool.run(json!({"path": p, "file_text": "body"}), &ctx).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, "The user rejected this tool call.");
        assert_eq!(out.error_code.as_deref(), Some("denied"));
        assert!(!p.exists());
    }
}
