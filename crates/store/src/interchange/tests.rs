use std::collections::HashMap;

use protocol::event::SessionEvent;

use super::*;

const GOOD: &str = r#"{"type":"session","version":1,"externalId":"ext-1","createdAt":"2026-11-01T10:00:00+02:00","title":"Imported chat","source":{"application":"othertool","version":"2.0"},"workspace":{"workingDirectory":"/w","branch":"main","repository":{"host":"https://GitHub.com/","owner":"octo","name":"hello"}}}
{"type":"message","id":"m1","timestamp":"2026-11-01T10:00:01Z","role":"user","content":[{"type":"text","text":"list files"},{"type":"attachment","path":"pic.png","mediaType":"image/png"}]}

{"type":"message","id":"m2","timestamp":"2026-11-01T10:00:02Z","role":"assistant","turnId":"t1","model":"gpt-5","content":[{"type":"text","text":"Let me look."}]}
{"type":"tool-call","id":"c1","timestamp":"2026-11-01T10:00:03Z","turnId":"t1","name":"bash","arguments":{"command":"ls"}}
{"type":"tool-result","id":"r1","timestamp":"2026-11-01T10:00:04Z","turnId":"t1","toolCallId":"c1","success":true,"content":"a.txt"}
{"type":"tool-call","id":"c2","timestamp":"2026-11-01T10:00:03Z","turnId":"t1","name":"view"}
{"type":"tool-result","id":"r2","timestamp":"2026-11-01T10:00:04Z","turnId":"t1","toolCallId":"c2","success":false,"content":"out","error":{"message":"no such file","code":"ENOENT"}}
{"type":"message","id":"m3","timestamp":"2026-11-01T10:00:05Z","role":"assistant","turnId":"t2","content":[{"type":"text","text":"There"},{"type":"text","text":"is a.txt."}]}
"#;

fn codes(text: &str) -> Vec<(usize, &'static str, Option<String>)> {
    parse(text).unwrap_err().into_iter().map(|d| (d.line, d.code, d.external_id)).collect()
}

#[test]
fn a_transcript_is_read_as_written() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.header.external_id, "ext-1");
    assert_eq!(p.header.created_at, "2026-11-01T08:00:00.000Z");
    assert_eq!(p.header.title.as_deref(), Some("Imported chat"));
    let repo = p.header.workspace.repository.as_ref().unwrap();
    assert_eq!((repo.host.as_str(), repo.host_type, repo.owner.as_str()), ("github.com", "github", "octo"));
    assert_eq!(p.records.len(), 7);
    assert!(matches!(&p.records[0], Record::Message { line: 2, content, .. } if content.len() == 2));
}

