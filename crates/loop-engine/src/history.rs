//! The model-visible conversation, and its reconstruction from a session's event log
//! (resume = replay).

use llm_providers::{Message, ReasoningBlocks, ToolCall, ToolContent, UserContent};
use protocol::event::{Event, SessionEvent};
use protocol::generated::types::{self as t, SessionMode};
use serde_json::Value;
use tools::INTERRUPTED_TEXT;

/// What replaying a log restores besides the messages.
#[derive(Debug, Default, Clone)]
pub struct Restored {
    pub messages: Vec<Message>,
    pub model: Option<String>,
    pub mode: Option<SessionMode>,
    pub cwd: Option<String>,
    pub start_time: Option<String>,
    pub title: Option<String>,
    pub last_event_id: Option<String>,
    pub user_message_count: usize,
    /// The last system prompt the log records.
    pub last_system: Option<String>,
    /// The user's prompts as typed (a later compaction summary lists them).
    pub prompts: Vec<String>,
}

/// Rebuilds the conversation from persisted events. A tool call without a completion (crash,
/// abort) is answered with the interrupted text, so every call has exactly one result.
pub fn replay(events: &[Event]) -> Restored {
    let mut r = Restored::default();
    let mut open_calls: Vec<String> = Vec::new();
    let mut results: std::collections::HashMap<String, String> = Default::default();
    // Where the compaction under way started: (messages, prompts) it covers.
    let mut compaction_mark: Option<(usize, usize)> = None;

    fn flush(r: &mut Restored, open: &mut Vec<String>, results: &mut std::collections::HashMap<String, String>) {
        for id in open.drain(..) {
            let text = results.remove(&id).unwrap_or_else(|| INTERRUPTED_TEXT.to_string());
            r.messages.push(Message::Tool { tool_call_id: id, content: ToolContent::Text(text) });
        }
    }

    for e in events {
        r.last_event_id = Some(e.id.clone());
        // A sub-agent's steps are its own context, not the main conversation's.
        if e.agent_id.is_some() {
            continue;
        }
        match &e.payload {
            SessionEvent::SessionStart(d) => {
                r.model = d.selected_model.clone();
                r.start_time = Some(d.start_time.clone());
                r.cwd = d.context.as_ref().map(|c| c.cwd.clone());
            }
            SessionEvent::SessionContextChanged(c) => r.cwd = Some(c.cwd.clone()),
            SessionEvent::SessionModelChange(d) => r.model = Some(d.new_model.clone()),
            SessionEvent::SessionModeChanged(d) => r.mode = Some(d.new_mode),
            SessionEvent::SystemMessage(d) => r.last_system = Some(d.content.clone()),
            SessionEvent::UserMessage(d) => {
                flush(&mut r, &mut open_calls, &mut results);
                let text = d.transformed_content.clone().unwrap_or_else(|| d.content.clone());
                if r.title.is_none() && !d.content.is_empty() {
                    r.title = Some(d.content.clone());
                }
                r.user_message_count += 1;
                if !d.content.is_empty() {
                    r.prompts.push(d.content.clone());
                }
                r.messages.push(Message::User { content: UserContent::Text(text) });
            }
            SessionEvent::AssistantMessage(d) => {
                flush(&mut r, &mut open_calls, &mut results);
                let calls: Vec<ToolCall> = d.tool_requests.iter().flatten().map(tool_call_from_request).collect();
                open_calls.extend(calls.iter().map(|c| c.id.clone()));
                let reasoning = d.reasoning_blocks.as_ref().map(|b| ReasoningBlocks {
                    provider: b.provider.clone(),
                    blocks: b.blocks.clone().unwrap_or_default(),
                });
                r.messages.push(assistant_message(d.content.clone(), calls, reasoning));
            }
            SessionEvent::ToolExecutionComplete(d) => {
                results.insert(d.tool_call_id.clone(), model_visible_result(d));
            }
            // A compaction covers the messages before its start; the summary replaces them
            // once it completes (messages added meanwhile stay after it).
            SessionEvent::SessionCompactionStart(_) => {
                flush(&mut r, &mut open_calls, &mut results);
                compaction_mark = Some((r.messages.len(), r.prompts.len()));
            }
            // `session.history.clearContext`: only system messages stay; the tool calls in flight
            // lost their results with it.
            SessionEvent::SessionContextCleared(_) => {
                open_calls.clear();
                results.clear();
                compaction_mark = None;
                r.messages.retain(|m| matches!(m, Message::System { .. }));
            }
            SessionEvent::SessionCompactionComplete(d) => {
                if let (true, Some(summary), Some((mark, prompts))) =
                    (d.success, d.summary_content.as_deref(), compaction_mark.take())
                {
                    flush(&mut r, &mut open_calls, &mut results);
                    let wrapper = crate::compaction::text::wrapper(true, &r.prompts[..prompts], summary);
                    let mark = mark.min(r.messages.len());
                    r.messages.splice(..mark, std::iter::once(Message::User { content: UserContent::Text(wrapper) }));
                }
            }
            _ => {}
        }
    }
    flush(&mut r, &mut open_calls, &mut results);
    r
}

