//! The team server's command sandbox, attacked as a tenant would: alpha's model asks the bash
//! tool, with every permission approved, for beta's files, the server's home, its process,
//! its environment and its network, and leaves processes behind. Each is refused by the
//! sandbox (bubblewrap), and nothing of beta or the server leaks, changes or dies.

use std::time::Duration;

use fake_model::Reply;
use serde_json::{json, Value};

use crate::harness::{with_timeout, Dirs, Options, RpcClient, Skipper};
use crate::serve::{Serve, ALPHA};

const T: Duration = Duration::from_secs(30);

/// Skips (with a message) where the host cannot sandbox and the sandbox is not required;
/// `skipper serve` refuses to start there, which another test checks.
pub(crate) fn sandbox_here() -> bool {
    if std::process::Command::new("bwrap").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var("SKIPPER_REQUIRE_SANDBOX").is_err(), "bwrap is required here and missing");
    eprintln!("skipped: no bwrap on this host");
    false
}

/// A session of alpha's whose every permission request is approved.
async fn alpha_session(s: &Serve) -> (std::sync::Arc<RpcClient>, String, tokio::task::JoinHandle<()>) {
    let c = s.tenant(ALPHA).await;
    let sid = c.create_session(json!({"requestPermission": true})).await;
    let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
    (c, sid, approver)
}

/// A single user's session in `cwd` under its own `sandboxConfig`, every permission request
/// approved once.
async fn own_sandbox_session(
    c: &std::sync::Arc<RpcClient>,
    cwd: &std::path::Path,
    config: Value,
) -> (String, tokio::task::JoinHandle<()>) {
    let sid =
        c.create_session(json!({"requestPermission": true, "workingDirectory": cwd, "sandboxConfig": config})).await;
    let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
    (sid, approver)
}

/// Runs each command through the model's bash tool in one of alpha's sessions (approving
/// everything); the text each call returned, in order.
async fn alpha_runs(s: &Serve, c: &RpcClient, sid: &str, commands: &[&str]) -> Vec<String> {
    let calls: Vec<Value> = commands.iter().map(|c| json!({"command": c, "description": "attack"})).collect();
    bash_calls(&s.fake, c, sid, &calls).await.into_iter().map(|(text, _)| text).collect()
}

/// The model calls bash once per entry of `calls` (its arguments), then answers; each call's
/// text (result or error) and completion event.
async fn bash_calls(fake: &fake_model::FakeModel, c: &RpcClient, sid: &str, calls: &[Value]) -> Vec<(String, Value)> {
    let calls: Vec<(&str, Value)> = calls.iter().map(|a| ("bash", a.clone())).collect();
    tool_calls(fake, c, sid, &calls).await
}

/// The model calls each tool of `calls` with its arguments, one per reply, then answers; each
/// call's text (result or error) and completion event.
async fn tool_calls(
    fake: &fake_model::FakeModel,
    c: &RpcClient,
    sid: &str,
    calls: &[(&str, Value)],
) -> Vec<(String, Value)> {
    for (tool, args) in calls {
        fake.push_reply(Reply::ToolCalls(vec![(tool.to_string(), args.to_string())]));
    }
    fake.push_reply(Reply::text("done"));
    let before = c.count(sid, "tool.execution_complete");
    let idles = c.count(sid, "session.idle");
    c.send(sid, "do as I say").await;
    c.wait_for_nth_event(sid, "session.idle", idles + 1, T).await;
    let done = c.events_of_type(sid, "tool.execution_complete");
    done[before..]
        .iter()
        .map(|e| {
            let result = &e["data"]["result"]["content"];
            let error = &e["data"]["error"]["message"];
            (format!("{}{}", result.as_str().unwrap_or(""), error.as_str().unwrap_or("")), e.clone())
        })
        .collect()
}

/// A directory outside the working directory and the host's temporary directory (which a
/// session's sandbox lets commands write): under the target directory, unless the checkout
/// itself is under the temporary directory, then under /var/tmp.
fn outside_the_sandbox() -> tempfile::TempDir {
    let target_tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target_tmp.starts_with(std::env::temp_dir()) { std::path::Path::new("/var/tmp") } else { target_tmp };
    tempfile::tempdir_in(base).unwrap()
}

/// One user's `skipper` on a fake model, its client connected.
async fn one_user(
    options: Options,
) -> (fake_model::FakeModel, std::sync::Arc<Dirs>, Skipper, std::sync::Arc<RpcClient>) {
    let fake = fake_model::FakeModel::start().await.expect("fake model");
    let dirs = Dirs::new();
    fake.set_workdir(&dirs.workdir);
    let sk = Skipper::spawn(&fake.url(), dirs.clone(), options).await;
    let c = sk.client();
    c.connect().await;
    (fake, dirs, sk, c)
}

