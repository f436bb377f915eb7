//! Request bodies for `POST /responses`.
//!
//! The Responses API has no roles for tool traffic: a conversation is a flat list of input
//! items, so one history message becomes a run of items (an assistant turn is its reasoning
//! items, its text and one `function_call` per tool call). Each message's run is encoded once
//! and kept by the history (`WireFormat::Responses`), like the chat-completions body does.

use serde_json::{json, Value};

use crate::body::{Body, BodyWriter};
use crate::tool_set::ToolSpec;
use crate::types::{ChatRequest, ContentPart, Message, ToolContent, UserContent};
use crate::wire_format::WireFormat;

/// `ReasoningBlocks::provider` of the reasoning items this API returns and accepts back. Here,
/// not in the parent that re-exports it: the request and response files then need not import
/// their parent, which imports them.
pub const REASONING_PROVIDER: &str = "openai-responses";

/// The JSON body, in the key order the original CLI sends. `model` is the wire model.
pub(crate) fn request_body(req: &ChatRequest, model: &str, max_output_tokens: Option<u64>) -> Body {
    let mut out = BodyWriter::with_capacity(crate::openai_chat::capacity_hint(req));
    out.extend_from_slice(b"{\"model\":");
    out.json(model);
    out.extend_from_slice(b",\"instructions\":");
    out.share(req.system.json().clone());
    out.extend_from_slice(b",\"input\":[");
    // A message may encode to no items at all (an empty assistant turn): no stray comma then.
    req.history.write_wire(&mut out, WireFormat::Responses, encode_items, &mut true);
    out.push(b']');
    // Some endpoints reject an empty `tools` array, so the key is left out instead.
    if !req.tools.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        out.share(req.tools.wire(WireFormat::Responses, encode_tools));
    }
    if req.purpose == crate::types::Purpose::Compaction && !req.tools.is_empty() {
        out.extend_from_slice(b",\"tool_choice\":\"none\"");
    }
    match &req.reasoning_effort {
        Some(effort) => {
            out.extend_from_slice(b",\"reasoning\":{\"effort\":");
            out.json(effort);
            out.extend_from_slice(b",\"summary\":\"auto\"}");
        }
        None => out.extend_from_slice(b",\"reasoning\":{\"summary\":\"auto\"}"),
    }
    // A cache key groups a session's calls on the same cache shard; an empty one means nothing.
    if !req.session_id.is_empty() {
        out.extend_from_slice(b",\"prompt_cache_key\":");
        out.json(&req.session_id);
    }
    // Nothing is kept server-side, so reasoning must come back encrypted for the next call.
    out.extend_from_slice(b",\"store\":false,\"stream\":");
    out.extend_from_slice(if req.stream { b"true" } else { b"false" });
    out.extend_from_slice(b",\"include\":[\"reasoning.encrypted_content\"],\"parallel_tool_calls\":true");
    // An MCP server's sampling request may set a temperature and a limit; the Responses API
    // has no stop sequences, so those are not sent.
    if let (Some(t), None) = (req.sampling.temperature, &req.reasoning_effort) {
        out.extend_from_slice(b",\"temperature\":");
        out.json(&t);
    }
    let max_output_tokens = match (req.sampling.max_tokens, max_output_tokens) {
        (Some(asked), Some(configured)) => Some(asked.min(configured)),
        (asked, configured) => asked.or(configured),
    };
    if let Some(max) = max_output_tokens {
        out.extend_from_slice(b",\"max_output_tokens\":");
        out.json(&max);
    }
    out.push(b'}');
    out.finish()
}

/// `{"type":"function", name, description, parameters}`, serialized straight from the spec
/// (its schema is shared, not copied). No `strict`: the original CLI sends none.
#[derive(serde::Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool { kind: "function", name: &tool.name, description: &tool.description, parameters: &tool.parameters }
}

/// One message's input items, comma-separated (empty when it has none).
fn encode_items(message: &Message) -> String {
    input_items(message).iter().map(Value::to_string).collect::<Vec<_>>().join(",")
}

