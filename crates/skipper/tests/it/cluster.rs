//! Several `skipper serve` nodes on one PostgreSQL (a throwaway cluster on loopback per test)
//! and one shared directory (`[cluster] shared_root`; on one machine, the same directory stands
//! for the volume the nodes mount): every node lists and resumes every session of the tenant, one
//! node runs a session at a time under a lease, another follows it read-only, and a survivor
//! takes over a killed node's session with no gap and no duplicate event, finding its files.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
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

/// A node's configuration: tenants alpha and beta, and `[cluster]` with `shared_root` when given.
fn node_config(name: &str, shared: Option<&Path>) -> String {
    let root = shared.map(|d| format!("shared_root = \"{}\"\n", d.display())).unwrap_or_default();
    format!(
        "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\n\n[cluster]\nnode_id = \"{name}\"\nlease_ttl_s = {LEASE_TTL_S}\n{root}",
        sha256_hex(ALPHA),
        sha256_hex(BETA)
    )
}

/// A node on `pg` mounting `shared` (each node has its own --home besides).
async fn node(pg: &PgCluster, shared: &Path, name: &str) -> Serve {
    Serve::start_with_args(&node_config(name, Some(shared)), &[], &["--database-url", &pg.url()]).await
}

/// The directory of alpha's session `sid` (inside the server its id is `alpha.<sid>`).
fn session_dir(shared: &Path, sid: &str) -> PathBuf {
    shared.join("session-state").join(format!("alpha.{sid}"))
}

fn workspace(shared: &Path, tenant: &str) -> PathBuf {
    shared.join("workspaces").join(tenant)
}

