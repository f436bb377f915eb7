//! Core flows through the Rust SDK: create, send, client tools, permissions, resume.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use fake_model::Reply;
use github_copilot_sdk::handler::{PermissionHandler, PermissionResult};
use github_copilot_sdk::tool::ToolHandler;
use github_copilot_sdk::types::{
    PermissionRequestData, RequestId, ResumeSessionConfig, SessionId, Tool, ToolInvocation, ToolResult,
};
use github_copilot_sdk::Error;
use serde_json::json;

use crate::{ask, content, messages, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_send_reaches_the_model_and_answers() {
    let world = World::new().await;
    world.fake.push_reply(Reply::text("The answer is 4."));
    let client = world.client().await;
    let session = client.create_session(world.config()).await.expect("create");
    let mut events = session.subscribe();

    let answer = crate::ask(&session, "What is 2 + 2?").await.expect("an assistant message");
    assert_eq!(answer.event_type, "assistant.message");
    assert_eq!(content(&answer), "The answer is 4.");

    // The prompt reached the model as the last user message.
    let requests = world.model_requests();
    assert_eq!(requests.len(), 1, "one model call for a text turn");
    let msgs = messages(&requests[0]);
    assert_eq!(msgs.first().map(|m| m.0.as_str()), Some("system"));
    assert!(
        msgs.iter().any(|(role, text)| role == "user" && text.contains("What is 2 + 2?")),
        "the prompt is a user message: {msgs:?}"
    );

    // Subscribers saw the turn in order: the user message, the answer, then idle.
    let mut seen = Vec::new();
    while let Ok(Ok(ev)) = tokio::time::timeout(std::time::Duration::from_secs(5), events.recv()).await {
        let done = ev.event_type == "session.idle";
        seen.push(ev.event_type.clone());
        if done {
            break;
        }
    }
    let pos = |t: &str| seen.iter().position(|s| s == t).unwrap_or_else(|| panic!("no {t} in {seen:?}"));
    assert!(pos("user.message") < pos("assistant.message"));
    assert!(pos("assistant.message") < pos("session.idle"));

    // The session is listed by id.
    let listed = client.list_sessions(None).await.expect("list");
    assert!(listed.iter().any(|s| s.session_id == *session.id()), "created session is listed");
    session.disconnect().await.expect("disconnect");
    client.stop().await;
}

/// A client tool: records the arguments it was called with and answers a fixed colour.
struct ColourTool {
    calls: Arc<Mutex<Vec<serde_json::Value>>>,
}

#[async_trait]
impl ToolHandler for ColourTool {
    async fn call(&self, invocation: ToolInvocation) -> Result<ToolResult, Error> {
        self.calls.lock().expect("calls").push(invocation.arguments.clone());
        let thing = invocation.arguments["thing"].as_str().unwrap_or("nothing");
        Ok(ToolResult::Text(format!("The {thing} is teal.")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_is_offered_called_and_its_result_reaches_the_model() {
    let world = World::new().await;
    world.fake.push_replies([Reply::tool_call("colour_of", json!({"thing": "sky"})), Reply::text("Teal, then.")]);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let tool = Tool::new("colour_of")
        .with_description("Tells the colour of a thing.")
        .with_parameters(json!({
            "type": "object",
            "properties": {"thing": {"type": "string"}},
            "required": ["thing"]
        }))
        .with_handler(Arc::new(ColourTool { calls: calls.clone() }));
    let client = world.client().await;
    let session = client.create_session(world.config().with_tools(vec![tool])).await.expect("create");

    let answer = ask(&session, "What colour is the sky?").await.expect("answer");
    assert_eq!(content(&answer), "Teal, then.");
    assert_eq!(calls.lock().expect("calls").as_slice(), &[json!({"thing": "sky"})]);

    let requests = world.model_requests();
    assert_eq!(requests.len(), 2);
    // The tool was offered with its schema...
    let offered = requests[0]["tools"].as_array().cloned().unwrap_or_default();
    let def = offered
        .iter()
        .find(|t| t["function"]["name"] == "colour_of")
        .unwrap_or_else(|| panic!("colour_of not offered: {offered:?}"));
    assert_eq!(def["function"]["description"], "Tells the colour of a thing.");
    assert_eq!(def["function"]["parameters"]["required"], json!(["thing"]));
    // ...and its result went back as the tool message of the second call.
    let msgs = messages(&requests[1]);
    assert!(
        msgs.iter().any(|(role, text)| role == "tool" && text == "The sky is teal."),
        "tool result in the follow-up request: {msgs:?}"
    );
    client.stop().await;
}

/// Answers every permission request with a fixed decision and records the request kinds.
struct Recorder {
    approve: bool,
    kinds: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl PermissionHandler for Recorder {
    async fn handle(&self, _s: SessionId, _r: RequestId, data: PermissionRequestData) -> PermissionResult {
        let kind = data.extra["permissionRequest"]["kind"]
            .as_str()
            .or_else(|| data.extra["kind"].as_str())
            .unwrap_or("?")
            .to_string();
        self.kinds.lock().expect("kinds").push(kind);
        if self.approve {
            PermissionResult::approve_once()
        } else {
            PermissionResult::reject(Some("not in this test".to_string()))
        }
    }
}

async fn write_with_permission(approve: bool) -> (World, Vec<String>, Vec<github_copilot_sdk::types::SessionEvent>) {
    let world = World::new().await;
    let target = world.path("note.txt");
    world.fake.push_replies([
        Reply::tool_call("create", json!({"path": target.display().to_string(), "file_text": "hello\n"})),
        Reply::text("Done."),
    ]);
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let client = world.client().await;
    let config = github_copilot_sdk::types::SessionConfig::default()
        .with_permission_handler(Arc::new(Recorder { approve, kinds: kinds.clone() }));
    let session = client.create_session(config).await.expect("create");
    let _ = ask(&session, "Write the note.").await;
    let events = session.get_events().await.expect("messages");
    client.stop().await;
    let kinds = kinds.lock().expect("kinds").clone();
    (world, kinds, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_write_asks_once_and_writes_the_file() {
    let (world, kinds, events) = write_with_permission(true).await;
    assert_eq!(kinds, ["write"], "one write permission request");
    assert_eq!(std::fs::read_to_string(world.path("note.txt")).expect("file written"), "hello\n");
    let done = events.iter().find(|e| e.event_type == "tool.execution_complete").expect("tool.execution_complete");
    assert_eq!(done.data["success"], true);
    assert_eq!(world.model_requests().len(), 2, "the model saw the tool result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_write_changes_nothing_and_tells_the_model_why() {
    let (world, kinds, events) = write_with_permission(false).await;
    assert_eq!(kinds, ["write"]);
    assert!(!crate::exists(&world.path("note.txt")), "a rejected write leaves no file");
    let done = events.iter().find(|e| e.event_type == "tool.execution_complete").expect("tool.execution_complete");
    assert_eq!(done.data["success"], false);
    let error = done.data["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(error, "The user rejected this tool call. User feedback: not in this test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_by_a_new_process_keeps_its_conversation() {
    let world = World::new().await;
    world.fake.push_replies([Reply::text("Noted: the code word is heron."), Reply::text("It was heron.")]);

    let first = world.client().await;
    let session = first.create_session(world.config()).await.expect("create");
    let id = session.id().clone();
    ask(&session, "Remember the code word heron.").await.expect("first answer");
    session.disconnect().await.expect("disconnect");
    first.stop().await;

    // A second skipper process on the same home resumes it.
    let second = world.client().await;
    let config = ResumeSessionConfig::new(id.clone())
        .with_permission_handler(Arc::new(github_copilot_sdk::handler::ApproveAllHandler));
    let resumed = second.resume_session(config).await.expect("resume");
    assert_eq!(resumed.id(), &id);
    let history = resumed.get_events().await.expect("history");
    let texts: Vec<String> = history.iter().filter(|e| e.event_type == "assistant.message").map(content).collect();
    assert_eq!(texts, ["Noted: the code word is heron."]);

    let answer = ask(&resumed, "What was the code word?").await.expect("second answer");
    assert_eq!(content(&answer), "It was heron.");
    // The second process sent the earlier turn to the model as history.
    let requests = world.model_requests();
    let msgs = messages(requests.last().expect("a request"));
    let users: Vec<&str> = msgs.iter().filter(|m| m.0 == "user").map(|m| m.1.as_str()).collect();
    assert!(users.iter().any(|t| t.contains("Remember the code word heron.")), "{users:?}");
    assert!(users.last().is_some_and(|t| t.contains("What was the code word?")), "{users:?}");
    assert!(msgs.iter().any(|(r, t)| r == "assistant" && t == "Noted: the code word is heron."));
    second.stop().await;
}