#[test]
fn every_problem_is_reported_with_the_originals_codes() {
    let bad = r#"{"type":"session","version":2,"externalId":"","createdAt":"2026-13-01T10:00:00Z"}
{"type":"message","id":"m1","timestamp":"2026-11-01T10:00:01Z","role":"system","content":[{"type":"text","text":"x"}]}
{"type":"tool-result","id":"r1","timestamp":"2026-11-01T10:00:04Z","toolCallId":"zz","success":false}"#;
    assert_eq!(
        codes(bad),
        [
            (1, "unsupported_version", None),
            (1, "invalid_external_id", None),
            (1, "invalid_timestamp", None),
            (2, "invalid_role", Some("m1".into())),
            (3, "invalid_tool_result", Some("r1".into())),
        ]
    );
    let bad = r#"{"type":"session","version":1,"externalId":"e","createdAt":"2026-11-01T10:00:00Z","title":"  "}
{"type":"tool-call","id":"c0","timestamp":"2026-11-01T10:00:03Z","name":"bash"}
{"type":"message","id":"m1","timestamp":"2026-11-01T10:00:01Z","role":"user","content":[{"type":"attachment","path":"../x.png","mediaType":"image/png"}]}
{"type":"message","id":"m1","timestamp":"2026-11-01T10:00:01Z","role":"user","content":[]}
{"type":"other","id":"o","timestamp":"2026-11-01T10:00:01Z"}"#;
    assert_eq!(
        codes(bad),
        [
            (1, "invalid_title", None),
            (2, "orphan_tool_call", Some("c0".into())),
            (4, "invalid_content", None),
            (5, "unsupported_record_type", Some("o".into())),
        ]
    );
    let turns = r#"{"type":"session","version":1,"externalId":"e","createdAt":"2026-11-01T10:00:00Z"}
{"type":"message","id":"a","timestamp":"2026-11-01T10:00:01Z","role":"assistant","turnId":"t","content":[{"type":"text","text":"x"}]}
{"type":"tool-call","id":"c","timestamp":"2026-11-01T10:00:01Z","turnId":"t","name":"n"}
{"type":"tool-result","id":"r","timestamp":"2026-11-01T10:00:01Z","toolCallId":"c","success":true}
{"type":"tool-result","id":"r2","timestamp":"2026-11-01T10:00:01Z","turnId":"t","toolCallId":"c","success":true}
{"type":"message","id":"u","timestamp":"2026-11-01T10:00:01Z","role":"user","content":[{"type":"text","text":"y"}]}
{"type":"tool-result","id":"a","timestamp":"2026-11-01T10:00:01Z","toolCallId":"c","success":true}
{"type":"tool-call","id":"c3","timestamp":"2026-11-01T10:00:01Z","name":"n"}
not json"#;
    assert_eq!(codes(turns), [(9, "malformed_json", None)], "unreadable lines are reported first, alone");
    let turns = turns.rsplit_once('\n').unwrap().0;
    assert_eq!(
        codes(turns),
        [
            (4, "tool_turn_mismatch", Some("r".into())),
            (5, "duplicate_tool_result", Some("r2".into())),
            (7, "duplicate_id", Some("a".into())),
            (8, "orphan_tool_call", Some("c3".into())),
        ]
    );
    assert_eq!(codes(" \n\n"), [(1, "empty_input", None)]);
    assert_eq!(codes(r#"{"type":"message"}"#), [(1, "missing_session_header", None)]);
    let hosts = r#"{"type":"session","version":1,"externalId":"e","createdAt":"2026-11-01T10:00:00Z","workspace":{"repository":{"host":"gitlab.com","owner":"o","name":"n"},"branch":""}}"#;
    assert_eq!(codes(hosts), [(1, "unsupported_repository_host", None), (1, "invalid_branch", None)]);
    let slash = hosts.replace("gitlab.com", "dev.azure.com").replace(r#""o""#, r#""o/x""#);
    assert_eq!(codes(&slash)[0].1, "invalid_repository");
}

#[test]
fn a_transcript_becomes_the_events_the_original_writes() {
    let p = parse(GOOD).unwrap();
    let blob =
        ImportedAttachment { mime_type: "image/png".into(), display_name: "pic.png".into(), data: b"PNG".to_vec() };
    let attachments = HashMap::from([("m1".to_string(), vec![blob])]);
    let events = events("s-1", &p, "/w", &attachments, "9.9.9");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            "session.start",
            "user.message",
            "assistant.message",
            "tool.execution_start",
            "tool.execution_complete",
            "tool.execution_start",
            "tool.execution_complete",
            "assistant.message"
        ]
    );
    assert!(events.windows(2).all(|w| w[1].parent_id.as_deref() == Some(w[0].id.as_str())));
    let json: Vec<serde_json::Value> = events.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
    let start = &json[0]["data"];
    assert_eq!(start["startTime"], "2026-11-01T08:00:00.000Z");
    assert_eq!(start["context"]["repository"], "octo/hello");
    assert_eq!(start["context"]["hostType"], "github");
    assert_eq!(start["context"]["branch"], "main");
    assert_eq!(json[1]["data"]["content"], "list files");
    assert_eq!(json[1]["data"]["attachments"][0]["data"], "UE5H");
    let reply = &json[2]["data"];
    assert_eq!(reply["model"], "gpt-5");
    let requests = reply["toolRequests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["arguments"]["command"], "ls");
    assert_eq!(requests[0]["toolCallId"], json[3]["data"]["toolCallId"]);
    assert_eq!(json[4]["data"]["result"]["content"], "a.txt");
    assert_eq!(json[6]["data"]["error"]["message"], "no such file\n\nout");
    assert_eq!(json[6]["data"]["error"]["code"], "ENOENT");
    assert_eq!(json[7]["data"]["content"], "There\nis a.txt.");
    assert_ne!(json[7]["data"]["turnId"], reply["turnId"]);
    assert!(matches!(&events[2].payload, SessionEvent::AssistantMessage(_)), "typed as the log reads it back");
}
