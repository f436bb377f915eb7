//! Index behaviour against an in-memory database, and rebuild against real log files.

use super::*;
use crate::event_log::EventLog;
use crate::layout::WorkspaceMeta;
use protocol::event::Event;
use serde_json::json;

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

#[tokio::test]
async fn list_is_newest_first_and_hides_sessions_without_user_message() {
    let index = SessionIndex::open_in_memory().await.unwrap();
    index.upsert(&row("old", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    index.upsert(&row("new", "2026-01-01T00:00:03.000Z", true)).await.unwrap();
    index.upsert(&row("mid", "2026-01-01T00:00:02.000Z", true)).await.unwrap();
    index.upsert(&row("empty", "2026-01-01T00:00:09.000Z", false)).await.unwrap();

    let all = index.list(&ListFilter::default()).await.unwrap();
    assert_eq!(ids(&all), ["new", "mid", "old"]);
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("new"));
    assert!(index.get("empty").await.unwrap().is_some());

    assert!(index.touch("old", "2026-01-01T00:00:05.000Z").await.unwrap());
    assert!(!index.touch("nope", "2026-01-01T00:00:05.000Z").await.unwrap());
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("old"));

    assert!(index.delete("old").await.unwrap());
    assert!(!index.delete("old").await.unwrap());
    assert_eq!(index.get("old").await.unwrap(), None);
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("new"));
}