/// The input items a history message stands for.
pub(crate) fn input_items(message: &Message) -> Vec<Value> {
    match message {
        Message::System { content } => vec![text_message("system", "input_text", content)],
        Message::User { content: UserContent::Text(text) } => vec![text_message("user", "input_text", text)],
        Message::User { content: UserContent::Parts(parts) } => {
            let content: Vec<Value> = parts.iter().map(input_part).collect();
            if content.is_empty() {
                Vec::new()
            } else {
                vec![json!({"type": "message", "role": "user", "content": content})]
            }
        }
        Message::Assistant { content, tool_calls, reasoning } => {
            let mut items = Vec::new();
            // Reasoning goes back only to the API that produced it. Without store, the server
            // keeps nothing: an item is usable only with its encrypted content, and one
            // without it would be looked up by id and fail the whole call ("item not found").
            if let Some(blocks) = reasoning.as_ref().filter(|r| r.provider == REASONING_PROVIDER) {
                items.extend(
                    blocks
                        .blocks
                        .iter()
                        .filter(|b| b.get("encrypted_content").and_then(Value::as_str).is_some_and(|c| !c.is_empty()))
                        .cloned(),
                );
            }
            if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                items.push(text_message("assistant", "output_text", text));
            }
            items.extend(tool_calls.iter().map(|call| {
                json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments})
            }));
            items
        }
        Message::Tool { tool_call_id, content: ToolContent::Text(text) } => {
            vec![json!({"type": "function_call_output", "call_id": tool_call_id, "output": text})]
        }
        Message::Tool { tool_call_id, content: ToolContent::Parts(parts) } => {
            // `function_call_output.output` is text on every Responses endpoint we target (the
            // array form is newer and not universal), so images a tool returned follow the
            // output as a user message, where every endpoint accepts them.
            let text: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } | ContentPart::File { .. } => None,
                })
                .collect();
            let mut items =
                vec![json!({"type": "function_call_output", "call_id": tool_call_id, "output": text.join("\n")})];
            let images: Vec<Value> =
                parts.iter().filter(|p| !matches!(p, ContentPart::Text { .. })).map(input_part).collect();
            if !images.is_empty() {
                items.push(json!({"type": "message", "role": "user", "content": images}));
            }
            items
        }
    }
}

fn text_message(role: &str, part_type: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": part_type, "text": text}]})
}

fn input_part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
        ContentPart::ImageUrl { image_url } => json!({"type": "input_image", "image_url": image_url.url}),
        ContentPart::File { file } => {
            json!({"type": "input_file", "filename": file.filename.as_deref().unwrap_or("file"), "file_data": file.file_data})
        }
    }
}

