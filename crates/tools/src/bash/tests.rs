use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::analysis::command_identifiers;
use super::*;
use crate::context::{PermissionDecision, PermissionGate, ShellCommand};

fn ctx_in(dir: &std::path::Path) -> ToolContext {
    let mut ctx = ToolContext::simple(dir);
    ctx.env = vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())];
    ctx.temp_dir = dir.join("temp");
    ctx
}

async fn bash(ctx: &ToolContext, command: &str) -> ToolOutput {
    BashTool.run(json!({"command": command, "description": "test"}), ctx).await
}

/// Whether a process is gone (or a zombie nobody reaped yet, which runs nothing).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

#[tokio::test]
async fn echo_output_and_exit_marker() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = bash(&ctx, "echo hello && echo world").await;
    assert!(out.success);
    assert_eq!(out.text_for_llm, "hello\nworld\n<exited with exit code 0>");
    let exit = out.shell_exit.clone().unwrap();
    assert_eq!(exit.shell_id, "0");
    assert_eq!(exit.exit_code, 0);
    assert_eq!(exit.cwd, dir.path().display().to_string());
    assert_eq!(exit.output_preview, "hello\nworld");
    // Completed shells are forgotten; ids keep counting.
    assert!(ctx.shells.list().is_empty());
    let out = bash(&ctx, "true").await;
    assert_eq!(out.text_for_llm, "\n<exited with exit code 0>");
    assert_eq!(out.shell_exit.unwrap().shell_id, "1");
}

#[tokio::test]
async fn stderr_is_merged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = bash(&ctx, "echo error_msg >&2; sleep 0.1; echo ok").await;
    assert_eq!(out.text_for_llm, "error_msg\nok\n<exited with exit code 0>");
}

#[tokio::test]
async fn exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = bash(&ctx, "echo hi; echo err >&2; exit 3").await;
    assert!(out.success, "a failing command is still a successful tool call");
    assert_eq!(out.text_for_llm, "hi\nerr\n<exited with exit code 3>");
    assert_eq!(out.shell_exit.as_ref().map(|e| e.exit_code), Some(3));
    let out = bash(&ctx, "ls nosuchfile").await;
    assert_eq!(
        out.text_for_llm,
        "ls: cannot access 'nosuchfile': No such file or directory\n<exited with exit code 2>"
    );
    let out = bash(&ctx, "kill -TERM $$").await;
    assert_eq!(out.text_for_llm, "\n<exited with exit code 143>");
}

#[tokio::test]
async fn runs_in_cwd_with_context_env() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    ctx.env.push(("SKIPPER_TEST_VAR".into(), "from-ctx".into()));
    let out = bash(&ctx, "pwd; echo $SKIPPER_TEST_VAR").await;
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(out.text_for_llm, format!("{}\nfrom-ctx\n<exited with exit code 0>", cwd.display()));
    // Only the context's environment is passed on.
    let out = bash(&ctx, "echo \"[${HOME:-unset}]\"").await;
    assert_eq!(out.text_for_llm, "[unset]\n<exited with exit code 0>");
}

#[tokio::test]
async fn unicode_and_color_codes_are_clean() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = bash(&ctx, "printf 'h\\xc3\\xa9llo \\033[31mred\\033[0m\\n'").await;
    assert_eq!(out.text_for_llm, "héllo red\n<exited with exit code 0>");
}

#[tokio::test]
async fn progress_reports_cumulative_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    ctx.progress = Arc::new(move |s| sink.lock().unwrap().push(s));
    let out = bash(&ctx, "echo one; sleep 0.3; echo two").await;
    assert_eq!(out.text_for_llm, "one\ntwo\n<exited with exit code 0>");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.first().map(String::as_str), Some("one\n"), "{seen:?}");
}

