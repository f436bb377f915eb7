//! `session.workspaces.diff` (the working tree's changes as git sees them) and
//! `session.workspaces.saveLargePaste` (a paste kept as a workspace file).

use std::path::{Path, PathBuf};

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn save_large_paste(
    ctx: &Ctx,
    p: t::SessionWorkspacesSaveLargePasteParams,
) -> Result<t::WorkspacesSaveLargePasteResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let filename = format!("paste-{}.txt", chrono::Utc::now().format("%Y%m%d-%H%M%S-%3f"));
    let size_bytes = p.content.len() as u64;
    session.write_workspace_file(filename.clone(), p.content).await.map_err(|e| ctx.engine_error(&e))?;
    let file_path = session.files_dir().join(&filename);
    Ok(t::WorkspacesSaveLargePasteResult {
        saved: Some(t::WorkspacesSaveLargePasteResultSaved {
            file_path: file_path.to_string_lossy().into_owned(),
            filename,
            size_bytes,
        }),
    })
}

/// Git in the session's working directory, run as the session's own commands are (in its
/// sandbox, when it has one): the repository is the session's to configure.
struct Git {
    session: loop_engine::SessionHandle,
    cwd: PathBuf,
}

impl Git {
    async fn run(&self, args: &[&str]) -> Option<String> {
        let mut cmd = match self.session.confined_command("git", args, &self.cwd) {
            Ok(cmd) => cmd,
            Err(e) => {
                tracing::warn!(session = %self.session.id(), error = %e, "git not started");
                return None;
            }
        };
        let out = cmd.output().await.ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The first base the branch can be compared with.
async fn default_base(git: &Git) -> Option<(String, String)> {
    for base in ["origin/HEAD", "origin/main", "origin/master", "main", "master"] {
        if let Some(sha) = git.run(&["merge-base", "HEAD", base]).await {
            return Some((base.trim_start_matches("origin/").to_string(), sha.trim().to_string()));
        }
    }
    None
}

fn change_type(code: &str) -> t::WorkspaceDiffFileChangeType {
    match code.chars().next() {
        Some('A') | Some('?') => t::WorkspaceDiffFileChangeType::Added,
        Some('D') => t::WorkspaceDiffFileChangeType::Deleted,
        Some('R') => t::WorkspaceDiffFileChangeType::Renamed,
        _ => t::WorkspaceDiffFileChangeType::Modified,
    }
}

/// Changes against `base` (a commit, or `HEAD` for the working tree), untracked files as added.
async fn changes(git: &Git, base: &str, ignore_ws: bool) -> Vec<t::WorkspaceDiffFileChange> {
    let mut out = Vec::new();
    let ws: &[&str] = if ignore_ws { &["-w"] } else { &[] };
    let listing = git.run(&["diff", base, "--name-status", "-M"]).await.unwrap_or_default();
    for line in listing.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let (code, old_path, path) = match cols.as_slice() {
            [code, old, new] => (*code, Some(old.to_string()), new.to_string()),
            [code, path] => (*code, None, path.to_string()),
            _ => continue,
        };
        let mut args = vec!["diff", base];
        args.extend_from_slice(ws);
        args.push("--");
        if let Some(old) = &old_path {
            args.push(old);
        }
        args.push(&path);
        let diff = git.run(&args).await.unwrap_or_default();
        out.push(t::WorkspaceDiffFileChange {
            path: path.clone(),
            diff,
            change_type: change_type(code),
            old_path,
            is_truncated: None,
        });
    }
    let untracked = git.run(&["ls-files", "--others", "--exclude-standard"]).await.unwrap_or_default();
    for path in untracked.lines().filter(|l| !l.trim().is_empty()) {
        let text = untracked_text(&git.cwd.join(path)).await;
        let lines: Vec<String> = text.lines().map(|l| format!("+{l}")).collect();
        let diff = format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{}\n",
            lines.len(),
            lines.join("\n")
        );
        out.push(t::WorkspaceDiffFileChange {
            path: path.to_string(),
            diff,
            change_type: t::WorkspaceDiffFileChangeType::Added,
            old_path: None,
            is_truncated: None,
        });
    }
    out
}

/// An untracked file's text as git would show it: a symbolic link is its target's name, never
/// what it points at (which may be outside the workspace).
async fn untracked_text(path: &Path) -> String {
    match tokio::fs::symlink_metadata(path).await {
        Ok(m) if m.file_type().is_symlink() => {
            tokio::fs::read_link(path).await.map(|t| t.to_string_lossy().into_owned()).unwrap_or_default()
        }
        Ok(m) if m.is_file() => tokio::fs::read_to_string(path).await.unwrap_or_default(),
        _ => String::new(),
    }
}

pub async fn diff(ctx: &Ctx, p: t::SessionWorkspacesDiffParams) -> Result<t::WorkspaceDiffResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let cwd = session.view().settings.cwd.clone();
    let git = Git { session, cwd };
    let ignore_ws = p.ignore_whitespace.unwrap_or(false);
    let requested = p.mode;
    if git.run(&["rev-parse", "--is-inside-work-tree"]).await.is_none() {
        // Not a repository: nothing git can compare; answered as an empty working-tree diff.
        let mut r = t::WorkspaceDiffResult::new(requested, t::WorkspaceDiffMode::Unstaged, Vec::new(), true);
        if requested == t::WorkspaceDiffMode::Session {
            r.unavailable_reason = Some(t::HistoryRewindUnavailableReason::FileChangeTrackingDisabled);
        }
        return Ok(r);
    }
    if requested == t::WorkspaceDiffMode::Branch {
        if let Some((branch, base)) = default_base(&git).await {
            let mut r = t::WorkspaceDiffResult::new(requested, requested, changes(&git, &base, ignore_ws).await, false);
            r.base_branch = Some(branch);
            return Ok(r);
        }
    }
    let has_head = git.run(&["rev-parse", "--verify", "HEAD"]).await.is_some();
    // Without a commit, everything is untracked (or staged against the empty tree).
    let base = if has_head { "HEAD" } else { "4b825dc642cb6eb9a060e54bf8d69288fbee4904" };
    let changes = changes(&git, base, ignore_ws).await;
    let fallback = requested != t::WorkspaceDiffMode::Unstaged;
    let mut r = t::WorkspaceDiffResult::new(requested, t::WorkspaceDiffMode::Unstaged, changes, fallback);
    if requested == t::WorkspaceDiffMode::Session {
        r.unavailable_reason = Some(t::HistoryRewindUnavailableReason::FileChangeTrackingDisabled);
    }
    Ok(r)
}
