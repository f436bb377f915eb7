//! The shell family: `bash` runs a command, `read_bash` / `stop_bash` / `list_bash` deal with
//! commands that outlive their `bash` call.

pub mod analysis;
mod client_shell;
mod filter;
mod pty;
// The crate's context holds the session's `ShellManager`: reached here, not through this
// module's re-export, so that the context does not import the bash tools (which import it).
pub(crate) mod shell;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

pub use client_shell::{ClientCommandEnd, ClientShells};
pub use shell::{ShellInfo, ShellManager};

use crate::args::{optional_bool, optional_number, optional_str, required_str, ArgError};
use crate::context::{PermissionRequest, ToolContext};
use crate::output::{ShellExit, ToolOutput};
use crate::tool::Tool;
use pty::{find_shell, SpawnSpec};
use shell::{ShellProcess, WaitOutcome};

/// Seconds a sync command may run before its partial output is returned.
const DEFAULT_INITIAL_WAIT_SECS: f64 = 30.0;
/// Upper bound for `initial_wait` and `delay`, so a model cannot park a turn for hours.
const MAX_WAIT_SECS: f64 = 3600.0;
/// How long a killed command gets to be reaped before the tool reports back.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// `outputPreview` length in the `shell_exit` content entry.
const PREVIEW_CHARS: usize = 500;

fn wait_duration(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.clamp(0.0, MAX_WAIT_SECS))
}

/// `30` rather than `30.0` in texts.
fn format_secs(secs: f64) -> String {
    if secs.fract() == 0.0 {
        format!("{}", secs as i64)
    } else {
        format!("{secs}")
    }
}

fn invalid_shell_id(id: &str) -> ToolOutput {
    ToolOutput::fail(format!("Invalid shell ID: {id}. Use list_bash to see the active shells."))
}

/// The result of a command that has exited: its output, a newline, the exit marker (the form
/// the recorded conversations contain). Large results are saved to a file.
fn completed_output(ctx: &ToolContext, process: &ShellProcess, output: &str, code: i32) -> ToolOutput {
    let body = output.trim_end();
    let text = format!("{body}\n<exited with exit code {code}>");
    let mut out = ToolOutput::ok(text).spill_if_large(&ctx.temp_dir);
    let preview: String = body.chars().take(PREVIEW_CHARS).collect();
    out.shell_exit = Some(ShellExit {
        shell_id: process.id.clone(),
        exit_code: code,
        cwd: process.cwd.display().to_string(),
        output_preview: preview,
    });
    out
}

/// The result for a command that is still running after the wait: what it printed so far and
/// how to continue.
fn still_running_output(ctx: &ToolContext, id: &str, output: &str, waited_secs: f64) -> ToolOutput {
    let text = format!(
        "{}\n<command with shellId: {id} is still running after {} seconds. Use read_bash with shellId {id} to read more output, or stop_bash to stop it.>",
        output.trim_end(),
        format_secs(waited_secs)
    );
    ToolOutput::ok(text).spill_if_large(&ctx.temp_dir)
}

/// Kills a command after an abort and reports the interruption.
async fn interrupt(ctx: &ToolContext, process: &ShellProcess) -> ToolOutput {
    process.kill();
    if !process.wait_done(KILL_GRACE).await {
        tracing::warn!(shell_id = %process.id, "command did not end after being killed");
    }
    ctx.shells.remove(&process.id);
    ToolOutput::interrupted()
}

pub struct BashTool;

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Run a shell command with bash in the working directory and get its combined \
         stdout/stderr followed by its exit code. Each call starts a fresh shell (no state is \
         kept between calls). In sync mode (default) the call waits up to initial_wait seconds \
         (default 30); a command still running after that keeps running and can be followed \
         with read_bash or ended with stop_bash. mode \"async\" starts the command in the \
         background and returns its shellId right away; detach keeps an async command alive \
         after the session ends. description: a short summary (under 100 characters) of what \
         the command does."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("bash")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let command = match required_str(&args, "command") {
            Ok(c) if !c.trim().is_empty() => c.to_string(),
            Ok(_) => return ToolOutput::fail("Invalid argument \"command\": expected a non-empty command."),
            Err(e) => return e.into(),
        };
        type Parsed = (String, bool, bool, f64, Option<String>);
        let parsed = (|| -> Result<Parsed, ArgError> {
            let description = optional_str(&args, "description")?.unwrap_or("").to_string();
            let asynchronous = match optional_str(&args, "mode")? {
                None | Some("sync") => false,
                Some("async") => true,
                Some(other) => return Err(ArgError(format!("Invalid mode \"{other}\": expected sync or async."))),
            };
            let detach = optional_bool(&args, "detach")?.unwrap_or(false) && asynchronous;
            let initial_wait = optional_number(&args, "initial_wait")?
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(DEFAULT_INITIAL_WAIT_SECS)
                .min(MAX_WAIT_SECS);
            let shell_id = optional_str(&args, "shellId")?.filter(|s| !s.is_empty()).map(str::to_string);
            Ok((description, asynchronous, detach, initial_wait, shell_id))
        })();
        let (description, asynchronous, detach, initial_wait, requested_id) = match parsed {
            Ok(p) => p,
            Err(e) => return e.into(),
        };

        if !ctx.cwd.is_dir() {
            return ToolOutput::fail(format!("Working directory {} does not exist.", ctx.cwd.display()));
        }
        let sandboxed = ctx.shells.sandbox().is_some();
        if detach && sandboxed {
            // A detached command outlives the sandbox's process tree: the original refuses it.
            return ToolOutput::fail(
                "Detached commands cannot run inside the sandbox. Run it without detach so the sandbox can be enforced.",
            );
        }

        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let line = analysis::analyze(&command, &ctx.cwd, home.as_deref());
        let request = PermissionRequest::Shell {
            full_command_text: command.clone(),
            intention: description.clone(),
            commands: line.commands,
            possible_paths: line.possible_paths,
            possible_urls: line.possible_urls,
            has_write_file_redirection: line.writes_files,
        };
        if let Err(denied) = ctx.ask_permission(request).await {
            return denied;
        }

        let id = match requested_id {
            Some(id) if ctx.shells.get(&id).is_some_and(|s| !s.is_done()) => {
                return ToolOutput::fail(format!(
                    "Shell {id} is still running a command. Use read_bash to read its output, stop_bash to stop it, or leave out shellId to start a new shell."
                ))
            }
            Some(id) => id,
            None => ctx.shells.next_id(),
        };
        let spec = SpawnSpec {
            shell: find_shell(&ctx.env),
            command,
            cwd: ctx.cwd.clone(),
            env: ctx.env.clone(),
            no_pty: detach,
        };
        let process = match ctx.shells.start(id.clone(), spec, description, detach) {
            Ok(p) => p,
            Err(e) => return ToolOutput::fail(format!("Failed to start the command: {e}")),
        };

        if asynchronous {
            let detached = if detach { " (detached)" } else { "" };
            return ToolOutput::ok(format!(
                "<command started in background with shellId: {id}{detached}. Use read_bash with shellId {id} to read its output, or stop_bash to stop it.>"
            ));
        }

        let mut out = match process.wait(wait_duration(initial_wait), &ctx.cancel, Some(&ctx.progress)).await {
            WaitOutcome::Done => {
                ctx.shells.remove(&id);
                let output = process.take_unread();
                completed_output(ctx, &process, &output, process.exit_code().unwrap_or(1))
            }
            WaitOutcome::TimedOut => {
                let output = process.take_unread();
                still_running_output(ctx, &id, &output, initial_wait)
            }
            WaitOutcome::Cancelled => interrupt(ctx, &process).await,
        };
        out.sandboxed = sandboxed;
        out
    }
}

