//! Commands a client runs in a session's shell (`session.shell.*`), apart from the model's
//! shells: they have their own [`ShellManager`], so `list_bash` and the session's background
//! tasks never show them. Each runs on plain pipes in its own process group.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::pty::{find_shell, SpawnSpec};
use super::shell::{ShellManager, ShellProcess, WaitOutcome};

/// How a client's command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCommandEnd {
    /// Everything it wrote (stdout and stderr interleaved).
    pub output: String,
    /// `None` when it was stopped before it exited by itself.
    pub exit_code: Option<i32>,
    pub cancelled: bool,
}

#[derive(Debug, Default)]
pub struct ClientShells {
    shells: ShellManager,
}

/// A command left running is killed after this long at most.
const LONGEST: Duration = Duration::from_secs(24 * 60 * 60);

impl ClientShells {
    /// Commands started from now on run under `policy` (unconfined with `None`).
    pub fn set_sandbox(&self, policy: Option<Arc<sandbox::Policy>>) {
        self.shells.set_sandbox(policy);
    }

    /// Starts `command` in `cwd`; returns its process id (per session: `"0"`, `"1"`, ...).
    pub fn start(&self, command: &str, cwd: &Path, env: &[(String, String)]) -> std::io::Result<String> {
        let id = self.shells.next_id();
        let spec = SpawnSpec {
            shell: find_shell(env),
            command: command.to_string(),
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            no_pty: true,
        };
        self.shells.start(id.clone(), spec, String::new(), false)?;
        Ok(id)
    }

    fn get(&self, id: &str) -> Option<Arc<ShellProcess>> {
        self.shells.get(id)
    }

    /// Kills a running command's process group; `false` when no such command runs.
    pub fn kill(&self, id: &str) -> bool {
        match self.get(id) {
            Some(p) if !p.is_done() => {
                p.kill();
                true
            }
            _ => false,
        }
    }

    /// Waits for the command to end (or `cancel`: then it is killed) and forgets it.
    pub async fn wait(&self, id: &str, cancel: &CancellationToken) -> Option<ClientCommandEnd> {
        let process = self.get(id)?;
        let outcome = process.wait(LONGEST, cancel, None).await;
        let cancelled = !matches!(outcome, WaitOutcome::Done);
        if cancelled {
            process.kill();
            process.wait_done(Duration::from_secs(5)).await;
        }
        self.shells.remove(id);
        let exit_code = if cancelled { None } else { process.exit_code() };
        Some(ClientCommandEnd { output: process.take_unread(), exit_code, cancelled })
    }

    /// Forgets finished commands nobody waits for (a plain `exec` is never waited on).
    pub fn forget_finished(&self) {
        for info in self.shells.list().into_iter().filter(|s| !s.running) {
            self.shells.remove(&info.shell_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("PATH".into(), "/usr/bin:/bin".into())]
    }

    #[tokio::test]
    async fn a_command_runs_to_its_end_with_its_output_and_status() {
        let shells = ClientShells::default();
        let dir = tempfile::tempdir().expect("tempdir");
        let id = shells.start("echo hello; exit 3", dir.path(), &env()).expect("starts");
        let end = shells.wait(&id, &CancellationToken::new()).await.expect("known id");
        assert!(end.output.contains("hello"), "{end:?}");
        assert_eq!(end.exit_code, Some(3));
        assert!(!end.cancelled);
        assert!(!shells.kill(&id), "a finished command is forgotten");
    }

    #[tokio::test]
    async fn killing_or_cancelling_ends_a_running_command() {
        let shells = ClientShells::default();
        let dir = tempfile::tempdir().expect("tempdir");
        let id = shells.start("sleep 30", dir.path(), &env()).expect("starts");
        assert!(shells.kill(&id));
        let end = shells.wait(&id, &CancellationToken::new()).await.expect("known id");
        assert_ne!(end.exit_code, Some(0));
        let id = shells.start("sleep 30", dir.path(), &env()).expect("starts");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let end = shells.wait(&id, &cancel).await.expect("known id");
        assert!(end.cancelled);
        assert!(!shells.kill("nope"));
    }
}
