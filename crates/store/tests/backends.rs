//! One conformance suite for both backends: the session index (with owners) and the event log
//! behave the same on SQLite + files and on PostgreSQL. PostgreSQL runs in a throwaway cluster
//! on loopback (`support/pg_cluster.rs`); leases exist only there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg_cluster.rs"]
mod pg_cluster;

use protocol::event::Event;
use serde_json::json;
use store::pg::{Lease, PgEvents};
use store::{EventStore, Layout, ListFilter, SessionIndex, SessionRow, StoreError, WorkspaceMeta};

fn row(id: &str, updated_at: &str, listed: bool) -> SessionRow {
    SessionRow {
        id: id.into(),
        cwd: "/work/a".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: updated_at.into(),
        has_user_message: listed,
        client_name: Some("sdk".into()),
        ..Default::default()
    }
}

fn ids(rows: &[SessionRow]) -> Vec<&str> {
    rows.iter().map(|r| r.id.as_str()).collect()
}

fn event(kind: &str, n: u32) -> Event {
    Event::from_parts(kind, json!({ "content": format!("msg {n}") }), false)
}

async fn index_conformance(index: &SessionIndex) {
    index.upsert(&row("old", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    index.upsert(&row("new", "2026-01-01T00:00:03.000Z", true)).await.unwrap();
    index.upsert(&row("tie", "2026-01-01T00:00:03.000Z", true)).await.unwrap();
    index.upsert(&row("empty", "2026-01-01T00:00:09.000Z", false)).await.unwrap();
    let all = index.list(&ListFilter::default()).await.unwrap();
    assert_eq!(ids(&all), ["tie", "new", "old"], "newest first, later insertion wins a tie");
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("tie"));
    assert!(index.get("empty").await.unwrap().is_some_and(|r| !r.has_user_message));

    // Listed stays listed through a later upsert that says otherwise.
    index.upsert(&row("old", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
    assert!(index.get("old").await.unwrap().unwrap().has_user_message);

    assert!(index.mark_user_message("empty", "first").await.unwrap());
    assert!(index.mark_user_message("empty", "second").await.unwrap());
    let got = index.get("empty").await.unwrap().unwrap();
    assert_eq!((got.title.as_deref(), got.has_user_message), (Some("first"), true));
    assert!(index.rename("empty", "Named").await.unwrap());
    assert_eq!(index.get("empty").await.unwrap().unwrap().title.as_deref(), Some("Named"));
    assert!(!index.rename("nope", "x").await.unwrap());

    let mut other = row("elsewhere", "2026-01-01T00:00:02.000Z", true);
    other.cwd = "/work/b".into();
    other.branch = Some("main".into());
    index.upsert(&other).await.unwrap();
    let filtered = index
        .list(&ListFilter { cwd: Some("/work/b".into()), branch: Some("main".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(ids(&filtered), ["elsewhere"]);

    assert!(index.touch("old", "2026-01-01T00:00:10.000Z").await.unwrap());
    assert!(!index.touch("nope", "2026-01-01T00:00:10.000Z").await.unwrap());
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("old"));
    assert!(index.delete("old").await.unwrap());
    assert!(!index.delete("old").await.unwrap());
    assert_eq!(index.get("old").await.unwrap(), None);

    assert!(index.claim_owner("s1", "alpha", Some("alice")).await.unwrap());
    assert!(!index.claim_owner("s1", "beta", None).await.unwrap(), "the first claim wins");
    assert_eq!(index.owner("s1").await.unwrap().as_deref(), Some("alpha"));
    assert_eq!(index.ownership("s1").await.unwrap(), Some(("alpha".to_string(), Some("alice".to_string()))));
    assert_eq!(index.owners().await.unwrap(), vec![("s1".to_string(), "alpha".to_string())]);
    index.release_owner("s1").await.unwrap();
    assert_eq!(index.owner("s1").await.unwrap(), None);
    // A tenant's session limit, counted in the claim's own statement.
    assert_eq!(index.claim_owner_within("c1", "gamma", Some("carol"), Some(1)).await.unwrap(), store::Claim::Claimed);
    assert_eq!(index.claim_owner_within("c2", "gamma", None, Some(1)).await.unwrap(), store::Claim::Full);
    assert_eq!(index.claim_owner_within("c1", "delta", None, Some(1)).await.unwrap(), store::Claim::Taken);
    assert_eq!(index.claim_owner_within("c2", "gamma", None, None).await.unwrap(), store::Claim::Claimed);
    // Tenants' usage: what nodes add sums per tenant, user and day.
    let used = |user: &str, day: &str, input: i64| store::UsageRow {
        tenant: "gamma".into(),
        user: user.into(),
        day: day.into(),
        model_calls: 1,
        input_tokens: input,
        premium_requests: 0.25,
        ..Default::default()
    };
    index.add_usage(&[used("carol", "2026-12-01", 10), used("", "2026-12-01", 1)]).await.unwrap();
    index.add_usage(&[used("carol", "2026-12-01", 5), used("carol", "2026-11-30", 100)]).await.unwrap();
    let today = index.usage(Some("gamma"), "2026-12-01").await.unwrap();
    let carol = today.iter().find(|r| r.user == "carol").unwrap();
    assert_eq!((today.len(), carol.model_calls, carol.input_tokens, carol.premium_requests), (2, 2, 15, 0.5));
    assert_eq!(index.usage(None, "2026-01-01").await.unwrap().len(), 3);
    let minute = "2026-12-01T10:00";
    assert_eq!(index.take_requests("gamma", minute, 3, 2).await.unwrap(), 2);
    assert_eq!(index.take_requests("gamma", minute, 3, 2).await.unwrap(), 1, "what is left");
    assert_eq!(index.take_requests("gamma", minute, 3, 1).await.unwrap(), 0, "a minute's requests are counted");
    index.forget_requests_before("2026-12-01T10:01").await.unwrap();
    assert_eq!(index.take_requests("gamma", minute, 1, 1).await.unwrap(), 1);
    index.ping().await.unwrap();
}

async fn event_log_conformance(events: &EventStore) {
    assert!(!events.exists("s1").await.unwrap());
    assert!(matches!(events.load("s1").await, Err(StoreError::NotFound(id)) if id == "s1"));

    let written: Vec<Event> = (0..5).map(|n| event("user.message", n)).collect();
    let mut sink = events.open_sink("s1").await.unwrap();
    for e in &written {
        sink.append(&e.id, serde_json::to_string(e).unwrap().as_bytes()).unwrap();
    }
    assert!(events.exists("s1").await.unwrap());
    let loaded = events.load("s1").await.unwrap();
    assert_eq!(loaded.events, written, "every event, in order");
    assert_eq!((loaded.count, loaded.skipped), (5, 0));
    let bytes: u64 = written.iter().map(|e| serde_json::to_string(e).unwrap().len() as u64 + 1).sum();
    assert_eq!(loaded.size_bytes, bytes, "one line per event");

    // Reopening continues after the last event.
    drop(sink);
    let mut sink = events.open_sink("s1").await.unwrap();
    let next = event("assistant.message", 9);
    sink.append(&next.id, serde_json::to_string(&next).unwrap().as_bytes()).unwrap();
    assert_eq!(events.load("s1").await.unwrap().events.last(), Some(&next));

    assert!(sink.truncate_before("no-such-id").unwrap().is_none());
    let (kept, removed) = sink.truncate_before(&written[2].id).unwrap().unwrap();
    assert_eq!((kept.as_slice(), removed), (&written[..2], 4));
    let after = event("user.message", 10);
    sink.append(&after.id, serde_json::to_string(&after).unwrap().as_bytes()).unwrap();
    let loaded = events.load("s1").await.unwrap();
    assert_eq!(loaded.events, vec![written[0].clone(), written[1].clone(), after]);

    // A fork's log is written at once, ids kept.
    events.write_log("s2", written.clone()).await.unwrap();
    assert_eq!(events.load("s2").await.unwrap().events, written);

    assert_eq!(events.read_meta("s1").await.unwrap(), None);
    let meta = WorkspaceMeta {
        id: "s1".into(),
        cwd: "/work/a b".into(),
        client_name: Some("app: \"x\"".into()),
        name: Some("Named".into()),
        user_named: true,
        summary_count: 2,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:01.000Z".into(),
        ..Default::default()
    };
    events.write_meta("s1", &meta).await.unwrap();
    assert_eq!(events.read_meta("s1").await.unwrap(), Some(meta));

    events.delete("s1").await.unwrap();
    assert!(!events.exists("s1").await.unwrap());
    assert_eq!(events.read_meta("s1").await.unwrap(), None);
    assert!(matches!(events.load("s1").await, Err(StoreError::NotFound(_))));
}

#[tokio::test]
async fn sqlite_and_files_conform() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    let index = SessionIndex::open(layout.db_path()).await.unwrap();
    index_conformance(&index).await;
    event_log_conformance(&EventStore::Files(layout)).await;
}

async fn postgres(cluster: &pg_cluster::PgCluster, node: &str) -> (SessionIndex, PgEvents) {
    let index = SessionIndex::connect_postgres(&cluster.url(), std::time::Duration::from_secs(5)).await.unwrap();
    let events = PgEvents::new(index.postgres().unwrap().clone(), &cluster.url(), node);
    (index, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conforms() {
    let Some(cluster) = pg_cluster::PgCluster::start() else { return };
    let (index, events) = postgres(&cluster, "a").await;
    index_conformance(&index).await;
    event_log_conformance(&EventStore::Postgres(events)).await;
    // Migrations run at every start: a second node on the same database finds them applied.
    let (again, _) = postgres(&cluster, "b").await;
    again.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_fence_appends_and_expire() {
    let Some(cluster) = pg_cluster::PgCluster::start() else { return };
    let (_, a) = postgres(&cluster, "a").await;
    let (_, b) = postgres(&cluster, "b").await;
    assert_eq!(a.acquire("s", 1).await.unwrap(), Lease::Held);
    assert_eq!(a.acquire("s", 1).await.unwrap(), Lease::Held, "the holder may take it again");
    assert_eq!(b.acquire("s", 30).await.unwrap(), Lease::Elsewhere("a".into()));
    assert_eq!(b.holder("s").await.unwrap().as_deref(), Some("a"));

    let mut log_a = EventStore::Postgres(a.clone()).open_sink("s").await.unwrap();
    let first = event("user.message", 1);
    log_a.append(&first.id, serde_json::to_string(&first).unwrap().as_bytes()).unwrap();
    // B may not write while A holds the lease.
    let mut log_b = EventStore::Postgres(b.clone()).open_sink("s").await.unwrap();
    let refused = event("user.message", 2);
    let err = log_b.append(&refused.id, serde_json::to_string(&refused).unwrap().as_bytes()).unwrap_err();
    assert!(matches!(&err, StoreError::LeasedElsewhere { node, .. } if node == "a"), "{err}");

    // A stops renewing; after the ttl, B takes the lease and A's appends are refused.
    let mut took = false;
    for _ in 0..50 {
        if b.acquire("s", 30).await.unwrap() == Lease::Held {
            took = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(took, "an expired lease is free for another node");
    assert!(!a.renew("s", 30).await.unwrap(), "the old holder cannot renew");
    let late = event("assistant.message", 3);
    assert!(log_a.append(&late.id, serde_json::to_string(&late).unwrap().as_bytes()).is_err());
    let mut log_b = EventStore::Postgres(b.clone()).open_sink("s").await.unwrap();
    let second = event("user.message", 4);
    log_b.append(&second.id, serde_json::to_string(&second).unwrap().as_bytes()).unwrap();
    let loaded = b.load("s").await.unwrap();
    assert_eq!(loaded.events, vec![first, second], "no gap, nothing from the fenced node");

    // A duplicate id is refused, whoever writes it.
    let again = loaded.events[1].clone();
    assert!(log_b.append(&again.id, serde_json::to_string(&again).unwrap().as_bytes()).is_err());
    b.release("s").await.unwrap();
    assert_eq!(b.holder("s").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_is_not_ready() {
    let Some(mut cluster) = pg_cluster::PgCluster::start() else { return };
    let (index, _) = postgres(&cluster, "a").await;
    index.ping().await.unwrap();
    cluster.stop();
    assert!(index.ping().await.is_err());
    cluster.start_again();
    let mut back = false;
    for _ in 0..50 {
        if index.ping().await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(back, "the pool reconnects once the database is back");
}

fn within<F: std::future::Future>(what: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(std::time::Duration::from_secs(20), what)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_lifecycle_rows_wake_other_nodes_and_no_file_mirror_is_left() {
    let Some(cluster) = pg_cluster::PgCluster::start() else { return };
    let (_, a) = postgres(&cluster, "a").await;
    let (_, b) = postgres(&cluster, "b").await;
    let mut woken = b.listen().await.unwrap();

    // A new event of a session wakes the other nodes, naming the session.
    assert_eq!(a.acquire("s", 30).await.unwrap(), Lease::Held);
    let mut log = EventStore::Postgres(a.clone()).open_sink("s").await.unwrap();
    let first = event("user.message", 1);
    log.append(&first.id, serde_json::to_string(&first).unwrap().as_bytes()).unwrap();
    let session = async { while woken.next().await.unwrap() != store::pg::Wakeup::Session("s".into()) {} };
    within(session).await.expect("a session wake-up");

    // A lifecycle row wakes the other nodes too.
    a.publish_lifecycle("s", "{}").await.unwrap();
    let lifecycle = async { while woken.next().await.unwrap() != store::pg::Wakeup::Lifecycle {} };
    within(lifecycle).await.expect("a lifecycle wake-up");

    // Files live on the nodes' shared volume: the mirror's tables are gone (0010).
    let pool = a.pool();
    for table in ["session_files", "session_file_chunks", "workspace_files", "workspace_file_chunks", "workspace_roots"]
    {
        let (found,): (Option<String>,) =
            sqlx::query_as(&format!("SELECT to_regclass('{table}')::text")).fetch_one(pool).await.unwrap();
        assert_eq!(found, None, "{table} was dropped");
    }
    // Deleting a session no longer names them.
    a.delete("s").await.unwrap();
    assert!(!a.exists("s").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_node_names_the_shared_volume_and_later_claims_find_its_id() {
    let Some(cluster) = pg_cluster::PgCluster::start() else { return };
    let (_, a) = postgres(&cluster, "a").await;
    let (_, b) = postgres(&cluster, "b").await;
    assert_eq!(b.volume().await.unwrap(), None, "no node has named it yet");
    assert_eq!(a.claim_volume("vol-1").await.unwrap(), "vol-1");
    assert_eq!(b.claim_volume("vol-2").await.unwrap(), "vol-1", "the first claim stays");
    assert_eq!(b.volume().await.unwrap().as_deref(), Some("vol-1"));
}