pub struct ReadBashTool;

#[async_trait]
impl Tool for ReadBashTool {
    fn name(&self) -> &str {
        "read_bash"
    }

    fn description(&self) -> &str {
        "Get more output from a command started by bash that was still running (async mode, \
         or past its initial wait). Waits up to delay seconds, returning early if the command \
         exits, and returns the output produced since the last read, plus the exit code once \
         the command has finished."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("read_bash")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let id = match required_str(&args, "shellId") {
            Ok(id) => id,
            Err(e) => return e.into(),
        };
        let delay = match optional_number(&args, "delay") {
            Ok(d) => d.filter(|d| d.is_finite() && *d >= 0.0).unwrap_or(0.0).min(MAX_WAIT_SECS),
            Err(e) => return e.into(),
        };
        let Some(process) = ctx.shells.get(id) else {
            return invalid_shell_id(id);
        };
        match process.wait(wait_duration(delay), &ctx.cancel, Some(&ctx.progress)).await {
            WaitOutcome::Done => {
                ctx.shells.remove(id);
                let output = process.take_unread();
                completed_output(ctx, &process, &output, process.exit_code().unwrap_or(1))
            }
            WaitOutcome::TimedOut => {
                let output = process.take_unread();
                still_running_output(ctx, id, &output, delay)
            }
            // The command belongs to the shell, not to this read: leave it running.
            WaitOutcome::Cancelled => ToolOutput::interrupted(),
        }
    }
}

pub struct StopBashTool;

#[async_trait]
impl Tool for StopBashTool {
    fn name(&self) -> &str {
        "stop_bash"
    }

    fn description(&self) -> &str {
        "Stop a command started by bash that is still running, killing it and every process \
         it started."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("stop_bash")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let id = match required_str(&args, "shellId") {
            Ok(id) => id,
            Err(e) => return e.into(),
        };
        let Some(process) = ctx.shells.get(id) else {
            return invalid_shell_id(id);
        };
        if process.is_done() {
            ctx.shells.remove(id);
            let code = process.exit_code().unwrap_or(1);
            return ToolOutput::ok(format!("Shell {id} had already exited with exit code {code}."));
        }
        process.kill();
        if !process.wait_done(KILL_GRACE).await {
            tracing::warn!(shell_id = %id, "command did not end after being killed");
        }
        ctx.shells.remove(id);
        ToolOutput::ok(format!("Shell {id} stopped."))
    }
}

pub struct ListBashTool;

#[async_trait]
impl Tool for ListBashTool {
    fn name(&self) -> &str {
        "list_bash"
    }

    fn description(&self) -> &str {
        "List this session's shells whose commands are still running or have output that has \
         not been read yet, with their shellId, status and command."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("list_bash")
    }

    async fn run(&self, _args: Value, ctx: &ToolContext) -> ToolOutput {
        let shells = ctx.shells.list();
        if shells.is_empty() {
            return ToolOutput::ok("No active shells.");
        }
        let mut text = String::from("Active shells:");
        for s in shells {
            let status = match (s.running, s.exit_code) {
                (true, _) => "running".to_string(),
                (false, Some(code)) => format!("exited with exit code {code}, output not yet read"),
                (false, None) => "exited".to_string(),
            };
            let detached = if s.detached { ", detached" } else { "" };
            text.push_str(&format!("\n- shellId: {} ({status}{detached}): {}", s.shell_id, s.command));
            if !s.description.is_empty() {
                text.push_str(&format!(" — {}", s.description));
            }
        }
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
