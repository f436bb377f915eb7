//! Tool dispatch: which tools the model sees, and running the calls of one reply concurrently.

use std::sync::Arc;

use async_trait::async_trait;
use llm_providers::{ToolCall, ToolSpec};
use protocol::generated::types::{self as t, HookType, SessionMode};
use protocol::hooks;
use serde_json::{json, Value};
use tools::{PermissionDecision, PermissionGate, PermissionRequest, ToolContext, ToolOutput};

use crate::deps::Deps;
use crate::permission;
use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;
use crate::skill_tool::SKILL;
use crate::subagent::agent_tools;
use crate::subagent::TASK;
use crate::tool_handlers::{self, Handled};

pub(crate) enum CallOutcome {
    /// The model-visible text; `rejected` stops the loop (an external tool said so);
    /// `task_complete` carries the summary when the model declared the task done.
    Done {
        text: String,
        rejected: bool,
        task_complete: Option<String>,
        images: Vec<String>,
        modified_args: Option<String>,
        /// Extra guidance a `postToolUseFailure` hook wants the model to read.
        guidance: Option<String>,
        /// The file the tool created or changed.
        file_edit: Option<String>,
    },
    Interrupted,
}

/// Built-ins that pass the filters, then SDK tools (an override replaces its built-in).
pub(crate) fn tool_specs(deps: &Deps, s: &SessionSettings, mcp: &mcp_client::McpHost) -> Vec<ToolSpec> {
    let overridden = |name: &str| s.external_tools.iter().any(|e| e.name == name);
    let mut specs: Vec<ToolSpec> = Vec::new();
    // As the original: `skill` comes after the file tools, `task` after the search tools.
    let offer_skill = s.tool_allowed(SKILL) && !overridden(SKILL);
    for t in deps.builtins.tools().iter().filter(|t| s.tool_allowed(t.name()) && !overridden(t.name())) {
        if offer_skill && matches!(t.name(), "grep" | "glob") && !specs.iter().any(|x| x.name == SKILL) {
            specs.push(crate::skill_tool::spec(&s.skills));
        }
        specs.push(ToolSpec {
            name: t.name().to_string(),
            description: t.description().to_string(),
            parameters: t.parameters(),
        });
    }
    if offer_skill && !specs.iter().any(|x| x.name == SKILL) {
        specs.push(crate::skill_tool::spec(&s.skills));
    }
    // As the original: `sql` right after `skill` (before the search tools).
    if s.tool_allowed(crate::sql::SQL) && !overridden(crate::sql::SQL) {
        let at = specs.iter().position(|x| matches!(x.name.as_str(), "grep" | "glob")).unwrap_or(specs.len());
        specs.insert(at, crate::sql::spec());
    }
    // As the original: the background-agent tools right before the search tools.
    let at = specs.iter().position(|x| matches!(x.name.as_str(), "grep" | "glob")).unwrap_or(specs.len());
    // Offered on every model call: built once.
    static AGENT_TOOLS: std::sync::OnceLock<[ToolSpec; 3]> = std::sync::OnceLock::new();
    let agent_tools = AGENT_TOOLS.get_or_init(|| {
        [agent_tools::read_agent_spec(), agent_tools::write_agent_spec(), agent_tools::list_agents_spec()]
    });
    let offered: Vec<ToolSpec> =
        agent_tools.iter().filter(|t| s.tool_allowed(&t.name) && !overridden(&t.name)).cloned().collect();
    specs.splice(at..at, offered);
    if s.tool_allowed(TASK) && !overridden(TASK) {
        specs.push(crate::subagent::spec(s));
    }
    if s.request_user_input && s.tool_allowed(crate::user_input::ASK_USER) {
        specs.push(crate::user_input::spec());
    }
    if s.mode == SessionMode::Plan
        && s.request_exit_plan_mode
        && s.tool_allowed(crate::exit_plan_mode::EXIT_PLAN_MODE)
        && !overridden(crate::exit_plan_mode::EXIT_PLAN_MODE)
    {
        specs.push(crate::exit_plan_mode::spec());
    }
    if s.mode == SessionMode::Autopilot && !s.external_tools.iter().any(|e| e.name == crate::autopilot::TASK_COMPLETE) {
        specs.push(crate::autopilot::task_complete_spec());
    }
    for e in s.external_tools.iter().filter(|e| s.tool_allowed_from(crate::tool_filter::ToolSource::Custom, &e.name)) {
        specs.push(ToolSpec {
            name: e.name.clone(),
            description: e.description.clone(),
            parameters: e.parameters.clone().unwrap_or_else(empty_schema),
        });
    }
    specs.extend(crate::mcp::specs(mcp, s));
    specs
}

