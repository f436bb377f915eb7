//! What a tenant configures and names on the team server, attacked as a tenant would: alpha
//! configures MCP servers, plugins and skills, names beta's directories in discovery, session
//! and plugin requests, attaches beta's files, points its shells and MCP servers at beta's
//! workspace, links to beta's files from its own, and plants a git configuration that runs a
//! program. Each is refused or stays alpha's own; nothing of beta or the server leaks or changes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fake_model::Reply;
use serde_json::{json, Value};

use crate::harness::with_timeout;
use crate::sandbox::sandbox_here;
use crate::serve::{Serve, ALPHA, BETA};

const T: Duration = Duration::from_secs(30);

/// The server's `--home`, beside the tenants' workspaces.
pub(crate) fn server_home(s: &Serve) -> PathBuf {
    s.workspace("alpha").parent().and_then(Path::parent).expect("home").to_path_buf()
}

/// Beta's workspace with a secret file (and a skill, an agent and instructions) in it.
pub(crate) fn betas_files(s: &Serve) -> PathBuf {
    let beta = s.workspace("beta");
    std::fs::create_dir_all(beta.join("skills/beta-skill")).unwrap();
    std::fs::write(beta.join("secret.txt"), "TOP-SECRET-OF-BETA").unwrap();
    std::fs::write(
        beta.join("skills/beta-skill/SKILL.md"),
        "---\nname: beta-skill\ndescription: TOP-SECRET-OF-BETA\n---\nTOP-SECRET-OF-BETA\n",
    )
    .unwrap();
    std::fs::create_dir_all(beta.join(".github")).unwrap();
    std::fs::write(beta.join(".github/copilot-instructions.md"), "TOP-SECRET-OF-BETA instructions").unwrap();
    beta
}

