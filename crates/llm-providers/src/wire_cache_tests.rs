//! The cached wire form of a history (each message encoded once, copied on later calls) must
//! give the very bytes a fresh encoding gives, in every request format, call after call.

use serde_json::json;

use crate::openai_chat::{request_body as chat_body, BodyFlavor};
use crate::types::{
    ChatRequest, ContentPart, History, ImageUrl, Initiator, Message, ReasoningBlocks, ToolCall, ToolContent, ToolSpec,
    UserContent,
};
use crate::ToolSet;

/// Turn `n` of a long conversation with tools: a user message, an assistant message calling
/// tools (with reasoning every few turns), their results (an image now and then), and the
/// assistant's answer.
fn turn(n: usize) -> Vec<Message> {
    let calls: Vec<ToolCall> = (0..1 + n % 3)
        .map(|k| ToolCall {
            id: format!("call_{n}_{k}"),
            name: if k % 2 == 0 { "view".into() } else { "bash".into() },
            arguments: format!("{{\"path\":\"/src/file_{n}_{k}.rs\",\"note\":\"quote \\\" and \\\\ and é\"}}"),
        })
        .collect();
    let reasoning = n.is_multiple_of(4).then(|| ReasoningBlocks {
        provider: if n.is_multiple_of(8) { "anthropic".into() } else { "openai-responses".into() },
        blocks: vec![json!({"type": "thinking", "thinking": format!("step {n}"), "signature": "sig"})],
    });
    let mut out = vec![
        Message::User { content: UserContent::Text(format!("question {n}: \"why\"\n\ttabs & <tags>")) },
        Message::Assistant {
            content: n.is_multiple_of(2).then(|| format!("looking {n}")),
            tool_calls: calls.clone(),
            reasoning: reasoning.map(Box::new),
        },
    ];
    for (k, call) in calls.iter().enumerate() {
        let content = if (n + k).is_multiple_of(5) {
            ToolContent::Parts(vec![
                ContentPart::Text { text: format!("image {n}") },
                ContentPart::ImageUrl { image_url: ImageUrl { url: "data:image/png;base64,iVBORw0KGgo=".into() } },
            ])
        } else {
            ToolContent::Text(format!("result {n}.{k}\n{}", "line\n".repeat(k + 1)))
        };
        out.push(Message::Tool { tool_call_id: call.id.clone(), content });
    }
    out.push(Message::Assistant { content: Some(format!("answer {n} ✓")), tool_calls: vec![], reasoning: None });
    out
}

fn request(history: History) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        github_token: None,
        system: "system prompt".into(),
        history,
        tools: ToolSet::new(vec![ToolSpec {
            name: "view".into(),
            description: "d".into(),
            parameters: std::sync::Arc::new(json!({"type": "object"})),
        }]),
        stream: true,
        initiator: Initiator::Agent,
        interaction_id: "i".into(),
        session_id: "s".into(),
        extra_headers: vec![],
        reasoning_effort: None,
        purpose: Default::default(),
        client_name: None,
        sub_agent: None,
        sampling: Default::default(),
    }
}

type Encoder = fn(&ChatRequest) -> bytes::Bytes;

const FORMATS: [(&str, Encoder); 4] = [
    ("chat completions (CAPI)", |r| chat_body(r, BodyFlavor::Capi).to_bytes()),
    ("chat completions (OpenAI)", |r| chat_body(r, BodyFlavor::OpenAi).to_bytes()),
    ("responses", |r| crate::responses::request::request_body(r, "m", Some(100)).to_bytes()),
    ("anthropic", |r| crate::anthropic::request::request_body(r, "m", 8192).to_bytes()),
];

#[test]
fn a_long_history_encodes_from_its_cache_byte_for_byte_as_afresh() {
    for (name, encode) in FORMATS {
        let mut live = History::default();
        let mut all = Vec::new();
        for n in 0..150 {
            for message in turn(n) {
                all.push(message.clone());
                live.push(message);
            }
            // Every call goes through the live history, whose messages keep their wire forms;
            // every fifth one is compared with a history that was never encoded.
            let cached = encode(&request(live.clone()));
            if n % 5 == 4 || n == 149 {
                let fresh = encode(&request(History::new(all.clone())));
                assert!(cached == fresh, "{name}: turn {n} differs from a fresh encoding");
                serde_json::from_slice::<serde_json::Value>(&cached).expect("the body is JSON");
            }
        }
        assert!(all.len() >= 750, "the history is long: {}", all.len());
    }
}

#[test]
fn a_history_sent_in_one_format_then_another_encodes_each_correctly() {
    let mut live = History::default();
    let mut all = Vec::new();
    for n in 0..40 {
        for message in turn(n) {
            all.push(message.clone());
            live.push(message);
        }
        // The cache holds the first format; the other formats must still encode correctly.
        let (name, encode) = FORMATS[n % FORMATS.len()];
        let cached = encode(&request(live.clone()));
        let fresh = encode(&request(History::new(all.clone())));
        assert!(cached == fresh, "{name}: turn {n} differs after a format change");
    }
}

#[test]
fn a_changed_or_truncated_history_drops_only_the_stale_wire_forms() {
    for (name, encode) in FORMATS {
        let mut all: Vec<Message> = (0..30).flat_map(turn).collect();
        let mut live = History::new(all.clone());
        encode(&request(live.clone()));
        live.update(3, |m| *m = Message::User { content: UserContent::Text("edited".into()) });
        all[3] = Message::User { content: UserContent::Text("edited".into()) };
        live.truncate(100);
        all.truncate(100);
        live.replace_front(10, Message::User { content: UserContent::Text("summary".into()) });
        all.splice(..10, [Message::User { content: UserContent::Text("summary".into()) }]);
        let cached = encode(&request(live));
        let fresh = encode(&request(History::new(all)));
        assert!(cached == fresh, "{name}: an edited history differs from a fresh encoding");
    }
}

#[test]
fn a_body_built_from_joined_chunks_holds_every_message_once_in_order() {
    // 200+ messages: several sealed chunks (sent twice, so the second call copies their
    // joined forms) and a partly filled tail.
    let all: Vec<Message> = (0..45).flat_map(turn).collect();
    assert!(all.len() > 3 * 64, "several full chunks: {}", all.len());
    let live = History::new(all.clone());
    let mut req = request(live);
    req.system = "a \"quoted\" system\nprompt ✓".into();
    for _ in 0..2 {
        let body: serde_json::Value =
            serde_json::from_slice(&chat_body(&req, BodyFlavor::Capi).to_bytes()).expect("JSON");
        let mut expected = vec![serde_json::to_value(Message::System { content: req.system.to_string() }).unwrap()];
        expected.extend(all.iter().map(crate::openai_chat::wire_message));
        assert_eq!(body["messages"], serde_json::Value::Array(expected));
    }
}
