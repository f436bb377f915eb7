//! `session.shell.*`: commands a client runs in the session's shell (not the model's tools).
//! `exec` starts one and answers with its process id at once; `kill` stops it.
//! `executeUserRequested` runs one to its end (answered with its output and status) unless
//! `cancelUserRequested` stops it first.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn exec(ctx: &Ctx, p: t::SessionShellExecParams) -> Result<t::ShellExecResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let session_cwd = session.view().settings.cwd.clone();
    // On a shared server, inside the caller's tenant's workspace (as for the session's own).
    let cwd = match p.cwd {
        Some(dir) => crate::handlers::session::confine_cwd(ctx, &session_cwd.join(dir).to_string_lossy())?,
        None => session_cwd,
    };
    let process_id = session.user_shell().start(&p.command, &cwd).map_err(|e| ctx.failed(e))?;
    if let Some(ms) = p.timeout.filter(|ms| *ms > 0) {
        let (session, id) = (session.clone(), process_id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            session.user_shell().kill(&id);
        });
    }
    Ok(t::ShellExecResult { process_id })
}

pub async fn kill(ctx: &Ctx, p: t::SessionShellKillParams) -> Result<t::ShellKillResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // Every signal ends the whole process group: SIGKILL is what the shell tools send too.
    Ok(t::ShellKillResult { killed: session.user_shell().kill(&p.process_id) })
}

pub async fn execute_user_requested(
    ctx: &Ctx,
    p: t::SessionShellExecuteUserRequestedParams,
) -> Result<t::UserRequestedShellCommandResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let cwd = session.view().settings.cwd.clone();
    let tool_call_id = format!("user-shell-{}", uuid::Uuid::new_v4());
    let result = match session.user_shell().run_requested(&p.request_id, &p.command, &cwd).await {
        Ok(end) => t::UserRequestedShellCommandResult {
            tool_call_id,
            success: !end.cancelled && end.exit_code == Some(0),
            output: end.output,
            exit_code: end.exit_code.map(i64::from),
            error: end.cancelled.then(|| "The command was cancelled".to_string()),
        },
        Err(e) => t::UserRequestedShellCommandResult {
            tool_call_id,
            success: false,
            output: String::new(),
            exit_code: None,
            error: Some(format!("Failed to start the command: {e}")),
        },
    };
    Ok(result)
}

pub async fn cancel_user_requested(
    ctx: &Ctx,
    p: t::SessionShellCancelUserRequestedParams,
) -> Result<t::CancelUserRequestedShellCommandResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::CancelUserRequestedShellCommandResult { cancelled: session.user_shell().cancel(&p.request_id) })
}
