//! The `ask_user` tool: offered when the client handles `userInput.request`.

use llm_providers::ToolSpec;
use protocol::generated::types as t;
use protocol::methods::{UserInputParams, UserInputRequest};
use serde_json::{json, Value};
use tools::ToolOutput;

use crate::run_ctx::RunCtx;

pub const ASK_USER: &str = "ask_user";

pub fn spec() -> ToolSpec {
    // Offered on every model call: built once.
    static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| {
        ToolSpec {
        name: ASK_USER.into(),
        description: "Ask the user a question and wait for the answer. Offer choices when there are clear options."
            .into(),
        parameters: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to ask."},
                "choices": {"type": "array", "items": {"type": "string"}, "description": "Options the user can pick from."},
                "allow_freeform": {"type": "boolean", "description": "Whether the user may answer in their own words (default true)."},
            },
            "required": ["question"],
        })),
    }
    })
    .clone()
}

pub(crate) async fn run(ctx: &RunCtx, tool_call_id: &str, args: &Value) -> ToolOutput {
    let Some(question) = args.get("question").and_then(Value::as_str) else {
        return ToolOutput::fail("The `question` argument is required.");
    };
    let choices: Option<Vec<String>> = args
        .get("choices")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_str).map(str::to_string).collect());
    let allow_freeform = args.get("allow_freeform").and_then(Value::as_bool).unwrap_or(true);
    let Some(client) = ctx.emitter().requester() else {
        return ToolOutput::fail("No user is available to answer the question.");
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let params = UserInputParams {
        session_id: ctx.handle.id().to_string(),
        question: question.to_string(),
        choices: choices.clone(),
        allow_freeform,
    };
    ctx.emitter().emit(t::UserInputRequestedData {
        request_id: request_id.clone(),
        question: question.to_string(),
        choices: choices.clone(),
        allow_freeform: Some(allow_freeform),
        tool_call_id: Some(tool_call_id.to_string()),
    });
    match crate::client::request::<UserInputRequest>(&*client, &params).await {
        Ok(answer) => {
            let (text, freeform) = (answer.answer, answer.was_freeform);
            ctx.emitter().emit(t::UserInputCompletedData {
                request_id,
                answer: Some(text.clone()),
                was_freeform: Some(freeform),
            });
            if freeform {
                ToolOutput::ok(format!("User responded: {text}"))
            } else {
                ToolOutput::ok(format!("User selected: {text}"))
            }
        }
        Err(e) => {
            ctx.emitter().emit(t::UserInputCompletedData { request_id, ..Default::default() });
            ToolOutput::fail(format!("Failed to get the user's answer: {e}"))
        }
    }
}
