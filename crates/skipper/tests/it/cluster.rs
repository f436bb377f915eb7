//! Several `skipper serve` nodes on one PostgreSQL (a throwaway cluster on loopback per test):
//! every node lists and resumes every session of the tenant, one node runs a session at a time
//! under a lease, another follows it read-only, and a survivor takes over a killed node's
//! session with no gap and no duplicate event.

use std::collections::HashSet;
use std::time::Duration;

use fake_model::Reply;
use serde_json::{json, Value};

use crate::harness::{with_timeout, RpcClient};
use crate::serve::{sha256_hex, Serve, ALPHA, BETA};

#[path = "../../../store/tests/support/pg_cluster.rs"]
mod pg_cluster;

use pg_cluster::PgCluster;

const T: Duration = Duration::from_secs(20);
const LEASE_TTL_S: u64 = 2;

async fn node(pg: &PgCluster, name: &str) -> Serve {
    let config = format!(
        "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\n\n[cluster]\nnode_id = \"{name}\"\nlease_ttl_s = {LEASE_TTL_S}\n",
        sha256_hex(ALPHA),
        sha256_hex(BETA)
    );
    Serve::start_with_args(&config, &[], &["--database-url", &pg.url()]).await
}

fn persisted_ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.get("ephemeral") != Some(&json!(true)))
        .filter_map(|e| e["id"].as_str().map(str::to_string))
        .collect()
}

