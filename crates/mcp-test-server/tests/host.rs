//! The MCP host against the project's test server, over stdio and streamable HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use mcp_client::{render, CallError, HostEvent, McpHost, Source, Status};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-test-server");

fn host() -> McpHost {
    McpHost::new(std::env::temp_dir(), std::env::vars().collect::<Vec<_>>())
}

fn servers(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Waits until `name` leaves `pending` (startup is bounded by the host's own timeout).
async fn settled(host: &McpHost, name: &str) -> Status {
    loop {
        let s = host.list().into_iter().find(|s| s.name == name).unwrap();
        if s.status != Status::Pending {
            return s.status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn alive(pid: i32) -> bool {
    // Signal 0 checks existence; a zombie awaiting its parent counts as gone.
    if kill_zero(pid) != 0 {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.split_whitespace().nth(2).is_none_or(|s| s != "Z")
}

/// `kill -0 <pid>`: 0 when the process exists (the command keeps this crate free of `unsafe`).
fn kill_zero(pid: i32) -> i32 {
    let ok = std::process::Command::new("kill")
        .arg("-0")
        .arg(pid.to_string())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    if ok.success() {
        0
    } else {
        -1
    }
}

async fn gone(pid: i32) {
    while alive(pid) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pids(file: &PathBuf) -> Vec<i32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_server_tools_are_offered_and_called() {
    let h = host();
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    h.set_sink(move |e| seen.lock().unwrap().push(e));
    h.configure(
        &servers(
            json!({"t": {"command": BIN, "args": ["--name", "t"], "env": {"SECRET_X": "hunter2"}, "tools": ["*"]}}),
        ),
        &[],
    );
    assert_eq!(settled(&h, "t").await, Status::Connected);
    let names: Vec<String> = h.tools().into_iter().map(|t| t.qualified).collect();
    assert!(names.contains(&"t-echo".to_string()), "{names:?}");
    let ro = h.tools().into_iter().find(|t| t.tool == "read_only_info").unwrap();
    assert!(ro.read_only);
    assert_eq!(ro.title.as_deref(), Some("Read-only info"));

    let cancel = CancellationToken::new();
    let r = h.call("t", "get_env", json!({"name": "SECRET_X"}), None, &cancel).await.unwrap();
    assert_eq!(render(&r).text, "hunter2");
    let r = h.call("t", "fail", json!({"text": "nope"}), None, &cancel).await.unwrap();
    let out = render(&r);
    assert!(out.is_error);
    assert_eq!(out.text, "nope");
    let r = h.call("t", "image", json!({}), None, &cancel).await.unwrap();
    let out = render(&r);
    assert_eq!(out.text, "a pixel");
    assert!(out.images[0].starts_with("data:image/png;base64,"));
    let r = h.call("t", "resource", json!({}), None, &cancel).await.unwrap();
    assert_eq!(render(&r).text, "hello from t");
    let r = h.call("t", "add", json!({"a": 1, "b": 2}), None, &cancel).await.unwrap();
    assert_eq!(r["structuredContent"], json!({"sum": 3.0}));
    let r = h.call("t", "echo_meta", json!({"value": "v"}), Some(json!({"injected": "yes"})), &cancel).await.unwrap();
    assert_eq!(render(&r).text, r#"{"meta":{"injected":"yes"},"value":"v"}"#);

    let listed = h.list_tools("t").await.unwrap();
    assert!(listed.iter().any(|t| t["name"] == "hang"));
    let resources = h.list_resources("t").await.unwrap();
    assert_eq!(resources[0]["uri"], "test://greeting");
    let read = h.read_resource("t", "test://greeting").await.unwrap();
    assert_eq!(read["contents"][0]["text"], "hello from t");
    assert!(h.list_tools("nope").await.is_err());

    let ev = events.lock().unwrap();
    assert!(ev.iter().any(|e| matches!(e, HostEvent::Loaded(s) if s[0].status == Status::Connected)));
    assert!(ev.iter().any(|e| matches!(e, HostEvent::StatusChanged(s) if s.status == Status::Pending)));
    drop(ev);
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn allowlist_limits_the_tools() {
    let h = host();
    h.configure(&servers(json!({"a": {"command": BIN, "tools": ["echo"]}})), &[]);
    assert_eq!(settled(&h, "a").await, Status::Connected);
    let names: Vec<String> = h.tools().into_iter().map(|t| t.qualified).collect();
    assert_eq!(names, vec!["a-echo".to_string()]);
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn hanging_call_times_out_and_cancels() {
    let h = host();
    h.configure(&servers(json!({"h": {"command": BIN, "timeout": 300}})), &[]);
    assert_eq!(settled(&h, "h").await, Status::Connected);
    let cancel = CancellationToken::new();
    let err = h.call("h", "hang", json!({}), None, &cancel).await.unwrap_err();
    assert!(matches!(err, CallError::TimedOut { .. }), "{err:?}");
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert_eq!(h.call("h", "hang", json!({}), None, &cancel).await.unwrap_err(), CallError::Cancelled);
    // The server still answers after a timed-out call.
    let r = h.call("h", "echo", json!({"text": "still here"}), None, &CancellationToken::new()).await.unwrap();
    assert_eq!(render(&r).text, "still here");
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_mid_call_fails_the_call_and_the_server() {
    let h = host();
    h.configure(&servers(json!({"c": {"command": BIN}})), &[]);
    assert_eq!(settled(&h, "c").await, Status::Connected);
    let err = h.call("c", "crash", json!({}), None, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
    while h.is_running("c") {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = h.list().into_iter().find(|s| s.name == "c").unwrap();
    assert_eq!(s.status, Status::Failed);
    assert!(s.error.unwrap().contains("exited"));
    assert!(h.tools().is_empty());
    // A restart brings it back.
    h.start("c").unwrap();
    assert_eq!(settled(&h, "c").await, Status::Connected);
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_that_cannot_start_fail_with_a_reason() {
    let h = host();
    h.configure(
        &servers(json!({
            "bad": {"command": BIN, "args": ["--fail-start"]},
            "missing": {"command": "/nonexistent/mcp-server"},
            "broken": {"type": "local"},
        })),
        &["off".to_string()],
    );
    assert_eq!(settled(&h, "bad").await, Status::Failed);
    assert_eq!(settled(&h, "missing").await, Status::Failed);
    let list = h.list();
    let err = |n: &str| list.iter().find(|s| s.name == n).unwrap().error.clone().unwrap();
    assert!(err("bad").contains("failing on purpose"), "{}", err("bad"));
    assert!(err("missing").contains("/nonexistent/mcp-server"));
    assert!(err("broken").contains("has no command"));
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_disable_and_shutdown_kill_the_processes() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let h = host();
    let cfg = |name: &str| json!({"command": BIN, "args": ["--name", name, "--pid-file", pid_file.to_str().unwrap()]});
    h.configure(&servers(json!({"one": cfg("one"), "two": cfg("two")})), &[]);
    assert_eq!(settled(&h, "one").await, Status::Connected);
    assert_eq!(settled(&h, "two").await, Status::Connected);
    let started = pids(&pid_file);
    assert_eq!(started.len(), 2);
    h.stop("one").unwrap();
    assert!(!h.is_running("one"));
    assert_eq!(h.list()[0].status, Status::Stopped);
    assert!(h.tools().iter().all(|t| t.server == "two"));
    // One of the two processes goes away; the other keeps running until shutdown.
    while started.iter().filter(|p| alive(**p)).count() != 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    h.shutdown();
    for p in started {
        gone(p).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_server() {
    let mut child = tokio::process::Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--name", "web"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let url = line.strip_prefix("listening ").unwrap().to_string();
    let h = host();
    h.configure(
        &servers(json!({"web": {"type": "http", "url": url, "headers": {"X-Test": "1"}, "tools": ["*"]}})),
        &[],
    );
    assert_eq!(settled(&h, "web").await, Status::Connected, "{:?}", h.list());
    assert!(h.tools().iter().any(|t| t.qualified == "web-echo"));
    let r = h.call("web", "echo", json!({"text": "over http"}), None, &CancellationToken::new()).await.unwrap();
    assert_eq!(render(&r).text, "over http");
    assert_eq!(h.list()[0].transport, Some("http"));
    h.shutdown();
    child.kill().await.unwrap();
}

fn resolver(
    answer: Result<Option<Value>, String>,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> mcp_client::Resolver {
    use futures::FutureExt;
    std::sync::Arc::new(move || {
        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = answer.clone();
        async move { answer }.boxed()
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_servers_start_only_when_asked() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let h = host();
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    h.set_sink(move |e| seen.lock().unwrap().push(e));
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    let config = json!({"command": BIN, "args": ["--name", "b"], "tools": ["*"]});
    h.defer("b", resolver(Ok(Some(config)), calls.clone()), false, Source::Builtin);
    let off_calls = std::sync::Arc::new(AtomicUsize::new(0));
    h.defer("off", resolver(Ok(Some(json!({"command": "/nonexistent"}))), off_calls.clone()), true, Source::Builtin);
    // A configuration does not drop them, nor start them.
    h.configure(&servers(json!({})), &[]);
    assert!(h.list().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    h.start_deferred();
    assert_eq!(settled(&h, "b").await, Status::Connected);
    let listed = h.list();
    let b = listed.iter().find(|s| s.name == "b").unwrap();
    assert_eq!(b.source, mcp_client::Source::Builtin);
    let off = listed.iter().find(|s| s.name == "off").unwrap();
    assert_eq!(off.status, Status::Disabled);
    assert_eq!(off_calls.load(Ordering::SeqCst), 0, "a disabled server is never resolved");
    assert!(h.tools().iter().any(|t| t.qualified == "b-echo"));
    // Started once: asking again changes nothing.
    h.start_deferred();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // A later configuration keeps it.
    h.configure(&servers(json!({})), &[]);
    assert!(h.is_running("b"));
    let loaded =
        events.lock().unwrap().iter().any(
            |e| matches!(e, HostEvent::Loaded(s) if s.iter().any(|s| s.name == "b" && s.status == Status::Connected)),
        );
    assert!(loaded, "no Loaded report with the started server");
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_servers_that_cannot_resolve_fail_or_go_away() {
    use std::sync::atomic::AtomicUsize;
    let h = host();
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    h.defer("down", resolver(Err("Copilot API unreachable".into()), calls.clone()), false, Source::Builtin);
    h.defer("absent", resolver(Ok(None), calls.clone()), false, Source::Builtin);
    h.start_deferred();
    assert_eq!(settled(&h, "down").await, Status::Failed);
    let down = h.list().into_iter().find(|s| s.name == "down").unwrap();
    assert_eq!(down.error.as_deref(), Some("Copilot API unreachable"));
    let cancel = CancellationToken::new();
    h.wait_settled(&cancel).await;
    while h.is_configured("absent") {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!h.any_pending());
    h.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_configs_spawn_nothing_until_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let h = host();
    let cfg = |name: &str| json!({"command": BIN, "args": ["--name", name, "--pid-file", pid_file.to_str().unwrap()], "tools": ["*"]});
    h.defer_config("lazy", cfg("lazy"), false, Source::User);
    h.defer_config("off", cfg("off"), true, Source::User);
    h.defer_config("gone", cfg("gone"), false, Source::User);
    // A configuration neither starts nor drops them; a session's own server of the same name wins.
    h.configure(&servers(json!({"own": cfg("own")})), &[]);
    h.defer_config("own", json!({"command": "/nonexistent"}), false, Source::User);
    assert_eq!(settled(&h, "own").await, Status::Connected);
    assert_eq!(pids(&pid_file).len(), 1, "only the configured server runs");
    assert_eq!(h.list().len(), 1);
    h.undefer_except(Source::User, &["lazy".to_string(), "off".to_string()]);

    h.start_deferred();
    assert_eq!(settled(&h, "lazy").await, Status::Connected);
    let listed = h.list();
    let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lazy", "off", "own"]);
    assert_eq!(listed[0].source, Source::User);
    assert_eq!(listed[1].status, Status::Disabled);
    assert!(h.tools().iter().any(|t| t.qualified == "lazy-echo"));
    assert_eq!(pids(&pid_file).len(), 2);
    // A disabled deferred server has its configuration: enabling it starts it.
    h.start("off").unwrap();
    assert_eq!(settled(&h, "off").await, Status::Connected);
    h.shutdown();
}
