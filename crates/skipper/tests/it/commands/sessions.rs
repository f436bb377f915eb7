//! `skipper sessions import`: a transcript in the original's session interchange format becomes
//! a session the model continues from; a bad one is refused with every reason, writing nothing.

use fake_model::{FakeModel, Reply};
use serde_json::Value;

use super::Scratch;

fn transcript(cwd: &std::path::Path) -> String {
    let lines = [
        format!(
            r#"{{"type":"session","version":1,"externalId":"ext-1","createdAt":"2026-11-01T10:00:00+02:00","title":"Imported chat","workspace":{{"workingDirectory":"{}","branch":"main","repository":{{"host":"github.com","owner":"octo","name":"hello"}}}}}}"#,
            cwd.display()
        ),
        r#"{"type":"message","id":"m1","timestamp":"2026-11-01T10:00:01Z","role":"user","content":[{"type":"text","text":"list the files"},{"type":"attachment","path":"shots/pic.png","mediaType":"image/png"}]}"#.into(),
        r#"{"type":"message","id":"m2","timestamp":"2026-11-01T10:00:02Z","role":"assistant","turnId":"t1","content":[{"type":"text","text":"Let me look."}]}"#.into(),
        r#"{"type":"tool-call","id":"c1","timestamp":"2026-11-01T10:00:03Z","turnId":"t1","name":"bash","arguments":{"command":"ls"}}"#.into(),
        r#"{"type":"tool-result","id":"r1","timestamp":"2026-11-01T10:00:04Z","turnId":"t1","toolCallId":"c1","success":true,"content":"imported-a.txt"}"#.into(),
        r#"{"type":"message","id":"m3","timestamp":"2026-11-01T10:00:05Z","role":"assistant","turnId":"t2","content":[{"type":"text","text":"There is imported-a.txt."}]}"#.into(),
    ];
    lines.join("\n") + "\n"
}

fn sessions(s: &Scratch) -> Vec<String> {
    let dir = s.copilot_home().join("session-state");
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transcript_from_another_tool_becomes_a_session_the_model_continues() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.work.join("shots")).unwrap();
    std::fs::write(s.work.join("shots/pic.png"), b"PNGDATA").unwrap();
    std::fs::write(s.work.join("t.jsonl"), transcript(&s.work)).unwrap();

    let dry = s.run(&["sessions", "import", "t.jsonl", "--dry-run"]).status(0);
    assert_eq!(dry.stdout.trim(), "Session JSONL is valid; no session was created.");
    assert!(sessions(&s).is_empty(), "a dry run writes nothing");

    let ran = s.run(&["sessions", "import", "t.jsonl", "--output", "json"]).status(0);
    let out: Value = serde_json::from_str(ran.stdout.trim()).unwrap();
    assert_eq!(out["code"], "session_imported");
    assert_eq!(out["externalId"], "ext-1");
    let counts = &out["imported"];
    assert_eq!(
        (
            &counts["sessions"],
            &counts["messages"],
            &counts["toolCalls"],
            &counts["toolResults"],
            &counts["attachments"]
        ),
        (&Value::from(1), &Value::from(3), &Value::from(1), &Value::from(1), &Value::from(1))
    );
    let id = out["sessionId"].as_str().unwrap().to_string();
    assert_eq!(sessions(&s), std::slice::from_ref(&id));
    let meta = s.read(&s.copilot_home().join(format!("session-state/{id}/workspace.yaml")));
    assert!(meta.contains("name: Imported chat") && meta.contains("user_named: true"), "{meta}");
    assert!(meta.contains("repository: octo/hello") && meta.contains("created_at: 2026-11-01T08:00:00.000Z"), "{meta}");

    // The model continues the imported conversation.
    let fake = FakeModel::start().await.unwrap();
    fake.push_reply(Reply::text("continued"));
    let mut cmd = crate::runner::skipper_command(&fake.url(), &s.home, &s.work);
    cmd.args(["-p", "and now?", "-s", "--resume", &id]);
    let resumed = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(String::from_utf8_lossy(&resumed.stdout).trim(), "continued");
    let sent = fake.requests()[0]["body"]["messages"].to_string();
    for seen in ["list the files", "Let me look.", "imported-a.txt", "There is imported-a.txt.", "and now?"] {
        assert!(sent.contains(seen), "{seen} is in the model's conversation: {sent}");
    }
}

#[test]
fn a_bad_transcript_is_refused_with_every_reason_and_nothing_is_written() {
    let s = Scratch::new();
    let bad = "{\"type\":\"session\",\"version\":2,\"externalId\":\"\",\"createdAt\":\"2026-11-01T10:00:00Z\"}\n\
               {\"type\":\"message\",\"id\":\"m1\",\"timestamp\":\"2026-11-01T10:00:01Z\",\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}\n";
    std::fs::write(s.work.join("bad.jsonl"), bad).unwrap();
    let ran = s.run(&["sessions", "import", "bad.jsonl"]).status(1);
    assert_eq!(
        ran.stderr.lines().collect::<Vec<_>>(),
        [
            "Session JSONL validation failed.",
            "Line 1: Session interchange version must be 1. [unsupported_version]",
            "Line 1: Session externalId must be a non-empty string. [invalid_external_id]",
            "Line 2 (m1): Message role must be user or assistant. [invalid_role]",
        ]
    );
    assert!(ran.stdout.is_empty());

    // Attachments come from beside the transcript only: not through `..` nor a link.
    std::fs::write(s.home.join("secret.txt"), "do not read").unwrap();
    std::os::unix::fs::symlink(s.home.join("secret.txt"), s.work.join("link.txt")).unwrap();
    let good = transcript(&s.work);
    for path in ["../home/secret.txt", "link.txt"] {
        let t = good.replace("shots/pic.png", path);
        std::fs::write(s.work.join("t.jsonl"), t).unwrap();
        let ran = s.run(&["sessions", "import", "t.jsonl", "--output", "json"]).status(1);
        let out: Value = serde_json::from_str(ran.stdout.trim()).unwrap();
        assert_eq!(out["message"], "Session attachment validation failed.");
        assert_eq!(out["diagnostics"][0]["code"], "attachment_path_traversal", "{path}");
        assert!(!ran.stdout.contains("do not read"));
    }
    std::fs::write(s.work.join("t.jsonl"), good.replace("shots/pic.png", "missing.png")).unwrap();
    let ran = s.run(&["sessions", "import", "t.jsonl"]).status(1);
    assert!(
        ran.stderr.contains("Line 2 (m1): Attachment path does not exist. [attachment_unreadable]"),
        "{}",
        ran.stderr
    );
    std::fs::create_dir_all(s.work.join("shots")).unwrap();
    std::fs::write(s.work.join("shots/pic.png"), b"x").unwrap();
    std::fs::write(s.work.join("t.jsonl"), &good).unwrap();
    let ran = s.run(&["sessions", "import", "t.jsonl", "--name", " padded"]).status(1);
    assert!(ran.stderr.contains("Session name must not have leading or trailing whitespace."), "{}", ran.stderr);
    let ran = s.run(&["sessions", "import", "t.jsonl", "--working-directory", "nowhere"]).status(1);
    assert!(ran.stderr.starts_with("The effective working directory does not exist."), "{}", ran.stderr);
    s.run(&["sessions", "import", "absent.jsonl"]).status(1);
    assert!(sessions(&s).is_empty(), "nothing was written: {:?}", sessions(&s));
}
