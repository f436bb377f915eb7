//! Request bodies for `POST /chat/completions`.

use serde_json::{json, Map, Value};

use crate::body::{Body, BodyWriter};
use crate::tool_set::ToolSpec;
use crate::types::{ChatRequest, Message, Purpose, ToolCall};
use crate::wire_format::WireFormat;

/// Which dialect of the body to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFlavor {
    /// GitHub Copilot API: adds the CAPI-only `snippy` field.
    Capi,
    /// Plain OpenAI-compatible endpoints, which may reject unknown fields.
    OpenAi,
}

/// The JSON body, in the key order the real CLI sends (the replaying test harness doesn't
/// care, but captured traffic stays diffable). Written straight into bytes: each history
/// message's JSON is made once, copied while its chunk is open and shared once it is sealed, so
/// the cost of a call grows with what is new, not with the length of the conversation.
pub(crate) fn request_body(req: &ChatRequest, flavor: BodyFlavor) -> Body {
    let mut out = BodyWriter::with_capacity(capacity_hint(req));
    out.extend_from_slice(b"{\"model\":");
    out.json(&req.model);
    // `Message::System`'s JSON, with the prompt's string made once per prompt.
    out.extend_from_slice(b",\"messages\":[{\"role\":\"system\",\"content\":");
    out.share(req.system.json().clone());
    out.push(b'}');
    req.history.write_wire(&mut out, WireFormat::ChatCompletions, encode_message, &mut false);
    match (&req.reasoning_effort, flavor) {
        // A reasoning request, as the original sends one to a provider: the effort, and the
        // temperature reasoning models insist on (they reject the sampling knobs).
        (Some(effort), BodyFlavor::OpenAi) => {
            out.extend_from_slice(b"],\"reasoning_effort\":");
            out.json(effort);
            out.extend_from_slice(b",\"temperature\":1");
        }
        _ => {
            out.extend_from_slice(b"],\"temperature\":");
            match req.sampling.temperature {
                Some(t) => out.json(&t),
                None => out.push(b'0'),
            }
            out.extend_from_slice(b",\"top_p\":0.95,\"frequency_penalty\":0,\"presence_penalty\":0")
        }
    }
    // Only an MCP server's sampling request sets these; other calls' bodies have no such keys.
    if let Some(max) = req.sampling.max_tokens {
        out.extend_from_slice(b",\"max_tokens\":");
        out.json(&max);
    }
    if !req.sampling.stop.is_empty() {
        out.extend_from_slice(b",\"stop\":");
        out.json(&req.sampling.stop);
    }
    if flavor == BodyFlavor::Capi {
        out.extend_from_slice(b",\"snippy\":{\"enabled\":false}");
    }
    // Some endpoints reject an empty `tools` array, so the key is left out instead.
    if !req.tools.is_empty() {
        if req.purpose == Purpose::Compaction {
            out.extend_from_slice(b",\"tool_choice\":\"none\"");
        }
        out.extend_from_slice(b",\"tools\":");
        out.share(req.tools.wire(WireFormat::ChatCompletions, encode_tools));
    }
    if req.stream {
        out.extend_from_slice(b",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    }
    out.push(b'}');
    out.finish()
}

/// A first guess at the bytes a body writes itself: the messages not in a sealed chunk and the
/// parameters (the rest is shared). A short guess only grows the buffer.
pub(crate) fn capacity_hint(req: &ChatRequest) -> usize {
    req.history.tail_len() * 512 + 4096
}

/// One message's wire JSON.
fn encode_message(m: &Message) -> String {
    wire_message(m).to_string()
}

/// `{"type":"function","function":{name, description, parameters}}`, serialized straight
/// from the spec (its schema is shared, not copied).
#[derive(serde::Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(serde::Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction { name: &tool.name, description: &tool.description, parameters: &tool.parameters },
    }
}

/// One message in OpenAI shape. The internal `ToolCall` is flat; the wire nests it under
/// `function`, so assistant messages are built by hand while the rest follow their serde
/// derives (which already match the wire).
pub(crate) fn wire_message(message: &Message) -> Value {
    match message {
        Message::Assistant { content, tool_calls, .. } => {
            let mut m = Map::new();
            m.insert("role".into(), Value::String("assistant".into()));
            m.insert("content".into(), content.clone().map_or(Value::Null, Value::String));
            if !tool_calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(tool_calls.iter().map(wire_tool_call).collect()));
            }
            Value::Object(m)
        }
        // Serializing these plain data enums cannot fail; Null is only a formal fallback.
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

fn wire_tool_call(call: &ToolCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    })
}

