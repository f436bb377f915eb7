//! Persistence: events.jsonl, torn-line-tolerant resume in a new process, list/metadata/delete,
//! detach.

use std::io::Write;

use fake_model::Reply;
use serde_json::{json, Value};

use crate::conversation::{check_invariants, content_text, T};
use crate::harness::{assert_all_clean, with_timeout, TestEnv};
use crate::schema::validate_event;

fn read_log(env: &TestEnv, sid: &str) -> (String, Vec<Value>) {
    let path = env.dirs.session_dir(sid).join("events.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line}", i + 1));
        assert!(v.is_object(), "line {} is not an object", i + 1);
        events.push(v);
    }
    (text, events)
}

async fn one_exchange(env: &TestEnv, sid: &str, prompt: &str, reply: &str, nth: usize) {
    env.fake.push_reply(Reply::text(reply));
    env.client.send(sid, prompt).await;
    env.client.wait_for_nth_event(sid, "session.idle", nth, T).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn events_jsonl_has_one_persisted_event_per_line() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let sid = c.create_session(json!({"streaming": true})).await;
        one_exchange(&env, &sid, "What is 1+1?", "2", 1).await;
        let (text, events) = read_log(&env, &sid);
        assert!(text.ends_with('\n'), "every line is newline-terminated");
        assert!(!text.contains("\n\n"), "no blank lines");
        let mut violations = Vec::new();
        for ev in &events {
            assert!(ev.get("ephemeral").is_none(), "events.jsonl must not contain `ephemeral`: {ev}");
            violations.extend(validate_event(ev, "events.jsonl"));
        }
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"session.start"));
        for t in ["session.idle", "assistant.message_delta", "assistant.usage", "session.usage_info"] {
            assert!(!types.contains(&t), "ephemeral `{t}` written to events.jsonl: {types:?}");
        }
        // One usage record per model call, as the original writes them, between the turn's
        // start and its message.
        let at = |t: &str| types.iter().position(|x| *x == t).unwrap_or(usize::MAX);
        assert_eq!(types.iter().filter(|t| **t == "session.usage_record").count(), 1, "{types:?}");
        assert!(at("assistant.turn_start") < at("session.usage_record"), "{types:?}");
        assert!(at("session.usage_record") < at("assistant.message"), "{types:?}");
        // Each line's parent is the line before it.
        for w in events.windows(2) {
            assert_eq!(w[1]["parentId"], w[0]["id"], "parent chain broken at {}", w[1]["type"]);
        }
        // The log is what getMessages returns, less the usage records (the log's own bookkeeping).
        let msgs = c.get_messages(&sid).await.unwrap();
        let shown: Vec<_> = events.iter().filter(|e| e["type"] != "session.usage_record").cloned().collect();
        let a: Vec<_> = msgs.iter().map(|e| e["id"].clone()).collect();
        let b: Vec<_> = shown.iter().map(|e| e["id"].clone()).collect();
        assert_eq!(a, b, "getMessages ids == events.jsonl ids without usage records");
        assert_eq!(msgs, shown, "getMessages events == events.jsonl lines");
        let bad: Vec<String> = violations.iter().filter(|v| !v.unknown_type).map(|v| v.to_string()).collect();
        assert!(bad.is_empty(), "events.jsonl schema violations:\n{}", bad.join("\n"));
        c.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_in_a_new_process_after_a_torn_last_line() {
    with_timeout(90, async {
        let mut env = TestEnv::start().await;
        let sid = env.client.create_session(json!({})).await;
        one_exchange(&env, &sid, "What is 1+1?", "1+1 is 2", 1).await;
        check_invariants(&env.client, &sid, 1, true);
        let first_client = env.client.clone();
        let (_, before) = read_log(&env, &sid);

        // Stop the first process, then tear the log's last line like a crash mid-write would.
        env.client.close().await;
        assert!(env.skipper.wait_exit(std::time::Duration::from_secs(10)).await.is_some(), "skipper did not exit");
        let path = env.dirs.session_dir(&sid).join("events.jsonl");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"assistant.message","data":{"messageId":"abc","con"#).unwrap();
        drop(f);

        env.restart().await;
        let c = env.client.clone();
        let r = c.ok("session.resume", json!({"sessionId": sid})).await;
        assert_eq!(r["sessionId"], json!(sid));
        let resume = c.wait_for_event(&sid, "session.resume", T).await;
        assert!(resume["data"]["eventCount"].as_u64().is_some(), "{resume}");
        // The parent chain continues from the last whole event on disk.
        assert_eq!(resume["parentId"], before.last().unwrap()["id"], "session.resume parentId: {resume}");

        env.fake.push_reply(Reply::text("Doubled, that is 4"));
        c.send(&sid, "Now double that").await;
        c.wait_for_event(&sid, "session.idle", T).await;
        let reqs = env.model_requests();
        let last = reqs.last().unwrap();
        let msgs = last["messages"].as_array().unwrap();
        let texts: Vec<(String, String)> =
            msgs.iter().map(|m| (m["role"].as_str().unwrap_or("").to_string(), content_text(m))).collect();
        let pos_q = texts.iter().position(|(r, t)| r == "user" && t.contains("What is 1+1?"));
        let pos_a = texts.iter().position(|(r, t)| r == "assistant" && t == "1+1 is 2");
        let pos_q2 = texts.iter().position(|(r, t)| r == "user" && t.contains("Now double that"));
        assert!(
            pos_q.is_some() && pos_a.is_some() && pos_q2.is_some() && pos_q < pos_a && pos_a < pos_q2,
            "resumed request must carry the earlier turns in order: {texts:?}"
        );
        assert_eq!(c.count(&sid, "assistant.turn_start"), 1);
        check_invariants(&c, &sid, 1, false);
        // getMessages after resume: the old events, then session.resume and the new turn.
        let all = c.get_messages(&sid).await.unwrap();
        let ids: Vec<_> = all.iter().map(|e| e["id"].clone()).collect();
        // `before` is the log as read from disk; getMessages leaves the usage records out.
        let shown = before.iter().filter(|e| e["type"] != "session.usage_record");
        for (i, ev) in shown.enumerate() {
            assert_eq!(ids.get(i), Some(&ev["id"]), "earlier events kept in order");
        }
        assert!(all.iter().any(|e| e["type"] == json!("session.resume")));
        assert!(!all.iter().any(|e| e["data"]["messageId"] == json!("abc")), "the torn line must be skipped");
        // The log is whole lines again after new appends.
        let (bad, after) = read_log_tolerant(&env, &sid);
        assert!(bad <= 1, "{bad} unparsable lines in events.jsonl");
        let file_ids: Vec<_> =
            after.iter().filter(|e| e["type"] != "session.usage_record").map(|e| e["id"].clone()).collect();
        assert_eq!(file_ids, ids, "every event after resume must be a whole line on disk (not glued to the torn line)");
        assert_all_clean(&[&first_client, &c]);
    })
    .await;
}

/// Like `read_log` but skips unparsable lines (the torn one), reporting how many.
fn read_log_tolerant(env: &TestEnv, sid: &str) -> (usize, Vec<Value>) {
    let text = std::fs::read_to_string(env.dirs.session_dir(sid).join("events.jsonl")).unwrap();
    let mut bad = 0;
    let mut events = Vec::new();
    for line in text.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => events.push(v),
            Err(_) => bad += 1,
        }
    }
    (bad, events)
}

