//! File tools confined to the tenant's workspace. On a shared server a session's model must not
//! read or write another tenant's files (or the server's), whatever its client approves: the
//! built-in file tools are wrapped so that every path they are given is resolved — `..` and
//! symlinks included — and refused unless it lies inside the workspace that holds the
//! session's working directory. The refusal happens before the tool runs, so no permission is
//! even asked for.
//!
//! Shell commands and MCP servers are confined by the command sandbox instead
//! (`command_sandbox.rs`).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tools::{Tool, ToolContext, ToolOutput};

/// The tools that take file system paths, and the arguments that name them.
const FILE_TOOLS: &[(&str, &[&str])] = &[
    ("view", &["path"]),
    ("create", &["path"]),
    ("edit", &["path"]),
    ("grep", &["paths", "path"]),
    ("glob", &["paths", "path"]),
];

/// `builtins` with every file tool confined to whichever of `roots` (canonical tenant
/// workspaces) holds the session's working directory.
pub fn confine(builtins: &tools::Registry, roots: Vec<PathBuf>) -> tools::Registry {
    let roots = Arc::new(roots);
    let mut out = tools::Registry::default();
    for tool in builtins.tools() {
        match FILE_TOOLS.iter().find(|(name, _)| *name == tool.name()) {
            Some((_, keys)) => out.push(Arc::new(Confined { inner: tool.clone(), keys, roots: roots.clone() })),
            None => out.push(tool.clone()),
        }
    }
    out
}

struct Confined {
    inner: Arc<dyn Tool>,
    keys: &'static [&'static str],
    roots: Arc<Vec<PathBuf>>,
}

impl Confined {
    /// The first path argument that leaves the workspace, if any.
    fn outside(&self, args: &Value, ctx: &ToolContext) -> Option<String> {
        let cwd = ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone());
        // The innermost root holding the cwd: sessions are only ever created inside one.
        let root = self.roots.iter().filter(|r| cwd.starts_with(r)).max_by_key(|r| r.as_os_str().len());
        let named = self.keys.iter().flat_map(|k| strings(args.get(*k)));
        let mut named: Vec<String> = named.collect();
        if named.is_empty() {
            named.push(".".into()); // grep and glob search the cwd by default
        }
        named.into_iter().find(|p| match root {
            Some(root) => !resolve(&cwd, p).is_some_and(|r| r.starts_with(root)),
            None => true,
        })
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// Where `p` (absolute, or relative to `cwd`) really is: the deepest existing ancestor with
/// symlinks resolved, then the rest as written. `None` when the rest climbs (`..`) — it could
/// not be resolved honestly before it exists.
fn resolve(cwd: &Path, p: &str) -> Option<PathBuf> {
    let joined = cwd.join(p);
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for c in rest.iter().rev() {
                out.push(c);
            }
            return Some(out);
        }
        if existing.symlink_metadata().is_ok() {
            // It exists but does not resolve: a dangling symlink, which a write would follow.
            return None;
        }
        let name = existing.file_name()?;
        rest.push(name.to_os_string());
        existing = existing.parent()?;
        // A `..` or `.` cannot be a file name, so the remainder holds plain names only; but a
        // `..` before them would have been taken as part of `existing` — refuse it explicitly.
        if existing.components().next_back().is_some_and(|c| matches!(c, Component::ParentDir)) {
            return None;
        }
    }
}

#[async_trait::async_trait]
impl Tool for Confined {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Arc<Value> {
        self.inner.parameters()
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        if let Some(p) = self.outside(&args, ctx) {
            return ToolOutput::fail(format!(
                "Path \"{p}\" is outside this session's workspace; on this server file tools only reach files inside it."
            ));
        }
        self.inner.run(args, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup() -> (tempfile::TempDir, PathBuf, tools::Registry) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        for d in ["ws/alpha/sub", "ws/beta"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("ws/alpha/sub/a.txt"), "alpha").unwrap();
        std::fs::write(base.join("ws/beta/b.txt"), "beta").unwrap();
        std::os::unix::fs::symlink(base.join("ws/beta"), base.join("ws/alpha/link")).unwrap();
        std::os::unix::fs::symlink(base.join("ws/beta/new.txt"), base.join("ws/alpha/sub/dangling")).unwrap();
        let registry = confine(&tools::Registry::builtins(), vec![base.join("ws/alpha"), base.join("ws/beta")]);
        (dir, base, registry)
    }

    async fn run(registry: &tools::Registry, cwd: &Path, tool: &str, args: Value) -> ToolOutput {
        registry.get(tool).unwrap().run(args, &ToolContext::simple(cwd)).await
    }

    #[tokio::test]
    async fn paths_inside_the_workspace_work_and_outside_ones_are_refused() {
        let (_dir, base, reg) = setup();
        let cwd = base.join("ws/alpha/sub");
        assert!(run(&reg, &cwd, "view", json!({"path": "a.txt"})).await.success);
        assert!(run(&reg, &cwd, "view", json!({"path": "../sub/a.txt"})).await.success);
        assert!(run(&reg, &cwd, "create", json!({"path": "new.txt", "file_text": "x"})).await.success);
        let deeper = run(&reg, &cwd, "create", json!({"path": "new/deeper.txt", "file_text": "x"})).await;
        assert!(!deeper.text_for_llm.contains("outside"), "not refused by confinement: {}", deeper.text_for_llm);
        for (tool, args) in [
            ("view", json!({"path": base.join("ws/beta/b.txt")})),
            ("view", json!({"path": "../../beta/b.txt"})),
            ("view", json!({"path": "../link/b.txt"})),
            ("view", json!({"path": "/etc/hostname"})),
            ("create", json!({"path": "../../beta/planted.txt", "file_text": "x"})),
            ("create", json!({"path": "missing/../../../beta/x.txt", "file_text": "x"})),
            ("create", json!({"path": "dangling", "file_text": "x"})),
            ("edit", json!({"path": "../link/b.txt", "old_str": "beta", "new_str": "owned"})),
            ("grep", json!({"pattern": "beta", "paths": ["a.txt", "/"]})),
            ("glob", json!({"pattern": "*", "path": "../.."})),
        ] {
            let out = run(&reg, &cwd, tool, args.clone()).await;
            assert!(
                !out.success && out.text_for_llm.contains("outside this session's workspace"),
                "{tool} {args}: {}",
                out.text_for_llm
            );
        }
        assert_eq!(std::fs::read_to_string(base.join("ws/beta/b.txt")).unwrap(), "beta");
        assert!(!base.join("ws/beta/planted.txt").exists() && !base.join("ws/beta/new.txt").exists());
        // Shell and its helpers are not file tools: they are not wrapped.
        assert!(reg.tools().iter().any(|t| t.name() == "bash"));
    }

    #[tokio::test]
    async fn a_session_outside_every_workspace_gets_no_file_access() {
        let (_dir, base, reg) = setup();
        let out = run(&reg, &base, "view", json!({"path": "ws/alpha/sub/a.txt"})).await;
        assert!(!out.success);
    }
}
