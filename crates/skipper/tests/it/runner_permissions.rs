//! `-p`'s permission options against the fake model, with what the original 1.0.102 does in
//! the same scenario: which tool calls ran, what the model was told, the exit status.

use std::path::Path;
use std::process::Output;

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

use crate::runner::run_skipper;

/// The original's words when a `-p` run needs an answer nobody can give.
pub(crate) const NOBODY_TO_ASK: &str = "Permission denied because no interactive user response was available. Retry in an interactive session so the user can approve it, or try an alternative that does not require this permission.";

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({"command": command, "description": "run"}))
}

/// Runs `skipper -p go ARGS` in `work` with the replies queued; the tool results the model
/// got back, in order.
async fn run(work: &Path, replies: Vec<Reply>, args: &[&str]) -> (Output, Vec<String>, Vec<Value>) {
    let fake = FakeModel::start().await.unwrap();
    let calls = replies.len();
    fake.push_replies(replies);
    fake.push_reply(Reply::text("done"));
    let home = tempfile::tempdir().unwrap();
    let (url, h, w) = (fake.url(), home.path().to_path_buf(), work.to_path_buf());
    let mut all = vec!["-p".to_string(), "go".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = all.iter().map(String::as_str).collect();
        run_skipper(&url, &h, &w, &args)
    })
    .await
    .unwrap();
    let requests = fake.requests();
    let told = requests
        .last()
        .map(|r| {
            r["body"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if out.status.code() == Some(0) {
        assert_eq!(told.len(), calls, "one result per call: {told:?}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    (out, told, requests)
}

fn rules_text(rules: &str) -> String {
    format!("Permission to run this tool was denied due to the following rules: {rules}")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_command_does_not_run_even_under_allow_all_tools() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("x.txt"), "x").unwrap();
    let replies = vec![bash("rm -f x.txt"), bash("git init -q . && git status --short"), bash("git push origin main")];
    let (out, told, _) =
        run(work.path(), replies, &["--allow-all-tools", "--deny-tool", "shell(rm)", "shell(git push)"]).await;
    assert_eq!(out.status.code(), Some(0), "a denied tool is not a failed run");
    assert!(work.path().join("x.txt").exists(), "rm was denied");
    assert_eq!(told[0], rules_text("`shell(rm)`"));
    assert!(told[1].contains("?? x.txt"), "shell(git push) is not git status: {}", told[1]);
    assert_eq!(told[2], rules_text("`shell(git push)`"));
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_commands_and_reads_run_without_anyone_to_ask_and_the_rest_is_refused() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("x.txt"), "x").unwrap();
    let replies = vec![
        bash("echo allowed"),
        bash("echo redirected > y.txt"),
        bash("touch z"),
        bash("ls | wc -l"),
        Reply::tool_call("view", json!({"path": "x.txt"})),
        Reply::tool_call("create", json!({"path": "n.txt", "file_text": "n"})),
    ];
    let (out, told, _) = run(work.path(), replies, &["--allow-tool=shell(echo)"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(told[0].starts_with("allowed\n"), "{}", told[0]);
    assert_eq!(told[1], NOBODY_TO_ASK, "a redirection needs --allow-all-tools");
    assert_eq!(told[2], NOBODY_TO_ASK);
    assert!(told[3].starts_with("1\n"), "read-only commands run (x.txt alone): {}", told[3]);
    assert!(told[4].contains('x'), "reads inside the working directory run: {}", told[4]);
    assert_eq!(told[5], NOBODY_TO_ASK);
    for never in ["y.txt", "z", "n.txt"] {
        assert!(!work.path().join(never).exists(), "{never}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn paths_outside_are_refused_under_allow_all_tools_until_a_directory_is_added() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("o.txt"), "outside").unwrap();
    let o = outside.path().join("o.txt").display().to_string();
    let replies = || {
        vec![
            Reply::tool_call("view", json!({"path": o})),
            bash(&format!("cat {o}")),
            Reply::tool_call("create", json!({"path": outside.path().join("new.txt"), "file_text": "n"})),
        ]
    };
    // The temporary directory is allowed by default; both directories are in it.
    let (out, told, _) = run(work.path(), replies(), &["--allow-all-tools", "--disallow-temp-dir"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(told, vec![NOBODY_TO_ASK; 3]);
    assert!(!outside.path().join("new.txt").exists());
    let dir = outside.path().display().to_string();
    let (_, told, _) =
        run(work.path(), replies(), &["--allow-all-tools", "--disallow-temp-dir", "--add-dir", &dir]).await;
    assert!(told[0].contains("outside") && told[1].contains("outside"), "{told:?}");
    assert!(outside.path().join("new.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn write_rules_and_url_rules_name_what_refused_the_call() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("sub")).unwrap();
    let replies = vec![
        Reply::tool_call("create", json!({"path": "sub/.env", "file_text": "SECRET=1"})),
        Reply::tool_call("create", json!({"path": "sub/ok.txt", "file_text": "ok"})),
        Reply::tool_call("web_fetch", json!({"url": "https://example.com/a"})),
        bash("curl -s https://example.com/x"),
    ];
    let args = ["--allow-all-tools", "--deny-tool", "write(.env)", "--deny-url", "example.com"];
    let (out, told, _) = run(work.path(), replies, &args).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(told[0], rules_text("`write(.env)`"));
    assert!(!work.path().join("sub/.env").exists());
    assert!(work.path().join("sub/ok.txt").exists(), "{}", told[1]);
    assert_eq!(told[2], "Permission to access this URL was denied.");
    assert_eq!(told[3], rules_text("`url(https://example.com)`"));
}

#[tokio::test(flavor = "multi_thread")]
async fn available_and_excluded_tools_decide_what_the_model_is_offered() {
    let offered = |requests: &[Value]| -> Vec<String> {
        requests[0]["body"]["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["function"]["name"].as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let work = tempfile::tempdir().unwrap();
    let (_, _, requests) = run(work.path(), vec![], &["--available-tools", "view,grep"]).await;
    assert_eq!(offered(&requests), vec!["view", "grep"]);
    let (_, _, requests) = run(work.path(), vec![], &["--excluded-tools", "bash", "view"]).await;
    let tools = offered(&requests);
    assert!(!tools.contains(&"bash".to_string()) && !tools.contains(&"view".to_string()), "{tools:?}");
    assert!(tools.contains(&"read_bash".to_string()) && tools.contains(&"grep".to_string()), "{tools:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_pattern_exits_one_before_any_model_call() {
    let work = tempfile::tempdir().unwrap();
    let (out, _, requests) = run(work.path(), vec![], &["--deny-tool", "shell("]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Invalid --deny-tool value. Error: Invalid rule format: shell("
    );
    assert!(requests.iter().all(|r| r["path"] != "/chat/completions"), "no model call");
    assert!(std::fs::read_dir(work.path()).unwrap().next().is_none(), "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_env_vars_are_kept_from_the_shell() {
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(bash("echo \"[$MY_KEY] [$OTHER]\""));
    fake.push_reply(Reply::text("done"));
    let home = tempfile::tempdir().unwrap();
    let (url, h) = (fake.url(), home.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        crate::runner::skipper_command(&url, &h, &h)
            .args(["-p", "go", "--allow-all-tools", "--secret-env-vars", "MY_KEY"])
            .env("MY_KEY", "s3cr3t-value")
            .env("OTHER", "plain-value")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let told = fake.requests().last().unwrap()["body"]["messages"].to_string();
    assert!(told.contains("[] [plain-value]"), "{told}");
    assert!(!told.contains("s3cr3t-value"), "{told}");
}
