//! The built-in slash commands a headless session answers (`session.commands.invoke`), with
//! the original's listing (`builtin_commands.json`: names, aliases, hints, choices) and its
//! texts. Commands that only make sense in the original's terminal UI are not offered.

use std::sync::OnceLock;

use loop_engine::SessionHandle;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

const LISTING: &str = include_str!("builtin_commands.json");

/// The built-in commands as `session.commands.list` shows them.
pub fn listing() -> &'static [t::SlashCommandInfo] {
    static PARSED: OnceLock<Vec<t::SlashCommandInfo>> = OnceLock::new();
    PARSED.get_or_init(|| match serde_json::from_str(LISTING) {
        Ok(list) => list,
        Err(e) => {
            // A file compiled into the binary; the unit test below keeps it parseable.
            tracing::error!(error = %e, "built-in command listing unreadable");
            Vec::new()
        }
    })
}

/// The built-in command `name` (or one of its aliases) names, as listed.
fn resolve(name: &str) -> Option<&'static str> {
    listing()
        .iter()
        .find(|c| c.name == name || c.aliases.as_ref().is_some_and(|a| a.iter().any(|x| x == name)))
        .map(|c| c.name.as_str())
}

const ALLOW_ALL_ON: &str = "Permission policy: Allow All for this session. All permissions are now enabled. Tool, path, and URL requests will be automatically approved.";
const ALLOW_ALL_OFF: &str = "Permission policy: Manual Approval for this session. All permissions have been disabled. Tool, path, and URL requests will require approval.";
const SHOW_ALLOW_ALL: &str = "Permission policy: Allow All for this session. All permissions are enabled. Tool, path, and URL requests are automatically approved.";
const SHOW_MANUAL: &str =
    "Permission policy: Manual Approval for this session. Tool, path, and URL requests require individual approval.";

/// Runs the built-in command `name` with `input`; `None` when no built-in has that name.
pub async fn invoke(
    ctx: &Ctx,
    session: &SessionHandle,
    name: &str,
    input: &str,
) -> Option<Result<t::SlashCommandInvocationResult, RpcError>> {
    let command = resolve(name)?;
    let input = input.trim();
    Some(match command {
        "allow-all" => match input {
            "" | "on" => approve_all(ctx, session, true).await,
            "off" => approve_all(ctx, session, false).await,
            "show" => Ok(show_permissions(session)),
            other => Err(invalid(ctx, other, "/allow-all [on|off|show]")),
        },
        "permissions" => match input {
            "" | "show" => Ok(show_permissions(session)),
            "allow-all" => approve_all(ctx, session, true).await,
            "default" => approve_all(ctx, session, false).await,
            other => Err(invalid(ctx, other, "/permissions [default|allow-all|show]")),
        },
        "autopilot" => match input {
            "" | "on" => switch_mode(ctx, session, t::SessionMode::Autopilot, "Switched to autopilot mode.").await,
            "off" => switch_mode(ctx, session, t::SessionMode::Interactive, "Switched to interactive mode.").await,
            objective => Ok(agent_prompt(
                autopilot_prompt(objective),
                format!("Autopilot objective: {objective}"),
                Some(t::SessionMode::Autopilot),
            )),
        },
        "plan" if input.is_empty() => Ok(completed(None, Some(t::SessionMode::Plan))),
        "plan" => Ok(agent_prompt(plan_prompt(input), input.to_string(), Some(t::SessionMode::Plan))),
        "compact" => compact(ctx, session, input).await,
        "context" => context(ctx, session).await,
        "cwd" => change_directory(ctx, session, input).await,
        "model" if input.is_empty() => Ok(completed(None, None)),
        "model" => switch_model(ctx, session, input).await,
        "rename" if input.is_empty() => Err(ctx.failed("Usage: /rename <name>")),
        "rename" => match session.name(loop_engine::NameOp::Set(input.to_string())).await {
            Ok(_) => Ok(text(format!("Session renamed to: {input}"))),
            Err(e) => Err(ctx.engine_error(&e)),
        },
        "review" => {
            let mut prompt = String::from(REVIEW_PROMPT);
            let shown = if input.is_empty() {
                "my code changes".to_string()
            } else {
                prompt.push_str(&format!("\n\nAdditional instructions: {input}"));
                input.to_string()
            };
            Ok(agent_prompt(prompt, format!("Review: {shown}"), None))
        }
        _ => return None,
    })
}

const REVIEW_PROMPT: &str = "The user has requested a code review via the /review command. Use the task tool with agent_type: \"code-review\" to perform a code review.";

fn autopilot_prompt(objective: &str) -> String {
    format!(
        "The user set this explicit autopilot objective with /autopilot:\n\n{objective}\n\n\
         Work autonomously toward this objective in clear checkpoints.\n\
         Before acting, identify the success condition and the validation loop needed to prove progress.\n\
         Keep making scoped progress until the objective is fully achieved, blocked by a real issue, or the user changes the objective.\n\
         Only call task_complete when the objective is fully achieved and verified.\n\
         Do not call task_complete if more implementation, validation, or cleanup remains."
    )
}

fn plan_prompt(request: &str) -> String {
    format!(
        "[[PLAN]] I want to create an implementation plan. Please:\n\
         1. Analyze the codebase to understand the current state\n\
         2. Ask clarifying questions if my request is ambiguous\n\
         3. Create a structured plan and save it to the plan file in the session folder\n\n\
         My request: {request}"
    )
}

fn invalid(ctx: &Ctx, argument: &str, usage: &str) -> RpcError {
    ctx.failed(format!("Invalid argument \"{argument}\". Usage: {usage}"))
}

