//! The headless runner (`skipper -p`): one task to completion, exit status for CI.

use std::path::Path;
use std::process::Output;

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

use crate::schema::validate_event;

/// `skipper` in `workdir` with a clean environment: the fake model at `model_url`, `home` as
/// its home.
pub(crate) fn skipper_command(model_url: &str, home: &Path, workdir: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_skipper"));
    cmd.current_dir(workdir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_HOME", home.join(".copilot"))
        .env("COPILOT_API_URL", model_url)
        .env("COPILOT_DEBUG_GITHUB_API_URL", model_url)
        .env("GH_TOKEN", "fake-token");
    cmd
}

pub(crate) fn run_skipper(model_url: &str, home: &Path, workdir: &Path, args: &[&str]) -> Output {
    skipper_command(model_url, home, workdir).args(args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn autopilot_runs_until_task_complete_and_exits_zero() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::tool_call("bash", json!({"command": "echo hi > out.txt", "description": "write"})));
    fake.push_reply(Reply::text("I think that's it."));
    fake.push_reply(Reply::tool_call("task_complete", json!({"summary": "wrote out.txt"})));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        run_skipper(&url, &h, &w, &["-p", "write hi to out.txt", "--autopilot", "--allow-all-tools"])
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(work.path().join("out.txt")).unwrap(), "hi\n");
    assert!(stdout.contains("✓ Task complete: wrote out.txt"), "{stdout}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3, "tool turn, text turn, nudged turn");
    let last_user = reqs[2]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string();
    assert!(last_user.contains("You have not yet marked the task as complete"), "{last_user}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_is_valid_events_and_model_error_exits_one() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::error(400, None, "bad request"));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out =
        tokio::task::spawn_blocking(move || run_skipper(&url, &h, &w, &["-p", "hello", "--output-format", "json"]))
            .await
            .unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let mut events: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The last line is the run's result, in the original's shape; the rest are session events.
    let result = events.pop().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["exitCode"], 1);
    assert!(result["sessionId"].as_str().is_some_and(|s| !s.is_empty()), "{result}");
    assert_eq!(result["usage"]["turns"], 1, "{result}");
    assert!(result["usage"]["sessionDurationMs"].is_u64(), "{result}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(types.contains(&"session.error"), "{types:?}");
    // The original's stream: the model from the resolved tools, each dispatch's start and
    // outcome, the loop's end; not the session's bookkeeping.
    let of = |kind: &str| events.iter().filter(|e| e["type"] == kind).collect::<Vec<_>>();
    assert_eq!(of("session.tools_updated")[0]["data"]["model"], "claude-sonnet-4.5", "{types:?}");
    assert_eq!(of("model.call_start")[0]["data"]["turnId"], "0", "{types:?}");
    assert_eq!(of("model.call_finished")[0]["data"]["outcome"], "error", "{types:?}");
    assert_eq!(types.last(), Some(&"assistant.idle"), "{types:?}");
    for hidden in ["session.start", "system.message", "session.usage_info", "session.idle"] {
        assert!(!types.contains(&hidden), "{hidden} in {types:?}");
    }
    for e in &events {
        let problems = validate_event(e, "runner stdout");
        assert!(problems.is_empty(), "{problems:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_allow_all_tools_shell_commands_are_denied() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::tool_call("bash", json!({"command": "touch nope", "description": "touch"})));
    fake.push_reply(Reply::text("Could not run it."));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || run_skipper(&url, &h, &w, &["-p", "touch nope"])).await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!work.path().join("nope").exists());
    let reqs = fake.requests();
    let tool = reqs[1]["body"]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert_eq!(tool["content"], json!(crate::runner_permissions::NOBODY_TO_ASK));
}

#[tokio::test(flavor = "multi_thread")]
async fn silent_prints_only_the_final_answer_on_stdout() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::Message {
        content: "Let me look.".into(),
        tool_calls: vec![("bash".into(), json!({"command": "echo probe-output", "description": "probe"}).to_string())],
    });
    fake.push_reply(Reply::text("The answer is 42."));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        run_skipper(&url, &h, &w, &["-s", "-p", "what is it?", "--allow-all-tools"])
    })
    .await
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stdout, "The answer is 42.\n", "stderr: {stderr}");
    assert!(stderr.contains("● bash"), "progress goes to stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_run_is_in_the_session_index_when_it_exits() {
    let fake = FakeModel::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for prompt in ["first task", "second task"] {
        fake.push_reply(Reply::text("done"));
        let (url, h, w) = (fake.url(), home.path().to_path_buf(), work.path().to_path_buf());
        let out = tokio::task::spawn_blocking(move || run_skipper(&url, &h, &w, &["-p", prompt])).await.unwrap();
        assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Another process opening the index sees both, listed and titled by their prompts.
    let layout = store::Layout::new(home.path().join(".copilot"));
    let index = store::SessionIndex::open(layout.db_path()).await.unwrap();
    let listed = index.list(&store::ListFilter::default()).await.unwrap();
    let titles: Vec<_> = listed.iter().map(|r| r.title.as_deref().unwrap_or_default()).collect();
    assert_eq!(titles, ["second task", "first task"]);
    let cwd = work.path().canonicalize().unwrap();
    assert!(listed.iter().all(|r| r.has_user_message && Path::new(&r.cwd) == cwd), "{listed:?}");
    index.close().await;
}

#[test]
fn an_unknown_option_is_a_usage_error_on_stderr() {
    let home = tempfile::tempdir().unwrap();
    let out = run_skipper(
        "http://127.0.0.1:9",
        home.path(),
        home.path(),
        &["--headless", "--stdio", "--nonexistent-flag-for-testing"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("unexpected argument '--nonexistent-flag-for-testing'"), "{stderr}");
    // The original's options, including those Skipper ignores, are accepted.
    let out = run_skipper(
        "http://127.0.0.1:9",
        home.path(),
        home.path(),
        &["--version", "--yolo", "--add-dir", "/tmp", "--no-color"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("skipper"));
}

/// `skipper` with `args` and `stdin` piped in, against `model_url`.
fn run_with_stdin(model_url: &str, home: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = skipper_command(model_url, home, home)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_piped_on_stdin_runs_and_a_failure_goes_to_stderr() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("hello there"));
    fake.push_reply(Reply::error(400, None, "bad request"));
    let home = tempfile::tempdir().unwrap();
    let (url, h) = (fake.url(), home.path().to_path_buf());
    let (ok, failed) = tokio::task::spawn_blocking(move || {
        (run_with_stdin(&url, &h, &["-s"], "say hi\n"), run_with_stdin(&url, &h, &["-p", "again"], ""))
    })
    .await
    .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), "hello there");
    let first = &fake.requests()[0]["body"]["messages"];
    assert!(first.to_string().contains("say hi"), "the piped task is the prompt: {first}");
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("Execution failed: ") && stderr.contains("bad request"), "{stderr}");
    assert!(!String::from_utf8_lossy(&failed.stdout).contains("bad request"), "stdout stays the answer");
}