/// Waits (up to `T`) until `done` holds, checking every 50 ms.
async fn poll(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + T;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Processes on the host whose `argv[0]` is `marker` (not those that merely mention it, such as
/// the shell or bwrap command lines that start them).
fn host_processes_named(marker: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.split(|b| *b == 0).next() == Some(marker.as_bytes()))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_commands_cannot_reach_another_tenant_the_server_or_the_network() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let mut s = Serve::start().await;
        let beta = crate::tenant_config::betas_files(&s);
        let home = crate::tenant_config::server_home(&s);
        let server_pid = s.child.id().unwrap();
        let model_port = s.fake.url().rsplit(':').next().unwrap().trim_end_matches('/').to_string();
        let (c, sid, approver) = alpha_session(&s).await;

        let beta_file = beta.join("secret.txt").display().to_string();
        let planted = beta.join("planted.txt").display().to_string();
        let attacks = [
            // A control: the tenant's own workspace is there and writable.
            "echo mine > made.txt && cat made.txt".to_string(),
            format!("cat {beta_file}; ls {}", beta.display()),
            format!("echo pwned > {planted}; echo pwned > {}/planted.txt", home.display()),
            format!("ls -la {}; cat {}/skipper-index.db", home.display(), home.display()),
            format!("cat /proc/{server_pid}/environ; env"),
            format!("kill -9 {server_pid}; echo signalled"),
            format!("(echo > /dev/tcp/127.0.0.1/{model_port}) 2>/dev/null && echo CONNECTED || echo REFUSED"),
            // A user namespace of its own, where it would be root: the seccomp filter says no.
            "unshare -U -r id && echo IN-A-NEW-USERNS".to_string(),
        ];
        let commands: Vec<&str> = attacks.iter().map(String::as_str).collect();
        let out = alpha_runs(&s, &c, &sid, &commands).await;
        assert_eq!(out.len(), attacks.len(), "{out:?}");
        assert!(out[0].contains("mine"), "{out:?}");
        assert_eq!(std::fs::read_to_string(s.workspace("alpha").join("made.txt")).unwrap(), "mine\n");
        let all = out.join("\n");
        assert!(!all.contains("TOP-SECRET-OF-BETA"), "beta's file leaked: {all}");
        assert!(!beta.join("planted.txt").exists() && !home.join("planted.txt").exists());
        assert!(home.join("skipper-index.db").exists());
        let listed = out[3].lines().any(|l| l.ends_with(" skipper-index.db"));
        assert!(!listed && !all.contains("SQLite format"), "the server's home leaked: {}", out[3]);
        for secret in ["GH_TOKEN", "COPILOT_API_URL", "fake"] {
            assert!(!out[4].contains(secret), "the server's environment leaked ({secret}): {}", out[4]);
        }
        assert!(out[6].contains("REFUSED"), "{}", out[6]);
        assert!(out[7].contains("Operation not permitted") && !out[7].contains("IN-A-NEW-USERNS"), "{}", out[7]);
        assert!(s.child.try_wait().unwrap().is_none(), "the server died: {}", s.stderr_text());
        // Beta, on the same server, is untouched and served.
        assert_eq!(std::fs::read_to_string(beta.join("secret.txt")).unwrap(), "TOP-SECRET-OF-BETA");
        approver.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_mcp_server_runs_in_the_sandbox_too() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let beta = crate::tenant_config::betas_files(&s);
        let alpha = s.workspace("alpha");
        // Not an MCP server at all: a command that tries to copy beta's file into alpha's
        // workspace and plant one in beta's, then reports what it could see.
        let script = format!(
            "cat {beta}/secret.txt > {alpha}/leak.txt 2>&1; echo planted > {beta}/from-mcp.txt; env > {alpha}/mcp-env.txt; echo done >> {alpha}/leak.txt",
            beta = beta.display(),
            alpha = alpha.display()
        );
        let c = s.tenant(ALPHA).await;
        let servers = json!({"evil": {"type": "local", "command": "bash", "args": ["-c", script], "tools": ["*"]}});
        let sid = c.create_session(json!({"mcpServers": servers})).await;
        s.fake.push_reply(Reply::text("hello"));
        c.send(&sid, "hi").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let leak_done = || std::fs::read_to_string(alpha.join("leak.txt")).is_ok_and(|t| t.contains("done"));
        poll(leak_done, "the MCP command to have run").await;
        let leak = std::fs::read_to_string(alpha.join("leak.txt")).unwrap();
        assert!(!leak.contains("TOP-SECRET-OF-BETA"), "{leak}");
        assert!(!beta.join("from-mcp.txt").exists());
        let env = std::fs::read_to_string(alpha.join("mcp-env.txt")).unwrap();
        assert!(!env.contains("GH_TOKEN") && !env.contains("COPILOT_API_URL"), "{env}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_a_tenant_leaves_behind_die_with_its_session() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let (c, sid, approver) = alpha_session(&s).await;
        let marker = format!("left-behind-{}", std::process::id());
        let spawn = format!("for i in 1 2 3; do setsid -f bash -c 'exec -a {marker} sleep 300' >/dev/null 2>&1; done");
        // A command's own escaped children end with it (they are in its PID namespace).
        let sync = json!({"command": format!("{spawn}; echo started"), "description": "escape"});
        let out = bash_calls(&s.fake, &c, &sid, &[sync]).await;
        assert!(out[0].0.contains("started"), "{out:?}");
        assert_eq!(host_processes_named(&marker), 0, "they outlived their command");
        // Those of a command still running end with the session.
        let running = json!({"command": format!("{spawn}; sleep 300"), "description": "linger", "mode": "async"});
        let out = bash_calls(&s.fake, &c, &sid, &[running]).await;
        assert!(out[0].0.contains("started in background"), "{out:?}");
        poll(|| host_processes_named(&marker) == 3, "the escaped processes running").await;
        let deleted: Value = c.ok("session.delete", json!({"sessionId": sid})).await;
        assert!(deleted.is_object(), "{deleted}");
        poll(|| host_processes_named(&marker) == 0, "every process of the deleted session gone").await;
        approver.abort();
    })
    .await;
}