fn text(text: String) -> t::SlashCommandInvocationResult {
    t::SlashCommandInvocationResult::Text(t::SlashCommandTextResult { text, ..Default::default() })
}

fn completed(message: Option<&str>, mode: Option<t::SessionMode>) -> t::SlashCommandInvocationResult {
    t::SlashCommandInvocationResult::Completed(t::SlashCommandCompletedResult {
        message: message.map(str::to_string),
        mode,
        ..Default::default()
    })
}

fn agent_prompt(prompt: String, display: String, mode: Option<t::SessionMode>) -> t::SlashCommandInvocationResult {
    t::SlashCommandInvocationResult::AgentPrompt(t::SlashCommandAgentPromptResult {
        prompt,
        display_prompt: display,
        mode,
        ..Default::default()
    })
}

fn show_permissions(session: &SessionHandle) -> t::SlashCommandInvocationResult {
    let all = session.view().settings.approve_all;
    text(if all { SHOW_ALLOW_ALL } else { SHOW_MANUAL }.to_string())
}

async fn approve_all(
    ctx: &Ctx,
    session: &SessionHandle,
    on: bool,
) -> Result<t::SlashCommandInvocationResult, RpcError> {
    session.set_approve_all(on).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(text(if on { ALLOW_ALL_ON } else { ALLOW_ALL_OFF }.to_string()))
}

async fn switch_mode(
    ctx: &Ctx,
    session: &SessionHandle,
    mode: t::SessionMode,
    message: &str,
) -> Result<t::SlashCommandInvocationResult, RpcError> {
    session.set_mode(mode).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(completed(Some(message), None))
}

/// Compacts the conversation now, with the user's focus instructions if any.
async fn compact(ctx: &Ctx, session: &SessionHandle, input: &str) -> Result<t::SlashCommandInvocationResult, RpcError> {
    let focus = (!input.is_empty()).then(|| input.to_string());
    let done = session.compact(focus, Some(t::CompactionTrigger::Manual)).await.map_err(|e| ctx.engine_error(&e))?;
    if !done.success || done.messages_removed == 0 {
        return Err(ctx.failed("Nothing to compact."));
    }
    let plural = if done.messages_removed == 1 { "" } else { "s" };
    Ok(text(format!(
        "Compacted conversation history and removed {} message{plural} and {} tokens.",
        done.messages_removed, done.tokens_removed
    )))
}

/// What fills the context window, part by part.
async fn context(ctx: &Ctx, session: &SessionHandle) -> Result<t::SlashCommandInvocationResult, RpcError> {
    let params = t::SessionMetadataContextInfoParams { session_id: session.id().to_string(), ..Default::default() };
    let info = super::session_services::context_info(ctx, params).await?.context_info;
    let Some(info) = info else {
        return Ok(text("No context yet: the session has not talked to its model. Send a message first.".into()));
    };
    let limit = info.limit.max(1);
    let percent = |n: u64| n * 100 / limit;
    let free = info.limit.saturating_sub(info.total_tokens);
    let mut out = format!(
        "Context usage: {} · {}/{} tokens ({}%)\n",
        info.model_name,
        info.total_tokens,
        info.limit,
        percent(info.total_tokens)
    );
    for (part, tokens) in [
        ("System prompt", info.system_tokens),
        ("Tools", info.tool_definitions_tokens),
        ("MCP tools", info.mcp_tools_tokens),
        ("Messages", info.conversation_tokens),
        ("Free space", free),
    ] {
        out.push_str(&format!("  {part:<14} {tokens:>8}  ({}%)\n", percent(tokens)));
    }
    Ok(text(out.trim_end().to_string()))
}

async fn change_directory(
    ctx: &Ctx,
    session: &SessionHandle,
    input: &str,
) -> Result<t::SlashCommandInvocationResult, RpcError> {
    let cwd = session.view().settings.cwd.clone();
    if input.is_empty() {
        return Ok(text(format!("Current working directory: {}", cwd.display())));
    }
    let wanted = cwd.join(input);
    if !tokio::fs::metadata(&wanted).await.map(|m| m.is_dir()).unwrap_or(false) {
        return Err(
            ctx.failed(format!("Failed to change directory: Directory does not exist or cannot be accessed: {input}"))
        );
    }
    let dir = crate::handlers::session::confine_cwd(ctx, &wanted.to_string_lossy())?;
    let patch = loop_engine::OptionsPatch { working_directory: Some(dir.clone()), ..Default::default() };
    session.update_options(patch).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(completed(Some(&format!("Changed working directory to: {}", dir.display())), None))
}

async fn switch_model(
    ctx: &Ctx,
    session: &SessionHandle,
    model: &str,
) -> Result<t::SlashCommandInvocationResult, RpcError> {
    let models = ctx.server.engine.session_models(session).await.map_err(|e| ctx.engine_error(&e))?;
    if !models.iter().any(|m| m.id == model) {
        let mut out = format!("Model \"{model}\" is unsupported.\n\nAvailable models:\n");
        for m in &models {
            out.push_str(&format!("  - \"{}\"\n", m.id));
        }
        return Ok(text(out.trim_end().to_string()));
    }
    session.switch_model(model, None, None).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(completed(None, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_parses_and_aliases_resolve() {
        let names: Vec<&str> = listing().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["allow-all", "permissions", "autopilot", "compact", "context", "cwd", "model", "plan", "rename", "review"]
        );
        assert!(listing().iter().all(|c| c.kind == t::SlashCommandKind::Builtin));
        assert_eq!(resolve("yolo"), Some("allow-all"));
        assert_eq!(resolve("cd"), Some("cwd"));
        assert_eq!(resolve("goal"), Some("autopilot"));
        assert_eq!(resolve("HELP"), None);
    }
}
