//! The per-session shell manager: every command started by `bash` is a [`ShellProcess`] with
//! an id (`"0"`, `"1"`, ... per session). Commands that are still running when their `bash`
//! call returns (async mode, or the initial wait ran out) stay registered so `read_bash`,
//! `stop_bash` and `list_bash` can reach them.

use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use portable_pty::MasterPty;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::filter::TerminalFilter;
use super::pty::{kill_group, spawn, ChildProc, SpawnSpec};
use crate::output::ProgressSink;

/// Output kept in memory per command; beyond this it is dropped (the command keeps running
/// and its output keeps being drained so it never blocks on a full terminal).
const MAX_OUTPUT_BYTES: usize = 16 * 1024 * 1024;

/// After the command exits, how long to wait for the rest of its output. A background job
/// that inherited the terminal can keep it open indefinitely, so EOF is not waited for forever.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// Partial output is reported at most this often (each report carries the whole text so far).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// What the session knows about one of its shells.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellInfo {
    pub shell_id: String,
    pub command: String,
    pub description: String,
    /// Started with `detach: true`: survives [`ShellManager::kill_all`].
    pub detached: bool,
    /// `false` once the command has exited (its last output may still be unread).
    pub running: bool,
    pub exit_code: Option<i32>,
    /// The command's pid, which is also its process group id.
    pub pid: Option<u32>,
}

#[derive(Debug, Default)]
pub(crate) struct ShellState {
    pub output: String,
    /// How much of `output` the model has been shown.
    pub read_offset: usize,
    pub exit_code: Option<i32>,
    /// The output stream reached end-of-file.
    eof: bool,
    /// Exited and output drained: nothing more will come.
    pub done: bool,
    truncated: bool,
}

impl ShellState {
    fn append(&mut self, text: &str) {
        if self.truncated || text.is_empty() {
            return;
        }
        let room = MAX_OUTPUT_BYTES.saturating_sub(self.output.len());
        if text.len() <= room {
            self.output.push_str(text);
            return;
        }
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.output.push_str(&text[..cut]);
        self.output.push_str("\n[output truncated: too much output]\n");
        self.truncated = true;
    }
}

pub(crate) enum WaitOutcome {
    Done,
    TimedOut,
    Cancelled,
}

pub(crate) struct ShellProcess {
    pub id: String,
    pub command: String,
    pub description: String,
    pub cwd: PathBuf,
    pub detached: bool,
    shell: PathBuf,
    /// The command's pid, which is also its process group id.
    pgid: Option<u32>,
    state: watch::Sender<ShellState>,
    /// The PTY master: closing it hangs up the terminal, so it lives until the command is done.
    keepalive: Mutex<Option<Box<dyn MasterPty + Send>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep going.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ShellProcess {
    pub fn is_done(&self) -> bool {
        self.state.borrow().done
    }

    pub fn exit_code(&self) -> Option<i32> {
        self.state.borrow().exit_code
    }

    pub fn info(&self) -> ShellInfo {
        let s = self.state.borrow();
        ShellInfo {
            shell_id: self.id.clone(),
            command: self.command.clone(),
            description: self.description.clone(),
            detached: self.detached,
            running: !s.done,
            exit_code: s.exit_code,
            pid: self.pgid,
        }
    }

    /// The output not yet shown to the model; marks it as shown.
    pub fn take_unread(&self) -> String {
        let mut unread = String::new();
        self.state.send_if_modified(|s| {
            unread = s.output[s.read_offset..].to_string();
            s.read_offset = s.output.len();
            false
        });
        unread
    }

    /// Kills the command's whole process group (no-op once it is done).
    pub fn kill(&self) {
        if self.is_done() {
            return;
        }
        if let Some(pgid) = self.pgid {
            kill_group(&self.shell, pgid);
        }
    }

    /// Waits until the command is done, the timeout passes, or `cancel` fires. Output that
    /// arrives meanwhile is reported through `progress` as the cumulative unread text.
    pub async fn wait(
        &self,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<&ProgressSink>,
    ) -> WaitOutcome {
        let mut rx = self.state.subscribe();
        let deadline = Instant::now() + timeout;
        let mut reported_len = rx.borrow().read_offset;
        let mut last_report: Option<Instant> = None;
        loop {
            // Decide under the borrow, call the sink after releasing it.
            let (done, report) = {
                let s = rx.borrow_and_update();
                let throttled = last_report.is_some_and(|t| t.elapsed() < PROGRESS_INTERVAL);
                let report = (progress.is_some() && !s.done && s.output.len() > reported_len && !throttled)
                    .then(|| (s.output[s.read_offset..].to_string(), s.output.len()));
                (s.done, report)
            };
            if done {
                return WaitOutcome::Done;
            }
            if let (Some(sink), Some((text, len))) = (progress, report) {
                reported_len = len;
                last_report = Some(Instant::now());
                sink(text);
            }
            let pending = progress.is_some() && rx.borrow().output.len() > reported_len;
            let wake = last_report.map(|t| t + PROGRESS_INTERVAL).unwrap_or(deadline);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return WaitOutcome::Cancelled,
                changed = rx.changed() => {
                    if changed.is_err() {
                        return WaitOutcome::Done;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return if self.is_done() { WaitOutcome::Done } else { WaitOutcome::TimedOut };
                }
                _ = tokio::time::sleep_until(wake), if pending => {}
            }
        }
    }

    /// Waits (bounded) until the command is done; used after killing it.
    pub async fn wait_done(&self, timeout: Duration) -> bool {
        let never = CancellationToken::new();
        matches!(self.wait(timeout, &never, None).await, WaitOutcome::Done)
    }
}

/// The shells of one session.
pub struct ShellManager {
    next_id: AtomicU64,
    /// In start order (what `list_bash` shows).
    shells: Mutex<Vec<Arc<ShellProcess>>>,
    /// What every command of the session starts under, when it is sandboxed.
    sandbox: Mutex<Option<Arc<sandbox::Policy>>>,
}

impl Default for ShellManager {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ShellManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellManager").field("shells", &self.list()).finish()
    }
}