/// The tools array's wire JSON.
fn encode_tools(tools: &[ToolSpec]) -> String {
    let tools: Vec<WireTool<'_>> = tools.iter().map(wire_tool).collect();
    serde_json::to_string(&tools).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentPart, History, ImageUrl, Initiator, ToolContent, UserContent};

    fn body_value(req: &ChatRequest, flavor: BodyFlavor) -> Value {
        serde_json::from_slice(&request_body(req, flavor).to_bytes()).expect("the body is JSON")
    }

    fn request(stream: bool, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            github_token: None,
            system: "sys".into(),
            history: History::new(vec![
                Message::User { content: UserContent::Text("hi".into()) },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "view".into(),
                        arguments: "{\"path\":\"a\"}".into(),
                    }],
                    reasoning: None,
                },
                Message::Tool { tool_call_id: "call_1".into(), content: ToolContent::Text("ok".into()) },
                Message::Assistant { content: Some("done".into()), tool_calls: vec![], reasoning: None },
                Message::User {
                    content: UserContent::Parts(vec![
                        ContentPart::Text { text: "look".into() },
                        ContentPart::ImageUrl { image_url: ImageUrl { url: "data:image/png;base64,AA".into() } },
                    ]),
                },
            ]),
            tools: tools.into(),
            stream,
            initiator: Initiator::User,
            interaction_id: "i".into(),
            session_id: "s".into(),
            extra_headers: vec![],
            client_name: None,
            sub_agent: None,
            sampling: Default::default(),
            reasoning_effort: None,
            purpose: Purpose::Turn,
        }
    }

    #[test]
    fn a_summary_call_offers_tools_but_forbids_them() {
        let tool =
            ToolSpec { name: "view".into(), description: "d".into(), parameters: json!({"type": "object"}).into() };
        let mut req = request(false, vec![tool]);
        assert!(body_value(&req, BodyFlavor::Capi).get("tool_choice").is_none());
        req.purpose = Purpose::Compaction;
        let body = body_value(&req, BodyFlavor::Capi);
        assert_eq!(body["tool_choice"], "none");
        assert_eq!(body["tools"][0]["function"]["name"], "view");
        assert_eq!(req.interaction_type(), "conversation-compaction");
        // Without tools there is nothing to forbid: some endpoints reject a lone tool_choice.
        req.tools = Default::default();
        assert!(body_value(&req, BodyFlavor::Capi).get("tool_choice").is_none());
    }

    #[test]
    fn messages_in_openai_shape() {
        let body = body_value(&request(false, vec![]), BodyFlavor::Capi);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "view", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
                ]},
            ])
        );
    }

    #[test]
    fn a_changed_message_is_encoded_again() {
        let mut req = request(false, vec![]);
        let before = body_value(&req, BodyFlavor::Capi);
        req.history.update(1, |m| {
            if let Message::Assistant { tool_calls, .. } = m {
                tool_calls[0].arguments = "{\"path\":\"b\"}".into();
            }
        });
        let after = body_value(&req, BodyFlavor::Capi);
        assert_eq!(before["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(after["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"b\"}");
    }

    #[test]
    fn body_fields_depend_on_stream_tools_and_flavor() {
        let plain = body_value(&request(false, vec![]), BodyFlavor::Capi);
        let keys: Vec<&str> = plain.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(
            keys,
            ["model", "messages", "temperature", "top_p", "frequency_penalty", "presence_penalty", "snippy"]
        );

        let tool = ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            parameters: std::sync::Arc::new(json!({"type": "object"})),
        };
        let streamed = body_value(&request(true, vec![tool]), BodyFlavor::OpenAi);
        assert!(streamed.get("snippy").is_none());
        assert_eq!(streamed["stream"], json!(true));
        assert_eq!(streamed["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            streamed["tools"],
            json!([{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}])
        );
    }

    #[test]
    fn a_reasoning_effort_asks_a_provider_to_reason_at_temperature_one() {
        let mut req = request(false, vec![]);
        req.reasoning_effort = Some("high".into());
        let body = body_value(&req, BodyFlavor::OpenAi);
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["temperature"], 1);
        assert!(body.get("top_p").is_none() && body.get("frequency_penalty").is_none(), "{body}");
        // The Copilot API body stays as it was.
        let capi = body_value(&req, BodyFlavor::Capi);
        assert!(capi.get("reasoning_effort").is_none());
        assert_eq!(capi["temperature"], 0);
    }

    #[test]
    fn sampling_options_reach_the_body_only_when_set() {
        let mut req = request(false, vec![]);
        let plain = String::from_utf8(request_body(&req, BodyFlavor::Capi).to_bytes().to_vec()).unwrap_or_default();
        assert!(plain.contains("\"temperature\":0,\"top_p\"") && !plain.contains("max_tokens"), "{plain}");
        req.sampling =
            crate::types::SamplingOptions { max_tokens: Some(42), temperature: Some(0.25), stop: vec!["END".into()] };
        let body = body_value(&req, BodyFlavor::Capi);
        assert_eq!((body["max_tokens"].clone(), body["temperature"].clone()), (json!(42), json!(0.25)));
        assert_eq!(body["stop"], json!(["END"]));
    }
}