/// The working directory a session started in (its `session.start`).
async fn cwd_of(c: &RpcClient, sid: &str) -> PathBuf {
    let start = c.wait_for_event(sid, "session.start", T).await;
    PathBuf::from(start["data"]["context"]["cwd"].as_str().expect("a cwd"))
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
    let shared = tempfile::tempdir().unwrap();
    with_timeout(120, async {
        let mut a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;

        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        a.fake.push_reply(Reply::text("hello from a"));
        ca.send(&sid, "first").await;
        ca.wait_for_event(&sid, "session.idle", T).await;

        // B finds the session through the database.
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
    let shared = tempfile::tempdir().unwrap();
    with_timeout(120, async {
        let a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
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
    let shared = tempfile::tempdir().unwrap();
    with_timeout(90, async {
        let a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
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

/// Waits for `/readyz` to say 200 again once PostgreSQL is back.
async fn ready_again(node: &Serve) {
    let mut status = 0;
    for _ in 0..100 {
        status = node.get("/readyz").await.0;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "ready again once PostgreSQL is back");
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_follows_postgresql() {
    let Some(mut pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(90, async {
        let a = node(&pg, shared.path(), "a").await;
        assert_eq!(a.get("/readyz").await.0, 200);
        pg.stop();
        assert_eq!(a.get("/readyz").await.0, 503, "PostgreSQL is down");
        pg.start_again();
        ready_again(&a).await;
    })
    .await;
}

/// The tenant-isolation attacks that touch the session index, on PostgreSQL (`serve.rs` runs
/// them on SQLite): another tenant's ids answer as unknown everywhere, and two tenants' same
/// session id are two sessions.
#[tokio::test(flavor = "multi_thread")]
async fn tenants_are_kept_apart_on_postgresql_as_on_sqlite() {
    for attack in [0, 1] {
        let Some(pg) = PgCluster::start() else { return };
        let shared = tempfile::tempdir().unwrap();
        with_timeout(90, async {
            let s = node(&pg, shared.path(), "a").await;
            match attack {
                0 => crate::serve::foreign_ids_are_unknown(&s).await,
                _ => crate::serve::ids_are_per_tenant(&s).await,
            }
        })
        .await;
    }
}

/// How long `work` took, with its result.
async fn timed<F: std::future::Future>(work: F) -> (Duration, F::Output) {
    let start = std::time::Instant::now();
    let out = work.await;
    (start.elapsed(), out)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_outage_fails_requests_fast_ends_turns_and_loses_no_event() {
    let Some(mut pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(150, async {
        let config = format!("{}database_timeout_ms = 1000\n", node_config("a", Some(shared.path())));
        let a = Serve::start_with_args(&config, &[], &["--database-url", &pg.url()]).await;
        let c = a.tenant(ALPHA).await;
        let mut sids = Vec::new();
        for n in 0..3 {
            let sid = c.create_session(json!({})).await;
            a.fake.push_reply(Reply::text(format!("warm {n}")));
            c.send(&sid, "warm up").await;
            c.wait_for_event(&sid, "session.idle", T).await;
            sids.push(sid);
        }
        // One more, unloaded: resuming it needs the database.
        let unloaded = c.create_session(json!({})).await;
        c.ok("session.destroy", json!({"sessionId": unloaded})).await;
        // Each session mid-turn when the database goes: its answer arrives during the outage.
        a.fake.clear_requests();
        for _ in &sids {
            a.fake.push_reply(Reply::Delay { ms: 1500, then: Box::new(Reply::text("during the outage")) });
        }
        for sid in &sids {
            c.send(sid, "go on").await;
        }
        a.fake.wait_for_requests(sids.len(), T).await.unwrap();
        pg.stop();

        // Every turn ends, told why.
        for sid in &sids {
            let err = c.wait_for_event(sid, "session.error", T).await;
            assert_eq!(err["data"]["errorType"], json!("persistence"), "{err}");
            c.wait_for_nth_event(sid, "session.idle", 2, T).await;
        }
        // Requests that need the database fail within the bound (its timeout, 1 s here), with a
        // code and words to act on; one right after another does not wait again.
        let bound = Duration::from_millis(1800);
        for (method, params) in [
            ("session.create", json!({"model": "claude-sonnet-4.5"})),
            ("session.list", json!({})),
            ("session.create", json!({"model": "claude-sonnet-4.5"})),
            ("session.resume", json!({"sessionId": unloaded})),
            ("session.getMessages", json!({"sessionId": sids[2]})),
        ] {
            let (took, got) = timed(c.call(method, params)).await;
            let err = got.expect_err(method);
            assert!(took < bound, "{method} took {took:?}");
            assert_eq!(err.code, -32010, "{method}: {err}");
            assert!(err.message.contains("database unavailable"), "{method}: {err}");
        }
        // A send is answered at once; its turn ends with the reason.
        let before = c.count(&sids[0], "session.error");
        let (took, sent) = timed(c.call("session.send", json!({"sessionId": sids[0], "prompt": "while down"}))).await;
        assert!(took < bound, "session.send took {took:?}: {sent:?}");
        if sent.is_ok() {
            c.wait_until(T, "the refused turn's error", |c| {
                (c.count(&sids[0], "session.error") > before).then_some(())
            })
            .await;
            c.wait_for_nth_event(&sids[0], "session.idle", 3, T).await;
        }
        // What needs no database goes on.
        let (took, _) = timed(c.ok("ping", json!({}))).await;
        assert!(took < Duration::from_millis(500), "ping took {took:?}");
        assert_eq!(c.ok("session.mode.get", json!({"sessionId": sids[1]})).await, json!("interactive"));
        assert_eq!(a.get("/healthz").await.0, 200);
        let (took, (status, _)) = timed(a.get("/readyz")).await;
        assert_eq!(status, 503);
        assert!(took < Duration::from_secs(1), "/readyz took {took:?}");

        // Back: no restart, nothing a client saw is missing, and the sessions work again.
        pg.start_again();
        ready_again(&a).await;
        for sid in &sids {
            let stored: HashSet<String> =
                c.get_messages(sid).await.unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
            for seen in c.events(sid).iter().filter(|e| e.get("ephemeral") != Some(&json!(true))) {
                assert!(stored.contains(seen["id"].as_str().unwrap()), "{sid}: shown but not stored: {seen}");
            }
        }
        a.fake.push_reply(Reply::text("after the outage"));
        c.send(&sids[1], "again").await;
        c.wait_until(T, "a reply after the outage", |c| {
            has_message(c, &sids[1], "assistant.message", "after the outage")
        })
        .await;
    })
    .await;
}

async fn plan_of(c: &RpcClient, sid: &str) -> Value {
    c.ok("session.plan.read", json!({"sessionId": sid})).await["content"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_refuses_changes_naming_the_owner_and_shares_its_plan_and_files() {
    let Some(pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(120, async {
        let mut a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        ca.ok("session.plan.update", json!({"sessionId": sid, "content": "# Plan\n- written on a\n"})).await;
        let file = json!({"sessionId": sid, "path": "notes/a.md", "content": "a's notes"});
        ca.ok("session.workspaces.createFile", file).await;
        ca.ok("session.name.set", json!({"sessionId": sid, "name": "A's name"})).await;

        // B follows the session A runs, and reads A's plan and files on the shared directory.
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
    let shared = tempfile::tempdir().unwrap();
    with_timeout(90, async {
        let a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
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
async fn what_a_killed_nodes_session_wrote_is_there_for_the_node_that_takes_it_over() {
    let Some(pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(120, async {
        let mut a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        // The session's directory is on the shared root, not under either node's home.
        let dir = session_dir(shared.path(), &sid);
        assert!(dir.is_dir(), "{} on the shared root", dir.display());
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;

        // A client-managed file, and a turn that records a todo with the `sql` tool (its
        // session.db); then A hangs mid-turn.
        let file = json!({"sessionId": sid, "path": "notes/a.md", "content": "written on a"});
        ca.ok("session.workspaces.createFile", file).await;
        let insert =
            json!({"description": "Track", "query": "INSERT INTO todos (id, title) VALUES ('t1', 'Written on a')"});
        a.fake.push_reply(Reply::ToolCalls(vec![("sql".into(), insert.to_string())]));
        a.fake.push_reply(Reply::Hang);
        ca.send(&sid, "track it").await;
        let done = cb.wait_for_event(&sid, "tool.execution_complete", T).await;
        assert_eq!(done["data"]["success"], json!(true), "{done}");
        // B's client heard that the session changed, as A's clients did.
        cb.wait_until(T, "session.updated on B", |c| (lifecycle(c, &sid, "session.updated") > 0).then_some(())).await;

        // kill -9 A as soon as B saw the tool's result: B takes over and finds what A wrote.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        let todos = cb.ok("session.plan.readSqlTodos", json!({"sessionId": sid})).await;
        assert!(todos.to_string().contains("Written on a"), "{todos}");
        let read = cb.ok("session.workspaces.readFile", json!({"sessionId": sid, "path": "notes/a.md"})).await;
        assert_eq!(read["content"], json!("written on a"), "{read}");
        // B runs it now: its `sql` tool adds to the same database.
        let more =
            json!({"description": "More", "query": "INSERT INTO todos (id, title) VALUES ('t2', 'Written on b')"});
        b.fake.push_reply(Reply::ToolCalls(vec![("sql".into(), more.to_string())]));
        b.fake.push_reply(Reply::text("tracked on b"));
        cb.send(&sid, "more").await;
        cb.wait_until(T, "B's reply", |c| has_message(c, &sid, "assistant.message", "tracked on b")).await;
        let todos = cb.ok("session.plan.readSqlTodos", json!({"sessionId": sid})).await.to_string();
        assert!(todos.contains("Written on a") && todos.contains("Written on b"), "{todos}");
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_code_a_killed_nodes_tools_wrote_is_what_the_next_nodes_tools_see() {
    let Some(pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(120, async {
        let mut a = node(&pg, shared.path(), "a").await;
        let b = node(&pg, shared.path(), "b").await;
        let ws = workspace(shared.path(), "alpha");
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({"requestPermission": true})).await;
        let approver = ca.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        assert_eq!(cwd_of(&ca, &sid).await, ws.canonicalize().unwrap(), "the session runs in the shared workspace");

        // A first turn writes two files, with the shell and the `create` tool.
        let write_lib =
            json!({"command": "mkdir -p src && printf 'pub fn a() {}\\n' > src/lib.rs", "description": "lib"});
        let create = json!({"path": ws.join("doomed.txt").to_string_lossy(), "file_text": "bye\n"});
        a.fake.push_reply(Reply::ToolCalls(vec![
            ("bash".to_string(), write_lib.to_string()),
            ("create".to_string(), create.to_string()),
        ]));
        a.fake.push_reply(Reply::text("written"));
        ca.send(&sid, "write the code").await;
        ca.wait_for_event(&sid, "session.idle", T).await;
        assert_eq!(std::fs::read_to_string(ws.join("src/lib.rs")).unwrap(), "pub fn a() {}\n");

        // B follows the session; A's second turn removes a file with the shell, then hangs.
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;
        let rm = json!({"command": "rm doomed.txt && echo v2 > src/later.txt", "description": "tidy"});
        a.fake.push_reply(Reply::tool_call("bash", rm));
        a.fake.push_reply(Reply::Hang);
        ca.send(&sid, "tidy up").await;
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

        // kill -9 A; B takes over, and its shell, in the same working directory, sees A's work.
        a.child.start_kill().unwrap();
        a.child.wait().await.unwrap();
        approver.abort();
        cb.wait_for_event(&sid, "session.resume", Duration::from_secs(LEASE_TTL_S + 5)).await;
        let look = json!({"command": "cat src/lib.rs src/later.txt; ls doomed.txt 2>/dev/null || echo no-doomed", "description": "look"});
        b.fake.push_reply(Reply::tool_call("bash", look));
        b.fake.push_reply(Reply::text("seen on b"));
        let approver = cb.auto_answer_permissions(&sid, json!({"kind": "approve-once"}));
        cb.send(&sid, "look").await;
        cb.wait_until(T, "B's reply", |c| has_message(c, &sid, "assistant.message", "seen on b")).await;
        approver.abort();
        let sent = b.fake.requests().last().cloned().unwrap().to_string();
        for seen in ["pub fn a() {}", "v2", "no-doomed"] {
            assert!(sent.contains(seen), "B's shell saw {seen:?}: {sent}");
        }

        // A node started later runs the tenant's sessions in the same workspace.
        let c = node(&pg, shared.path(), "c").await;
        let cc = c.tenant(ALPHA).await;
        let other = cc.create_session(json!({})).await;
        assert_eq!(cwd_of(&cc, &other).await, ws.canonicalize().unwrap());
        assert!(!b.stderr_text().contains("panicked"), "{}", b.stderr_text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_on_postgresql_without_a_shared_root_does_not_start_and_says_what_to_mount() {
    let Some(pg) = PgCluster::start() else { return };
    with_timeout(60, async {
        let (status, stderr) = Serve::fails_to_start(&node_config("a", None), &["--database-url", &pg.url()]).await;
        assert!(!status.success(), "{stderr}");
        for says in ["shared_root", "mount", "server.toml"] {
            assert!(stderr.contains(says), "says {says:?}: {stderr}");
        }
        // A shared_root that does not exist (the volume is not mounted) is refused too.
        let missing = tempfile::tempdir().unwrap().path().join("not-mounted");
        let (status, stderr) =
            Serve::fails_to_start(&node_config("a", Some(&missing)), &["--database-url", &pg.url()]).await;
        assert!(!status.success(), "{stderr}");
        assert!(stderr.contains("not a directory"), "{stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_shared_root_is_not_the_clusters_volume_does_not_start() {
    let Some(pg) = PgCluster::start() else { return };
    let shared = tempfile::tempdir().unwrap();
    with_timeout(90, async {
        // The first node names the volume: an id in the root, the same id in the database.
        let a = node(&pg, shared.path(), "a").await;
        let id = std::fs::read_to_string(shared.path().join(".skipper-volume")).expect("the volume id file");
        let id = id.trim();
        assert!(!id.is_empty());

        // A node whose root is another (empty) directory: refused, naming the missing id file.
        let elsewhere = tempfile::tempdir().unwrap();
        let url = pg.url();
        let args = ["--database-url", url.as_str()];
        let (status, stderr) = Serve::fails_to_start(&node_config("b", Some(elsewhere.path())), &args).await;
        assert!(!status.success(), "{stderr}");
        assert!(stderr.contains("not the cluster's shared volume") && stderr.contains(".skipper-volume"), "{stderr}");
        assert!(stderr.contains(id), "names the volume it expected: {stderr}");
        assert!(!elsewhere.path().join(".skipper-volume").exists(), "a refused node names nothing");

        // One holding another volume's id: refused too.
        std::fs::write(elsewhere.path().join(".skipper-volume"), "some-other-volume\n").unwrap();
        let (status, stderr) = Serve::fails_to_start(&node_config("b", Some(elsewhere.path())), &args).await;
        assert!(!status.success(), "{stderr}");
        assert!(stderr.contains("some-other-volume") && stderr.contains(id), "{stderr}");

        // The same volume: B starts and follows A's session, reading A's plan there.
        let ca = a.tenant(ALPHA).await;
        let sid = ca.create_session(json!({})).await;
        ca.ok("session.plan.update", json!({"sessionId": sid, "content": "on the volume"})).await;
        let b = node(&pg, shared.path(), "b").await;
        let cb = b.tenant(ALPHA).await;
        cb.ok("session.resume", json!({"sessionId": sid})).await;
        assert_eq!(plan_of(&cb, &sid).await, json!("on the volume"));
    })
    .await;
}