#[tokio::test(flavor = "multi_thread")]
async fn list_last_id_metadata_delete() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let empty = c.create_session(json!({})).await;
        let a = c.create_session(json!({})).await;
        one_exchange(&env, &a, "first session prompt", "ok a", 1).await;
        let b = c.create_session(json!({})).await;
        one_exchange(&env, &b, "second session prompt", "ok b", 1).await;

        let list = c.ok("session.list", json!({})).await;
        let sessions = list["sessions"].as_array().unwrap_or_else(|| panic!("{list}"));
        let ids: Vec<&str> = sessions.iter().filter_map(|s| s["sessionId"].as_str()).collect();
        assert!(ids.contains(&a.as_str()) && ids.contains(&b.as_str()), "{list}");
        assert!(!ids.contains(&empty.as_str()), "a session without messages is not listed: {list}");
        for s in sessions {
            assert!(s["startTime"].is_string(), "{s}");
            assert!(s["modifiedTime"].is_string(), "{s}");
            assert_eq!(s["isRemote"], json!(false), "{s}");
            assert!(s["context"]["cwd"].is_string(), "{s}");
        }
        let entry_b = sessions.iter().find(|s| s["sessionId"] == json!(b)).unwrap();
        assert_eq!(entry_b["summary"], json!("second session prompt"), "{entry_b}");
        assert_eq!(entry_b["context"]["cwd"], json!(env.workdir().to_string_lossy()), "{entry_b}");

        let last = c.ok("session.getLastId", json!({})).await;
        assert_eq!(last["sessionId"], json!(b), "{last}");

        let meta = c.ok("session.getMetadata", json!({"sessionId": a})).await;
        assert_eq!(meta["session"]["sessionId"], json!(a), "{meta}");
        let meta = c.ok("session.getMetadata", json!({"sessionId": "00000000-0000-4000-8000-000000000000"})).await;
        assert_eq!(meta, json!({}), "unknown session → {{}}");

        let del = c.ok("session.delete", json!({"sessionId": a})).await;
        assert_eq!(del["success"], json!(true), "{del}");
        assert!(!env.dirs.session_dir(&a).exists(), "session dir removed");
        let deleted_note = c
            .wait_until(T, "session.lifecycle session.deleted", |c| {
                c.inbound().into_iter().find(|m| {
                    m["method"] == json!("session.lifecycle")
                        && m["params"]["type"] == json!("session.deleted")
                        && m["params"]["sessionId"] == json!(a)
                })
            })
            .await;
        assert!(deleted_note["params"].get("metadata").is_none(), "{deleted_note}");
        let list = c.ok("session.list", json!({})).await;
        let ids: Vec<&str> =
            list["sessions"].as_array().unwrap().iter().filter_map(|s| s["sessionId"].as_str()).collect();
        assert!(!ids.contains(&a.as_str()) && ids.contains(&b.as_str()), "{list}");
        let e = c.call("session.resume", json!({"sessionId": a})).await.unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
        c.assert_schema_clean();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn detach_then_get_messages_is_session_not_found() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let sid = c.create_session(json!({})).await;
        one_exchange(&env, &sid, "hello", "hi", 1).await;
        let r = c.ok("session.detach", json!({"sessionId": sid})).await;
        assert_eq!(r["success"], json!(true), "{r}");
        let e = c.get_messages(&sid).await.unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
        let e = c.call("session.send", json!({"sessionId": sid, "prompt": "x"})).await.unwrap_err();
        assert!(e.message.contains("Session not found"), "{e}");
        // The log stays on disk and the session can be resumed.
        assert!(env.dirs.session_dir(&sid).join("events.jsonl").exists());
        c.ok("session.resume", json!({"sessionId": sid})).await;
        let msgs = c.get_messages(&sid).await.unwrap();
        assert!(msgs.iter().any(|m| m["type"] == json!("user.message")));
        c.assert_schema_clean();
    })
    .await;
}

