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

        // A runs the session: a send on B is refused, naming A.
        let refused = cb.call("session.send", json!({"sessionId": sid, "prompt": "from b"})).await.unwrap_err();
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

        // Every change on B is refused, naming A; none reaches the session.
        let changes = [
            ("session.plan.update", json!({"sessionId": sid, "content": "from b"})),
            ("session.plan.delete", json!({"sessionId": sid})),
            ("session.name.set", json!({"sessionId": sid, "name": "B's name"})),
            ("session.mode.set", json!({"sessionId": sid, "mode": "plan"})),
            ("session.model.switchTo", json!({"sessionId": sid, "modelId": "gpt-4.1"})),
            ("session.workspaces.createFile", json!({"sessionId": sid, "path": "b.md", "content": "b"})),
            ("session.log", json!({"sessionId": sid, "message": "from b"})),
            ("session.abort", json!({"sessionId": sid})),
            ("session.send", json!({"sessionId": sid, "prompt": "from b"})),
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
