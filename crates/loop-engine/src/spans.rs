//! The spans one run records (`invoke_agent`, `chat`, `execute_tool`) when file telemetry is
//! on. Apart from `telemetry.rs` (the span file itself) because these take a [`RunCtx`].

use llm_providers::{ChatRequest, ChatResponse, ContentPart, Message, ProviderError, ToolContent, UserContent};
use serde_json::{json, Value};

use crate::autopilot::StopReason;
use crate::run_ctx::RunCtx;
use crate::telemetry::Span;

/// The `invoke_agent` span of one user message, when file telemetry is on.
pub(crate) fn agent_span(ctx: &RunCtx) -> Option<Span> {
    let spans = ctx.deps.spans.as_ref()?;
    let mut span = spans.root("invoke_agent", "invoke_agent");
    span.set("gen_ai.conversation.id", ctx.handle.id());
    span.set("gen_ai.agent.id", ctx.handle.id());
    span.set("gen_ai.request.model", ctx.view().settings.model.clone());
    Some(span)
}

pub(crate) fn end_agent_span(ctx: &RunCtx, span: Span, stop: StopReason) {
    let Some(spans) = ctx.deps.spans.as_ref() else { return };
    spans.end(span, (stop == StopReason::Error).then_some("the agent stopped on an error"));
}

/// A `chat` span for one model call under the run's span.
pub(crate) fn chat_span(ctx: &RunCtx, req: &ChatRequest, model: &str) -> Option<Span> {
    let (spans, parent) = (ctx.deps.spans.as_ref()?, ctx.trace.as_ref()?);
    let mut span = spans.child(parent, &format!("chat {model}"), "chat");
    span.set("gen_ai.conversation.id", ctx.handle.id());
    span.set("gen_ai.request.model", model);
    if spans.captures_content() {
        let mut messages = vec![json!({"role": "system", "parts": [text_part(&req.system)]})];
        messages.extend(req.history.messages().map(message_json));
        span.set("gen_ai.input.messages", Value::Array(messages).to_string());
    }
    Some(span)
}

pub(crate) fn end_chat_span(ctx: &RunCtx, span: Option<Span>, result: &Result<ChatResponse, ProviderError>) {
    let (Some(spans), Some(mut span)) = (ctx.deps.spans.as_ref(), span) else { return };
    match result {
        Ok(resp) => {
            span.set("gen_ai.usage.input_tokens", resp.usage.input_tokens);
            span.set("gen_ai.usage.output_tokens", resp.usage.output_tokens);
            if let Some(m) = &resp.model {
                span.set("gen_ai.response.model", m.clone());
            }
            if spans.captures_content() {
                let out: Vec<Value> = resp
                    .replies
                    .iter()
                    .map(|r| {
                        let mut parts: Vec<Value> =
                            if r.content.is_empty() { Vec::new() } else { vec![text_part(&r.content)] };
                        parts.extend(r.tool_calls.iter().map(
                            |c| json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}),
                        ));
                        json!({"role": "assistant", "parts": parts, "finish_reason": r.finish_reason})
                    })
                    .collect();
                span.set("gen_ai.output.messages", Value::Array(out).to_string());
            }
            spans.end(span, None);
        }
        // A cancelled call is not a failure of the model.
        Err(ProviderError::Cancelled) => spans.end(span, None),
        Err(e) => spans.end(span, Some(&e.to_string())),
    }
}

/// An `execute_tool` span for one tool call under the run's span.
pub(crate) fn tool_span(ctx: &RunCtx, call: &llm_providers::ToolCall) -> Option<Span> {
    let (spans, parent) = (ctx.deps.spans.as_ref()?, ctx.trace.as_ref()?);
    let mut span = spans.child(parent, &format!("execute_tool {}", call.name), "execute_tool");
    span.set("gen_ai.tool.name", call.name.clone());
    span.set("gen_ai.tool.call.id", call.id.clone());
    if spans.captures_content() {
        span.set("gen_ai.tool.call.arguments", call.arguments.clone());
    }
    Some(span)
}

pub(crate) fn end_tool_span(ctx: &RunCtx, span: Option<Span>, output: &tools::ToolOutput) {
    let (Some(spans), Some(mut span)) = (ctx.deps.spans.as_ref(), span) else { return };
    if spans.captures_content() {
        span.set("gen_ai.tool.call.result", output.text_for_llm.clone());
    }
    // A tool that reports a failure to the model is a result, not a failed span.
    spans.end(span, None);
}

fn text_part(text: &str) -> Value {
    json!({"type": "text", "content": text})
}

fn message_json(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "parts": [text_part(content)]}),
        Message::User { content: UserContent::Text(t) } => json!({"role": "user", "parts": [text_part(t)]}),
        Message::User { content: UserContent::Parts(parts) } => {
            json!({"role": "user", "parts": parts.iter().filter_map(part_json).collect::<Vec<_>>()})
        }
        Message::Assistant { content, tool_calls, .. } => {
            let mut parts: Vec<Value> = content.iter().filter(|c| !c.is_empty()).map(|c| text_part(c)).collect();
            parts.extend(
                tool_calls
                    .iter()
                    .map(|c| json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})),
            );
            json!({"role": "assistant", "parts": parts})
        }
        Message::Tool { tool_call_id, content } => {
            let response = match content {
                ToolContent::Text(t) => t.clone(),
                ToolContent::Parts(parts) => parts
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": tool_call_id, "response": response}]})
        }
    }
}

/// Text parts as they are; images and files by their kind only (their bytes are not telemetry).
fn part_json(p: &ContentPart) -> Option<Value> {
    match p {
        ContentPart::Text { text } => Some(text_part(text)),
        ContentPart::ImageUrl { .. } => Some(json!({"type": "image"})),
        _ => Some(json!({"type": "file"})),
    }
}