#[tokio::test]
async fn mark_user_message_lists_the_session_and_keeps_the_first_title() {
    let index = SessionIndex::open_in_memory().await.unwrap();
    index.upsert(&row("s", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
    assert_eq!(index.last_id().await.unwrap(), None);

    assert!(index.mark_user_message("s", "first prompt").await.unwrap());
    assert!(index.mark_user_message("s", "second prompt").await.unwrap());
    let got = index.get("s").await.unwrap().unwrap();
    assert!(got.has_user_message);
    assert_eq!(got.title.as_deref(), Some("first prompt"));
    assert_eq!(got.summary.as_deref(), Some("first prompt"));
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("s"));

    // A later upsert built without the flag must not hide the session again.
    index.upsert(&row("s", "2026-01-01T00:00:02.000Z", false)).await.unwrap();
    assert!(index.get("s").await.unwrap().unwrap().has_user_message);
}

#[tokio::test]
async fn list_filters_match_exactly() {
    let index = SessionIndex::open_in_memory().await.unwrap();
    let mut a = row("a", "2026-01-01T00:00:01.000Z", true);
    a.git_root = Some("/work".into());
    a.repository = Some("o/r".into());
    a.branch = Some("main".into());
    let mut b = row("b", "2026-01-01T00:00:02.000Z", true);
    b.cwd = "/work/b".into();
    b.branch = Some("dev".into());
    index.upsert(&a).await.unwrap();
    index.upsert(&b).await.unwrap();

    let by = |f: ListFilter| {
        let index = index.clone();
        async move { ids(&index.list(&f).await.unwrap()).join(",") }
    };
    let f = ListFilter::default;
    assert_eq!(by(ListFilter { cwd: Some("/work/a".into()), ..f() }).await, "a");
    assert_eq!(by(ListFilter { cwd: Some("/work".into()), ..f() }).await, "");
    assert_eq!(by(ListFilter { branch: Some("dev".into()), ..f() }).await, "b");
    assert_eq!(by(ListFilter { git_root: Some("/work".into()), ..f() }).await, "a");
    assert_eq!(by(ListFilter { repository: Some("o/r".into()), ..f() }).await, "a");
    let both = ListFilter { repository: Some("o/r".into()), branch: Some("dev".into()), ..f() };
    assert_eq!(by(both).await, "");
    assert_eq!(index.get("a").await.unwrap(), Some(a));
}

#[tokio::test]
async fn open_creates_the_file_and_reopens_with_data() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let index = SessionIndex::open(layout.db_path()).await.unwrap();
    index.upsert(&row("s", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    index.close().await;
    assert!(layout.db_path().is_file());
    let index = SessionIndex::open(layout.db_path()).await.unwrap();
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("s"));
}

#[tokio::test]
async fn an_index_left_open_at_exit_keeps_its_wal_and_the_next_open_sees_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let wal = layout.db_path().with_file_name("skipper-index.db-wal");
    let index = SessionIndex::open(layout.db_path()).await.unwrap();
    index.upsert(&row("kept", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    index.touch_later("kept", "2026-01-01T00:00:07.000Z");
    index.flush().await.unwrap();
    index.leave_open_at_exit();
    drop(index);
    // Closed, the last connection would have checkpointed the WAL and deleted it.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(wal.is_file(), "the WAL was deleted");
    let reopened = SessionIndex::open(layout.db_path()).await.unwrap();
    let got = reopened.get("kept").await.unwrap().expect("the row is there");
    assert_eq!(got.updated_at, "2026-01-01T00:00:07.000Z");
    reopened.close().await;
}

#[tokio::test]
async fn the_wal_left_to_the_next_process_stays_small_however_many_runs_wrote_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let wal = layout.db_path().with_file_name("skipper-index.db-wal");
    // Runs that each leave the index open at exit: their commits pile up in the WAL, which
    // every later process reads whole when it opens the index.
    for run in 0..20 {
        let index = SessionIndex::open(layout.db_path()).await.unwrap();
        for n in 0..30 {
            index.upsert(&row(&format!("s{run}-{n}"), "2026-01-01T00:00:01.000Z", true)).await.unwrap();
        }
        index.leave_open_at_exit();
        drop(index);
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let frames = std::fs::metadata(&wal).unwrap().len() / (4096 + 24);
    // 600 commits of a page or more each; SQLite's default would let 1,000 pages pile up.
    assert!(frames <= u64::from(super::sqlite::WAL_CHECKPOINT_PAGES) + 8, "{frames} frames in the WAL");
    let reopened = SessionIndex::open(layout.db_path()).await.unwrap();
    assert_eq!(reopened.list(&ListFilter::default()).await.unwrap().len(), 600);
    reopened.close().await;
}

#[tokio::test]
async fn a_write_behind_index_keeps_its_writes_in_order_for_readers_and_flushes_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let index = SessionIndex::open_write_behind(layout.db_path()).unwrap();
    index.upsert(&row("s", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
    assert!(index.mark_user_message("s", "fix the build").await.unwrap());
    index.touch_later("s", "2026-01-01T00:00:05.000Z");
    // A reader of this index waits for what was queued before it, in order.
    let got = index.get("s").await.unwrap().expect("the queued row is there");
    assert!(got.has_user_message);
    assert_eq!((got.title.as_deref(), got.updated_at.as_str()), (Some("fix the build"), "2026-01-01T00:00:05.000Z"));
    // Queued after that read, written by the flush: another process sees them.
    index.upsert(&row("t", "2026-01-01T00:00:06.000Z", false)).await.unwrap();
    index.mark_user_message("t", "second").await.unwrap();
    index.flush().await.unwrap();
    index.leave_open_at_exit();
    let other = SessionIndex::open(layout.db_path()).await.unwrap();
    assert_eq!(ids(&other.list(&ListFilter::default()).await.unwrap()), ["t", "s"]);
    other.close().await;
}

#[test]
fn a_write_behind_index_flushed_by_a_runtime_that_then_ends_keeps_its_wal() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let wal = layout.db_path().with_file_name("skipper-index.db-wal");
    // As in a `-p` run: a single-threaded runtime flushes, then shuts down.
    let run = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    run.block_on(async {
        let index = SessionIndex::open_write_behind(layout.db_path()).unwrap();
        index.upsert(&row("s", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
        index.mark_user_message("s", "task").await.unwrap();
        index.touch_later("s", "2026-01-01T00:00:03.000Z");
        index.flush().await.unwrap();
        index.leave_open_at_exit();
    });
    run.shutdown_background();
    // A connection dropped with the ended runtime's tasks would be closed: the WAL checkpointed
    // and deleted.
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(wal.is_file(), "the WAL was deleted");
    let check = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    check.block_on(async {
        let other = SessionIndex::open(layout.db_path()).await.unwrap();
        let got = other.get("s").await.unwrap().expect("the row is there");
        assert_eq!((got.title.as_deref(), got.updated_at.as_str()), (Some("task"), "2026-01-01T00:00:03.000Z"));
        other.close().await;
    });
}

#[tokio::test]
async fn a_write_behind_index_keeps_what_it_could_not_write_until_it_can() {
    let dir = tempfile::tempdir().unwrap();
    // The home's parent is a file for a while: the database cannot be created.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let layout = Layout::new(blocker.join("home"));
    let index = SessionIndex::open_write_behind(layout.db_path()).unwrap();
    index.upsert(&row("s", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
    index.mark_user_message("s", "kept").await.unwrap();
    assert!(index.flush().await.is_err());
    assert!(index.flush().await.is_err(), "the failed writes are still queued");
    std::fs::remove_file(&blocker).unwrap();
    index.flush().await.unwrap();
    let got = index.get("s").await.unwrap().expect("the queued row was written");
    assert!(got.has_user_message);
    assert_eq!(got.title.as_deref(), Some("kept"));
}

#[tokio::test]
async fn a_write_behind_index_that_cannot_open_fails_its_flush_not_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    // The home's parent is a file: the database cannot be created.
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let layout = Layout::new(dir.path().join("file").join("home"));
    let index = SessionIndex::open_write_behind(layout.db_path()).unwrap();
    index.upsert(&row("s", "2026-01-01T00:00:01.000Z", false)).await.unwrap();
    assert!(index.flush().await.is_err());
    assert!(index.get("s").await.is_err());
}

#[tokio::test]
async fn a_deleted_home_is_recreated_and_the_index_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path().join("home"));
    let index = SessionIndex::open(layout.db_path()).await.unwrap();
    index.upsert(&row("before", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    std::fs::remove_dir_all(dir.path().join("home")).unwrap();
    // Every kind of call works on the recreated (empty) index, the clones too.
    let clone = index.clone();
    assert_eq!(clone.last_id().await.unwrap(), None);
    index.upsert(&row("after", "2026-01-01T00:00:02.000Z", true)).await.unwrap();
    assert_eq!(ids(&index.list(&ListFilter::default()).await.unwrap()), ["after"]);
    assert_eq!(clone.last_id().await.unwrap().as_deref(), Some("after"));
    assert!(layout.db_path().is_file());
}

fn ev(kind: &str, data: serde_json::Value, ts: &str) -> Event {
    let mut e = Event::from_parts(kind, data, false);
    e.timestamp = ts.into();
    e
}

fn write_log(layout: &Layout, id: &str, events: &[Event]) {
    layout.ensure_session_dir(id).unwrap();
    let mut log = EventLog::open(layout.events_path(id)).unwrap();
    for e in events {
        log.append(e).unwrap();
    }
}

#[tokio::test]
async fn rebuild_from_logs_rederives_rows() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    let start = |id: &str| {
        ev(
            "session.start",
            json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
                   "startTime": "2026-02-01T10:00:00.000Z",
                   "selectedModel": "m1", "context": {"cwd": "/p", "branch": "main"}}),
            "2026-02-01T10:00:00.010Z",
        )
    };
    write_log(
        &layout,
        "s1",
        &[
            start("s1"),
            ev("user.message", json!({"content": "Please do the things"}), "2026-02-01T10:00:01.000Z"),
            ev("session.model_change", json!({"newModel": "m2"}), "2026-02-01T10:00:02.000Z"),
            ev("user.message", json!({"content": "and more"}), "2026-02-01T10:00:03.000Z"),
        ],
    );
    layout
        .write_workspace_yaml_blocking(
            "s1",
            &WorkspaceMeta {
                id: "s1".into(),
                cwd: "/p".into(),
                client_name: Some("my-app".into()),
                name: Some("Renamed".into()),
                user_named: true,
                ..Default::default()
            },
        )
        .unwrap();
    write_log(&layout, "s2", &[start("s2")]);
    // A torn tail must not stop the rebuild.
    layout.ensure_session_dir("s3").unwrap();
    std::fs::write(layout.events_path("s3"), b"{\"type\":\"sess").unwrap();
    std::fs::create_dir_all(layout.temp_dir()).unwrap();

    let index = SessionIndex::open_in_memory().await.unwrap();
    index.upsert(&row("gone", "2026-03-01T00:00:00.000Z", true)).await.unwrap();
    assert_eq!(index.rebuild_from_logs(&layout).await.unwrap(), 2);

    assert_eq!(index.get("gone").await.unwrap(), None);
    let s1 = index.get("s1").await.unwrap().unwrap();
    assert_eq!(
        s1,
        SessionRow {
            id: "s1".into(),
            cwd: "/p".into(),
            branch: Some("main".into()),
            model: Some("m2".into()),
            title: Some("Renamed".into()),
            summary: Some("Please do the things".into()),
            client_name: Some("my-app".into()),
            created_at: "2026-02-01T10:00:00.000Z".into(),
            updated_at: "2026-02-01T10:00:03.000Z".into(),
            has_user_message: true,
            ..Default::default()
        }
    );
    let s2 = index.get("s2").await.unwrap().unwrap();
    assert!(!s2.has_user_message);
    assert_eq!(s2.model.as_deref(), Some("m1"));
    assert_eq!(ids(&index.list(&ListFilter::default()).await.unwrap()), ["s1"]);
}

#[tokio::test]
async fn a_touch_written_behind_is_seen_by_the_next_query_and_reaches_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.db");
    let index = SessionIndex::open(&path).await.unwrap();
    index.upsert(&row("a", "2026-01-01T00:00:01.000Z", true)).await.unwrap();
    index.upsert(&row("b", "2026-01-01T00:00:02.000Z", true)).await.unwrap();

    index.touch_later("a", "2026-01-01T00:00:07.000Z");
    index.touch_later("a", "2026-01-01T00:00:08.000Z");
    index.touch_later("missing", "2026-01-01T00:00:08.000Z");
    // The next query of this index writes it first, whatever the writer task did meanwhile.
    assert_eq!(index.last_id().await.unwrap().as_deref(), Some("a"));
    assert_eq!(index.get("a").await.unwrap().unwrap().updated_at, "2026-01-01T00:00:08.000Z");

    // Without any query here, the writer task puts it in the file: a second connection sees it.
    index.touch_later("b", "2026-01-01T00:00:09.000Z");
    let other = SessionIndex::open(&path).await.unwrap();
    let mut seen = String::new();
    for _ in 0..200 {
        seen = other.get("b").await.unwrap().unwrap().updated_at;
        if seen == "2026-01-01T00:00:09.000Z" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(seen, "2026-01-01T00:00:09.000Z");
}
