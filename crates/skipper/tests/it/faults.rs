//! Faults under a running server: the disk its sessions are written to fills up mid-turn, then
//! frees. What clients saw must be stored, the logs whole, no turn left without an end, and the
//! server back to work without a restart.

use std::io::Write;
use std::path::{Path, PathBuf};

use fake_model::Reply;
use serde_json::{json, Value};

use crate::conversation::T;
use crate::harness::{with_timeout, Dirs, Options, RpcClient, Skipper};

/// A small tmpfs mounted over a directory, unmounted on drop. `None` where this process may not
/// mount (not root, or a container without the capability).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Self> {
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(Self(at.to_path_buf())),
            _ => None,
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros into `path` until the file system refuses more.
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    // The last partial chunk may have left a few blocks: take them with small writes.
    while f.write_all(&[0u8; 512]).is_ok() {}
}

/// Every line of a session's log parses; returns the events' ids in order.
fn log_ids(dirs: &Dirs, sid: &str) -> Vec<String> {
    let path = dirs.session_dir(sid).join("events.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "{sid}: the log ends with a whole line");
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{sid} line {} does not parse ({e}): {line}", n + 1));
            v["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The persisted events a client was shown for a session, by id.
fn seen_persisted(c: &RpcClient, sid: &str) -> Vec<String> {
    c.events(sid)
        .into_iter()
        .filter(|e| e.get("ephemeral") != Some(&json!(true)))
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disk_that_fills_mid_turn_loses_no_event_a_client_saw() {
    let fake = fake_model::FakeModel::start().await.unwrap();
    let dirs = Dirs::new();
    let Some(_tmpfs) = Tmpfs::mount(&dirs.copilot_home, "6m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root); the full-disk test did not run");
        return;
    };
    fake.set_workdir(&dirs.workdir);
    with_timeout(180, async {
        let skipper = Skipper::spawn(&fake.url(), dirs.clone(), Options::default()).await;
        let c = skipper.client();
        c.connect().await;
        let mut sids = Vec::new();
        for n in 0..4 {
            let sid = c.create_session(json!({})).await;
            fake.push_reply(Reply::text(format!("warm {n}")));
            c.send(&sid, "warm up").await;
            c.wait_for_event(&sid, "session.idle", T).await;
            sids.push(sid);
        }
        let approvers: Vec<_> =
            sids.iter().map(|sid| c.auto_answer_permissions(sid, json!({"kind": "approve-once"}))).collect();

        // Each turn's model answer comes after the disk is full: a tool call that must not run,
        // since the log could not hold the reply that asked for it.
        let marker = dirs.workdir.join("ran-after-the-disk-filled");
        let touch = json!({"command": format!("touch {}", marker.display()), "description": "touch"});
        fake.clear_requests();
        for _ in &sids {
            let answer =
                Reply::Message { content: "x".repeat(20_000), tool_calls: vec![("bash".into(), touch.to_string())] };
            fake.push_reply(Reply::Delay { ms: 2500, then: Box::new(answer) });
        }
        for sid in &sids {
            c.send(sid, "go on").await;
        }
        fake.wait_for_requests(sids.len(), T).await.unwrap();
        let filler = dirs.copilot_home.join("filler");
        fill(&filler);

        // Every turn ends, told why, within the bound; nothing it asked for ran.
        for sid in &sids {
            let err = c.wait_for_event(sid, "session.error", T).await;
            assert_eq!(err["data"]["errorType"], json!("persistence"), "{err}");
            let message = err["data"]["message"].as_str().unwrap();
            assert!(message.contains("No space left on device"), "{message}");
            assert!(!message.contains(&dirs.copilot_home.display().to_string()), "no server path: {message}");
            c.wait_for_nth_event(sid, "session.idle", 2, T).await;
        }
        assert!(!marker.exists(), "a tool ran for a reply the log does not hold");

        // A full disk refuses new turns and sessions cleanly: nothing is queued or made.
        let refused = c.call("session.send", json!({"sessionId": sids[0], "prompt": "while full"})).await.unwrap_err();
        assert_eq!(refused.code, -32010, "{refused}");
        assert!(refused.message.contains("disk full: Not enough free disk space"), "{}", refused.message);
        let refused = c.call("session.create", json!({"sessionId": "made-while-full"})).await.unwrap_err();
        assert_eq!(refused.code, -32010, "{refused}");
        assert!(!dirs.session_dir("made-while-full").exists());

        // Whole lines only, and every persisted event a client saw is among them.
        for sid in &sids {
            let stored = log_ids(&dirs, sid);
            for id in seen_persisted(&c, sid) {
                assert!(stored.contains(&id), "{sid}: event {id} was shown but is not stored");
            }
        }

        // Space freed: the same server goes on, with the conversation its log holds (the lost
        // reply is not sent to the model as if it had happened).
        std::fs::remove_file(&filler).unwrap();
        fake.clear_requests();
        fake.push_reply(Reply::text("back again"));
        c.send(&sids[0], "after").await;
        c.wait_for_nth_event(&sids[0], "session.idle", 3, T).await;
        let request = fake.requests().last().cloned().unwrap();
        let messages = request["body"]["messages"].as_array().unwrap().clone();
        assert!(messages.iter().all(|m| m.get("tool_calls").is_none()), "the lost tool call came back: {messages:?}");
        assert!(!request.to_string().contains(&"x".repeat(100)), "the lost reply came back");
        let replies: Vec<_> = c.events_of_type(&sids[0], "assistant.message");
        assert_eq!(replies.last().unwrap()["data"]["content"], json!("back again"));
        for a in approvers {
            a.abort();
        }

        // A new process on the same home: every event any client saw is there, in order.
        let seen: Vec<(String, Vec<String>)> = sids.iter().map(|s| (s.clone(), seen_persisted(&c, s))).collect();
        c.close().await;
        drop(skipper);
        let fresh = Skipper::spawn(&fake.url(), dirs.clone(), Options::default()).await;
        let c2 = fresh.client();
        c2.connect().await;
        for (sid, ids) in &seen {
            c2.ok("session.resume", json!({"sessionId": sid})).await;
            let stored: Vec<String> =
                c2.get_messages(sid).await.unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
            let mut at = 0;
            for id in ids {
                at += stored[at..]
                    .iter()
                    .position(|s| s == id)
                    .unwrap_or_else(|| panic!("{sid}: {id} missing after resume"));
            }
            log_ids(&dirs, sid);
        }
        c2.assert_schema_clean();
    })
    .await;
}