#[tokio::test]
async fn cancellation_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let pidfile = dir.path().join("pid");
    let command = format!("sleep 100 & echo $! > {}; wait", pidfile.display());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = bash(&ctx, &command).await;
    assert!(started.elapsed() < Duration::from_millis(1300), "took {:?}", started.elapsed());
    assert_eq!(out.text_for_llm, crate::INTERRUPTED_TEXT);
    assert!(!out.success);
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    // The background child was in the same group and died with it.
    let deadline = Instant::now() + Duration::from_secs(1);
    while !is_dead(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(is_dead(pid), "sleep {pid} survived");
    assert!(ctx.shells.list().is_empty());
}

#[tokio::test]
async fn initial_wait_then_read_bash() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = BashTool
        .run(json!({"command": "echo first; sleep 0.6; echo second", "description": "d", "initial_wait": 0.2}), &ctx)
        .await;
    assert_eq!(
        out.text_for_llm,
        "first\n<command with shellId: 0 is still running after 0.2 seconds. Use read_bash with shellId 0 to read more output, or stop_bash to stop it.>"
    );
    assert_eq!(ctx.shells.running_shells().len(), 1);
    let out = ReadBashTool.run(json!({"shellId": "0", "delay": 5}), &ctx).await;
    assert_eq!(out.text_for_llm, "second\n<exited with exit code 0>");
    assert_eq!(out.shell_exit.unwrap().shell_id, "0");
    assert!(ctx.shells.list().is_empty());
    let out = ReadBashTool.run(json!({"shellId": "0", "delay": 0}), &ctx).await;
    assert!(!out.success);
    assert_eq!(out.text_for_llm, "Invalid shell ID: 0. Use list_bash to see the active shells.");
}

#[tokio::test]
async fn async_mode_list_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = BashTool
        .run(json!({"command": "echo started; sleep 100", "description": "long sleep", "mode": "async"}), &ctx)
        .await;
    assert!(out.success);
    assert_eq!(
        out.text_for_llm,
        "<command started in background with shellId: 0. Use read_bash with shellId 0 to read its output, or stop_bash to stop it.>"
    );
    let pid = ctx.shells.get("0").unwrap().info().pid.unwrap();

    let out = ReadBashTool.run(json!({"shellId": "0", "delay": 0.3}), &ctx).await;
    assert_eq!(
        out.text_for_llm,
        "started\n<command with shellId: 0 is still running after 0.3 seconds. Use read_bash with shellId 0 to read more output, or stop_bash to stop it.>"
    );

    let out = ListBashTool.run(json!({}), &ctx).await;
    assert_eq!(out.text_for_llm, "Active shells:\n- shellId: 0 (running): echo started; sleep 100 — long sleep");
    let running = ctx.shells.running_shells();
    assert_eq!(running[0].shell_id, "0");
    assert_eq!(running[0].description, "long sleep");

    // The id is taken while the command runs.
    let out = BashTool.run(json!({"command": "true", "description": "d", "shellId": "0"}), &ctx).await;
    assert!(!out.success);

    let started = Instant::now();
    let out = StopBashTool.run(json!({"shellId": "0"}), &ctx).await;
    assert_eq!(out.text_for_llm, "Shell 0 stopped.");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(is_dead(pid));
    assert_eq!(ListBashTool.run(json!({}), &ctx).await.text_for_llm, "No active shells.");
    assert!(!StopBashTool.run(json!({"shellId": "0"}), &ctx).await.success);
}

#[tokio::test]
async fn kill_all_and_drop_end_shells() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    BashTool.run(json!({"command": "sleep 100", "description": "d", "mode": "async"}), &ctx).await;
    let pid = ctx.shells.get("0").unwrap().info().pid.unwrap();
    ctx.shells.kill_all();
    assert!(ctx.shells.list().is_empty());
    let deadline = Instant::now() + Duration::from_secs(1);
    while !is_dead(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(is_dead(pid));
}