/// The text of every model request so far.
fn model_traffic(s: &Serve) -> String {
    s.fake.requests().iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

/// Sends `prompt` to a session and waits for its turn to end.
async fn turn(c: &crate::harness::RpcClient, sid: &str, prompt: &str) {
    let idles = c.count(sid, "session.idle");
    c.send(sid, prompt).await;
    c.wait_for_nth_event(sid, "session.idle", idles + 1, T).await;
}

fn refusal(r: Result<Value, crate::harness::RpcError>) -> String {
    match r {
        Ok(v) => panic!("accepted: {v}"),
        Err(e) => e.message,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_tenant_configures_reaches_only_its_own_sessions() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let home = server_home(&s);
        // What the operator keeps in the server's own home reaches no tenant; each tenant's
        // configuration home is its own.
        std::fs::write(home.join("copilot-instructions.md"), "SERVER-HOME-RULES").unwrap();
        std::fs::write(home.join("tenants/alpha/copilot-instructions.md"), "ALPHA-RULES").unwrap();
        let alpha = s.tenant(ALPHA).await;
        let server = json!({"type": "local", "command": "true", "args": [], "tools": ["*"]});
        alpha.ok("mcp.config.add", json!({"name": "alphas-server", "config": server})).await;
        alpha.ok("skills.config.setDisabledSkills", json!({"disabledSkills": ["betas-favourite"]})).await;
        assert!(!home.join("mcp-config.json").exists(), "alpha wrote the server's MCP configuration");
        let server_config = std::fs::read_to_string(home.join("config.json")).unwrap_or_default();
        assert!(!server_config.contains("betas-favourite"), "{server_config}");

        let beta = s.tenant(BETA).await;
        let listed = beta.ok("mcp.config.list", json!({})).await;
        assert_eq!(listed["servers"], json!({}), "{listed}");
        let bsid = beta.create_session(json!({})).await;
        let servers = beta.ok("session.mcp.list", json!({"sessionId": bsid})).await;
        assert!(!servers.to_string().contains("alphas-server"), "{servers}");
        s.fake.push_reply(Reply::text("beta done"));
        turn(&beta, &bsid, "beta asks").await;
        let betas = model_traffic(&s);
        assert!(!betas.contains("ALPHA-RULES") && !betas.contains("SERVER-HOME-RULES"), "{betas}");

        // Alpha's own sessions have what alpha configured.
        s.fake.clear_requests();
        let asid = alpha.create_session(json!({})).await;
        let servers = alpha.ok("session.mcp.list", json!({"sessionId": asid})).await;
        assert!(servers.to_string().contains("alphas-server"), "{servers}");
        s.fake.push_reply(Reply::text("alpha done"));
        turn(&alpha, &asid, "alpha asks").await;
        let alphas = model_traffic(&s);
        assert!(alphas.contains("ALPHA-RULES") && !alphas.contains("SERVER-HOME-RULES"), "{alphas}");
        let own = alpha.ok("mcp.config.list", json!({})).await;
        assert!(own["servers"].get("alphas-server").is_some(), "{own}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_names_only_directories_in_its_own_workspace() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let beta = betas_files(&s);
        let b = beta.display().to_string();
        let alpha = s.tenant(ALPHA).await;
        let not_ours = "is not in this tenant's workspace";
        for (method, params) in [
            ("skills.discover", json!({"projectPaths": [b]})),
            ("skills.discover", json!({"skillDirectories": [format!("{b}/skills")]})),
            ("skills.discover", json!({"projectPaths": ["../beta"]})),
            ("agents.discover", json!({"projectPaths": [b]})),
            ("instructions.discover", json!({"projectPaths": [b]})),
            ("instructions.getDiscoveryPaths", json!({"projectPaths": [b]})),
            ("plugins.install", json!({"source": b})),
            ("plugins.install", json!({"source": ".", "workingDirectory": b})),
            ("plugins.marketplaces.add", json!({"source": b})),
            ("session.create", json!({"skillDirectories": [format!("{b}/skills")]})),
            ("session.create", json!({"instructionDirectories": ["../beta"]})),
            ("session.create", json!({"pluginDirectories": [b]})),
        ] {
            let message = refusal(alpha.call(method, params.clone()).await);
            assert!(message.contains(not_ours), "{method} {params}: {message}");
            assert!(!message.contains("TOP-SECRET"), "{message}");
        }
        // The same answer for a directory that does not exist: nothing tells what is there.
        let missing = refusal(alpha.call("skills.discover", json!({"projectPaths": ["/nowhere/at/all"]})).await);
        let present = refusal(alpha.call("skills.discover", json!({"projectPaths": [b]})).await);
        assert_eq!(missing.replace("/nowhere/at/all", "X"), present.replace(&b, "X"));

        let sid = alpha.create_session(json!({})).await;
        for (method, params) in [
            (
                "session.send",
                json!({"sessionId": sid, "prompt": "read it", "attachments": [
                {"type": "file", "path": format!("{b}/secret.txt"), "displayName": "s"}]}),
            ),
            (
                "session.send",
                json!({"sessionId": sid, "prompt": "list it", "attachments": [
                {"type": "directory", "path": "../beta", "displayName": "d"}]}),
            ),
            ("session.permissions.locations.resolve", json!({"sessionId": sid, "workingDirectory": b})),
            ("session.permissions.locations.apply", json!({"sessionId": sid, "workingDirectory": b})),
        ] {
            let message = refusal(alpha.call(method, params.clone()).await);
            assert!(message.contains(not_ours), "{method} {params}: {message}");
        }
        let shell = refusal(
            alpha.call("session.shell.exec", json!({"sessionId": sid, "command": "cat secret.txt", "cwd": b})).await,
        );
        assert!(shell.contains("workspace"), "{shell}");

        // Alpha's own directories work as before.
        std::fs::create_dir_all(s.workspace("alpha").join("skills/mine")).unwrap();
        std::fs::write(
            s.workspace("alpha").join("skills/mine/SKILL.md"),
            "---\nname: mine\ndescription: d\n---\nbody\n",
        )
        .unwrap();
        let found = alpha.ok("skills.discover", json!({"skillDirectories": ["skills"]})).await;
        assert!(found.to_string().contains("\"mine\""), "{found}");
        assert!(s.fake.requests().iter().all(|r| !r.to_string().contains("TOP-SECRET-OF-BETA")));
        assert_eq!(std::fs::read_to_string(beta.join("secret.txt")).unwrap(), "TOP-SECRET-OF-BETA");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn links_and_repositories_a_tenant_plants_lead_nowhere_else() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let beta = betas_files(&s);
        let home = server_home(&s);
        let ws = s.workspace("alpha");
        std::fs::create_dir_all(&ws).unwrap();
        // What alpha's commands can make in its own workspace: links to beta's files (a link's
        // target is only a name), a skill and instructions that are such links, and a git
        // repository whose configuration runs a program on `git diff`.
        let link = |target: PathBuf, at: &str| {
            let at = ws.join(at);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, at).unwrap();
        };
        link(beta.join("skills/beta-skill/SKILL.md"), "skills/stolen/SKILL.md");
        link(beta.join(".github/copilot-instructions.md"), ".github/copilot-instructions.md");
        let run = |args: &[&str]| {
            let out = std::process::Command::new("git").args(args).current_dir(&ws).output().unwrap();
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["init", "-q"]);
        run(&["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "start"]);
        let evil = format!(
            "#!/bin/sh\ncat {beta}/secret.txt > {ws}/from-git.txt 2>&1; echo pwned > {home}/pwned-by-git; echo ran >> {ws}/from-git.txt\n",
            beta = beta.display(),
            ws = ws.display(),
            home = home.display()
        );
        std::fs::write(ws.join("evil.sh"), evil).unwrap();
        std::fs::set_permissions(ws.join("evil.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        run(&["config", "diff.external", &ws.join("evil.sh").display().to_string()]);
        std::fs::write(ws.join("tracked.txt"), "one\n").unwrap();
        run(&["add", "tracked.txt"]);
        run(&["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-m", "tracked"]);
        std::fs::write(ws.join("tracked.txt"), "two\n").unwrap();
        link(beta.join("secret.txt"), "untracked-link");

        let alpha = s.tenant(ALPHA).await;
        let sid = alpha.create_session(json!({"skillDirectories": ["skills"], "enableConfigDiscovery": true})).await;
        let skills = alpha.ok("session.skills.list", json!({"sessionId": sid})).await;
        assert!(!skills.to_string().contains("beta-skill"), "{skills}");
        s.fake.push_reply(Reply::text("done"));
        turn(&alpha, &sid, "hello").await;
        let found = alpha.ok("skills.discover", json!({"skillDirectories": ["skills"], "projectPaths": ["."]})).await;
        let instructions = alpha.ok("instructions.discover", json!({"projectPaths": ["."]})).await;

        let diff = alpha.ok("session.workspaces.diff", json!({"sessionId": sid, "mode": "unstaged"})).await;
        let changed: Vec<&str> = diff["changes"].as_array().unwrap().iter().filter_map(|c| c["path"].as_str()).collect();
        assert!(changed.contains(&"tracked.txt") && changed.contains(&"untracked-link"), "{diff}");
        // git ran, in alpha's sandbox: its external diff program could not reach out.
        let from_git = std::fs::read_to_string(ws.join("from-git.txt")).unwrap_or_default();
        assert!(from_git.contains("ran"), "the diff program did not run: {diff}");
        assert!(!home.join("pwned-by-git").exists(), "git ran outside the sandbox");

        let all = [model_traffic(&s), skills.to_string(), found.to_string(), instructions.to_string(), diff.to_string(), from_git]
            .join("\n");
        assert!(!all.contains("TOP-SECRET-OF-BETA"), "beta's files leaked: {all}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_and_trust_a_tenant_records_are_its_own() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let (alpha, beta) = (s.tenant(ALPHA).await, s.tenant(BETA).await);
        let asid = alpha.create_session(json!({})).await;
        let bsid = beta.create_session(json!({})).await;
        let bws = s.workspace("beta").display().to_string();
        // Beta's location key, as beta itself resolves it.
        let key =
            beta.ok("session.permissions.locations.resolve", json!({"sessionId": bsid, "workingDirectory": bws})).await;
        let key = key["locationKey"].as_str().unwrap().to_string();
        alpha
            .ok(
                "session.permissions.locations.addToolApproval",
                json!({"sessionId": asid, "locationKey": key, "approval": {"kind": "write"}}),
            )
            .await;
        alpha.ok("session.permissions.folderTrust.addTrusted", json!({"sessionId": asid, "path": bws})).await;
        let applied =
            beta.ok("session.permissions.locations.apply", json!({"sessionId": bsid, "workingDirectory": bws})).await;
        assert_eq!(applied["appliedRuleCount"], json!(0), "alpha's approval reached beta: {applied}");
        let trusted =
            beta.ok("session.permissions.folderTrust.isTrusted", json!({"sessionId": bsid, "path": bws})).await;
        assert_eq!(trusted["trusted"], json!(false), "{trusted}");
        // Beta's own approvals do apply to beta.
        beta.ok(
            "session.permissions.locations.addToolApproval",
            json!({"sessionId": bsid, "locationKey": key, "approval": {"kind": "read"}}),
        )
        .await;
        let applied =
            beta.ok("session.permissions.locations.apply", json!({"sessionId": bsid, "workingDirectory": bws})).await;
        assert_eq!(applied["appliedRuleCount"], json!(1), "{applied}");
    })
    .await;
}

/// What a request of alpha's session reached on the fake model (which listens on loopback,
/// like a database or a metadata service would inside the server's network).
fn reached(s: &Serve, path: &str) -> usize {
    s.fake.requests().iter().filter(|r| r["path"].as_str().is_some_and(|p| p.starts_with(path))).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_own_endpoints_do_not_reach_the_servers_network() {
    if !sandbox_here() {
        return;
    }
    with_timeout(120, async {
        let s = Serve::start().await;
        let inside = s.fake.url().trim_end_matches('/').to_string();
        let alpha = s.tenant(ALPHA).await;
        let provider = json!({"type": "openai", "baseUrl": format!("{inside}/tenant/v1"), "apiKey": "sk-alpha"});
        let mcp = json!({"inside": {"type": "http", "url": format!("{inside}/mcp"), "tools": ["*"]}});
        let sid = alpha.create_session(json!({"provider": provider, "mcpServers": mcp})).await;
        alpha.send(&sid, "hello").await;
        let err = alpha.wait_for_event(&sid, "session.error", T).await;
        let message = err["data"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("internal network"), "{err}");
        let deadline = std::time::Instant::now() + T;
        let server = loop {
            let listed = alpha.ok("session.mcp.list", json!({"sessionId": sid})).await;
            let server = listed["servers"].as_array().and_then(|a| a.iter().find(|s| s["name"] == "inside")).cloned();
            match server {
                Some(s) if s["status"] == "failed" => break s,
                other => assert!(std::time::Instant::now() < deadline, "the MCP server did not fail: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(server["error"].as_str().unwrap_or_default().contains("internal network"), "{server}");
        assert_eq!(reached(&s, "/tenant/"), 0, "the provider's requests reached the server's network");
        assert!(s.fake.mcp_requests().is_empty(), "the MCP server's requests reached it: {:?}", s.fake.mcp_requests());
        assert!(!alpha.events(&sid).iter().any(|e| e.to_string().contains("sk-alpha")));
    })
    .await;
}