/// [`tool_specs`] with the tools of the running agent's own MCP servers after them (a name
/// the session already offers stays the session's).
pub(crate) fn run_tool_specs(ctx: &RunCtx, s: &SessionSettings) -> Vec<ToolSpec> {
    let mut tools = tool_specs(&ctx.deps, s, ctx.handle.mcp());
    if let Some(host) = &ctx.agent_mcp {
        for spec in crate::mcp::specs(host, s) {
            if !tools.iter().any(|t| t.name == spec.name) {
                tools.push(spec);
            }
        }
    }
    tools
}

/// The schema of an SDK tool that declares none.
fn empty_schema() -> Arc<Value> {
    static EMPTY: std::sync::OnceLock<Arc<Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::new(json!({"type": "object", "properties": {}}))).clone()
}

pub(crate) async fn run_calls(
    ctx: &RunCtx,
    calls: &[ToolCall],
    turn_id: &str,
    settings: &SessionSettings,
    offered: &[String],
) -> Vec<CallOutcome> {
    let cancel = &ctx.cancel;
    // A call may only use what this model call was offered.
    let available: Vec<&str> = offered.iter().map(String::as_str).collect();
    // Start events go out in call order before any tool runs.
    let args: Vec<Value> = calls
        .iter()
        .map(|c| {
            let args = serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| json!({}));
            let mut start = t::ToolExecutionStartData {
                tool_call_id: c.id.clone(),
                tool_name: c.name.clone(),
                arguments: Some(args.clone()),
                turn_id: Some(turn_id.to_string()),
                model: Some(settings.model.clone()),
                ..Default::default()
            };
            if let Some((host, _)) = ctx.mcp_tool(&c.name) {
                crate::mcp::start_fields(&host, &c.name, &mut start);
            }
            ctx.emitter().emit(start);
            args
        })
        .collect();
    let runs = calls.iter().zip(args).map(|(call, args)| {
        let available = &available;
        async move {
            let span = crate::spans::tool_span(ctx, call);
            let (output, modified_args, guidance, loaded) = run_with_hooks(ctx, call, args, settings, available).await;
            crate::spans::end_tool_span(ctx, span, &output);
            let output = match ctx.handle.remote_state() {
                Some(remote) => crate::session_fs::spill_output(remote, output).await,
                None => output.spill_if_large(&ctx.deps.layout.temp_dir()),
            };
            // A loaded skill's text follows the results, as hook guidance does.
            let guidance = match (guidance, loaded) {
                (g, None) => g,
                (None, Some(skill)) => Some(skill),
                (Some(g), Some(skill)) => Some(format!("{skill}\n\n{g}")),
            };
            if cancel.is_cancelled() {
                return CallOutcome::Interrupted;
            }
            let rejected = output.error_code.as_deref() == Some("rejected");
            let task_complete =
                (call.name == crate::autopilot::TASK_COMPLETE && output.success).then(|| output.text_for_llm.clone());
            emit_complete(ctx, call, &output, turn_id, &settings.model);
            let file_edit = output.file_edit.map(|f| f.path);
            CallOutcome::Done {
                text: output.text_for_llm,
                rejected,
                task_complete,
                images: output.image_data_urls,
                modified_args: modified_args.map(|a| a.to_string()),
                guidance,
                file_edit,
            }
        }
    });
    futures::future::join_all(runs).await
}