#[tokio::test]
async fn detached_commands_use_pipes_and_survive_kill_all() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let args =
        json!({"command": "echo out; echo err >&2; echo done", "description": "d", "mode": "async", "detach": true});
    let out = BashTool.run(args, &ctx).await;
    assert!(out.text_for_llm.contains("shellId: 0 (detached)"), "{}", out.text_for_llm);
    let out = ReadBashTool.run(json!({"shellId": "0", "delay": 5}), &ctx).await;
    assert_eq!(out.text_for_llm, "out\nerr\ndone\n<exited with exit code 0>");

    let args = json!({"command": "sleep 100", "description": "d", "mode": "async", "detach": true});
    BashTool.run(args, &ctx).await;
    let info = ctx.shells.list().pop().unwrap();
    assert!(info.detached && info.running);
    let pid = info.pid.unwrap();
    ctx.shells.kill_all();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!is_dead(pid), "a detached command outlives the session");
    pty::kill_group(&pty::find_shell(&ctx.env), pid);
    let deadline = Instant::now() + Duration::from_secs(1);
    while !is_dead(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(is_dead(pid));
}

#[tokio::test]
async fn large_output_is_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx_in(dir.path());
    let out = bash(&ctx, "head -c 30000 /dev/zero | tr '\\0' x").await;
    let text = &out.text_for_llm;
    assert!(text.starts_with("Output too large to read at once (29.3 KB). Saved to: "), "{text}");
    let path = text.split("Saved to: ").nth(1).unwrap().lines().next().unwrap();
    assert!(path.starts_with(ctx.temp_dir.to_str().unwrap()), "{path}");
    let saved = std::fs::read_to_string(path).unwrap();
    assert_eq!(saved, format!("{}\n<exited with exit code 0>", "x".repeat(30000)));
    assert!(text.ends_with(&format!("Preview (first 500 chars):\n{}", "x".repeat(500))));
    assert_eq!(out.shell_exit.map(|e| e.exit_code), Some(0));
}

struct Deny(Mutex<Vec<PermissionRequest>>);

#[async_trait]
impl PermissionGate for Deny {
    async fn request(&self, req: PermissionRequest) -> PermissionDecision {
        self.0.lock().unwrap().push(req);
        PermissionDecision::Denied {
            text_for_llm: "Permission denied and could not request permission from user".into(),
            code: "denied".into(),
        }
    }
}

#[tokio::test]
async fn denial_prevents_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ctx_in(dir.path());
    let gate = Arc::new(Deny(Mutex::new(Vec::new())));
    ctx.permissions = gate.clone();
    let marker = dir.path().join("ran");
    let command = format!("touch {} && echo done", marker.display());
    let out = BashTool.run(json!({"command": command, "description": "Touch a file"}), &ctx).await;
    assert!(!out.success);
    assert_eq!(out.text_for_llm, "Permission denied and could not request permission from user");
    assert_eq!(out.error_code.as_deref(), Some("denied"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!marker.exists());
    assert_eq!(
        gate.0.lock().unwrap()[0],
        PermissionRequest::Shell {
            full_command_text: command,
            intention: "Touch a file".into(),
            commands: vec![
                ShellCommand { identifier: "touch".into(), read_only: false },
                ShellCommand { identifier: "echo".into(), read_only: true }
            ],
            possible_paths: vec![marker.display().to_string()],
            possible_urls: vec![],
            has_write_file_redirection: false,
        }
    );
}

#[test]
fn identifiers_of_compound_commands() {
    assert_eq!(command_identifiers("echo hello && echo world"), vec!["echo"]);
    assert_eq!(command_identifiers("cd src; FOO=1 npm test 2>&1 | tee 'a;b' > log"), vec!["cd", "npm", "tee"]);
    assert_eq!(command_identifiers("if [ -f x ]; then cat x; fi"), vec!["[", "cat"]);
    assert_eq!(command_identifiers("for f in *.txt; do wc -l \"$f\"; done"), vec!["wc"]);
    assert_eq!(command_identifiers("(cd /tmp && ls)"), vec!["cd", "ls"]);
    assert_eq!(command_identifiers("make &> log & wait"), vec!["make", "wait"]);
}

#[test]
fn registry_order() {
    let names: Vec<String> = crate::Registry::builtins().tools().iter().map(|t| t.name().to_string()).collect();
    assert_eq!(
        names,
        ["bash", "read_bash", "stop_bash", "list_bash", "view", "create", "edit", "web_fetch", "grep", "glob"]
    );
}