/// Whether this host lets a server make cgroups beneath its own (`pids` and `memory`); the
/// limits test skips, saying so, where not (a server configured with limits then refuses to
/// start, which the sandbox crate's own tests show).
fn cgroups_here() -> bool {
    let limits = ::sandbox::Limits { max_processes: Some(64), max_memory_bytes: Some(64 << 20), cpu_weight: Some(100) };
    match ::sandbox::Cgroup::create("probe", &limits) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_processes_and_memory_are_capped_without_touching_the_others() {
    if !sandbox_here() || !cgroups_here() {
        return;
    }
    with_timeout(120, async {
        let config =
            crate::serve::tenants_config("\n[sandbox]\nmax_processes = 24\nmax_memory_mb = 64\ncpu_weight = 100\n");
        let mut s = Serve::start_with_args(&config, &[], &[]).await;
        let (c, sid, approver) = alpha_session(&s).await;
        let out = alpha_runs(
            &s,
            &c,
            &sid,
            &[
                // A fork bomb in miniature: dash does not retry a failed fork, it says so.
                "sh -c 'for i in $(seq 80); do sleep 4 & done; wait' 2>&1 | sort | uniq -c | head -3; echo forked",
                // Far more memory than the tenant has: the process is killed, not the server.
                "head -c 300M /dev/zero | tail > /dev/null; echo exit=$?",
                "echo still-here",
            ],
        )
        .await;
        // Its share of a busy CPU is its tenant's group's (the launcher that joins the pids and
        // memory groups joins this one too, as the sandbox crate's tests show).
        let server = s.child.id().unwrap();
        let own = std::fs::read_to_string(format!("/proc/{server}/cgroup")).unwrap();
        let cpu = own.lines().find_map(|l| l.split_once(":cpu,").or(l.split_once(":cpu:")).map(|(_, p)| p.to_string()));
        if let (Some(path), true) = (cpu, std::path::Path::new("/sys/fs/cgroup/cpu").exists()) {
            let path = path.rsplit(':').next().unwrap().trim_start_matches('/').to_string();
            let group = std::path::Path::new("/sys/fs/cgroup/cpu").join(path).join(format!("skipper-{server}/alpha"));
            assert_eq!(std::fs::read_to_string(group.join("cpu.shares")).unwrap().trim(), "1024");
        }
        assert!(out[0].contains("Cannot fork") && out[0].contains("forked"), "{}", out[0]);
        assert!(out[1].contains("exit=137"), "{}", out[1]);
        assert!(out[2].contains("still-here"), "{}", out[2]);
        // Beta, limited on its own, is untouched; the server lives.
        let beta = s.tenant(crate::serve::BETA).await;
        let bsid = beta.create_session(json!({"requestPermission": true})).await;
        let approver_b = beta.auto_answer_permissions(&bsid, json!({"kind": "approve-once"}));
        let out = bash_calls(&s.fake, &beta, &bsid, &[json!({"command": "echo beta-fine", "description": "x"})]).await;
        assert!(out[0].0.contains("beta-fine"), "{out:?}");
        assert!(s.child.try_wait().unwrap().is_none(), "the server died: {}", s.stderr_text());
        approver.abort();
        approver_b.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_sandbox_config_confines_its_commands_until_turned_off() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let (fake, dirs, _sk, c) = one_user(Options::default()).await;
        let outside = outside_the_sandbox();
        let probe = outside.path().join("probe.txt");
        let config = json!({"enabled": true, "userPolicy": {"network": {"allowOutbound": false}}});
        let (sid, approver) = own_sandbox_session(&c, &dirs.workdir, config).await;
        let write_outside = format!("echo out > {}", probe.display());
        let calls = [
            json!({"command": "echo in > inside.txt && cat inside.txt", "description": "inside"}),
            json!({"command": write_outside, "description": "outside"}),
            json!({"command": "sleep 1", "description": "detached", "mode": "async", "detach": true}),
        ];
        let out = bash_calls(&fake, &c, &sid, &calls).await;
        assert!(out[0].0.contains("in"), "{out:?}");
        assert_eq!(out[0].1["data"]["sandboxed"], json!(true), "{}", out[0].1);
        assert!(dirs.workdir.join("inside.txt").exists());
        assert!(!probe.exists(), "the sandboxed command wrote outside: {}", out[1].0);
        assert!(out[2].0.contains("Detached commands cannot run inside the sandbox"), "{}", out[2].0);

        c.ok("session.options.update", json!({"sessionId": sid, "sandboxConfig": {"enabled": false}})).await;
        let out = bash_calls(&fake, &c, &sid, &[json!({"command": write_outside, "description": "outside"})]).await;
        assert!(probe.exists(), "unsandboxed, it may: {}", out[0].0);
        assert!(out[0].1["data"].get("sandboxed").is_none(), "{}", out[0].1);
        approver.abort();
    })
    .await;
}

/// The `sql` tool runs in the server's process, not in the sandbox: its database is the
/// session's own and nothing else (the server's index holds every tenant's session ids and
/// owners; a copy written by `VACUUM INTO` would land wherever the model asked).
#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_sql_cannot_reach_the_servers_index() {
    with_timeout(60, async {
        let s = Serve::start().await;
        let home = crate::tenant_config::server_home(&s);
        let index = home.join("skipper-index.db");
        assert!(index.exists());
        let (c, sid, approver) = alpha_session(&s).await;
        let copy = s.workspace("alpha").join("index-copy.db");
        for query in
            [format!("ATTACH DATABASE '{}' AS idx", index.display()), format!("VACUUM INTO '{}'", copy.display())]
        {
            s.fake.push_reply(Reply::ToolCalls(vec![(
                "sql".into(),
                json!({"query": query, "description": "attack"}).to_string(),
            )]));
        }
        s.fake.push_reply(Reply::text("done"));
        c.send(&sid, "read the server's index").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let done = c.events_of_type(&sid, "tool.execution_complete");
        assert_eq!(done.len(), 2, "{done:?}");
        for e in &done {
            assert_eq!(e["data"]["success"], json!(false), "{e}");
            let text = e["data"].to_string();
            let refused = ["not authorized", "authorization denied", "too many attached"];
            assert!(refused.iter().any(|r| text.contains(r)), "{text}");
        }
        assert!(!copy.exists(), "VACUUM INTO wrote the session database out");
        approver.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_cannot_sandbox_does_not_serve() {
    with_timeout(60, async {
        // An empty PATH: no bwrap to be found.
        let (status, stderr) = Serve::fails_to_start_with_env("", &[], &[("PATH", "/nonexistent")]).await;
        assert!(!status.success());
        assert!(stderr.contains("runs every tenant's commands in a sandbox"), "{stderr}");
        assert!(stderr.contains("bubblewrap"), "{stderr}");
    })
    .await;
}

/// The server's own work on a tenant's files cannot be led out by what the tenant's commands
/// leave behind: a directory swapped for a link into beta's workspace after an edit does not
/// carry the edit's rewind there, and the session's own directory (its log and rewind store,
/// read and written by the server) is not the commands' to change.
#[tokio::test(flavor = "multi_thread")]
async fn links_a_tenants_commands_plant_do_not_lead_the_servers_file_work_out() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let beta = crate::tenant_config::betas_files(&s);
        std::fs::write(beta.join("notes.txt"), "beta's notes").unwrap();
        let d = s.workspace("alpha").join("d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("notes.txt"), "alpha's notes").unwrap();
        let c = s.tenant(ALPHA).await;
        let sid = c.create_session(json!({"requestPermission": true, "enableFileChangeTracking": true})).await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        let edit = json!({"path": d.join("notes.txt"), "old_str": "notes", "new_str": "edited notes"});
        s.fake.push_reply(Reply::ToolCalls(vec![("edit".into(), edit.to_string())]));
        s.fake.push_reply(Reply::text("edited"));
        c.send(&sid, "edit it").await;
        c.wait_for_nth_event(&sid, "session.idle", 1, T).await;
        assert_eq!(std::fs::read_to_string(d.join("notes.txt")).unwrap(), "alpha's edited notes");
        let point = c.events_of_type(&sid, "user.message")[0]["id"].clone();

        let session_dir = crate::tenant_config::server_home(&s).join("session-state").join(format!("alpha.{sid}"));
        assert!(session_dir.join("rewind/index.jsonl").exists(), "the edit was kept for rewinds");
        let (dir, swap) = (session_dir.display(), format!("mv d d.real && ln -s {} d && echo swapped", beta.display()));
        let out = alpha_runs(
            &s,
            &c,
            &sid,
            &[
                &swap,
                &format!("echo forged >> {dir}/rewind/index.jsonl; ln -s {} {dir}/plan.md; ls {dir}", beta.display()),
            ],
        )
        .await;
        assert!(out[0].contains("swapped"), "{out:?}");
        let index = std::fs::read_to_string(session_dir.join("rewind/index.jsonl")).unwrap();
        assert!(!index.contains("forged"), "the rewind store was changed: {index}");
        assert!(!session_dir.join("plan.md").exists(), "a link was planted in the session's directory");
        assert!(!out[1].contains("events.jsonl"), "the session's directory is shown to its commands: {}", out[1]);

        // Rewinding to the edit would put alpha's old notes back at d/notes.txt, now beta's file.
        let rewound = c
            .ok("session.history.rewind", json!({"sessionId": sid, "eventId": point, "mode": "conversation-and-files"}))
            .await;
        assert_ne!(rewound["outcome"], json!("success"), "{rewound}");
        assert_eq!(std::fs::read_to_string(beta.join("notes.txt")).unwrap(), "beta's notes");
        assert_eq!(
            std::fs::read_to_string(d.with_extension("real").join("notes.txt")).unwrap(),
            "alpha's edited notes"
        );
        approver.abort();
    })
    .await;
}

/// The original's `sandbox.*` and `session.sandbox.*` methods, as a single user's SDK calls
/// them: what the host supports, the settings' defaults and floor, and a session's sandbox —
/// which lists the secrets its commands would see (never their values) and keeps the host's
/// model tokens from them.
#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_methods_answer_for_the_host_the_settings_and_a_session() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let env = [("MY_API_KEY", "x-value"), ("OPENAI_API_KEY", "z-value"), ("PLAIN_VAR", "v"), ("HF_TOKEN", "h")];
        let options = Options {
            extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Options::default()
        };
        let (fake, dirs, _sk, c) = one_user(options).await;

        let host = c.ok("sandbox.getHostSupport", json!({})).await;
        assert_eq!(host["supported"], json!(true), "{host}");
        let names: Vec<&str> =
            host["capabilities"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["network", "network_filtering", "denied_paths", "shell", "filesystem_enumeration"]);
        assert_eq!(host["capabilities"][1]["supported"], json!(true), "host rules are filtered: {host}");
        assert_eq!(c.ok("sandbox.checkPlatformSupport", json!({})).await, json!(true));
        assert_eq!(c.ok("sandbox.getUnsupportedStartupNotice", json!({})).await, json!({}), "nothing to tell here");
        assert!(c.ok("sandbox.getDocsUrl", json!({})).await["url"].as_str().unwrap().starts_with("https://"));

        let defaults = c.ok("sandbox.settings.applyDefaults", json!({"stored": {}})).await;
        assert_eq!(defaults["enabled"], json!(false));
        assert_eq!(
            defaults["network"],
            json!({"allowOutbound":true,"allowLocalNetwork":true,"allowedHosts":[],"blockedHosts":[]})
        );
        let floored = c
            .ok(
                "sandbox.resolveFlooredConfig",
                json!({"userSandbox": {"enabled": false, "allowBypass": true},
                       "managedSandbox": {"enabled": true, "allowBypass": false}}),
            )
            .await;
        assert_eq!(
            (floored["sandboxJson"]["enabled"].clone(), floored["sandboxJson"]["allowBypass"].clone()),
            (json!(true), json!(false))
        );
        let bad = c.call("sandbox.resolveFlooredConfig", json!({"userSandbox": "x"})).await.expect_err("not an object");
        assert!(bad.message.contains("sandbox configuration must be an object"), "{bad}");

        // What an opting-out feature starts under; what stays usable while blocked.
        let routed = c
            .ok("sandbox.resolveForOptional", json!({"sandbox": {"enabled": true, "sandboxMcpServers": false,
                "allowBypass": true}, "routingFlag": "sandboxLspServers"}))
            .await;
        assert_eq!(routed, json!({"sandboxJson": {"enabled": true}}));
        let opted_out = json!({"sandbox": {"enabled": true, "sandboxMcpServers": false}, "routingFlag": "sandboxMcpServers"});
        assert_eq!(c.ok("sandbox.resolveForOptional", opted_out).await, json!({"sandboxJson": {"enabled": false}}));
        let allowed = json!({"commandName": "/sandbox", "args": ["status"]});
        assert_eq!(c.ok("sandbox.checkEnforcementCommand", allowed).await, json!(true));
        let blocked = json!({"commandName": "sandbox", "args": ["disable"]});
        assert_eq!(c.ok("sandbox.checkEnforcementCommand", blocked).await, json!(false));

        // A file picker offers what the config names, never the rest of the system.
        let work = dirs.workdir.display().to_string();
        let config = json!({"enabled": true, "userPolicy": {"filesystem": {"deniedPaths": ["secret"]}}});
        let prepared = c.ok("sandbox.preparePickerPolicy", json!({"cwd": work, "sandbox": config})).await;
        assert_eq!(prepared["sandboxJson"]["userPolicy"]["filesystem"]["readwritePaths"][0], json!(work), "{prepared}");
        assert_eq!(c.ok("sandbox.preparePickerPolicy", json!({"cwd": work})).await, json!({}), "no sandbox, no policy");
        let candidates: Vec<Value> = [format!("{work}/a.txt"), "/etc/passwd".into(), format!("{work}/secret/k"), "a.txt".into()]
            .iter()
            .map(|p| json!({"path": p, "isDirectory": false}))
            .collect();
        let picked = c
            .ok("sandbox.filterPickerCandidates", json!({"candidates": candidates, "cwd": work, "sandbox": prepared["sandboxJson"]}))
            .await;
        assert_eq!(picked, json!({"allowed": [true, false, false, false]}));

        // No proxy: nothing to install, no password kept.
        assert_eq!(c.ok("sandbox.proxyCa.checkInstallationSupport", json!({})).await, json!(false));
        let injecting = json!({"sandboxConfig": {"enabled": true, "credentials": {"envVars": {"MY_API_KEY": {"injectHosts": ["api.example.com"]}}}}});
        assert_eq!(c.ok("sandbox.proxyCa.checkRelevance", injecting.clone()).await, json!(true));
        assert_eq!(c.ok("sandbox.proxyCa.checkRelevance", json!({"sandboxConfig": {"enabled": true}})).await, json!(false));
        let ca = c.ok("sandbox.proxyCa.getStatus", injecting.clone()).await;
        assert_eq!((ca["state"].clone(), ca["canInstall"].clone()), (json!("unsupported"), json!(false)), "{ca}");
        for (method, params) in [("sandbox.proxyCa.create", injecting), ("sandbox.proxyCa.remove", json!({})),
            ("sandbox.proxySecret.get", json!({})), ("sandbox.proxySecret.save", json!({"value": "pw"}))]
        {
            let e = c.call(method, params).await.expect_err(method);
            assert_eq!(e.code, -32603, "{method}: {e}");
            assert!(e.message.contains("runs no"), "{method}: {e}");
        }

        let plain = c.create_session(json!({"workingDirectory": dirs.workdir})).await;
        let status = c.ok("session.sandbox.getEnforcementStatus", json!({"sessionId": plain})).await;
        assert_eq!(status, json!({"required": false, "blocked": false}));
        let none = c.ok("session.sandbox.getCredentialSuggestions", json!({"sessionId": plain})).await;
        assert_eq!(none, json!({"suggestions": []}), "not sandboxed: nothing to suggest");

        let sid = c
            .create_session(json!({"requestPermission": true, "workingDirectory": dirs.workdir,
                "sandboxConfig": {"enabled": true}}))
            .await;
        let approver = c.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        let suggested = c.ok("session.sandbox.getCredentialSuggestions", json!({"sessionId": sid})).await;
        let listed: Vec<&str> =
            suggested["suggestions"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert!(listed.contains(&"MY_API_KEY") && listed.contains(&"HF_TOKEN"), "{suggested}");
        assert!(!listed.contains(&"PLAIN_VAR") && !listed.contains(&"OPENAI_API_KEY"), "{suggested}");
        assert!(listed.windows(2).all(|w| w[0] < w[1]), "sorted: {listed:?}");
        let hf = suggested["suggestions"].as_array().unwrap().iter().find(|s| s["name"] == "HF_TOKEN").unwrap();
        assert_eq!(hf["suggestedInjectHosts"], json!(["huggingface.co"]));
        assert!(!suggested.to_string().contains("x-value"), "never a value");
        // The host's model keys are not in a sandboxed command's environment at all.
        let out = bash_calls(&fake, &c, &sid, &[json!({"command": "env", "description": "env"})]).await;
        assert!(out[0].0.contains("MY_API_KEY=x-value") && !out[0].0.contains("OPENAI_API_KEY"), "{}", out[0].0);

        let bogus = json!({"sessionId": sid, "requestId": "bogus-request-id"});
        let e = c.call("session.sandbox.disableForSession", bogus.clone()).await.expect_err("no such request");
        assert!(e.message.contains("pending permission request 'bogus-request-id' was not found"), "{e}");
        let e = c.call("session.sandbox.grantPathForRequest", bogus).await.expect_err("no such request");
        assert!(e.message.contains("was not found"), "{e}");
        approver.abort();
    })
    .await;
}

