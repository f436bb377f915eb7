//! The `ask_user` tool: offered when the client handles `userInput.request`.

use llm_providers::ToolSpec;
use serde_json::{json, Value};
use tools::ToolOutput;

use crate::run::RunCtx;

pub const ASK_USER: &str = "ask_user";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ASK_USER.into(),
        description: "Ask the user a question and wait for the answer. Offer choices when there are clear options."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to ask."},
                "choices": {"type": "array", "items": {"type": "string"}, "description": "Options the user can pick from."},
                "allow_freeform": {"type": "boolean", "description": "Whether the user may answer in their own words (default true)."},
            },
            "required": ["question"],
        }),
    }
}

pub(crate) async fn run(ctx: &RunCtx, tool_call_id: &str, args: &Value) -> ToolOutput {
    let Some(question) = args.get("question").and_then(Value::as_str) else {
        return ToolOutput::fail("The `question` argument is required.");
    };
    let choices = args.get("choices").and_then(Value::as_array).cloned();
    let allow_freeform = args.get("allow_freeform").and_then(Value::as_bool).unwrap_or(true);
    let Some(client) = ctx.emitter().requester() else {
        return ToolOutput::fail("No user is available to answer the question.");
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let mut requested = json!({"requestId": request_id, "question": question, "allowFreeform": allow_freeform, "toolCallId": tool_call_id});
    let mut params = json!({"sessionId": ctx.handle.id(), "question": question, "allowFreeform": allow_freeform});
    if let Some(c) = &choices {
        requested["choices"] = json!(c);
        params["choices"] = json!(c);
    }
    ctx.emitter().emit("user_input.requested", requested, true);
    let answer = client.request("userInput.request", params).await;
    match answer {
        Ok(v) => {
            let text = v.get("answer").and_then(Value::as_str).unwrap_or("").to_string();
            let freeform = v.get("wasFreeform").and_then(Value::as_bool).unwrap_or(false);
            ctx.emitter().emit(
                "user_input.completed",
                json!({"requestId": request_id, "answer": text, "wasFreeform": freeform}),
                true,
            );
            if freeform {
                ToolOutput::ok(format!("User responded: {text}"))
            } else {
                ToolOutput::ok(format!("User selected: {text}"))
            }
        }
        Err(e) => {
            ctx.emitter().emit("user_input.completed", json!({"requestId": request_id}), true);
            ToolOutput::fail(format!("Failed to get the user's answer: {e}"))
        }
    }
}