impl ShellManager {
    pub fn new() -> Self {
        Self { next_id: AtomicU64::new(0), shells: Mutex::new(Vec::new()), sandbox: Mutex::new(None) }
    }

    /// Commands started from now on run under `policy` (or unconfined with `None`).
    pub fn set_sandbox(&self, policy: Option<Arc<sandbox::Policy>>) {
        *lock(&self.sandbox) = policy;
    }

    pub fn sandbox(&self) -> Option<Arc<sandbox::Policy>> {
        lock(&self.sandbox).clone()
    }

    /// All registered shells: running ones, and finished ones whose end has not been read yet.
    pub fn list(&self) -> Vec<ShellInfo> {
        lock(&self.shells).iter().map(|s| s.info()).collect()
    }

    /// The shells whose command is still running (for `session.idle` background tasks).
    pub fn running_shells(&self) -> Vec<ShellInfo> {
        self.list().into_iter().filter(|s| s.running).collect()
    }

    /// Ends the session's shells: kills every command that was not started detached and
    /// forgets all of them.
    pub fn kill_all(&self) {
        let shells = std::mem::take(&mut *lock(&self.shells));
        for shell in shells.iter().filter(|s| !s.detached) {
            shell.kill();
        }
    }

    /// The next free per-session id (`"0"`, `"1"`, ...).
    pub(crate) fn next_id(&self) -> String {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
            if self.get(&id).is_none() {
                return id;
            }
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<ShellProcess>> {
        lock(&self.shells).iter().find(|s| s.id == id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<ShellProcess>> {
        let mut shells = lock(&self.shells);
        let at = shells.iter().position(|s| s.id == id)?;
        Some(shells.remove(at))
    }

    /// Starts `spec` as shell `id` (replacing a finished shell of that id) and registers it.
    pub(crate) fn start(
        &self,
        id: String,
        spec: SpawnSpec,
        description: String,
        detached: bool,
    ) -> std::io::Result<Arc<ShellProcess>> {
        let spawned = spawn(&spec, self.sandbox().as_deref())?;
        let process = Arc::new(ShellProcess {
            id: id.clone(),
            command: spec.command.clone(),
            description,
            cwd: spec.cwd.clone(),
            detached,
            shell: spec.shell.clone(),
            pgid: spawned.pid,
            state: watch::Sender::new(ShellState::default()),
            keepalive: Mutex::new(spawned.keepalive),
        });
        if let Err(e) = start_threads(&process, spawned.reader, spawned.child) {
            process.kill();
            return Err(e);
        }
        let mut shells = lock(&self.shells);
        shells.retain(|s| s.id != id);
        shells.push(process.clone());
        Ok(process)
    }
}

impl Drop for ShellManager {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// One thread drains the output, one waits for the exit; blocking reads and waits are what
/// both PTYs and pipes offer.
fn start_threads(
    process: &Arc<ShellProcess>,
    mut reader: Box<dyn Read + Send>,
    child: ChildProc,
) -> std::io::Result<()> {
    let p = process.clone();
    std::thread::Builder::new().name(format!("shell-{}-output", process.id)).spawn(move || {
        let mut filter = TerminalFilter::default();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let text = filter.push(&buf[..n]);
                    if !text.is_empty() {
                        p.state.send_modify(|s| s.append(&text));
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // A PTY master reports EIO once the terminal is hung up: that is its EOF.
                Err(_) => break,
            }
        }
        let tail = filter.finish();
        p.state.send_modify(|s| {
            s.append(&tail);
            s.eof = true;
        });
    })?;

    let p = process.clone();
    std::thread::Builder::new().name(format!("shell-{}-wait", process.id)).spawn(move || {
        let code = child.wait();
        p.state.send_modify(|s| s.exit_code = Some(code));
        let drained_by = std::time::Instant::now() + DRAIN_GRACE;
        while !p.state.borrow().eof && std::time::Instant::now() < drained_by {
            std::thread::sleep(Duration::from_millis(5));
        }
        p.state.send_modify(|s| s.done = true);
        lock(&p.keepalive).take();
    })?;
    Ok(())
}