/// On the team server the sandbox is required, and no tenant turns it off.
#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_turns_the_servers_sandbox_off() {
    if !sandbox_here() {
        return;
    }
    with_timeout(60, async {
        let s = Serve::start().await;
        let (c, sid, approver) = alpha_session(&s).await;
        let status = c.ok("session.sandbox.getEnforcementStatus", json!({"sessionId": sid})).await;
        assert_eq!(status, json!({"required": true, "blocked": false}));
        let off = json!({"sessionId": sid, "requestId": "any"});
        let e = c.call("session.sandbox.disableForSession", off).await.expect_err("refused");
        assert!(e.message.contains("cannot be turned off"), "{e}");
        let suggested = c.ok("session.sandbox.getCredentialSuggestions", json!({"sessionId": sid})).await;
        assert_eq!(suggested, json!({"suggestions": []}), "the server's environment never reaches a tenant");
        // The refusal changed nothing: the server's home is still out of its commands' sight.
        let home = crate::tenant_config::server_home(&s);
        assert!(home.join("skipper-index.db").exists());
        let read = format!("cat {}/skipper-index.db > /dev/null && echo read-it", home.display());
        let out = alpha_runs(&s, &c, &sid, &[&read]).await;
        assert!(!out[0].contains("read-it"), "{out:?}");
        approver.abort();
    })
    .await;
}

