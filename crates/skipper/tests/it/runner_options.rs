//! `-p`'s session, agent, MCP, attachment, mode and report options against the fake model,
//! as the original 1.0.102 behaves in the same scenario: what the model was given, what was
//! written, the exit status.

use std::path::{Path, PathBuf};
use std::process::Output;

use fake_model::{FakeModel, Reply};
use serde_json::{json, Value};

use crate::runner::run_skipper;

/// One `skipper` run in `work` with `home` as its home: its output and the model requests.
async fn run_in(home: &Path, work: &Path, replies: Vec<Reply>, args: &[&str]) -> (Output, Vec<Value>) {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies(replies);
    let (url, h, w) = (fake.url(), home.to_path_buf(), work.to_path_buf());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_skipper(&url, &h, &w, &args)
    })
    .await
    .unwrap();
    (out, fake.requests())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The conversation the model was sent, as (role, text) without the injected date.
fn conversation(request: &Value) -> Vec<(String, String)> {
    request["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let text = match text.split_once("</current_datetime>") {
                Some((_, rest)) => rest.trim().to_string(),
                None => text,
            };
            (m["role"].as_str().unwrap_or_default().to_string(), text)
        })
        .collect()
}

fn sessions(home: &Path) -> Vec<String> {
    std::fs::read_dir(home.join(".copilot/session-state"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_continued_by_id_name_prefix_or_as_the_latest() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let id = "0b9f6a9e-2f41-4c3e-9f5e-4b1b8f0f6a11";
    let (out, _) =
        run_in(h, w, vec![Reply::text("one")], &["-p", "first", "--session-id", id, "-n", "Nightly fix"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sessions(h), [id], "the new session has the id given");
    assert!(stderr(&out).contains(&format!("skipper --resume={id}")), "{}", stderr(&out));

    let follow_ups: [&[&str]; 4] = [
        &["-p", "second", "--session-id", id],
        &["-p", "third", "--resume", "nightly FIX"],
        &["-p", "fourth", "--resume=0b9f6a9"],
        &["-p", "fifth", "--continue"],
    ];
    let mut seen = vec![("user".to_string(), "first".to_string()), ("assistant".into(), "one".into())];
    for (n, args) in follow_ups.iter().enumerate() {
        let answer = format!("answer {n}");
        let (out, reqs) = run_in(h, w, vec![Reply::text(&answer)], args).await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        seen.push(("user".into(), args[1].to_string()));
        assert_eq!(conversation(&reqs[0]), seen, "{args:?} continues the same conversation");
        seen.push(("assistant".into(), answer));
    }
    assert_eq!(sessions(h), [id], "no other session was made");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_that_cannot_be_found_stops_the_run_before_the_model_is_called() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &["-p", "go", "--resume", "no-such-name"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("Error: No session or name matched 'no-such-name'."), "{}", stderr(&out));
    assert!(reqs.is_empty());
    let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &["-p", "go", "--session-id", "not-a-uuid"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("The value is not a valid UUID"), "{}", stderr(&out));
    assert!(reqs.is_empty() && sessions(h).is_empty(), "nothing written");
    // With nothing to continue, --continue starts a new session.
    let (out, reqs) = run_in(h, w, vec![Reply::text("fresh")], &["-p", "go", "--continue"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(conversation(&reqs[0]), [("user".to_string(), "go".to_string())]);
    let (out, _) = run_in(h, w, vec![], &["-p", "go", "--continue", "--session-id", "x"]).await;
    assert_eq!(out.status.code(), Some(1), "contradicting options are a usage error");
    assert!(stderr(&out).contains("cannot be used with"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_named_runs_the_task_and_an_unknown_one_stops_the_run() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let agents = work.path().join(".github/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.agent.md"),
        "---\nname: reviewer\ndescription: Reviews code\n---\nYou are the REVIEWER agent. Review, never edit.\n",
    )
    .unwrap();
    let (h, w) = (home.path(), work.path());
    let (out, reqs) = run_in(h, w, vec![Reply::text("reviewed")], &["-p", "look", "--agent", "reviewer"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        reqs[0]["body"].to_string().contains("You are the REVIEWER agent"),
        "the agent's instructions reach the model"
    );

    let before = sessions(h);
    let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &["-p", "look", "--agent", "nosuch"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim(), "No such agent: nosuch, available: reviewer");
    assert!(reqs.is_empty());
    assert_eq!(sessions(h), before, "the session made for the run is gone again");
}

fn mcp_test_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_skipper")).with_file_name("mcp-test-server");
    assert!(path.exists(), "{} is built with the workspace's binaries", path.display());
    path
}

pub(crate) fn tool_names(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn additional_mcp_servers_run_for_the_run_and_a_disabled_one_does_not() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let config =
        json!({"mcpServers": {"tst": {"type": "stdio", "command": mcp_test_server(), "args": [], "tools": ["*"]}}});
    std::fs::write(w.join("servers.json"), config.to_string()).unwrap();
    let call = Reply::tool_call("tst-echo", json!({"text": "through MCP"}));
    let (out, reqs) = run_in(
        h,
        w,
        vec![call, Reply::text("done")],
        &["-p", "go", "--allow-all-tools", "--additional-mcp-config", "@servers.json"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tool_names(&reqs[0]).contains(&"tst-echo".to_string()), "{:?}", tool_names(&reqs[0]));
    let told = conversation(&reqs[1]);
    assert!(told.iter().any(|(role, text)| role == "tool" && text.contains("through MCP")), "{told:?}");

    let inline = config.to_string();
    let (out, reqs) = run_in(
        h,
        w,
        vec![Reply::text("done")],
        &["-p", "go", "--additional-mcp-config", &inline, "--disable-mcp-server", "tst"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!tool_names(&reqs[0]).iter().any(|t| t.starts_with("tst-")), "{:?}", tool_names(&reqs[0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_run_input_is_a_clear_error_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "hello").unwrap();
    let (h, w) = (home.path(), work.path());
    let cases: [(&[&str], &str); 6] = [
        (&["--additional-mcp-config", "{bad"], "Invalid --additional-mcp-config JSON: key must be a string"),
        (&["--additional-mcp-config", "@missing.json"], "Failed to read MCP config file \""),
        (&["--additional-mcp-config", r#"{"servers":{}}"#], "--additional-mcp-config: mcpServers is required"),
        (&["--attachment", "notes.txt"], "--attachment file type not supported (must be an image or a PDF): notes.txt"),
        (&["--attachment", "gone.png"], "--attachment file not found: gone.png"),
        (&["--model", "no-such-model"], "Error: Model \"no-such-model\" is not available. Available models: "),
    ];
    for (args, said) in cases {
        let mut all = vec!["-p", "go"];
        all.extend_from_slice(args);
        let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &all).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).starts_with(said), "{args:?}: {}", stderr(&out));
        assert!(reqs.is_empty(), "{args:?}: no model call");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(sessions(h).is_empty(), "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_goes_to_the_model_with_the_task() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let png: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    std::fs::write(work.path().join("shot.png"), png).unwrap();
    let (out, reqs) = run_in(
        home.path(),
        work.path(),
        vec![Reply::text("a picture")],
        &["-p", "what is this", "--attachment", "shot.png"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = reqs[0]["body"].to_string();
    assert!(body.contains("data:image/png;base64,iVBORw0KGgo="), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn share_and_usage_files_are_written_when_the_run_ends() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let replies = vec![
        Reply::tool_call("bash", json!({"command": "echo hi > made.txt", "description": "make"})),
        Reply::tool_call("create", json!({"path": work.path().join("notes.md"), "file_text": "one\ntwo\n"})),
        Reply::text("done here"),
    ];
    let (out, _) = run_in(
        home.path(),
        work.path(),
        replies,
        &["-p", "make it", "--allow-all-tools", "--share", "--usage-output-file", "usage.json"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = sessions(home.path()).pop().unwrap();
    let md = std::fs::read_to_string(work.path().join(format!("copilot-session-{id}.md"))).unwrap();
    let (user, tool, answer) =
        (md.find("### User\n\nmake it"), md.find("### `bash`"), md.find("### Copilot\n\ndone here"));
    assert!(user < tool && tool < answer && user.is_some(), "{md}");
    assert!(md.contains("echo hi > made.txt"), "{md}");
    let usage: Value = serde_json::from_str(&std::fs::read_to_string(work.path().join("usage.json")).unwrap()).unwrap();
    assert_eq!(usage["totalUserRequests"], 1);
    assert_eq!(usage["modelMetrics"]["claude-sonnet-4.5"]["requests"]["count"], 3, "{usage}");
    let notes = work.path().join("notes.md").display().to_string();
    assert_eq!(
        usage["codeChanges"],
        json!({"linesAdded": 2, "linesRemoved": 0, "filesModifiedCount": 1, "filesModified": [notes]}),
        "the file tools' changes; the shell's are not known"
    );
    assert!(usage["modelMetrics"]["claude-sonnet-4.5"]["usage"]["inputTokens"].as_u64().unwrap() > 0);
    assert_eq!(usage["currentModel"], "claude-sonnet-4.5");

    // A path given is where the Markdown goes.
    let (out, _) = run_in(home.path(), work.path(), vec![Reply::text("again")], &["-p", "go", "--share=run.md"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read_to_string(work.path().join("run.md")).unwrap().contains("### Copilot\n\nagain"));
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_asks_for_a_plan_in_the_sessions_plan_file_which_needs_no_approval() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let id = "5d0c4a57-1b3e-4f7a-9a51-2c8e7f0d9b21";
    let plan = h.join(".copilot/session-state").join(id).join("plan.md");
    let write = Reply::tool_call("create", json!({"path": plan, "file_text": "1. add the cache"}));
    let args = ["-p", "add a cache", "--plan", "--session-id", id, "--output-format", "json"];
    let (out, reqs) = run_in(h, w, vec![write, Reply::text("planned")], &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (_, text) = conversation(&reqs[0]).pop().unwrap();
    assert!(text.contains(&plan.display().to_string()) && text.ends_with("add a cache"), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""newMode":"plan""#), "the session is in plan mode: {stdout}");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "1. add the cache", "written without anyone to ask");
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_off_gives_whole_messages_only() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let long = "word ".repeat(50);
    let (h, w) = (home.path(), work.path());
    let (on, _) = run_in(h, w, vec![Reply::text(&long)], &["-p", "go", "--output-format", "json"]).await;
    let (off, _) =
        run_in(h, w, vec![Reply::text(&long)], &["-p", "go", "--output-format", "json", "--stream", "off"]).await;
    let deltas = |o: &Output| String::from_utf8_lossy(&o.stdout).matches(r#""type":"assistant.message_delta""#).count();
    assert!(deltas(&on) > 0, "{}", String::from_utf8_lossy(&on.stdout));
    assert_eq!(deltas(&off), 0);
    assert!(String::from_utf8_lossy(&off.stdout).contains(r#""type":"assistant.message""#));
    let (bad, _) = run_in(h, w, vec![], &["-p", "go", "--stream", "sometimes"]).await;
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_github_server_is_offered_unless_disabled() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let github = |r: &Value| tool_names(r).iter().any(|t| t.starts_with("github-mcp-server-"));
    let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &["-p", "go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(github(&reqs[0]), "{:?}", tool_names(&reqs[0]));
    let (out, reqs) = run_in(h, w, vec![Reply::text("x")], &["-p", "go", "--disable-builtin-mcps"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!github(&reqs[0]), "{:?}", tool_names(&reqs[0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn options_that_need_githubs_services_are_refused_not_ignored() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for option in [&["--share-gist"][..], &["--connect"], &["--fleet"], &["--remote"], &["--environment-host", "x"]] {
        let mut args = vec!["-p", "go"];
        args.extend_from_slice(option);
        let (out, reqs) = run_in(home.path(), work.path(), vec![Reply::text("x")], &args).await;
        assert_eq!(out.status.code(), Some(1), "{option:?}");
        assert!(stderr(&out).contains(&format!("{} cannot be honoured by Skipper", option[0])), "{}", stderr(&out));
        assert!(reqs.is_empty(), "{option:?}");
    }
    assert!(sessions(home.path()).is_empty());
}

/// What the shell printed for `echo FOO=$FOO` in one run with `BASH_ENV` naming a file that
/// exports `FOO`.
async fn foo_seen_by_the_shell(home: &Path, work: &Path, args: &[&str]) -> String {
    let fake = FakeModel::start().await.unwrap();
    fake.push_replies(vec![
        Reply::tool_call("bash", json!({"command": "echo FOO=$FOO", "description": "print"})),
        Reply::text("done"),
    ]);
    let bash_env = work.join("env.sh");
    std::fs::write(&bash_env, "export FOO=from-bash-env\n").unwrap();
    let mut cmd = crate::runner::skipper_command(&fake.url(), home, work);
    cmd.env("BASH_ENV", &bash_env).args(["-p", "print FOO", "--allow-all-tools"]).args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = fake.requests();
    let told = conversation(&reqs[1]);
    let output = told.iter().find(|(role, _)| role == "tool").map(|(_, text)| text.clone()).unwrap_or_default();
    output.lines().next().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_env_is_read_only_when_asked_for() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    // The original's default: the shell does not read BASH_ENV.
    assert_eq!(foo_seen_by_the_shell(h, w, &[]).await, "FOO=");
    assert_eq!(foo_seen_by_the_shell(h, w, &["--bash-env"]).await, "FOO=from-bash-env");
    assert_eq!(foo_seen_by_the_shell(h, w, &["--bash-env", "on"]).await, "FOO=from-bash-env");
    // The setting turns it on; the command line wins over it.
    std::fs::create_dir_all(h.join(".copilot")).unwrap();
    std::fs::write(h.join(".copilot/settings.json"), r#"{"bashEnv": true}"#).unwrap();
    assert_eq!(foo_seen_by_the_shell(h, w, &[]).await, "FOO=from-bash-env");
    assert_eq!(foo_seen_by_the_shell(h, w, &["--no-bash-env"]).await, "FOO=");
    assert_eq!(foo_seen_by_the_shell(h, w, &["--bash-env", "off"]).await, "FOO=");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_work_trees_mcp_servers_start_only_in_a_trusted_folder() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());
    let config =
        json!({"mcpServers": {"ws": {"type": "local", "command": mcp_test_server(), "args": [], "tools": ["*"]}}});
    std::fs::write(w.join(".mcp.json"), config.to_string()).unwrap();
    // The file is read at the root of the work tree.
    std::fs::create_dir(w.join(".git")).unwrap();
    let offered = |reqs: &[Value]| tool_names(&reqs[0]).iter().any(|t| t == "ws-echo");

    // A checkout does not start programs of its own choosing unasked.
    let (out, reqs) = run_in(h, w, vec![Reply::text("done")], &["-p", "go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!offered(&reqs), "{:?}", tool_names(&reqs[0]));

    // --trust-folder: for this run only, and nothing is saved.
    let call = Reply::tool_call("ws-echo", json!({"text": "from the work tree's server"}));
    let (out, reqs) =
        run_in(h, w, vec![call, Reply::text("done")], &["-p", "go", "--trust-folder", "--allow-all-tools"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(offered(&reqs), "{:?}", tool_names(&reqs[0]));
    let told = conversation(&reqs[1]);
    assert!(told.iter().any(|(role, text)| role == "tool" && text.contains("from the work tree's server")), "{told:?}");
    let (_, reqs) = run_in(h, w, vec![Reply::text("done")], &["-p", "go"]).await;
    assert!(!offered(&reqs), "the trust was saved: {:?}", tool_names(&reqs[0]));

    // A folder the user trusts (config.json), from a directory inside it.
    std::fs::create_dir_all(h.join(".copilot")).unwrap();
    let trusted = json!({"trustedFolders": [w]});
    std::fs::write(h.join(".copilot/config.json"), trusted.to_string()).unwrap();
    let inner = w.join("src");
    std::fs::create_dir_all(&inner).unwrap();
    let (out, reqs) = run_in(h, &inner, vec![Reply::text("done")], &["-p", "go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(offered(&reqs), "{:?}", tool_names(&reqs[0]));
}