/// A session with no client is unloaded after `SKIPPER_IDLE_UNLOAD_MS` of quiet, never while a
/// client has it; a later resume loads it from disk and the conversation goes on where it was.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_without_clients_unloads_and_resumes_unchanged() {
    use crate::harness::{Dirs, Options, Skipper, Transport};
    use std::time::Duration;
    with_timeout(90, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let opts = Options {
            transport: Transport::Tcp,
            extra_env: vec![("SKIPPER_IDLE_UNLOAD_MS".into(), "200".into())],
            ..Default::default()
        };
        let sk = Skipper::spawn(&fake.url(), dirs, opts).await;
        let detached = |list: &Value, sid: &str| {
            let sessions = list["sessions"].as_array().unwrap_or_else(|| panic!("{list}"));
            let s = sessions.iter().find(|s| s["sessionId"] == json!(sid)).unwrap_or_else(|| panic!("{sid}: {list}"));
            s["isDetached"].as_bool().unwrap_or_else(|| panic!("{s}"))
        };

        let a = sk.connect_tcp().await;
        a.connect().await;
        let sid = a.create_session(json!({})).await;
        fake.push_reply(Reply::text("The secret word is PELICAN."));
        a.send(&sid, "Remember a secret word.").await;
        a.wait_for_nth_event(&sid, "session.idle", 1, T).await;

        // Ten idle periods with a client attached: still loaded.
        let observer = sk.connect_tcp().await;
        observer.connect().await;
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert!(!detached(&observer.ok("session.list", json!({})).await, &sid), "unloaded under a client");

        a.close().await;
        let mut unloaded = false;
        for _ in 0..200 {
            if detached(&observer.ok("session.list", json!({})).await, &sid) {
                unloaded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(unloaded, "the session was never unloaded after its client left");

        let b = sk.connect_tcp().await;
        b.connect().await;
        b.ok("session.resume", json!({"sessionId": sid})).await;
        assert!(!detached(&b.ok("session.list", json!({})).await, &sid), "resumed: loaded again");
        fake.clear_requests();
        fake.push_reply(Reply::text("PELICAN"));
        b.send(&sid, "What was the word?").await;
        b.wait_for_nth_event(&sid, "session.idle", 1, T).await;
        let requests = fake.requests();
        let last = requests.last().expect("a model request after the reload");
        let text = last.to_string();
        assert!(text.contains("Remember a secret word.") && text.contains("The secret word is PELICAN."), "{text}");
        let messages = b.get_messages(&sid).await.unwrap();
        let ids: Vec<&Value> = messages.iter().map(|e| &e["id"]).collect();
        let mut unique = ids.clone();
        unique.sort_by_key(|v| v.to_string());
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "no duplicate event ids across the unload");
        assert_eq!(
            messages.iter().filter(|e| e["type"] == json!("session.start")).count(),
            1,
            "one session.start: the reload is not a new session"
        );
        b.assert_schema_clean();
    })
    .await;
}