/// A bash command that sends `GET http://{target}/` through the proxy its sandbox names in
/// `HTTP_PROXY` (by hand: client programs skip the proxy for `localhost`), and prints the
/// answer, or `NOPROXY` when it has none.
fn through_proxy(target: &str) -> String {
    format!(
        "if [ -z \"$HTTP_PROXY\" ]; then echo NOPROXY; else (exec 3<>/dev/tcp/127.0.0.1/${{HTTP_PROXY##*:}} && \
         printf 'GET http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n' {target} {target} >&3 && \
         timeout 10 cat <&3); fi"
    )
}

/// A bash command that tries a direct TCP connection to the host's `127.0.0.1:{port}`.
fn direct(port: &str) -> String {
    format!("(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED")
}

/// `[[tenants]] network` gives one tenant's processes the network while the others keep none;
/// the network is its filtering proxy, never the host's (where the server's database and other
/// services listen): the hosts it allows, and internal addresses only with `internal_network`.
#[tokio::test(flavor = "multi_thread")]
async fn the_network_is_given_per_tenant_through_its_own_filtering_proxy() {
    if !sandbox_here() {
        return;
    }
    with_timeout(90, async {
        let config = format!(
            "[sandbox]\ninternal_network = true\n\n\
             [[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\nnetwork = true\nallowed_hosts = [\"localhost\"]\n\n\
             [[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\n",
            crate::serve::sha256_hex(ALPHA),
            crate::serve::sha256_hex(crate::serve::BETA)
        );
        let s = Serve::start_with_args(&config, &[], &[]).await;
        let port = s.fake.port().to_string();
        let allowed = through_proxy(&format!("localhost:{port}"));
        let unlisted = through_proxy(&format!("127.0.0.1:{port}"));
        let (alpha, sid, approver) = alpha_session(&s).await;
        let out = alpha_runs(&s, &alpha, &sid, &[&direct(&port), &allowed, &unlisted]).await;
        assert!(out[0].contains("REFUSED"), "not the host's network, even with the network: {out:?}");
        assert!(out[1].contains("HTTP/1.1") && !out[1].contains("403"), "an allowed host is reached: {out:?}");
        assert!(out[2].contains("403 Forbidden") && out[2].contains("allowedHosts"), "{out:?}");
        approver.abort();

        let beta = s.tenant(crate::serve::BETA).await;
        let sid = beta.create_session(json!({"requestPermission": true})).await;
        let approver = beta.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        let out = alpha_runs(&s, &beta, &sid, &[&direct(&port), &allowed]).await;
        assert!(out[0].contains("REFUSED") && out[1].contains("NOPROXY"), "beta has none: {out:?}");
        approver.abort();
    })
    .await;
}

