//! Request bodies for `POST /v1/messages`.
//!
//! The conversation is kept in OpenAI chat shape ([`Message`]); Anthropic wants content blocks
//! in strictly alternating user/assistant turns, tool results inside user turns. Each history
//! message's blocks are encoded once (cached by the history as [`WireFormat::Anthropic`]) and
//! adjacent messages of one role are joined into one turn as the body is written, so a call
//! costs what is new, not the whole conversation.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::body::{Body, BodyWriter};
use crate::tool_set::ToolSpec;
use crate::types::{ChatRequest, ContentPart, Message, ToolCall, ToolContent, UserContent};
use crate::wire_format::WireFormat;

/// Which `ReasoningBlocks::provider` this wire format reads and writes.
pub(crate) const PROVIDER: &str = "anthropic";

/// The Messages API wants a user turn first; a history cut at an assistant message (e.g. by
/// truncation) gets this in front rather than a 400.
const LEADING_USER_TEXT: &str = "(conversation continues)";

/// The JSON body, in the key order the original CLI sends.
pub(crate) fn request_body(req: &ChatRequest, model: &str, max_tokens: u64) -> Body {
    let turns = turns(req.history.items().map(|item| {
        let message = item.message();
        (role(message), kind(message), item.wire(WireFormat::Anthropic, encode_blocks))
    }));
    let history_bytes: usize = turns.iter().flat_map(|t| &t.blocks).map(|b| b.len() + 1).sum();
    let mut out = BodyWriter::with_capacity(history_bytes + 4096);
    out.extend_from_slice(b"{\"model\":");
    out.json(model);
    out.extend_from_slice(b",\"max_tokens\":");
    out.json(&req.sampling.max_tokens.map_or(max_tokens, |asked| asked.min(max_tokens)));
    // The API rejects an empty text block; no system prompt, no key.
    if !req.system.is_empty() {
        out.extend_from_slice(b",\"system\":");
        // `[TextBlock]`'s JSON, with the prompt's string made once per prompt.
        out.extend_from_slice(b"[{\"type\":\"text\",\"text\":");
        out.share(req.system.json().clone());
        out.extend_from_slice(b"}]");
    }
    out.extend_from_slice(b",\"messages\":[");
    for (i, turn) in turns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"role\":");
        out.json(&turn.role);
        out.extend_from_slice(b",\"content\":[");
        for (j, blocks) in turn.blocks.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(blocks.as_bytes());
        }
        out.extend_from_slice(b"]}");
    }
    out.push(b']');
    // Some compatible endpoints reject an empty `tools` array, so the key is left out instead.
    if !req.tools.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        out.share(req.tools.wire(WireFormat::Anthropic, encode_tools));
    }
    if req.purpose == crate::types::Purpose::Compaction && !req.tools.is_empty() {
        out.extend_from_slice(b",\"tool_choice\":{\"type\":\"none\"}");
    }
    // Always streamed, as the original does; a non-streaming session ignores the deltas.
    if req.reasoning_effort.is_some() {
        // With any effort the original turns extended thinking on with the smallest budget
        // the API allows (whatever the effort), at the temperature thinking requires.
        out.extend_from_slice(
            b",\"temperature\":1,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024,\"display\":\"summarized\"}",
        );
        out.extend_from_slice(b",\"stream\":true}");
    } else {
        out.extend_from_slice(b",\"temperature\":");
        match req.sampling.temperature {
            Some(t) => out.json(&t),
            None => out.push(b'0'),
        }
        // Only an MCP server's sampling request sets stop sequences.
        if !req.sampling.stop.is_empty() {
            out.extend_from_slice(b",\"stop_sequences\":");
            out.json(&req.sampling.stop);
        }
        out.extend_from_slice(b",\"stream\":true}");
    }
    out.finish()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// What a message contributes to its turn, for ordering within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ToolResult,
    Other,
}

fn role(message: &Message) -> Option<Role> {
    match message {
        // The system prompt goes in the top-level `system`; nothing else carries one.
        Message::System { .. } => None,
        Message::User { .. } | Message::Tool { .. } => Some(Role::User),
        Message::Assistant { .. } => Some(Role::Assistant),
    }
}

fn kind(message: &Message) -> Kind {
    match message {
        Message::Tool { .. } => Kind::ToolResult,
        _ => Kind::Other,
    }
}

/// One turn of the body: its role and the encoded blocks of the messages joined into it.
struct Turn<S> {
    role: Role,
    blocks: Vec<S>,
}

