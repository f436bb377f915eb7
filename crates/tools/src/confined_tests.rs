//! The built-in file tools beneath a root (a tenant's workspace on a shared server): what lies
//! inside works, nothing outside is reached, and a name swapped for a link while the user
//! decides does not redirect what was approved.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::context::{PermissionDecision, PermissionGate, PermissionRequest};
use crate::files::{Beneath, Files};
use crate::{Registry, ToolContext, ToolOutput};

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for d in ["ws/alpha/sub", "ws/beta"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(base.join("ws/alpha/sub/a.txt"), "alpha").unwrap();
    std::fs::write(base.join("ws/beta/b.txt"), "beta").unwrap();
    std::os::unix::fs::symlink(base.join("ws/beta"), base.join("ws/alpha/link")).unwrap();
    std::os::unix::fs::symlink(base.join("ws/beta/new.txt"), base.join("ws/alpha/sub/dangling")).unwrap();
    (dir, base)
}

fn ctx(base: &Path, cwd: &Path) -> ToolContext {
    let mut ctx = ToolContext::simple(cwd);
    ctx.files = Files::beneath(Arc::new(Beneath::open(&base.join("ws/alpha")).unwrap()));
    ctx
}

async fn run(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutput {
    Registry::builtins().get(tool).unwrap().run(args, ctx).await
}

#[tokio::test]
async fn paths_inside_the_root_work_and_outside_ones_are_refused() {
    let (_dir, base) = setup();
    let ctx = ctx(&base, &base.join("ws/alpha/sub"));
    assert!(run(&ctx, "view", json!({"path": "a.txt"})).await.success);
    assert!(run(&ctx, "view", json!({"path": "../sub/a.txt"})).await.success);
    assert!(run(&ctx, "view", json!({"path": ".."})).await.success, "the root itself lists");
    assert!(run(&ctx, "create", json!({"path": "new.txt", "file_text": "x"})).await.success);
    assert!(run(&ctx, "edit", json!({"path": "new.txt", "old_str": "x", "new_str": "y"})).await.success);
    assert!(run(&ctx, "grep", json!({"pattern": "alpha"})).await.text_for_llm.contains("a.txt"));
    assert!(run(&ctx, "glob", json!({"pattern": "*.txt"})).await.text_for_llm.contains("new.txt"));
    let deeper = run(&ctx, "create", json!({"path": "new/deeper.txt", "file_text": "x"})).await;
    assert!(deeper.text_for_llm.contains("does not exist"), "{}", deeper.text_for_llm);
    for (tool, args) in [
        ("view", json!({"path": base.join("ws/beta/b.txt")})),
        ("view", json!({"path": "../../beta/b.txt"})),
        ("view", json!({"path": "../link/b.txt"})),
        ("view", json!({"path": "/etc/hostname"})),
        ("create", json!({"path": "../../beta/planted.txt", "file_text": "x"})),
        ("create", json!({"path": "dangling", "file_text": "x"})),
        ("edit", json!({"path": "../link/b.txt", "old_str": "beta", "new_str": "owned"})),
        ("grep", json!({"pattern": "beta", "paths": ["a.txt", "/"]})),
        ("glob", json!({"pattern": "*", "path": "../.."})),
    ] {
        let out = run(&ctx, tool, args.clone()).await;
        assert!(
            !out.success && out.text_for_llm.contains("outside this session's workspace"),
            "{tool} {args}: {}",
            out.text_for_llm
        );
    }
    // A `..` after a name that does not exist stops at that name: refused all the same.
    let out = run(&ctx, "create", json!({"path": "missing/../../../beta/x.txt", "file_text": "x"})).await;
    assert!(!out.success, "{}", out.text_for_llm);
    // A search of the root does not follow the link out of it.
    let found = run(&ctx, "grep", json!({"pattern": "beta", "path": ".."})).await;
    assert!(!found.text_for_llm.contains("b.txt"), "{}", found.text_for_llm);
    assert_eq!(std::fs::read_to_string(base.join("ws/beta/b.txt")).unwrap(), "beta");
    assert!(!base.join("ws/beta/planted.txt").exists() && !base.join("ws/beta/new.txt").exists());
    assert!(!base.join("ws/beta/x.txt").exists());
}

#[tokio::test]
async fn nowhere_reaches_nothing() {
    let (_dir, base) = setup();
    let mut ctx = ToolContext::simple(base.join("ws/alpha/sub"));
    ctx.files = Files::nowhere();
    for (tool, args) in [
        ("view", json!({"path": "a.txt"})),
        ("create", json!({"path": "n.txt", "file_text": "x"})),
        ("grep", json!({"pattern": "alpha"})),
    ] {
        assert!(!run(&ctx, tool, args).await.success, "{tool}");
    }
    assert!(!base.join("ws/alpha/sub/n.txt").exists());
}

/// Approves every request, but first swaps the directory `d` for a link to `to` — what a
/// command of the session could do while its user decides.
struct SwapThenApprove {
    d: PathBuf,
    to: PathBuf,
    asked: Mutex<usize>,
}

#[async_trait]
impl PermissionGate for SwapThenApprove {
    async fn request(&self, _req: PermissionRequest) -> PermissionDecision {
        *self.asked.lock().unwrap() += 1;
        let aside = self.d.with_extension("real");
        std::fs::rename(&self.d, &aside).unwrap();
        std::os::unix::fs::symlink(&self.to, &self.d).unwrap();
        PermissionDecision::Approved
    }
}

#[tokio::test]
async fn what_was_opened_before_the_prompt_is_what_is_used_after_it() {
    let (_dir, base) = setup();
    let (alpha, beta) = (base.join("ws/alpha"), base.join("ws/beta"));
    std::fs::write(beta.join("notes.txt"), "beta's notes").unwrap();
    let d = alpha.join("d");
    let gate = Arc::new(SwapThenApprove { d: d.clone(), to: beta.clone(), asked: Mutex::new(0) });
    let mut ctx = ctx(&base, &alpha);
    ctx.permissions = gate.clone();
    let reset = || {
        let _ = std::fs::remove_file(&d);
        let _ = std::fs::remove_dir_all(d.with_extension("real"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("b.txt"), "alpha's decoy").unwrap();
        std::fs::write(d.join("notes.txt"), "alpha's notes").unwrap();
        std::fs::write(d.join("only-alpha.txt"), "").unwrap();
    };

    reset();
    let read = run(&ctx, "view", json!({"path": "d/b.txt"})).await;
    assert!(read.success && read.text_for_llm.contains("alpha's decoy"), "{}", read.text_for_llm);
    assert!(!read.text_for_llm.contains("beta"));

    reset();
    let listed = run(&ctx, "view", json!({"path": "d"})).await;
    assert!(listed.success, "{}", listed.text_for_llm);
    assert_eq!(listed.text_for_llm, "b.txt\nnotes.txt\nonly-alpha.txt");

    reset();
    let created = run(&ctx, "create", json!({"path": "d/planted.txt", "file_text": "from alpha"})).await;
    assert!(created.success, "{}", created.text_for_llm);
    assert!(d.with_extension("real").join("planted.txt").exists() && !beta.join("planted.txt").exists());

    reset();
    let edited = run(&ctx, "edit", json!({"path": "d/notes.txt", "old_str": "notes", "new_str": "owned"})).await;
    assert!(edited.success, "{}", edited.text_for_llm);
    assert_eq!(std::fs::read_to_string(d.with_extension("real").join("notes.txt")).unwrap(), "alpha's owned");
    assert_eq!(std::fs::read_to_string(beta.join("notes.txt")).unwrap(), "beta's notes");
    assert_eq!(*gate.asked.lock().unwrap(), 4);
}