/// One call with its `preToolUse` / `postToolUse` hooks. Returns the output and, when a hook
/// rewrote them, the arguments the tool actually ran with (history records those).
async fn run_with_hooks(
    ctx: &RunCtx,
    call: &ToolCall,
    mut args: Value,
    settings: &SessionSettings,
    available: &[&str],
) -> (ToolOutput, Option<Value>, Option<String>, Option<String>) {
    let mut preapproved = false;
    let mut modified_args = None;
    let agent = ctx.scope.as_deref().map(|s| s.agent_id.as_str());
    let input = hooks::PreToolUseInput { tool_name: call.name.clone(), tool_args: args.clone() };
    let pre = crate::hooks::invoke_for(&ctx.handle, agent, HookType::PreToolUse, input).await.unwrap_or_default();
    match pre.permission_decision.as_deref() {
        Some("deny") => {
            let reason = pre.permission_decision_reason.as_deref().unwrap_or("No reason provided");
            let text = format!("Denied by preToolUse hook: {reason}");
            return (ToolOutput::fail_with(text.clone(), text, "denied"), None, None, None);
        }
        Some("allow") => preapproved = true,
        Some("ask") => {
            // As the original: the user is asked about the hook's question, a request of kind
            // `hook`; a yes runs the tool without asking again.
            let request = t::PermissionRequest::Hook(t::PermissionRequestHook {
                tool_call_id: Some(call.id.clone()),
                tool_name: call.name.clone(),
                tool_args: Some(args.clone()),
                hook_message: Some(
                    pre.permission_decision_reason.clone().unwrap_or_else(|| "No reason provided".into()),
                ),
            });
            match ctx.gate().ask(request, &call.id).await {
                PermissionDecision::Denied { text_for_llm, code } => {
                    return (ToolOutput::fail_with(text_for_llm.clone(), text_for_llm, &code), None, None, None);
                }
                PermissionDecision::Blocked(output) => return (*output, None, None, None),
                PermissionDecision::Approved => preapproved = true,
            }
        }
        _ => {}
    }
    if let Some(new_args) = pre.modified_args.filter(|a| !a.is_null()) {
        args = new_args.clone();
        modified_args = Some(new_args);
    }
    let Handled { mut output, context: loaded } =
        run_one(ctx, call, args.clone(), settings, available, preapproved).await;
    if ctx.cancel.is_cancelled() {
        return (output, modified_args, None, None);
    }
    let mut guidance = None;
    if output.success {
        let tool_result = hooks::HookToolResult {
            result_type: "success".into(),
            text_result_for_llm: output.text_for_llm.clone(),
            tool_telemetry: output.telemetry.clone(),
        };
        let input = hooks::PostToolUseInput { tool_name: call.name.clone(), tool_args: args, tool_result };
        let post = crate::hooks::invoke_for(&ctx.handle, agent, HookType::PostToolUse, input).await.unwrap_or_default();
        if let Some(text) = post.modified_result_text() {
            output.text_for_llm = text.to_string();
        }
    } else {
        let error = output.error_message.clone().unwrap_or_else(|| output.text_for_llm.clone());
        let input = hooks::PostToolUseFailureInput { tool_name: call.name.clone(), tool_args: args, error };
        let failure =
            crate::hooks::invoke_for(&ctx.handle, agent, HookType::PostToolUseFailure, input).await.unwrap_or_default();
        guidance = failure
            .additional_context
            .filter(|c| !c.is_empty())
            .map(|c| format!("Tool \"{}\" failed. Additional guidance from postToolUseFailure hooks:\n{c}", call.name));
    }
    (output, modified_args, guidance, loaded)
}

/// Runs one call: an SDK tool of that name first (it overrides), then the engine's own tools,
/// an MCP server's, the built-ins.
async fn run_one(
    ctx: &RunCtx,
    call: &ToolCall,
    args: Value,
    settings: &SessionSettings,
    available: &[&str],
    preapproved: bool,
) -> Handled {
    if !available.contains(&call.name.as_str()) {
        return unknown_tool(&call.name, available).into();
    }
    if serde_json::from_str::<Value>(&call.arguments).is_err() && !call.arguments.trim().is_empty() {
        return ToolOutput::fail(format!("Invalid JSON in the arguments of `{}`: {}", call.name, call.arguments))
            .into();
    }
    if let Some(def) = settings.external_tools.iter().find(|e| e.name == call.name) {
        return crate::external::run(ctx, def, call, args, settings, preapproved).await.into();
    }
    if let Some(handler) = tool_handlers::handler(&call.name).filter(|h| h.serves(ctx)) {
        return handler.run(tool_handlers::Call { ctx, call, args, settings }).await;
    }
    if ctx.deps.builtins.get(&call.name).is_none() {
        if let Some((host, tool)) = ctx.mcp_tool(&call.name) {
            return crate::mcp::run(ctx, &host, &tool, call, args, settings, preapproved).await.into();
        }
    }
    run_builtin(ctx, call, args, settings, available, preapproved).await.into()
}