/// Adjacent messages of one role joined into one turn, empty messages dropped, a user turn
/// first. `blocks` are each message's comma-separated encoded blocks.
fn turns<'a>(messages: impl Iterator<Item = (Option<Role>, Kind, Cow<'a, str>)>) -> Vec<Turn<Cow<'a, str>>> {
    let mut out: Vec<Turn<(Kind, Cow<'a, str>)>> = Vec::new();
    for (role, kind, blocks) in messages {
        let Some(role) = role else {
            continue;
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.blocks.push((kind, blocks)),
            _ => out.push(Turn { role, blocks: vec![(kind, blocks)] }),
        }
    }
    if out.first().is_some_and(|t| t.role == Role::Assistant) {
        let text = serde_json::to_string(&text_block(LEADING_USER_TEXT)).unwrap_or_default();
        out.insert(0, Turn { role: Role::User, blocks: vec![(Kind::Other, Cow::Owned(text))] });
    }
    out.into_iter()
        .map(|mut turn| {
            // Tool results must open the turn that follows the tool calls; a user message that
            // slipped in between the calls and their results goes after them (a stable sort).
            turn.blocks.sort_by_key(|(kind, _)| *kind != Kind::ToolResult);
            Turn { role: turn.role, blocks: turn.blocks.into_iter().map(|(_, b)| b).collect() }
        })
        .collect()
}

#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.parameters }
}

/// One content block. Borrowed from the history where possible: a call re-sends the whole
/// conversation, images included.
#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text(TextBlock<'a>),
    Image {
        #[serde(rename = "type")]
        kind: &'static str,
        source: ImageSource<'a>,
    },
    Document {
        #[serde(rename = "type")]
        kind: &'static str,
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        citations: Option<Value>,
    },
    ToolUse {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        #[serde(rename = "type")]
        kind: &'static str,
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
    },
    /// A thinking / redacted_thinking block sent back byte for byte: its signature covers it.
    Verbatim(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

#[derive(Serialize)]
#[serde(untagged)]
enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

fn text_block(text: &str) -> Block<'_> {
    Block::Text(TextBlock { kind: "text", text })
}

/// A message's blocks as JSON, comma-separated without the enclosing brackets, so the blocks
/// of adjacent messages can be joined into one turn. Empty when it has none.
fn encode_blocks(message: &Message) -> String {
    let blocks = blocks(message);
    if blocks.is_empty() {
        return String::new();
    }
    let json = serde_json::to_string(&blocks).unwrap_or_default();
    json.strip_prefix('[').and_then(|j| j.strip_suffix(']')).unwrap_or_default().to_string()
}

fn blocks(message: &Message) -> Vec<Block<'_>> {
    match message {
        Message::System { .. } => Vec::new(),
        Message::User { content } => user_blocks(content),
        Message::Assistant { content, tool_calls, reasoning } => {
            let mut blocks = Vec::new();
            if let Some(reasoning) = reasoning.as_ref().filter(|r| r.provider == PROVIDER) {
                blocks.extend(reasoning.blocks.iter().map(Block::Verbatim));
            }
            // The API rejects empty text blocks.
            if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                blocks.push(text_block(text));
            }
            blocks.extend(tool_calls.iter().map(tool_use));
            blocks
        }
        Message::Tool { tool_call_id, content } => {
            let content = match content {
                ToolContent::Text(text) => ToolResultContent::Text(text),
                ToolContent::Parts(parts) => ToolResultContent::Blocks(parts.iter().filter_map(part_block).collect()),
            };
            vec![Block::ToolResult { kind: "tool_result", tool_use_id: tool_call_id, content }]
        }
    }
}

fn user_blocks(content: &UserContent) -> Vec<Block<'_>> {
    match content {
        UserContent::Text(text) if text.is_empty() => Vec::new(),
        UserContent::Text(text) => vec![text_block(text)],
        UserContent::Parts(parts) => parts.iter().filter_map(part_block).collect(),
    }
}

fn part_block(part: &ContentPart) -> Option<Block<'_>> {
    match part {
        ContentPart::Text { text } if text.is_empty() => None,
        ContentPart::Text { text } => Some(text_block(text)),
        ContentPart::ImageUrl { image_url } => {
            image_source(&image_url.url).map(|source| Block::Image { kind: "image", source })
        }
        ContentPart::File { file } => image_source(&file.file_data).map(|source| Block::Document {
            kind: "document",
            source,
            title: file.filename.as_deref(),
            citations: file.citations.then(|| serde_json::json!({"enabled": true})),
        }),
    }
}

/// `data:<mime>;base64,<data>` → a base64 source; another URL → a URL source.
fn image_source(url: &str) -> Option<ImageSource<'_>> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Some(ImageSource::Url { url });
    };
    match rest.split_once(";base64,") {
        Some((media_type, data)) if !media_type.is_empty() => Some(ImageSource::Base64 { media_type, data }),
        _ => {
            tracing::warn!("dropping an image whose data URL is not base64 with a media type");
            None
        }
    }
}

