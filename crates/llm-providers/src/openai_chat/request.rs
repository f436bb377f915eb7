//! Request bodies for `POST /chat/completions`.

use serde_json::{json, Map, Value};

use crate::types::{ChatRequest, Message, ToolCall, ToolSpec};

/// Which dialect of the body to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFlavor {
    /// GitHub Copilot API: adds the CAPI-only `snippy` field.
    Capi,
    /// Plain OpenAI-compatible endpoints, which may reject unknown fields.
    #[allow(dead_code)] // used once BYOK providers land
    OpenAi,
}

/// The JSON body, in the key order the real CLI sends (the replaying test harness doesn't
/// care, but captured traffic stays diffable).
pub(crate) fn request_body(req: &ChatRequest, flavor: BodyFlavor) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(req.model.clone()));
    body.insert("messages".into(), Value::Array(req.messages.iter().map(wire_message).collect()));
    body.insert("temperature".into(), json!(0));
    body.insert("top_p".into(), json!(0.95));
    body.insert("frequency_penalty".into(), json!(0));
    body.insert("presence_penalty".into(), json!(0));
    if flavor == BodyFlavor::Capi {
        body.insert("snippy".into(), json!({"enabled": false}));
    }
    // Some endpoints reject an empty `tools` array, so the key is left out instead.
    if !req.tools.is_empty() {
        body.insert("tools".into(), Value::Array(req.tools.iter().map(wire_tool).collect()));
    }
    if req.stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn wire_tool(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
    })
}

/// One message in OpenAI shape. The internal `ToolCall` is flat; the wire nests it under
/// `function`, so assistant messages are built by hand while the rest follow their serde
/// derives (which already match the wire).
pub(crate) fn wire_message(message: &Message) -> Value {
    match message {
        Message::Assistant { content, tool_calls } => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentPart, ImageUrl, Initiator, ToolContent, UserContent};

    fn request(stream: bool, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::System { content: "sys".into() },
                Message::User { content: UserContent::Text("hi".into()) },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "view".into(),
                        arguments: "{\"path\":\"a\"}".into(),
                    }],
                },
                Message::Tool { tool_call_id: "call_1".into(), content: ToolContent::Text("ok".into()) },
                Message::Assistant { content: Some("done".into()), tool_calls: vec![] },
                Message::User {
                    content: UserContent::Parts(vec![
                        ContentPart::Text { text: "look".into() },
                        ContentPart::ImageUrl { image_url: ImageUrl { url: "data:image/png;base64,AA".into() } },
                    ]),
                },
            ],
            tools,
            stream,
            initiator: Initiator::User,
            interaction_id: "i".into(),
            session_id: "s".into(),
            extra_headers: vec![],
        }
    }

    #[test]
    fn messages_in_openai_shape() {
        let body = request_body(&request(false, vec![]), BodyFlavor::Capi);
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
    fn body_fields_depend_on_stream_tools_and_flavor() {
        let plain = request_body(&request(false, vec![]), BodyFlavor::Capi);
        let keys: Vec<&str> = plain.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(
            keys,
            ["model", "messages", "temperature", "top_p", "frequency_penalty", "presence_penalty", "snippy"]
        );

        let tool = ToolSpec { name: "bash".into(), description: "run".into(), parameters: json!({"type": "object"}) };
        let streamed = request_body(&request(true, vec![tool]), BodyFlavor::OpenAi);
        assert!(streamed.get("snippy").is_none());
        assert_eq!(streamed["stream"], json!(true));
        assert_eq!(streamed["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            streamed["tools"],
            json!([{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}])
        );
    }
}
