//! Clients that do not read. One that lets its session's events pile up past
//! `max_queued_event_bytes` is disconnected (its session goes on); one that sends requests
//! without reading the answers stops being read from until it catches up, and then gets every
//! answer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpc_server::Limits;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{request, Client, Env, T};

/// Two clients follow one session; one of them never reads. While the other keeps logging to
/// the session (each `session.log` is an event for both), `serve` ends the non-reading
/// client's connection on its own once its unread events pass `max_queued_event_bytes`; the
/// reading client and the session are unaffected.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_does_not_read_its_events_is_disconnected() {
    let env = Env::start(None, Limits { max_queued_event_bytes: 16 * 1024, ..Limits::default() }).await;
    let (good, _good_task) = env.connect();
    let sid = good.ok("session.create", json!({})).await["sessionId"].as_str().unwrap().to_string();

    // A pipe that holds 1 KiB and is never read: the server's writer blocks at once.
    let (mut slow, slow_task) = env.pipe(1024);
    slow.write_all(&request(1, "session.resume", json!({"sessionId": sid}))).await.unwrap();
    good.wait_for("the slow client's session.resume event", |m| {
        m.iter().find(|v| v["params"]["event"]["type"] == json!("session.resume")).cloned()
    })
    .await;

    let mut logs = 0;
    while !slow_task.is_finished() {
        good.ok("session.log", json!({"sessionId": sid, "message": format!("event {logs:0>200}")})).await;
        logs += 1;
        assert!(logs < 1_000, "the server kept queueing events for a client that reads nothing");
    }
    tokio::time::timeout(T, slow_task).await.unwrap().unwrap();
    // What reached the pipe before the close is still readable, then EOF.
    let mut rest = Vec::new();
    tokio::time::timeout(T, slow.read_to_end(&mut rest)).await.expect("EOF after the close").unwrap();
    assert!(rest.len() <= 1024, "{} bytes reached a client that reads nothing", rest.len());
    eprintln!("slow client disconnected after {logs} events");

    // The reading client still gets the session's events.
    good.ok("session.log", json!({"sessionId": sid, "message": "after"})).await;
    good.wait_for("the last event", |m| {
        m.iter().find(|v| v["params"]["event"]["data"]["message"] == json!("after")).cloned()
    })
    .await;
}

/// A client that writes requests without reading the answers: once more than the limit of
/// answers waits, the server stops reading (the client's writes stall) instead of queueing
/// answers without bound. When the client reads again, every request is answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_does_not_read_its_answers_is_throttled_then_served() {
    let limit = 64 * 1024;
    let env = Env::start(None, Limits { max_queued_event_bytes: limit, ..Limits::default() }).await;
    let (pipe, task) = env.pipe(4096);
    let (reader, mut writer) = tokio::io::split(pipe);
    let total = 200_000;
    // The writer runs in its own task so that a write the server stops taking is never cut off
    // halfway (that would desynchronise the stream); it stops after its current write once
    // told to.
    let progress = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writing = {
        let (progress, stop) = (progress.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while n < total && !stop.load(Ordering::Acquire) {
                writer.write_all(&request(n as i64, "ping", json!({}))).await.unwrap();
                n += 1;
                progress.store(n, Ordering::Release);
            }
            (writer, n)
        })
    };
    // No progress for a second: the server has stopped reading from us.
    loop {
        let before = progress.load(Ordering::Acquire);
        tokio::time::sleep(Duration::from_secs(1)).await;
        if progress.load(Ordering::Acquire) == before || writing.is_finished() {
            break;
        }
    }
    stop.store(true, Ordering::Release);
    let stalled_at = progress.load(Ordering::Acquire);
    // A pong is ~110 bytes: the backlog is the limit plus what the pipe and the requests in
    // flight hold, nowhere near 200,000 answers.
    assert!(stalled_at < total / 10, "the server read {stalled_at} requests while no answer was read");
    assert!(!task.is_finished(), "a client that does not read its answers is throttled, not disconnected");

    // Reading again: every request sent so far is answered, and the connection goes on.
    let c = Client::reading(reader);
    let (writer, sent) = tokio::time::timeout(T, writing).await.expect("the stalled write completes").unwrap();
    c.set_writer(writer).await;
    let want = sent;
    let answers = c.wait_for(&format!("{want} answers"), |m| (m.len() >= want).then(|| m.to_vec())).await;
    let ids: std::collections::BTreeSet<i64> = answers.iter().filter_map(|v| v["id"].as_i64()).collect();
    assert_eq!((answers.len(), ids.len()), (want, want), "every request answered exactly once");
    // Each is a pong, or `-32005` when more than `max_parallel_requests` were running at once.
    let pongs = answers.iter().filter(|v| v["result"]["message"] == json!("pong")).count();
    let overloaded = answers.iter().filter(|v| v["error"]["code"] == json!(-32005)).count();
    assert_eq!(pongs + overloaded, want);
    eprintln!("throttled after {stalled_at} requests ({sent} written in all); {pongs} pongs, {overloaded} overloaded");
    assert_eq!(c.ok("ping", json!({"message": "caught up"})).await["message"], json!("pong: caught up"));
}