/// Anthropic takes the input as an object, not text. Arguments the model itself produced
/// always parse; anything else (a hand-edited or truncated history) is sent as `{}` rather
/// than failing the whole call.
fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = if call.arguments.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(object @ Value::Object(_)) => object,
            // The arguments may hold user data; log only which call it was.
            _ => {
                tracing::warn!(tool = %call.name, call_id = %call.id, "tool-call arguments are not a JSON object; sending {{}}");
                Value::Object(Map::new())
            }
        }
    };
    Block::ToolUse { kind: "tool_use", id: &call.id, name: &call.name, input }
}

/// The tools array's wire JSON.
fn encode_tools(tools: &[ToolSpec]) -> String {
    let tools: Vec<WireTool<'_>> = tools.iter().map(wire_tool).collect();
    serde_json::to_string(&tools).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{History, ImageUrl, Initiator, ReasoningBlocks};
    use serde_json::json;
    use std::sync::Arc;

    fn request(messages: Vec<Message>, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: "session-model".into(),
            github_token: None,
            system: "sys".into(),
            history: History::new(messages),
            tools: tools.into(),
            stream: false,
            initiator: Initiator::User,
            interaction_id: "i".into(),
            session_id: "s".into(),
            extra_headers: vec![],
            client_name: None,
            sub_agent: None,
            sampling: Default::default(),
            purpose: Default::default(),
            reasoning_effort: None,
        }
    }

    fn body(req: &ChatRequest) -> Value {
        serde_json::from_slice(&request_body(req, "wire-model", 8192).to_bytes()).expect("the body is JSON")
    }

    fn messages(list: Vec<Message>) -> Value {
        body(&request(list, vec![]))["messages"].clone()
    }

    fn user(text: &str) -> Message {
        Message::User { content: UserContent::Text(text.into()) }
    }

    fn assistant(text: Option<&str>, calls: &[(&str, &str, &str)]) -> Message {
        Message::Assistant {
            content: text.map(str::to_string),
            tool_calls: calls
                .iter()
                .map(|(id, name, args)| ToolCall { id: (*id).into(), name: (*name).into(), arguments: (*args).into() })
                .collect(),
            reasoning: None,
        }
    }

    fn tool(id: &str, text: &str) -> Message {
        Message::Tool { tool_call_id: id.into(), content: ToolContent::Text(text.into()) }
    }

    #[test]
    fn body_fields_in_order() {
        let spec = ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            parameters: Arc::new(json!({"type": "object"})),
        };
        let b = body(&request(vec![user("hi")], vec![spec]));
        let keys: Vec<&str> = b.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(keys, ["model", "max_tokens", "system", "messages", "tools", "temperature", "stream"]);
        assert_eq!(b["model"], "wire-model");
        assert_eq!(b["max_tokens"], 8192);
        assert_eq!(b["system"], json!([{"type": "text", "text": "sys"}]));
        assert_eq!(b["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]));
        assert_eq!(b["tools"], json!([{"name": "bash", "description": "run", "input_schema": {"type": "object"}}]));
        assert_eq!((b["temperature"].clone(), b["stream"].clone()), (json!(0), json!(true)));

        let b = body(&request(vec![user("hi")], vec![]));
        assert!(b.get("tools").is_none(), "no tools, no key");
    }

    #[test]
    fn tool_round_trip_merges_results_with_the_next_user_text() {
        let m = messages(vec![
            user("look"),
            assistant(Some("Let me see."), &[("toolu_1", "view", r#"{"path":"a"}"#), ("toolu_2", "grep", "")]),
            tool("toolu_1", "file a"),
            tool("toolu_2", "no match"),
            user("and now?"),
            assistant(Some("done"), &[]),
        ]);
        assert_eq!(
            m,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "look"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me see."},
                    {"type": "tool_use", "id": "toolu_1", "name": "view", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file a"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no match"},
                    {"type": "text", "text": "and now?"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            ])
        );
    }

    #[test]
    fn a_user_message_between_calls_and_results_goes_after_the_results() {
        let m = messages(vec![user("go"), assistant(None, &[("t1", "bash", "{}")]), user("steer"), tool("t1", "ok")]);
        assert_eq!(
            m[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "steer"},
            ])
        );
    }

    #[test]
    fn documents_become_document_blocks_citing_when_asked() {
        let file = |citations: bool| ContentPart::File {
            file: crate::types::FilePart {
                filename: Some("source.pdf".into()),
                file_data: "data:application/pdf;base64,JVBERi0=".into(),
                citations,
            },
        };
        let m = messages(vec![Message::User {
            content: UserContent::Parts(vec![ContentPart::Text { text: "sum up".into() }, file(true), file(false)]),
        }]);
        assert_eq!(
            m[0]["content"],
            json!([
                {"type": "text", "text": "sum up"},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                 "title": "source.pdf", "citations": {"enabled": true}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                 "title": "source.pdf"},
            ])
        );
    }

    #[test]
    fn images_in_user_messages_and_tool_results() {
        let image = |url: &str| ContentPart::ImageUrl { image_url: ImageUrl { url: url.into() } };
        let m = messages(vec![
            Message::User {
                content: UserContent::Parts(vec![
                    ContentPart::Text { text: "what is this?".into() },
                    image("data:image/png;base64,iVBORw0K"),
                    image("https://example.invalid/cat.jpg"),
                    image("data:image/png,notbase64"),
                    ContentPart::Text { text: String::new() },
                ]),
            },
            assistant(None, &[("t1", "view", r#"{"path":"x.png"}"#)]),
            Message::Tool {
                tool_call_id: "t1".into(),
                content: ToolContent::Parts(vec![
                    ContentPart::Text { text: "Viewed image".into() },
                    image("data:image/jpeg;base64,/9j/"),
                ]),
            },
        ]);
        assert_eq!(
            m[0]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.jpg"}},
            ])
        );
        assert_eq!(
            m[2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "Viewed image"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
            ]}])
        );
    }

    #[test]
    fn reasoning_blocks_round_trip_only_to_anthropic() {
        let thinking = json!({"type": "thinking", "thinking": "Let me think", "signature": "sig/+=="});
        let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy"});
        let with = |provider: &str| Message::Assistant {
            content: Some("answer".into()),
            tool_calls: vec![ToolCall { id: "t1".into(), name: "bash".into(), arguments: "{}".into() }],
            reasoning: Some(Box::new(ReasoningBlocks {
                provider: provider.into(),
                blocks: vec![thinking.clone(), redacted.clone()],
            })),
        };
        let m = messages(vec![user("q"), with("anthropic"), tool("t1", "ok")]);
        assert_eq!(
            m[1]["content"],
            json!([
                thinking,
                redacted,
                {"type": "text", "text": "answer"},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {}},
            ])
        );
        let m = messages(vec![user("q"), with("openai-responses"), tool("t1", "ok")]);
        assert_eq!(m[1]["content"][0], json!({"type": "text", "text": "answer"}));
        assert_eq!(m[1]["content"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn invalid_tool_arguments_become_an_empty_object() {
        let m = messages(vec![
            user("q"),
            assistant(None, &[("a", "x", "{not json"), ("b", "y", "[1,2]"), ("c", "z", "  "), ("d", "w", "\"s\"")]),
        ]);
        for i in 0..4 {
            assert_eq!(m[1]["content"][i]["input"], json!({}), "{i}");
        }
    }

    #[test]
    fn empty_messages_are_dropped_and_roles_alternate() {
        let m = messages(vec![
            assistant(Some(""), &[]),
            user(""),
            user("one"),
            user("two"),
            assistant(None, &[]),
            assistant(Some("a"), &[]),
            assistant(Some("b"), &[]),
            Message::System { content: "ignored".into() },
        ]);
        assert_eq!(
            m,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ])
        );
    }

    #[test]
    fn cached_messages_are_reused_and_a_changed_one_is_encoded_again() {
        let mut req =
            request(vec![user("q"), assistant(None, &[("t1", "view", r#"{"path":"a"}"#)]), tool("t1", "ok")], vec![]);
        let first = request_body(&req, "m", 1);
        assert_eq!(request_body(&req, "m", 1), first, "the cached encoding is the same bytes");
        req.history.update(1, |m| {
            if let Message::Assistant { tool_calls, .. } = m {
                tool_calls[0].arguments = r#"{"path":"b"}"#.into();
            }
        });
        assert_eq!(body(&req)["messages"][1]["content"][0]["input"], json!({"path": "b"}));
        req.history.push(user("more"));
        let m = body(&req)["messages"].clone();
        assert_eq!(m[2]["content"][1], json!({"type": "text", "text": "more"}), "joined onto the tool results");
    }

    #[test]
    fn a_history_starting_with_the_assistant_gets_a_user_turn_first() {
        let m = messages(vec![assistant(Some("earlier answer"), &[]), user("next")]);
        assert_eq!(m[0], json!({"role": "user", "content": [{"type": "text", "text": LEADING_USER_TEXT}]}));
        assert_eq!(m[1]["role"], "assistant");
        assert_eq!(m.as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn a_reasoning_effort_turns_thinking_on() {
        let mut req = request(vec![user("hi")], vec![]);
        assert!(body(&req).get("thinking").is_none());
        req.reasoning_effort = Some("low".into());
        let b = body(&req);
        assert_eq!(b["thinking"], json!({"type": "enabled", "budget_tokens": 1024, "display": "summarized"}));
        assert_eq!(b["temperature"], 1);
        assert_eq!(b["stream"], true);
    }
}