/// The tools array's wire JSON.
fn encode_tools(tools: &[ToolSpec]) -> String {
    let tools: Vec<WireTool<'_>> = tools.iter().map(wire_tool).collect();
    serde_json::to_string(&tools).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{History, ImageUrl, Initiator, ReasoningBlocks, ToolCall};

    fn body_value(req: &ChatRequest, max: Option<u64>) -> Value {
        serde_json::from_slice(&request_body(req, "wire-model", max).to_bytes()).expect("the body is JSON")
    }

    fn request(history: Vec<Message>, stream: bool, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: "session-model".into(),
            github_token: None,
            system: "sys".into(),
            history: History::new(history),
            tools: tools.into(),
            stream,
            initiator: Initiator::User,
            interaction_id: "i".into(),
            session_id: "session-7".into(),
            extra_headers: vec![],
            client_name: None,
            sub_agent: None,
            sampling: Default::default(),
            purpose: Default::default(),
            reasoning_effort: None,
        }
    }

    fn reasoning_item(id: &str, encrypted: Option<&str>) -> Value {
        let mut item = json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": "thought"}]});
        if let Some(e) = encrypted {
            item["encrypted_content"] = json!(e);
        }
        item
    }

    #[test]
    fn body_fields_in_the_cli_order() {
        let tool = ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            parameters: std::sync::Arc::new(json!({"type": "object"})),
        };
        let req = request(vec![Message::User { content: UserContent::Text("hi".into()) }], true, vec![tool]);
        let body = body_value(&req, Some(512));
        let keys: Vec<&str> = body.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(
            keys,
            [
                "model",
                "instructions",
                "input",
                "tools",
                "reasoning",
                "prompt_cache_key",
                "store",
                "stream",
                "include",
                "parallel_tool_calls",
                "max_output_tokens"
            ]
        );
        assert_eq!(body["model"], "wire-model");
        assert_eq!(body["instructions"], "sys");
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "name": "bash", "description": "run", "parameters": {"type": "object"}}])
        );
        assert_eq!(body["reasoning"], json!({"summary": "auto"}));
        assert_eq!(body["prompt_cache_key"], "session-7");
        assert_eq!((body["store"].clone(), body["stream"].clone()), (json!(false), json!(true)));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["parallel_tool_calls"], json!(true));
        assert_eq!(body["max_output_tokens"], json!(512));

        let plain = body_value(&request(vec![], false, vec![]), None);
        assert_eq!(plain["input"], json!([]));
        assert_eq!(plain["stream"], json!(false));
        assert!(plain.get("tools").is_none() && plain.get("max_output_tokens").is_none());
    }

    #[test]
    fn a_tool_round_trip_becomes_input_items() {
        let blocks = ReasoningBlocks {
            provider: REASONING_PROVIDER.into(),
            blocks: vec![reasoning_item("rs_1", Some("enc-1")), reasoning_item("rs_2", None)],
        };
        let history = vec![
            Message::User { content: UserContent::Text("hi".into()) },
            Message::Assistant {
                content: Some("Looking.".into()),
                tool_calls: vec![
                    ToolCall { id: "call_1".into(), name: "view".into(), arguments: "{\"path\":\"a\"}".into() },
                    ToolCall { id: "call_2".into(), name: "grep".into(), arguments: "{}".into() },
                ],
                reasoning: Some(Box::new(blocks)),
            },
            Message::Tool { tool_call_id: "call_1".into(), content: ToolContent::Text("ok".into()) },
            Message::Tool { tool_call_id: "call_2".into(), content: ToolContent::Text("none".into()) },
            Message::Assistant { content: None, tool_calls: vec![], reasoning: None },
            Message::Assistant { content: Some("done".into()), tool_calls: vec![], reasoning: None },
        ];
        let body = body_value(&request(history, false, vec![]), None);
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                reasoning_item("rs_1", Some("enc-1")),
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
                {"type": "function_call", "call_id": "call_1", "name": "view", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "grep", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
                {"type": "function_call_output", "call_id": "call_2", "output": "none"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            ]),
            "the reasoning item without encrypted content is left out; the empty turn adds nothing"
        );
    }

    #[test]
    fn reasoning_from_another_provider_is_dropped() {
        let blocks = ReasoningBlocks {
            provider: "anthropic".into(),
            blocks: vec![json!({"type": "thinking", "thinking": "x", "signature": "s", "encrypted_content": "e"})],
        };
        let items = input_items(&Message::Assistant {
            content: Some("a".into()),
            tool_calls: vec![],
            reasoning: Some(Box::new(blocks)),
        });
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["role"], "assistant");
    }

    #[test]
    fn images_in_user_messages_and_tool_results() {
        let png = || ContentPart::ImageUrl { image_url: ImageUrl { url: "data:image/png;base64,AA".into() } };
        let user = input_items(&Message::User {
            content: UserContent::Parts(vec![ContentPart::Text { text: "look".into() }, png()]),
        });
        assert_eq!(
            user,
            vec![json!({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA"}
            ]})]
        );
        let tool = input_items(&Message::Tool {
            tool_call_id: "call_9".into(),
            content: ToolContent::Parts(vec![
                ContentPart::Text { text: "a".into() },
                png(),
                ContentPart::Text { text: "b".into() },
            ]),
        });
        assert_eq!(
            tool,
            vec![
                json!({"type": "function_call_output", "call_id": "call_9", "output": "a\nb"}),
                json!({"type": "message", "role": "user", "content": [
                    {"type": "input_image", "image_url": "data:image/png;base64,AA"}
                ]}),
            ]
        );
        let text_only = input_items(&Message::Tool {
            tool_call_id: "c".into(),
            content: ToolContent::Parts(vec![ContentPart::Text { text: "t".into() }]),
        });
        assert_eq!(text_only.len(), 1, "no image, no extra message");
    }

    #[test]
    fn the_encoded_run_is_cached_and_redone_after_a_change() {
        let mut req = request(
            vec![Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall { id: "c".into(), name: "view".into(), arguments: "{\"p\":1}".into() }],
                reasoning: None,
            }],
            false,
            vec![],
        );
        let before = body_value(&req, None);
        let cached = req.history.get(0).unwrap().wire(WireFormat::Responses, |_| -> String { panic!("encoded again") });
        assert!(cached.contains("\"function_call\""), "the next call copies the cached run: {cached}");
        req.history.update(0, |m| {
            if let Message::Assistant { tool_calls, .. } = m {
                tool_calls[0].arguments = "{\"p\":2}".into();
            }
        });
        let after = body_value(&req, None);
        assert_eq!(before["input"][0]["arguments"], "{\"p\":1}");
        assert_eq!(after["input"][0]["arguments"], "{\"p\":2}");
    }

    #[test]
    fn no_cache_key_without_a_session() {
        let mut req = request(vec![], false, vec![]);
        req.session_id.clear();
        assert!(body_value(&req, None).get("prompt_cache_key").is_none());
    }

    #[test]
    fn a_reasoning_effort_goes_into_the_reasoning_object() {
        let mut req = request(vec![Message::User { content: UserContent::Text("hi".into()) }], false, vec![]);
        assert_eq!(body_value(&req, None)["reasoning"], json!({"summary": "auto"}));
        req.reasoning_effort = Some("medium".into());
        assert_eq!(body_value(&req, None)["reasoning"], json!({"effort": "medium", "summary": "auto"}));
    }
}