fn has_message(c: &RpcClient, sid: &str, ty: &str, content: &str) -> Option<()> {
    c.events_of_type(sid, ty).iter().any(|e| e["data"]["content"] == json!(content)).then_some(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_created_on_one_node_is_followed_on_another_and_taken_over_when_its_node_dies() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(120, async {
        let mut a = node(&pg, "a").await;
        let b = node(&pg, "b").await;

        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        a.fake.push_reply(Reply::text("hello from a"));
        ca.send(&sid, "first").await;
        ca.wait_for_event(&sid, "session.idle", T).await;

        // B shares no disk with A: it finds the session through the database.
        let cb = b.tenant(ALPHA).await;
        let listed = cb.ok("session.list", json!({})).await;
        let ids: Vec<&str> =
            listed["sessions"].as_array().unwrap().iter().filter_map(|s| s["sessionId"].as_str()).collect();
        assert_eq!(ids, [sid.as_str()], "{listed}");
        cb.ok("session.resume", json!({"sessionId": sid})).await;
        let before = cb.get_messages(&sid).await.unwrap();
        assert!(before.iter().any(|e| e["data"]["content"] == json!("hello from a")), "B reads A's history");

        // A runs the session: a change on B is refused, naming A.
        let refused = cb.call("session.plan.update", json!({"sessionId": sid, "content": "b"})).await.unwrap_err();
        assert!(refused.message.contains("running on node a"), "{}", refused.message);

        // A's next turn reaches B's client; the model never answers, so A is mid-turn.
        a.fake.push_reply(Reply::Hang);
        ca.send(&sid, "second").await;
        cb.wait_until(T, "A's prompt relayed to B", |c| has_message(c, &sid, "user.message", "second")).await;
        cb.wait_for_event(&sid, "assistant.turn_start", T).await;

        // kill -9 A. B takes the session over within lease_ttl_s + 5 s.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        b.fake.push_reply(Reply::text("hello from b"));
        cb.send(&sid, "third").await;
        cb.wait_until(T, "B's own reply", |c| has_message(c, &sid, "assistant.message", "hello from b")).await;

        // The history holds every persisted event either client saw before reading it (an
        // event is written before it is delivered), each id once.
        let seen = [("A's client", ca.events(&sid)), ("B's client", cb.events(&sid))];
        let history = cb.get_messages(&sid).await.unwrap();
        let logged: Vec<String> = persisted_ids(&history);
        let unique: HashSet<&String> = logged.iter().collect();
        assert_eq!(unique.len(), logged.len(), "no duplicate event ids");
        for (who, seen) in seen {
            for e in seen.iter().filter(|e| e.get("ephemeral") != Some(&json!(true))) {
                let id = e["id"].as_str().unwrap_or_default();
                assert!(
                    unique.contains(&id.to_string()),
                    "{who} saw {e} which is missing from the history\nA: {}\nB: {}",
                    a.stderr_text(),
                    b.stderr_text()
                );
            }
        }
        let prompts: Vec<&str> = history
            .iter()
            .filter(|e| e["type"] == "user.message")
            .filter_map(|e| e["data"]["content"].as_str())
            .collect();
        assert_eq!(prompts, ["first", "second", "third"]);
        // B's first event after taking over continues A's chain: its parent is A's last event.
        let resume = history.iter().position(|e| e["type"] == "session.resume").expect("B's takeover resume");
        let turn_start = history[..resume].iter().rposition(|e| e["type"] == "assistant.turn_start").unwrap();
        assert_eq!(resume, turn_start + 1, "nothing between A's last event and B's takeover");
        ca.assert_schema_clean();
        cb.assert_schema_clean();
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

/// Each ephemeral event `b` received comes after every persisted event `a` received before it
/// (of those `b` received at all: `b` follows from the moment it resumed).
fn assert_ephemeral_after_their_persisted(a: &[Value], b: &[Value]) {
    let persisted = |e: &Value| e.get("ephemeral") != Some(&json!(true));
    let in_b: HashSet<&Value> = b.iter().map(|x| &x["id"]).collect();
    for (at_b, e) in b.iter().enumerate().filter(|(_, e)| !persisted(e)) {
        let Some(at_a) = a.iter().position(|x| x["id"] == e["id"]) else { continue };
        let before_b: HashSet<&Value> = b[..at_b].iter().filter(|x| persisted(x)).map(|x| &x["id"]).collect();
        for x in a[..at_a].iter().filter(|x| persisted(x) && in_b.contains(&x["id"])) {
            assert!(
                before_b.contains(&x["id"]),
                "{} ({}) overtook {} ({}) on B",
                e["type"],
                e["id"],
                x["type"],
                x["id"]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_streams_the_owners_turn_and_forwards_its_sends_and_aborts() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(120, async {
        let a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({"streaming": true})).await;
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;

        // A send on B goes to A, which runs the turn: both clients see the same turn, B with
        // A's deltas and session.idle, each after the persisted events before it.
        let text = "Streamed from a: one, two, three, four, five, six, seven.";
        a.fake.push_reply(Reply::text(text));
        let sent = cb.ok("session.send", json!({"sessionId": sid, "prompt": "from b"})).await;
        assert!(sent["messageId"].as_str().is_some_and(|m| !m.is_empty()), "{sent}");
        ca.wait_for_event(&sid, "session.idle", T).await;
        cb.wait_for_event(&sid, "session.idle", T).await;
        assert!(has_message(&ca, &sid, "user.message", "from b").is_some(), "A ran B's send");
        let (ea, eb) = (ca.events(&sid), cb.events(&sid));
        let deltas: Vec<&Value> = eb.iter().filter(|e| e["type"] == "assistant.message_delta").collect();
        assert!(!deltas.is_empty(), "B streams A's deltas: {eb:?}");
        let joined: String = deltas.iter().map(|d| d["data"]["deltaContent"].as_str().unwrap_or("")).collect();
        assert_eq!(joined, text);
        let ids = |es: &[Value]| es.iter().map(|e| e["id"].clone()).collect::<HashSet<Value>>();
        let turn_a: Vec<Value> = ea
            .iter()
            .skip_while(|e| e["type"] != "user.message")
            .filter(|e| e["type"] != "session.resume")
            .cloned()
            .collect();
        assert!(ids(&turn_a).is_subset(&ids(&eb)), "B saw every event of A's turn\nA: {turn_a:?}\nB: {eb:?}");
        assert_ephemeral_after_their_persisted(&ea, &eb);
        assert!(!eb.iter().any(|e| e["type"] == "session.resume"), "B only follows");

        // An abort on B reaches A's hanging turn.
        a.fake.push_reply(Reply::Hang);
        cb.ok("session.send", json!({"sessionId": sid, "prompt": "hang"})).await;
        cb.wait_for_nth_event(&sid, "assistant.turn_start", 2, T).await;
        let aborted = cb.ok("session.abort", json!({"sessionId": sid})).await;
        assert_eq!(aborted["success"], json!(true), "{aborted}");
        ca.wait_for_event(&sid, "abort", T).await;
        cb.wait_for_nth_event(&sid, "session.idle", 2, T).await;

        // Mode and name changed on A are what B answers.
        ca.ok("session.mode.set", json!({"sessionId": sid, "mode": "plan"})).await;
        ca.ok("session.name.set", json!({"sessionId": sid, "name": "Named on a"})).await;
        cb.wait_for_event(&sid, "session.mode_changed", T).await;
        cb.wait_for_event(&sid, "session.title_changed", T).await;
        assert_eq!(cb.ok("session.mode.get", json!({"sessionId": sid})).await, json!("plan"));
        assert_eq!(cb.ok("session.name.get", json!({"sessionId": sid})).await["name"], json!("Named on a"));
        ca.assert_schema_clean();
        cb.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_no_client_holds_is_resumed_and_run_by_any_node() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(90, async {
        let a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        ca.ok("session.name.set", json!({"sessionId": sid, "name": "Shared work"})).await;
        a.fake.push_reply(Reply::text("on a"));
        ca.send(&sid, "first").await;
        ca.wait_for_event(&sid, "session.idle", T).await;
        ca.ok("session.destroy", json!({"sessionId": sid})).await;

        // A gives the lease up when the session unloads; B can then run it.
        let cb = b.tenant(ALPHA).await;
        let mut sent = None;
        for _ in 0..40 {
            cb.ok("session.resume", json!({"sessionId": sid})).await;
            b.fake.push_reply(Reply::text("on b"));
            match cb.call("session.send", json!({"sessionId": sid, "prompt": "second"})).await {
                Ok(v) => {
                    sent = Some(v);
                    break;
                }
                Err(e) => {
                    assert!(e.message.contains("running on node a"), "{}", e.message);
                    cb.ok("session.destroy", json!({"sessionId": sid})).await;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
        assert!(sent.is_some(), "B never got the session");
        cb.wait_until(T, "B's reply", |c| has_message(c, &sid, "assistant.message", "on b")).await;
        // The name set on A (workspace metadata) travelled through the database.
        let name = cb.ok("session.name.get", json!({"sessionId": sid})).await;
        assert_eq!(name["name"], json!("Shared work"), "{name}");
        // B's conversation continued A's: its model call carried A's turn.
        let last = b.fake.requests().last().cloned().unwrap();
        assert!(last.to_string().contains("on a"), "{last}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_follows_postgresql() {
    let Some(mut pg) = PgCluster::start() else { return };
    with_timeout(90, async {
        let a = node(&pg, "a").await;
        assert_eq!(a.get("/readyz").await.0, 200);
        pg.stop();
        assert_eq!(a.get("/readyz").await.0, 503, "PostgreSQL is down");
        pg.start_again();
        let mut status = 0;
        for _ in 0..100 {
            status = a.get("/readyz").await.0;
            if status == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status, 200, "ready again once PostgreSQL is back");
    })
    .await;
}

async fn plan_of(c: &RpcClient, sid: &str) -> Value {
    c.ok("session.plan.read", json!({"sessionId": sid})).await["content"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_refuses_changes_naming_the_owner_and_shares_its_plan_and_files() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(120, async {
        let mut a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        ca.ok("session.plan.update", json!({"sessionId": sid, "content": "# Plan\n- written on a\n"})).await;
        let file = json!({"sessionId": sid, "path": "notes/a.md", "content": "a's notes"});
        ca.ok("session.workspaces.createFile", file).await;
        ca.ok("session.name.set", json!({"sessionId": sid, "name": "A's name"})).await;

        // B follows the session A runs, and reads A's plan and files through the database.
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;
        assert_eq!(plan_of(&cb, &sid).await, json!("# Plan\n- written on a\n"));
        let read = cb.ok("session.workspaces.readFile", json!({"sessionId": sid, "path": "notes/a.md"})).await;
        assert_eq!(read["content"], json!("a's notes"), "{read}");

        // Every change on B but a send or an abort (forwarded to A) is refused, naming A; none
        // reaches the session.
        let changes = [
            ("session.plan.update", json!({"sessionId": sid, "content": "from b"})),
            ("session.plan.delete", json!({"sessionId": sid})),
            ("session.name.set", json!({"sessionId": sid, "name": "B's name"})),
            ("session.mode.set", json!({"sessionId": sid, "mode": "plan"})),
            ("session.model.switchTo", json!({"sessionId": sid, "modelId": "gpt-4.1"})),
            ("session.workspaces.createFile", json!({"sessionId": sid, "path": "b.md", "content": "b"})),
            ("session.log", json!({"sessionId": sid, "message": "from b"})),
        ];
        for (method, params) in changes {
            let err = cb.call(method, params).await.expect_err(method);
            assert!(err.message.contains("running on node a"), "{method}: {}", err.message);
        }
        let deleted = cb.ok("session.delete", json!({"sessionId": sid})).await;
        assert_eq!(deleted["success"], json!(false), "{deleted}");
        assert!(deleted["error"].as_str().unwrap_or_default().contains("running on node a"), "{deleted}");
        assert_eq!(plan_of(&ca, &sid).await, json!("# Plan\n- written on a\n"));
        assert_eq!(ca.ok("session.name.get", json!({"sessionId": sid})).await["name"], json!("A's name"));
        assert_eq!(ca.ok("session.mode.get", json!({"sessionId": sid})).await, json!("interactive"));
        assert!(ca.get_messages(&sid).await.is_ok(), "the session survived B's delete");
        let listed = ca.ok("session.workspaces.listFiles", json!({"sessionId": sid})).await;
        assert!(!listed.to_string().contains("b.md"), "{listed}");

        // A changes the plan and removes the file while B follows: B sees both.
        ca.ok("session.plan.update", json!({"sessionId": sid, "content": "# Plan v2\n"})).await;
        ca.ok("session.workspaces.removePath", json!({"sessionId": sid, "path": "notes/a.md"})).await;
        // Two changes, two pushes: B may be woken for each separately.
        let read_note = json!({"sessionId": sid, "path": "notes/a.md"});
        for _ in 0..80 {
            let gone = cb.call("session.workspaces.readFile", read_note.clone()).await.is_err();
            if plan_of(&cb, &sid).await == json!("# Plan v2\n") && gone {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert_eq!(plan_of(&cb, &sid).await, json!("# Plan v2\n"), "B follows A's plan");
        let gone = cb.call("session.workspaces.readFile", read_note).await;
        assert!(gone.is_err(), "the file A removed is gone on B: {gone:?}");

        // A dies; B takes over with A's latest plan, and now changes it itself.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        assert_eq!(plan_of(&cb, &sid).await, json!("# Plan v2\n"));
        cb.ok("session.plan.update", json!({"sessionId": sid, "content": "# Plan v3 (b)\n"})).await;
        assert_eq!(plan_of(&cb, &sid).await, json!("# Plan v3 (b)\n"));
        cb.ok("session.name.set", json!({"sessionId": sid, "name": "B's name"})).await;
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

/// `session.lifecycle` notifications of the given type for a session.
fn lifecycle(c: &RpcClient, sid: &str, ty: &str) -> usize {
    c.inbound()
        .iter()
        .filter(|m| {
            m["method"] == json!("session.lifecycle")
                && m["params"]["sessionId"] == json!(sid)
                && m["params"]["type"] == json!(ty)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_created_and_deleted_on_one_node_are_announced_on_every_node_to_their_tenant_only() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(90, async {
        let a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let alpha_on_b = b.tenant(ALPHA).await;
        let beta_on_b = b.tenant(BETA).await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        alpha_on_b
            .wait_until(T, "session.created on B", |c| (lifecycle(c, &sid, "session.created") == 1).then_some(()))
            .await;
        // The node running it may delete it (its own lease).
        let deleted = ca.ok("session.delete", json!({"sessionId": sid})).await;
        assert_eq!(deleted["success"], json!(true), "{deleted}");
        alpha_on_b
            .wait_until(T, "session.deleted on B", |c| (lifecycle(c, &sid, "session.deleted") == 1).then_some(()))
            .await;
        // Beta's client on B heard nothing of alpha's session (it was told before alpha's).
        assert_eq!(beta_on_b.inbound().iter().filter(|m| m["method"] == json!("session.lifecycle")).count(), 0);
        assert_eq!(lifecycle(&alpha_on_b, &sid, "session.created"), 1, "told once");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_turn_wrote_and_large_files_outlive_a_killed_node_and_updates_reach_other_nodes() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(120, async {
        let mut a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;

        // A file too large for one row, in A's copy of the session's directory.
        let big: Vec<u8> = (0..(17u32 << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let files = a.session_dir(&sid).join("files");
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(files.join("big.bin"), &big).unwrap();

        // A's turn records a todo with the `sql` tool (its session.db), then A hangs mid-turn.
        let insert =
            json!({"description": "Track", "query": "INSERT INTO todos (id, title) VALUES ('t1', 'Written on a')"});
        a.fake.push_reply(Reply::ToolCalls(vec![("sql".into(), insert.to_string())]));
        a.fake.push_reply(Reply::Hang);
        ca.send(&sid, "track it").await;
        let done = cb.wait_for_event(&sid, "tool.execution_complete", T).await;
        assert_eq!(done["data"]["success"], json!(true), "{done}");
        // B's client heard that the session changed, as A's clients did.
        cb.wait_until(T, "session.updated on B", |c| (lifecycle(c, &sid, "session.updated") > 0).then_some(())).await;

        // kill -9 A as soon as B saw the tool's result: what the tool wrote was already shared.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        let todos = cb.ok("session.plan.readSqlTodos", json!({"sessionId": sid})).await;
        assert!(todos.to_string().contains("Written on a"), "{todos}");
        let copied = std::fs::read(b.session_dir(&sid).join("files/big.bin")).expect("the large file on B");
        assert!(copied == big, "the large file arrived whole ({} of {} bytes)", copied.len(), big.len());
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

/// Waits until `check` holds of the file system (another node's pushes arrive asynchronously).
async fn wait_for_disk(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_code_a_sessions_tools_write_reaches_other_nodes_workspaces_and_outlives_a_killed_node() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(120, async {
        let mut a = node(&pg, "a").await;
        let b = node(&pg, "b").await;
        let (ws_a, ws_b) = (a.workspace("alpha"), b.workspace("alpha"));
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({"requestPermission": true})).await;
        let approver = ca.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));

        // A first turn writes two files, with the shell and the `create` tool; B has no session
        // and gets them.
        let write_lib =
            json!({"command": "mkdir -p src && printf 'pub fn a() {}\\n' > src/lib.rs", "description": "lib"});
        let doomed = ws_a.join("doomed.txt");
        let create = json!({"path": doomed.to_string_lossy(), "file_text": "bye\n"});
        a.fake.push_reply(Reply::ToolCalls(vec![
            ("bash".to_string(), write_lib.to_string()),
            ("create".to_string(), create.to_string()),
        ]));
        a.fake.push_reply(Reply::text("written"));
        ca.send(&sid, "write the code").await;
        ca.wait_for_event(&sid, "session.idle", T).await;
        wait_for_disk("A's files in B's workspace", || {
            std::fs::read_to_string(ws_b.join("src/lib.rs")).is_ok_and(|t| t == "pub fn a() {}\n")
                && ws_b.join("doomed.txt").is_file()
        })
        .await;

        // B follows the session; A's second turn removes a file with the shell, then hangs.
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;
        let rm = json!({"command": "rm doomed.txt && echo v2 > src/later.txt", "description": "tidy"});
        a.fake.push_reply(Reply::tool_call("bash", rm));
        a.fake.push_reply(Reply::Hang);
        ca.send(&sid, "tidy up").await;
        // B's client heard the shell's completion (it resumed after the first turn's tools).
        let done = cb
            .wait_until(T, "the shell's completion relayed to B", |c| {
                let events = c.events(&sid);
                let start = events
                    .iter()
                    .position(|e| e["type"] == "tool.execution_start" && e["data"]["toolName"] == "bash")?;
                events[start..].iter().find(|e| e["type"] == "tool.execution_complete").cloned()
            })
            .await;
        assert_eq!(done["data"]["success"], json!(true), "{done}");

        // kill -9 A as soon as B saw the tool's result: what the tool changed was already shared.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        approver.abort();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        assert!(!ws_b.join("doomed.txt").exists(), "the file A's shell removed is gone on B");
        assert_eq!(std::fs::read_to_string(ws_b.join("src/later.txt")).unwrap(), "v2\n");
        assert_eq!(std::fs::read_to_string(ws_b.join("src/lib.rs")).unwrap(), "pub fn a() {}\n");

        // B runs the session now: its own writes go to the database for the next node.
        let made_on_b = ws_b.join("src/b.rs");
        b.fake.push_reply(Reply::tool_call("create", json!({"path": made_on_b.to_string_lossy(), "file_text": "b"})));
        b.fake.push_reply(Reply::text("done on b"));
        let approver = cb.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        cb.send(&sid, "more").await;
        cb.wait_until(T, "B's reply", |c| has_message(c, &sid, "assistant.message", "done on b")).await;
        approver.abort();
        let c2 = node(&pg, "c").await;
        let cc = c2.tenant(ALPHA).await;
        // A node that started later gets the whole workspace when a session of the tenant starts.
        cc.create_session(json!({})).await;
        let ws_c = c2.workspace("alpha");
        assert_eq!(std::fs::read_to_string(ws_c.join("src/b.rs")).unwrap(), "b");
        assert_eq!(std::fs::read_to_string(ws_c.join("src/lib.rs")).unwrap(), "pub fn a() {}\n");
        assert!(!ws_c.join("doomed.txt").exists());
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_rows_naming_paths_outside_the_workspace_are_refused() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(90, async {
        let b = node(&pg, "b").await;
        let ws = b.workspace("alpha");
        std::fs::create_dir_all(&ws).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("link")).unwrap();
        let absolute = outside.path().join("absolute.txt");
        let escape = ws.parent().unwrap().join("escape.txt");

        // Rows no node would write, then a plain one: once it is on disk, the others were read.
        let rows = [
            "../escape.txt".to_string(),
            absolute.to_string_lossy().into_owned(),
            "link/through.txt".into(),
            "src/../../escape.txt".into(),
            "benign.txt".into(),
        ];
        for path in rows {
            pg.psql(&format!(
                "INSERT INTO workspace_files (tenant, path, content, size) VALUES ('alpha', '{}', 'x', 1)",
                path.replace('\'', "''")
            ));
        }
        wait_for_disk("the plain row written out", || ws.join("benign.txt").is_file()).await;
        // A session starting there reads the rows again, and still writes nothing outside.
        let cb = b.tenant(ALPHA).await;
        cb.create_session(json!({})).await;
        assert!(!escape.exists(), "nothing beside the workspace");
        assert!(!absolute.exists(), "nothing at an absolute path");
        assert!(!outside.path().join("through.txt").exists(), "nothing through a symlink");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(b.stderr_text().contains("refusing a shared file path"), "{}", b.stderr_text());
    })
    .await;
}
