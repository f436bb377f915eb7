//! Starting a command: on a pseudo-terminal when possible (programs behave as they would for
//! a user, and stdout/stderr interleave exactly as written), otherwise as a plain subprocess
//! with stdout and stderr sharing one pipe. Either way the command leads its own process
//! group, so the whole tree can be killed at once.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use portable_pty::{native_pty_system, CommandBuilder, MasterPty, PtySize};

/// What to run and where.
#[derive(Debug, Clone)]
pub(crate) struct SpawnSpec {
    pub shell: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Plain pipes instead of a PTY (detached commands must not die with the terminal).
    pub no_pty: bool,
}

pub(crate) enum ChildProc {
    Pty(Box<dyn portable_pty::Child + Send + Sync>),
    Plain(std::process::Child),
}

impl ChildProc {
    /// Blocks until the process exits; returns its exit code (128 + signal when killed, as
    /// a shell reports it).
    pub fn wait(self) -> i32 {
        match self {
            ChildProc::Pty(mut child) => match child.wait() {
                Ok(status) => match status.signal() {
                    Some(name) => 128 + signal_number(name),
                    None => i32::try_from(status.exit_code()).unwrap_or(1),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "waiting for shell command failed");
                    1
                }
            },
            ChildProc::Plain(mut child) => match child.wait() {
                Ok(status) => status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1),
                Err(e) => {
                    tracing::warn!(error = %e, "waiting for shell command failed");
                    1
                }
            },
        }
    }
}

/// A running command: its pid (= process group id), the merged output stream, the child to
/// wait for, and (for a PTY) the master side, which must stay open while the command runs
/// because closing it hangs up the terminal.
pub(crate) struct Spawned {
    pub pid: Option<u32>,
    pub reader: Box<dyn Read + Send>,
    pub child: ChildProc,
    pub keepalive: Option<Box<dyn MasterPty + Send>>,
}

/// Starts the command, under `sandbox` when the session has one (a sandbox the host cannot
/// provide fails the start: a policy is never dropped).
pub(crate) fn spawn(spec: &SpawnSpec, sandbox: Option<&sandbox::Policy>) -> io::Result<Spawned> {
    let line = command_line(spec, sandbox)?;
    if !spec.no_pty {
        match spawn_pty(spec, &line) {
            Ok(s) => return Ok(s),
            Err(e) => tracing::warn!(error = %e, "could not start command on a PTY; using pipes"),
        }
    }
    spawn_plain(spec, &line)
}

/// What to execute: `shell -c command`, or `bwrap … shell -c command`, with its environment.
struct Line {
    program: PathBuf,
    args: Vec<std::ffi::OsString>,
    env: Vec<(String, String)>,
}

fn command_line(spec: &SpawnSpec, sandbox: Option<&sandbox::Policy>) -> io::Result<Line> {
    let args = vec!["-c".into(), spec.command.clone().into()];
    let env = full_env(spec);
    match sandbox {
        None => Ok(Line { program: spec.shell.clone(), args, env }),
        Some(policy) => {
            let w = policy.wrap(spec.shell.as_os_str(), &args, &spec.cwd, &env).map_err(io::Error::other)?;
            Ok(Line { program: w.program, args: w.args, env: w.env })
        }
    }
}

/// Variables that keep commands from waiting on a pager or painting colours, unless the
/// session's environment says otherwise.
const ENV_DEFAULTS: &[(&str, &str)] = &[("TERM", "dumb"), ("PAGER", "cat"), ("GIT_PAGER", "cat")];

fn full_env(spec: &SpawnSpec) -> Vec<(String, String)> {
    let mut env = spec.env.clone();
    for (k, v) in ENV_DEFAULTS {
        if !env.iter().any(|(key, _)| key == k) {
            env.push((k.to_string(), v.to_string()));
        }
    }
    env
}

fn spawn_pty(spec: &SpawnSpec, line: &Line) -> io::Result<Spawned> {
    let pair = native_pty_system()
        // Wide enough that tools which format for the terminal rarely wrap.
        .openpty(PtySize { rows: 50, cols: 200, pixel_width: 0, pixel_height: 0 })
        .map_err(io::Error::other)?;
    let mut cmd = CommandBuilder::new(&line.program);
    cmd.args(&line.args);
    cmd.cwd(&spec.cwd);
    // The child sees exactly the session's environment, not this process's.
    cmd.env_clear();
    for (k, v) in &line.env {
        cmd.env(k, v);
    }
    // portable-pty makes the child a session leader (setsid) with the PTY as its controlling
    // terminal, so its pid is also its process group id.
    let child = pair.slave.spawn_command(cmd).map_err(io::Error::other)?;
    // Our copy of the slave side must go, or reading the master never sees end-of-file.
    drop(pair.slave);
    let reader = pair.master.try_clone_reader().map_err(io::Error::other)?;
    Ok(Spawned { pid: child.process_id(), reader, child: ChildProc::Pty(child), keepalive: Some(pair.master) })
}

fn spawn_plain(spec: &SpawnSpec, line: &Line) -> io::Result<Spawned> {
    let (reader, writer) = io::pipe()?;
    let writer_err = writer.try_clone()?;
    let mut cmd = Command::new(&line.program);
    cmd.args(&line.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(line.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        // Own process group, so the tree can be killed as a unit.
        .process_group(0);
    let child = cmd.spawn()?;
    // `cmd` still holds the pipe's write ends; drop them so the reader sees EOF at exit.
    drop(cmd);
    Ok(Spawned { pid: Some(child.id()), reader: Box::new(reader), child: ChildProc::Plain(child), keepalive: None })
}

/// Sends SIGKILL to a whole process group. Done through the shell's `kill` builtin because
/// this workspace forbids `unsafe` (and with it `libc::killpg`).
pub(crate) fn kill_group(shell: &Path, pgid: u32) {
    let status = Command::new(shell)
        .arg("-c")
        .arg(format!("kill -KILL -- -{pgid} 2>/dev/null"))
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if let Err(e) = status {
        tracing::warn!(pgid, error = %e, "could not kill process group");
    }
}

/// Finds bash: first on the session's `PATH`, then in the usual places; `/bin/sh` as a last
/// resort.
pub(crate) fn find_shell(env: &[(String, String)]) -> PathBuf {
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str()).unwrap_or("");
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join("bash"))
        .chain(["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"].map(PathBuf::from))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Signal numbers for the names `strsignal` gives (what portable-pty reports); Linux values.
fn signal_number(name: &str) -> i32 {
    match name {
        "Hangup" => 1,
        "Interrupt" => 2,
        "Quit" => 3,
        "Illegal instruction" => 4,
        "Trace/breakpoint trap" => 5,
        "Aborted" => 6,
        "Bus error" => 7,
        "Floating point exception" => 8,
        "Killed" => 9,
        "User defined signal 1" => 10,
        "Segmentation fault" => 11,
        "User defined signal 2" => 12,
        "Broken pipe" => 13,
        "Alarm clock" => 14,
        "Terminated" => 15,
        _ => name.strip_prefix("Signal ").and_then(|n| n.trim().parse().ok()).unwrap_or(0),
    }
}