/// Without `internal_network`, a tenant's proxy reaches no loopback, private or link-local
/// address (the server's database, a cloud's metadata service), whatever name leads there.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_proxy_does_not_reach_the_servers_internal_network() {
    if !sandbox_here() {
        return;
    }
    with_timeout(90, async {
        let config = format!(
            "[sandbox]\nnetwork = true\n\n[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n",
            crate::serve::sha256_hex(ALPHA)
        );
        let s = Serve::start_with_args(&config, &[], &[]).await;
        let port = s.fake.port().to_string();
        let (alpha, sid, approver) = alpha_session(&s).await;
        let targets = [format!("127.0.0.1:{port}"), format!("localhost:{port}"), "169.254.169.254".into()];
        let commands: Vec<String> = targets.iter().map(|t| through_proxy(t)).collect();
        let out = alpha_runs(&s, &alpha, &sid, &commands.iter().map(String::as_str).collect::<Vec<_>>()).await;
        for (target, answer) in targets.iter().zip(&out) {
            assert!(answer.contains("403 Forbidden") && answer.contains("local network"), "{target}: {answer}");
        }
        approver.abort();
    })
    .await;
}

/// A session's own `userPolicy.network` host rules (the original's): its commands keep a
/// network of their own and reach the hosts allowed, through the proxy, and nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_host_rules_let_its_commands_reach_only_the_hosts_allowed() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let (fake, dirs, _sk, c) = one_user(Options::default()).await;
        let port = fake.port().to_string();
        let network = json!({"allowedHosts": ["localhost", "127.0.0.1"], "blockedHosts": ["127.0.0.1"]});
        let config = json!({"enabled": true, "userPolicy": {"network": network}});
        let (sid, approver) = own_sandbox_session(&c, &dirs.workdir, config).await;
        let calls: Vec<Value> = [
            direct(&port),
            through_proxy(&format!("localhost:{port}")),
            through_proxy(&format!("127.0.0.1:{port}")),
            through_proxy("example.com"),
        ]
        .iter()
        .map(|c| json!({"command": c, "description": "reach"}))
        .collect();
        let out = bash_calls(&fake, &c, &sid, &calls).await;
        assert!(out[0].0.contains("REFUSED"), "{out:?}");
        assert_eq!(out[0].1["data"]["sandboxed"], json!(true), "{}", out[0].1);
        assert!(out[1].0.contains("HTTP/1.1") && !out[1].0.contains("403"), "{out:?}");
        assert!(out[2].0.contains("403 Forbidden") && out[2].0.contains("blockedHosts"), "a block wins: {out:?}");
        assert!(out[3].0.contains("403 Forbidden") && out[3].0.contains("allowedHosts"), "{out:?}");

        // Rules that cannot be enforced refuse every start, with the reason.
        let bad = json!({"enabled": true, "userPolicy": {"network": {"blockedHosts": ["http://x"]}}});
        c.ok("session.options.update", json!({"sessionId": sid, "sandboxConfig": bad})).await;
        let out = bash_calls(&fake, &c, &sid, &[json!({"command": "echo ran", "description": "x"})]).await;
        assert!(!out[0].0.contains("ran") && out[0].0.contains("http://x"), "{out:?}");
        approver.abort();
    })
    .await;
}

