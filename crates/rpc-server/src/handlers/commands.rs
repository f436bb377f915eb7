//! `session.commands.*`: slash commands. Built-ins are answered here; a command an SDK client
//! registered (`commands` on create/resume) runs in that client (`command.execute`, answered
//! by `handlePendingCommand`); `enqueue` queues a command for a client to run
//! (`command.queued`, one at a time, answered by `respondToQueuedCommand`).

use loop_engine::ui_requests::QueuedCommand;
use loop_engine::SessionHandle;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;
use crate::handlers::builtin_commands;

/// `commands.list`: the built-in commands that work as the first message of a new session, so
/// without one (the original leaves out those that read a session's state: `/compact`,
/// `/context`).
pub async fn list_first_message(_ctx: &Ctx, _p: protocol::rpc::NoParams) -> Result<t::CommandList, RpcError> {
    const NEED_A_CONVERSATION: &[&str] = &["compact", "context"];
    let commands = builtin_commands::listing()
        .iter()
        .filter(|c| !NEED_A_CONVERSATION.contains(&c.name.as_str()))
        .cloned()
        .collect();
    Ok(t::CommandList { commands })
}

pub async fn list(ctx: &Ctx, p: t::SessionCommandsListParams) -> Result<t::CommandList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let mut commands = Vec::new();
    if p.include_builtins.unwrap_or(true) {
        commands.extend(builtin_commands::listing().iter().cloned());
    }
    if p.include_client_commands.unwrap_or(true) {
        for c in session.clients().union().commands {
            let description = c.description.unwrap_or_default();
            commands.push(t::SlashCommandInfo::new(c.name, description, t::SlashCommandKind::Client, false));
        }
    }
    Ok(t::CommandList { commands })
}

pub async fn invoke(ctx: &Ctx, p: t::SessionCommandsInvokeParams) -> Result<t::SlashCommandInvocationResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let name = p.name.strip_prefix('/').unwrap_or(&p.name);
    let input = p.input.as_deref().unwrap_or_default();
    match builtin_commands::invoke(ctx, &session, name, input).await {
        Some(result) => result,
        None => Err(ctx.failed(format!("Unknown slash command: /{name}"))),
    }
}

/// Runs a command a client registered: the owning client gets `command.execute` and reports
/// back through `handlePendingCommand`; its error (if any) is the result.
pub async fn execute(ctx: &Ctx, p: t::SessionCommandsExecuteParams) -> Result<t::ExecuteCommandResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let name = p.command_name.trim_start_matches('/').to_string();
    let registered = session.clients().union().commands.into_iter().find(|c| c.name.eq_ignore_ascii_case(&name));
    let (Some(registered), Some(owner)) = (registered, session.clients().command_owner(&name)) else {
        return Ok(t::ExecuteCommandResult { error: Some(format!("Unknown command: /{name}")) });
    };
    let (request_id, rx) = session.ui().register_command();
    let command =
        if p.args.is_empty() { format!("/{}", registered.name) } else { format!("/{} {}", registered.name, p.args) };
    // Only the client that registered the command gets it: the others would answer that
    // they do not know it.
    session.emit_ephemeral_to(
        owner,
        t::CommandExecuteData { request_id: request_id.clone(), command, command_name: registered.name, args: p.args },
    );
    let outcome = tokio::time::timeout(COMMAND_TIMEOUT, rx).await;
    session.ui().forget_command(&request_id);
    let error = match outcome {
        Ok(Ok(error)) => error,
        Ok(Err(_)) => Some("The command was not completed".to_string()),
        Err(_) => Some("Timed out waiting for the command to complete".to_string()),
    };
    Ok(t::ExecuteCommandResult { error })
}

/// How long `execute` waits for the owning client to finish the command.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

pub async fn handle_pending(
    ctx: &Ctx,
    p: t::SessionCommandsHandlePendingCommandParams,
) -> Result<t::CommandsHandlePendingCommandResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::CommandsHandlePendingCommandResult { success: session.ui().finish_command(&p.request_id, p.error) })
}

pub async fn enqueue(ctx: &Ctx, p: t::SessionCommandsEnqueueParams) -> Result<t::EnqueueCommandResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some(started) = session.ui().enqueue_command(p.command) {
        announce(&session, started);
    }
    Ok(t::EnqueueCommandResult { queued: true })
}

fn announce(session: &SessionHandle, item: QueuedCommand) {
    session.emit_ephemeral(t::CommandQueuedData { request_id: item.request_id, command: item.command });
}

pub async fn respond_to_queued(
    ctx: &Ctx,
    p: t::SessionCommandsRespondToQueuedCommandParams,
) -> Result<t::CommandsRespondToQueuedCommandResult, RpcError> {
    // The schema's `QueuedCommandResult` is `{handled: true, stopProcessingQueue?}` or
    // `{handled: false}`; the generated type keeps it as JSON, so its shape is checked here.
    if !p.result.get("handled").is_some_and(serde_json::Value::is_boolean) {
        let got = if p.result.is_object() {
            "an object without a boolean `handled`".to_string()
        } else {
            p.result.to_string()
        };
        return Err(RpcError::invalid_params(
            ctx.method,
            format!("result: invalid value: {got}, expected a QueuedCommandResult object"),
        ));
    }
    let session = ctx.session(&p.session_id)?;
    let stop = p.result.get("stopProcessingQueue").and_then(|v| v.as_bool()).unwrap_or(false);
    let Some(next) = session.ui().complete_queued(&p.request_id, stop) else {
        return Ok(t::CommandsRespondToQueuedCommandResult { success: false });
    };
    session.emit_ephemeral(t::CommandCompletedData { request_id: p.request_id });
    if let Some(next) = next {
        announce(&session, next);
    }
    Ok(t::CommandsRespondToQueuedCommandResult { success: true })
}