/// An assistant message as sent back to the model: text-only replies carry a string; a reply
/// with only tool calls carries `null` content.
pub fn assistant_message(content: String, tool_calls: Vec<ToolCall>, reasoning: Option<ReasoningBlocks>) -> Message {
    let content = if content.is_empty() && !tool_calls.is_empty() { None } else { Some(content) };
    Message::Assistant { content, tool_calls, reasoning: reasoning.map(Box::new) }
}

/// The text the model saw for a completed tool call, as recorded in the event.
pub fn model_visible_result(d: &t::ToolExecutionCompleteData) -> String {
    d.result
        .as_ref()
        .map(|r| r.content.clone())
        .or_else(|| d.error.as_ref().map(|e| e.message.clone()))
        .unwrap_or_default()
}

fn tool_call_from_request(req: &t::AssistantMessageToolRequest) -> ToolCall {
    let arguments = match &req.arguments {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => "{}".to_string(),
    };
    ToolCall { id: req.tool_call_id.clone(), name: req.name.clone(), arguments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(kind: &str, data: Value) -> Event {
        Event::from_parts(kind, data, false)
    }

    #[test]
    fn replays_turns_and_fills_interrupted_results() {
        let events = vec![
            ev(
                "session.start",
                json!({"sessionId":"s","version":1,"producer":"p","copilotVersion":"v",
                       "selectedModel":"m1","startTime":"t","context":{"cwd":"/w"}}),
            ),
            ev("user.message", json!({"content":"hi","transformedContent":"<x>hi"})),
            ev(
                "assistant.message",
                json!({"messageId":"a","content":"","toolRequests":[
                {"toolCallId":"c1","name":"bash","arguments":{"command":"ls"}},
                {"toolCallId":"c2","name":"view","arguments":{"path":"/a"}}]}),
            ),
            ev("tool.execution_complete", json!({"toolCallId":"c1","success":true,"result":{"content":"out"}})),
            ev("abort", json!({"reason":"user_initiated"})),
            ev("user.message", json!({"content":"next"})),
        ];
        let r = replay(&events);
        assert_eq!(r.model.as_deref(), Some("m1"));
        assert_eq!(r.cwd.as_deref(), Some("/w"));
        assert_eq!(r.title.as_deref(), Some("hi"));
        assert_eq!(r.messages.len(), 5);
        assert_eq!(r.messages[0], Message::User { content: UserContent::Text("<x>hi".into()) });
        let Message::Assistant { content, tool_calls, .. } = &r.messages[1] else { panic!() };
        assert_eq!(content, &None);
        assert_eq!(tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(
            r.messages[2],
            Message::Tool { tool_call_id: "c1".into(), content: ToolContent::Text("out".into()) }
        );
        assert_eq!(
            r.messages[3],
            Message::Tool { tool_call_id: "c2".into(), content: ToolContent::Text(INTERRUPTED_TEXT.into()) }
        );
    }

    #[test]
    fn a_completed_compaction_replaces_what_it_covered() {
        let events = vec![
            ev("user.message", json!({"content":"first"})),
            ev("assistant.message", json!({"messageId":"a","content":"one"})),
            ev("user.message", json!({"content":"second"})),
            ev("session.compaction_start", json!({})),
            // Written while the summary was being made: stays after it.
            ev("assistant.message", json!({"messageId":"b","content":"two"})),
            ev("session.compaction_complete", json!({"success":true,"summaryContent":"S"})),
            ev("session.compaction_start", json!({})),
            ev("session.compaction_complete", json!({"success":false,"error":"boom"})),
            ev("user.message", json!({"content":"third"})),
        ];
        let r = replay(&events);
        assert_eq!(r.prompts, vec!["first", "second", "third"]);
        assert_eq!(r.messages.len(), 3, "{:?}", r.messages);
        let Message::User { content: UserContent::Text(summary) } = &r.messages[0] else { panic!() };
        assert!(summary.starts_with("Some of the conversation history has been summarized"), "{summary}");
        assert!(summary.contains("<user_message>\nfirst\n</user_message>\n<user_message>\nsecond\n</user_message>"));
        assert!(!summary.contains("third"));
        assert!(summary.ends_with("<summary>\nS\n</summary>\n"));
        let Message::Assistant { content, .. } = &r.messages[1] else { panic!() };
        assert_eq!(content.as_deref(), Some("two"));
    }
}