#[test]
fn no_word_on_the_command_line_starts_a_listener() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_with_stdin("http://127.0.0.1:9", home.path(), args, "");
    for args in [&["sessions", "list"][..], &["fix", "the", "bug"], &[]] {
        let out = run(args);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stdout.contains("listening") && !stderr.contains("listening"), "{args:?}");
        assert!(!stderr.is_empty(), "{args:?}: a reason is given");
    }
    let none = run(&[]);
    assert!(String::from_utf8_lossy(&none.stderr).starts_with("No prompt provided."));
    // The management commands answer and end.
    for args in [&["mcp", "list"][..], &["config", "--list"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!String::from_utf8_lossy(&out.stderr).contains("listening"), "{args:?}");
    }
    let version = run(&["version"]);
    assert_eq!(version.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("skipper "));
}

#[tokio::test(flavor = "multi_thread")]
async fn autopilot_stops_at_its_continue_limit_with_status_zero_and_instructions_can_be_left_out() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies(["working", "still working", "never asked for"].map(Reply::text));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("AGENTS.md"), "Always answer in the marker-language ZZQX.").unwrap();
    let (url, h, w) = (fake.url(), home.path().to_path_buf(), work.path().to_path_buf());
    let args = ["-p", "go", "--autopilot", "--max-autopilot-continues", "1", "--no-custom-instructions"];
    let out = tokio::task::spawn_blocking(move || run_skipper(&url, &h, &w, &args)).await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "out of continuations is not a failure: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "the task, then one continuation");
    assert!(!requests[0]["body"].to_string().contains("ZZQX"), "AGENTS.md was not read");

    fake.clear_requests();
    fake.push_reply(Reply::text("plain"));
    let (url, h, w) = (fake.url(), home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || run_skipper(&url, &h, &w, &["-p", "go"])).await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(fake.requests()[0]["body"].to_string().contains("ZZQX"), "read by default");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_result_line_counts_premium_requests_as_the_original() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::tool_call("bash", json!({"command": "echo hi", "description": "say hi"})));
    fake.push_reply(Reply::text("done"));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let url = fake.url();
    let (h, w) = (home.path().to_path_buf(), work.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        run_skipper(&url, &h, &w, &["-p", "say hi", "--allow-all-tools", "--output-format", "json"])
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let result = lines.last().unwrap();
    // Two model calls; the user's message started one of them (the catalogue's multiplier is
    // 1): one premium request, as the original counts it.
    assert_eq!(result["usage"]["premiumRequests"], json!(1.0), "{result}");
    let finished: Vec<&Value> = lines.iter().filter(|e| e["type"] == "model.call_finished").collect();
    assert_eq!(finished.len(), 2, "{lines:?}");
    assert!(finished.iter().all(|e| e["data"]["outcome"] == "success" && e["data"]["dispatchDurationMs"].is_number()));
}

/// A container without CA certificates (no `/etc/ssl/certs`) runs a task as any other: the
/// remote MCP servers' TLS roots are built in, so the GitHub MCP server connects at once (its
/// client used to panic there and the run waited a minute for it).
#[tokio::test(flavor = "multi_thread")]
async fn a_machine_without_ca_certificates_runs_with_the_github_mcp_server() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("done"));
    let (home, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut cmd = skipper_command(&fake.url(), home.path(), work.path());
    cmd.env("SSL_CERT_DIR", "/nonexistent").env("SSL_CERT_FILE", "/nonexistent").args(["-p", "hi", "-s"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let names = crate::runner_options::tool_names(&fake.requests()[0]);
    assert!(
        names.iter().any(|t| t == "github-mcp-server-get_me"),
        "the GitHub MCP server's tool is offered: {names:?}"
    );
}