/// A session's own sandbox holds the server's read tools to what its commands could read, as
/// the original does: `view` of a denied path or of one the sandbox does not show fails with
/// the policy to review, a `grep` naming a denied folder fails, and searches of the working
/// directory leave the denied folder out. Nothing of it reaches the model.
#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_sandbox_hides_its_denied_paths_from_the_servers_read_tools() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let (fake, dirs, _sk, c) = one_user(Options::default()).await;
        let work = &dirs.workdir;
        std::fs::create_dir_all(work.join("secret")).unwrap();
        std::fs::write(work.join("secret/key.txt"), "SECRETDATA\n").unwrap();
        std::fs::write(work.join("ok.txt"), "OKDATA\n").unwrap();
        let outside = outside_the_sandbox();
        std::fs::write(outside.path().join("out.txt"), "OUTSIDEDATA\n").unwrap();
        let config = json!({"enabled": true, "userPolicy": {"filesystem": {"deniedPaths": ["secret"]}}});
        let (sid, approver) = own_sandbox_session(&c, work, config).await;
        let calls = [
            ("view", json!({"path": work.join("secret/key.txt")})),
            ("view", json!({"path": outside.path().join("out.txt")})),
            ("view", json!({"path": work.join("ok.txt")})),
            ("grep", json!({"pattern": "DATA", "output_mode": "content"})),
            ("glob", json!({"pattern": "**/*.txt"})),
            ("grep", json!({"pattern": "DATA", "path": work.join("secret")})),
        ];
        let out = tool_calls(&fake, &c, &sid, &calls).await;
        let error = |i: usize| out[i].1["data"]["error"]["message"].as_str().unwrap_or_default().to_string();
        assert_eq!(error(0), "Is a sandbox denied path.", "{:?}", out[0]);
        assert_eq!(out[0].1["data"]["error"]["remediation"], json!("review_sandbox_policy"), "{}", out[0].1);
        assert_eq!(error(1), "Outside the sandbox's readable paths.", "{:?}", out[1]);
        assert!(out[2].0.contains("OKDATA"), "{:?}", out[2]);
        assert!(out[3].0.contains("OKDATA") && out[4].0.contains("ok.txt"), "{out:?}");
        assert_eq!(error(5), "sandbox policy denied the search path", "{:?}", out[5]);
        let seen = serde_json::to_string(&fake.requests()).unwrap();
        assert!(!seen.contains("SECRETDATA") && !seen.contains("OUTSIDEDATA"), "nothing of them reached the model");
        approver.abort();
    })
    .await;
}

