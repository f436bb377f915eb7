//! A `task` sub-agent runs the session's one turn loop: its long conversation compacts as the
//! session's would, announced under its own id and leaving the session's conversation alone.

use fake_model::Reply;
use serde_json::{json, Value};

use crate::support::TestEngine;

const SUMMARY: &str = "The agent read the big files: they hold only filler lines.";
/// The summary of part of a conversation (turns went on while it was written), and of all of it.
const WRAPPER_START: &str = "Some of the conversation history has been summarized";
const WHOLE_WRAPPER_START: &str = "The conversation history has been summarized";

/// The first message's text of a captured chat request, and whether it is a sub-agent's call.
fn system_of(req: &Value) -> &str {
    req["messages"][0]["content"].as_str().unwrap_or_default()
}

fn is_agent_call(req: &Value) -> bool {
    system_of(req).contains("<agent_role name=\"general-purpose\">")
}

/// The texts of the request's user and tool messages.
fn texts(req: &Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn task_call(prompt: &str) -> Reply {
    Reply::tool_call(
        "task",
        json!({"name": "reader", "agent_type": "general-purpose", "description": "Read files", "prompt": prompt}),
    )
}

fn view(path: &std::path::Path) -> (String, String) {
    ("view".to_string(), json!({"path": path}).to_string())
}

fn compaction_events(t: &crate::support::TestSession) -> (Vec<Value>, Vec<Value>) {
    (t.events.of_type("session.compaction_start"), t.events.of_type("session.compaction_complete"))
}

#[tokio::test]
async fn a_sub_agent_past_the_threshold_compacts_its_own_conversation() {
    let env = TestEngine::start().await;
    // Ten files of about 19 KB: together past 30 % of the model's 128k-token window.
    let line = "x".repeat(99);
    let body: String = (0..180).map(|i| format!("{i:03}{line}\n")).collect();
    let big: Vec<_> = (0..10).map(|i| env.workdir.join(format!("big{i}.txt"))).collect();
    for path in &big {
        std::fs::write(path, &body).unwrap();
    }
    let small = env.workdir.join("small.txt");
    std::fs::write(&small, "the small file\n").unwrap();

    env.fake.push_replies([
        task_call("Read the big files, then the small one."),
        Reply::ToolCalls(big.iter().map(|p| view(p)).collect()),
        Reply::ToolCalls(vec![view(&small)]),
        Reply::text("SUB-ANSWER: filler only."),
        Reply::text("All read."),
    ]);
    env.fake.push_summary_reply(Reply::text(SUMMARY));
    let session = env
        .session(json!({"infiniteSessions": {
            "enabled": true, "backgroundCompactionThreshold": 0.3, "bufferExhaustionThreshold": 0.35,
        }}))
        .await;
    session.send_and_wait("Have an agent read the files.").await;

    let (starts, completes) = compaction_events(&session);
    assert_eq!(starts.len(), 1, "one compaction: {starts:?}");
    assert_eq!(completes.len(), 1, "{completes:?}");
    assert_eq!(starts[0]["agentId"], "reader", "announced under the agent's id");
    assert_eq!(starts[0]["data"]["trigger"], "threshold");
    let done = &completes[0];
    assert_eq!((done["agentId"].as_str(), done["data"]["success"].as_bool()), (Some("reader"), Some(true)), "{done}");
    assert_eq!(done["data"]["summaryContent"], SUMMARY);
    assert!(done["data"].get("checkpointNumber").is_none(), "a sub-agent's summary is no checkpoint: {done}");

    // The summary was asked of the agent's own conversation.
    let summaries = env.requests_of("conversation-compaction");
    assert_eq!(summaries.len(), 1);
    assert!(is_agent_call(&summaries[0]), "the agent's system prompt: {}", system_of(&summaries[0]));
    assert!(texts(&summaries[0]).iter().any(|t| t.contains("179xxxx")), "the big files' text is what is summarized");

    // Its next call carried the summary instead of the big files; what came after stayed.
    let agent_calls: Vec<Value> = env.turn_requests().into_iter().filter(is_agent_call).collect();
    assert_eq!(agent_calls.len(), 3, "three turns of the agent");
    let last = texts(&agent_calls[2]);
    assert!(last[0].starts_with(WRAPPER_START) && last[0].contains(SUMMARY), "{:?}", last[0]);
    assert!(!last.iter().any(|t| t.contains("179xxxx")), "the big files are gone from the agent's context");
    assert!(last.iter().any(|t| t.contains("the small file")), "the turn after the summary began stays");

    // The session's own conversation was not touched: its last call has the agent's answer
    // as the task's result, and no summary.
    let main_calls: Vec<Value> = env.turn_requests().into_iter().filter(|r| !is_agent_call(r)).collect();
    let main_last = texts(main_calls.last().unwrap());
    assert!(main_last.iter().any(|t| t.contains("SUB-ANSWER")), "{main_last:?}");
    assert!(!main_last.iter().any(|t| t.starts_with(WRAPPER_START)), "{main_last:?}");
    assert_eq!(session.events.count("subagent.completed"), 1);
}

#[tokio::test]
async fn a_sub_agent_whose_context_is_refused_as_too_long_compacts_and_calls_again() {
    let env = TestEngine::start().await;
    let notes = env.workdir.join("notes.txt");
    std::fs::write(&notes, "note one\n").unwrap();
    env.fake.push_replies([
        task_call("Read the notes."),
        Reply::ToolCalls(vec![view(&notes)]),
        Reply::error(400, None, "prompt token count of 200000 exceeds the limit: context_length_exceeded"),
        Reply::text("SUB-ANSWER after the summary."),
        Reply::text("Done."),
    ]);
    env.fake.push_summary_reply(Reply::text(SUMMARY));
    let session = env.session(json!({})).await;
    session.send_and_wait("Have an agent read the notes.").await;

    let (starts, completes) = compaction_events(&session);
    assert_eq!((starts.len(), completes.len()), (1, 1), "{starts:?} {completes:?}");
    assert_eq!(starts[0]["agentId"], "reader");
    assert_eq!(starts[0]["data"]["trigger"], "context_limit_retry");
    assert_eq!(completes[0]["data"]["success"], true);

    let agent_calls: Vec<Value> = env.turn_requests().into_iter().filter(is_agent_call).collect();
    assert_eq!(agent_calls.len(), 3, "the refused call is made once more");
    // The whole conversation was summarized: the summary is all the agent's context now.
    let retried = texts(&agent_calls[2]);
    assert_eq!(retried.len(), 1, "{retried:?}");
    assert!(retried[0].starts_with(WHOLE_WRAPPER_START) && retried[0].contains(SUMMARY), "{retried:?}");
    assert!(retried[0].contains("<user_message>\nRead the notes.\n</user_message>"), "it lists the agent's prompt");
    assert_eq!(session.events.count("subagent.failed"), 0, "{:?}", session.events.of_type("subagent.failed"));
    let main_calls: Vec<Value> = env.turn_requests().into_iter().filter(|r| !is_agent_call(r)).collect();
    let main_last = texts(main_calls.last().unwrap());
    assert!(main_last.iter().any(|t| t.contains("SUB-ANSWER after the summary.")), "the task's result: {main_last:?}");
}