/// A built-in of the `tools` crate, in a task of its own.
async fn run_builtin(
    ctx: &RunCtx,
    call: &ToolCall,
    args: Value,
    settings: &SessionSettings,
    available: &[&str],
    preapproved: bool,
) -> ToolOutput {
    let Some(tool) = ctx.deps.builtins.get(&call.name) else {
        return unknown_tool(&call.name, available);
    };
    let mut files = ctx.deps.files(&settings.cwd);
    // What the session's own sandbox hides from its commands, its searches do not walk into.
    if let Some(policy) = ctx.handle.own_sandbox().filter(|p| !p.denied.is_empty()) {
        files = files.hiding(&policy.denied);
    }
    if crate::file_tracking::WRITING_TOOLS.contains(&call.name.as_str()) {
        if let Some(path) = args.get("path").and_then(Value::as_str) {
            ctx.handle.file_tracker().before_write(&settings.cwd.join(path), &files);
        }
    }
    let progress_handle = ctx.handle.clone();
    let progress_id = call.id.clone();
    let tool_ctx = ToolContext {
        cwd: settings.cwd.clone(),
        temp_dir: ctx.deps.layout.temp_dir(),
        tool_call_id: call.id.clone(),
        permissions: Arc::new(SessionGate { run: ctx.gate(), tool_call_id: call.id.clone(), preapproved }),
        progress: Arc::new(move |partial: String| {
            progress_handle
                .emitter()
                .emit(t::ToolExecutionPartialData { tool_call_id: progress_id.clone(), partial_output: partial });
        }),
        cancel: ctx.cancel.clone(),
        env: ctx.deps.tool_env.as_ref().clone(),
        shells: ctx.handle.shells().clone(),
        files,
    };
    // A panicking tool must not take the run down with it.
    let handle = tokio::spawn({
        let tool = tool.clone();
        async move { tool.run(args, &tool_ctx).await }
    });
    let mut out = match handle.await {
        Ok(out) => out,
        Err(e) => ToolOutput::fail(format!("Tool `{}` failed unexpectedly: {e}", call.name)),
    };
    // A file tool's writes are held to the session's sandbox (`sandbox_bypass`) as long as it
    // has one.
    if crate::file_tracking::WRITING_TOOLS.contains(&call.name.as_str()) && ctx.handle.sandboxed() {
        out.sandboxed = true;
    }
    out
}

/// The original's result for a tool the model may not call.
fn unknown_tool(name: &str, available: &[&str]) -> ToolOutput {
    ToolOutput::fail_with(tools::unknown_tool_text(name, available), tools::unknown_tool_message(name), "failure")
}

fn emit_complete(ctx: &RunCtx, call: &ToolCall, out: &ToolOutput, turn_id: &str, model: &str) {
    let contents = out.shell_exit.as_ref().map(|e| {
        vec![t::ToolExecutionCompleteContent::ShellExit(t::ToolExecutionCompleteContentShellExit {
            shell_id: e.shell_id.clone(),
            exit_code: e.exit_code.into(),
            cwd: Some(e.cwd.clone()),
            output_preview: Some(e.output_preview.clone()),
            ..Default::default()
        })]
    });
    let error = (!out.success).then(|| t::ToolExecutionCompleteError {
        message: out.error_message.clone().unwrap_or_else(|| out.text_for_llm.clone()),
        code: Some(out.error_code.clone().unwrap_or_else(|| "failure".into())),
        remediation: out.remediation.as_ref().and_then(|r| serde_json::from_value(Value::String(r.clone())).ok()),
    });
    ctx.emitter().emit(t::ToolExecutionCompleteData {
        tool_call_id: call.id.clone(),
        success: out.success,
        model: Some(model.to_string()),
        result: Some(t::ToolExecutionCompleteResult {
            content: out.text_for_llm.clone(),
            detailed_content: Some(out.detailed_content.clone().unwrap_or_else(|| out.text_for_llm.clone())),
            contents,
            ..Default::default()
        }),
        error,
        tool_telemetry: Some(out.telemetry.clone()),
        turn_id: Some(turn_id.to_string()),
        sandboxed: out.sandboxed.then_some(true),
        shell_execution: out
            .shell_exit
            .as_ref()
            .map(|e| t::ToolExecutionCompleteShellExecution { exit_code: e.exit_code.into() }),
        ..Default::default()
    });
}

/// The permission gate built-in tools see: asks the session's clients. Tools run in tasks of
/// their own, so the gate holds what it needs rather than borrowing the run.
struct SessionGate {
    run: permission::Gate,
    tool_call_id: String,
    /// A `preToolUse` hook said `allow`: no prompt.
    preapproved: bool,
}

#[async_trait]
impl PermissionGate for SessionGate {
    async fn request(&self, req: PermissionRequest) -> PermissionDecision {
        // The session's sandbox first: neither a hook's nor a client's approval lets a write
        // past it unasked.
        if let Some(decision) = crate::sandbox_bypass::guard(&self.run, &req, &self.tool_call_id).await {
            return decision;
        }
        if self.preapproved {
            return PermissionDecision::Approved;
        }
        let request = crate::permission::wire_request(req, &self.tool_call_id);
        self.run.ask(request, &self.tool_call_id).await
    }
}