/// A session's own sandbox holds the server's file tools to the paths its commands may write.
/// Where its config allows a bypass, a write outside is put to the user on its permission
/// request (even with every tool approved): granting the folder lets this write and the
/// session's later commands there; turning the sandbox off lets everything. Without a bypass
/// the write fails, nobody is asked, and nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_outside_a_sessions_sandbox_is_put_to_the_user_or_refused() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let (fake, dirs, _sk, c) = one_user(Options::default()).await;
        let (granted, freed, refused) = (outside_the_sandbox(), outside_the_sandbox(), outside_the_sandbox());
        let config = |bypass: bool| {
            json!({"enabled": true, "allowBypass": bypass, "userPolicy": {"network": {"allowOutbound": false}}})
        };
        let sid = c
            .create_session(
                json!({"requestPermission": true, "workingDirectory": dirs.workdir, "sandboxConfig": config(true)}),
            )
            .await;
        c.ok("session.permissions.setApproveAll", json!({"sessionId": sid, "enabled": true})).await;
        let file = |dir: &tempfile::TempDir, name: &str| dir.path().join(name).display().to_string();
        let create = |path: String| Reply::ToolCalls(vec![("create".into(), json!({"path": path, "file_text": "hi\n"}).to_string())]);
        let bash = |cmd: String| Reply::ToolCalls(vec![("bash".into(), json!({"command": cmd, "description": "w"}).to_string())]);
        fake.push_reply(create(file(&granted, "a.txt")));
        fake.push_reply(bash(format!("echo b > {}", file(&granted, "b.txt"))));
        fake.push_reply(create(file(&freed, "c.txt")));
        fake.push_reply(bash(format!("echo d > {}", file(&freed, "d.txt"))));
        fake.push_reply(Reply::text("done"));
        c.send(&sid, "write outside").await;

        let asked = c.wait_for_nth_event(&sid, "permission.requested", 1, T).await;
        let request = &asked["data"]["permissionRequest"];
        assert_eq!(request["kind"], json!("write"), "{asked}");
        assert_eq!(request["requestSandboxBypass"], json!(true), "{asked}");
        let real = std::fs::canonicalize(granted.path()).unwrap().display().to_string();
        assert_eq!(request["sandboxPathGrant"], json!({"path": real, "deniedPath": file(&granted, "a.txt"), "access": "readWrite"}));
        let denied = c.events_of_type(&sid, "sandbox.decision");
        assert_eq!(denied[0]["data"]["kind"], json!("access_denied"), "{denied:?}");
        assert_eq!(denied[0]["ephemeral"], json!(true));
        assert!(!granted.path().join("a.txt").exists(), "nothing written before the answer");
        let answer = json!({"sessionId": sid, "requestId": asked["data"]["requestId"]});
        assert_eq!(c.ok("session.sandbox.grantPathForRequest", answer.clone()).await, json!({"success": true}));
        let e = c.call("session.sandbox.grantPathForRequest", answer).await.expect_err("answered already");
        assert!(e.message.contains("was not found"), "{e}");

        let asked = c.wait_for_nth_event(&sid, "permission.requested", 2, T).await;
        assert_eq!(asked["data"]["permissionRequest"]["sandboxPathGrant"]["deniedPath"], json!(file(&freed, "c.txt")));
        let answer = json!({"sessionId": sid, "requestId": asked["data"]["requestId"]});
        assert_eq!(c.ok("session.sandbox.disableForSession", answer).await, json!({"success": true, "enabled": false}));
        c.wait_for_nth_event(&sid, "session.idle", 1, T).await;

        assert_eq!(std::fs::read_to_string(granted.path().join("a.txt")).unwrap(), "hi\n");
        assert!(granted.path().join("b.txt").exists(), "the granted folder is the commands' too");
        assert!(freed.path().join("c.txt").exists() && freed.path().join("d.txt").exists(), "the sandbox is off");
        assert_eq!(c.events_of_type(&sid, "permission.requested").len(), 2, "only the writes past the sandbox are asked");
        let kinds: Vec<Value> = c.events_of_type(&sid, "sandbox.decision").iter().map(|e| e["data"]["kind"].clone()).collect();
        assert_eq!(kinds, [json!("access_denied"), json!("access_denied"), json!("bypass_decided")], "a grant bypasses nothing");
        let done = c.events_of_type(&sid, "tool.execution_complete");
        assert_eq!(done[0]["data"]["sandboxed"], json!(true), "{}", done[0]);
        assert!(done[3]["data"].get("sandboxed").is_none(), "{}", done[3]);
        assert_eq!(c.ok("session.sandbox.getCredentialSuggestions", json!({"sessionId": sid})).await, json!({"suggestions": []}));

        // No bypass: refused, unasked.
        let (strict, approver) = own_sandbox_session(&c, &dirs.workdir, config(false)).await;
        fake.push_reply(create(file(&refused, "e.txt")));
        fake.push_reply(Reply::text("done"));
        c.send(&strict, "write outside").await;
        c.wait_for_nth_event(&strict, "session.idle", 1, T).await;
        assert!(!refused.path().join("e.txt").exists());
        assert!(c.events_of_type(&strict, "permission.requested").is_empty());
        let failed = &c.events_of_type(&strict, "tool.execution_complete")[0]["data"];
        assert_eq!(failed["success"], json!(false));
        assert_eq!(
            failed["error"],
            json!({"message": "Outside the sandbox's writable paths.", "code": "failure", "remediation": "review_sandbox_policy"})
        );
        let told = fake.requests().last().unwrap().to_string();
        assert!(told.contains("Do not try to get around it") && told.contains("e.txt is outside"), "{told}");
        approver.abort();
        c.assert_schema_clean();
    })
    .await;
}