/// An idle session that keeps its client drops its history from memory after
/// `SKIPPER_IDLE_UNLOAD_MS` and reads it back from the log for the next turn: the model gets
/// the same conversation, and the unchanged system prompt is not written to the log again.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_with_a_client_reads_its_history_back_for_the_next_turn() {
    use crate::harness::{Dirs, Options, Skipper, Transport};
    use std::time::Duration;
    with_timeout(90, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let opts = Options {
            transport: Transport::Tcp,
            extra_env: vec![("SKIPPER_IDLE_UNLOAD_MS".into(), "200".into())],
            ..Default::default()
        };
        let sk = Skipper::spawn(&fake.url(), dirs, opts).await;
        let a = sk.connect_tcp().await;
        a.connect().await;
        let sid = a.create_session(json!({})).await;
        fake.push_reply(Reply::text("The secret word is PELICAN."));
        a.send(&sid, "Remember a secret word.").await;
        a.wait_for_nth_event(&sid, "session.idle", 1, T).await;
        let first = fake.requests().last().cloned().expect("the first model request");

        // Several idle periods with the client attached: parked, still loaded.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        fake.clear_requests();
        fake.push_reply(Reply::text("PELICAN"));
        a.send(&sid, "What was the word?").await;
        a.wait_for_nth_event(&sid, "session.idle", 2, T).await;
        let second = fake.requests().last().cloned().expect("a model request after parking");

        let messages = |r: &Value| r["body"]["messages"].as_array().cloned().unwrap_or_else(|| panic!("{r}"));
        let (before, after) = (messages(&first), messages(&second));
        assert_eq!(after.len(), before.len() + 2, "{second}");
        assert_eq!(after[..before.len()], before[..], "the earlier messages come back unchanged");
        assert_eq!(after[before.len()]["role"], json!("assistant"));
        assert_eq!(after[before.len()]["content"], json!("The secret word is PELICAN."));
        assert!(after[before.len() + 1].to_string().contains("What was the word?"), "{second}");

        let log = a.get_messages(&sid).await.unwrap();
        let systems = log.iter().filter(|e| e["type"] == json!("system.message")).count();
        assert_eq!(systems, 1, "the unchanged system prompt is written once");
        a.assert_schema_clean();
    })
    .await;
}
