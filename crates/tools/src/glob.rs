//! `glob`: lists files whose path matches a glob pattern, honouring ignore rules.

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{paths, required_str};
use crate::context::{PermissionRequest, ToolContext};
use crate::files::Files;
use crate::output::ToolOutput;
use crate::tool::Tool;
use crate::walk::{parallel_files, resolve_roots, GlobFilter, SearchRoot};

pub struct GlobTool;

pub const NO_FILES_TEXT: &str = "No files matched the pattern.";

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Find files by name pattern, e.g. \"**/*.ts\" or \"src/**/*.rs\". A pattern without a \
         slash matches file names at any depth. Searches the working directory unless paths \
         names other directories; .gitignore'd and hidden files are skipped. Prints one path \
         per line, relative to the searched directory."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("glob")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let pattern = match required_str(&args, "pattern") {
            Ok(p) if !p.trim().is_empty() => p.to_string(),
            Ok(_) => return ToolOutput::fail("Invalid argument \"pattern\": expected a non-empty glob pattern."),
            Err(e) => return e.into(),
        };
        let given = match paths(&args) {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let mut roots = match resolve_roots(ctx, given).await {
            Ok(r) => r,
            Err(e) => return e,
        };
        for root in &roots {
            let shown = root.abs.display().to_string();
            let request = PermissionRequest::Read {
                intention: format!("Search for files matching pattern in: {shown}"),
                path: shown,
            };
            if let Err(denied) = ctx.ask_permission(request).await {
                return denied;
            }
        }
        // With one root, results are `./`-relative to it; with several they keep the root as
        // given so they stay distinguishable.
        if let [root] = roots.as_mut_slice() {
            root.shown = ".".into();
        }

        let cancel = ctx.cancel.clone();
        let cwd = ctx.cwd.clone();
        let files = ctx.files.clone();
        let task = tokio::task::spawn_blocking(move || find(&pattern, &roots, &cwd, &files, &cancel));
        tokio::select! {
            _ = ctx.cancel.cancelled() => ToolOutput::interrupted(),
            joined = task => match joined {
                Ok(Ok(files)) if files.is_empty() => ToolOutput::ok(NO_FILES_TEXT),
                Ok(Ok(files)) => ToolOutput::ok(files.join("\n")),
                Ok(Err(msg)) => ToolOutput::fail(msg),
                Err(e) => ToolOutput::fail(format!("File search failed: {e}")),
            },
        }
    }
}

/// The pattern relative to `root`: the root's own absolute path is dropped, since the glob is
/// matched against paths below the root.
fn relative_pattern(pattern: &str, root: &SearchRoot) -> String {
    let root_str = root.abs.display().to_string();
    let p = pattern.strip_prefix(&format!("{}/", root_str.trim_end_matches('/'))).unwrap_or(pattern);
    p.to_string()
}

/// The matching files under every root, found on several threads and given in the
/// sequential walker's order (each root's files by path).
fn find(
    pattern: &str,
    roots: &[SearchRoot],
    cwd: &std::path::Path,
    reach: &Files,
    cancel: &CancellationToken,
) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    for root in roots {
        let filter = GlobFilter::new(&relative_pattern(pattern, root))?;
        let found = parallel_files(cwd, root, None, reach, cancel, || {
            |entry: &ignore::DirEntry| {
                // Only files below the root: a file named as the root is not a pattern match.
                if entry.depth() == 0 {
                    return None;
                }
                let rel = entry.path().strip_prefix(&root.abs).ok()?;
                // A name the walk reached through a directory swapped for a link meanwhile is
                // not beneath the workspace: left out.
                (filter.matches(rel) && reach.reaches(entry.path())).then_some(())
            }
        })?;
        if cancel.is_cancelled() {
            return Ok(files);
        }
        files.extend(found.into_iter().map(|(path, ())| root.display(&path)));
    }
    Ok(files)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in ["src/index.ts", "src/util/z.ts", "src/util/a.ts", "b.ts", "a-b/c.ts", "readme.md", "src/x.tsx"] {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let ctx = ToolContext::simple(d);
        (dir, ctx)
    }

    async fn glob(ctx: &ToolContext, args: Value) -> String {
        let out = GlobTool.run(args, ctx).await;
        assert!(out.success, "{}", out.text_for_llm);
        out.text_for_llm
    }

    #[tokio::test]
    async fn recursive_pattern_sorted() {
        let (_d, ctx) = tree();
        assert_eq!(
            glob(&ctx, json!({"pattern": "**/*.ts"})).await,
            "./a-b/c.ts\n./b.ts\n./src/index.ts\n./src/util/a.ts\n./src/util/z.ts"
        );
        // Without a slash the pattern matches names at any depth, as in .gitignore.
        assert_eq!(glob(&ctx, json!({"pattern": "*.tsx"})).await, "./src/x.tsx");
        assert_eq!(glob(&ctx, json!({"pattern": "src/*.ts"})).await, "./src/index.ts");
        assert_eq!(glob(&ctx, json!({"pattern": "./src/*.ts"})).await, "./src/index.ts");
    }

    #[tokio::test]
    async fn relative_to_given_root() {
        let (d, ctx) = tree();
        let src = d.path().join("src").display().to_string();
        assert_eq!(
            glob(&ctx, json!({"pattern": "**/*.ts", "paths": src})).await,
            "./index.ts\n./util/a.ts\n./util/z.ts"
        );
        assert_eq!(glob(&ctx, json!({"pattern": "*.ts", "path": "src/util"})).await, "./a.ts\n./z.ts");
        let abs_pattern = format!("{src}/util/*.ts");
        assert_eq!(glob(&ctx, json!({"pattern": abs_pattern, "paths": src})).await, "./util/a.ts\n./util/z.ts");
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.ts", "paths": ["src/util", "a-b"]})).await,
            "src/util/a.ts\nsrc/util/z.ts\na-b/c.ts"
        );
    }

    #[tokio::test]
    async fn no_match() {
        let (_d, ctx) = tree();
        assert_eq!(glob(&ctx, json!({"pattern": "**/*.py"})).await, "No files matched the pattern.");
    }

    #[tokio::test]
    async fn ignored_and_hidden_files_are_skipped() {
        let (d, ctx) = tree();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        std::fs::write(d.path().join(".gitignore"), "src/util/\n").unwrap();
        std::fs::write(d.path().join(".hidden.ts"), "x").unwrap();
        assert_eq!(glob(&ctx, json!({"pattern": "**/*.ts"})).await, "./a-b/c.ts\n./b.ts\n./src/index.ts");
    }

    #[tokio::test]
    async fn missing_root() {
        let (_d, ctx) = tree();
        let out = GlobTool.run(json!({"pattern": "*", "paths": "nowhere"}), &ctx).await;
        assert!(!out.success);
    }
}
