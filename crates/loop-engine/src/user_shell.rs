//! A session's shell as its clients use it (`session.shell.exec` / `kill`,
//! `executeUserRequested` / `cancelUserRequested`): commands run in the session's working
//! directory with the tools' environment, apart from the model's shells.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

pub use tools::ClientCommandEnd;

pub struct UserShell {
    shells: tools::ClientShells,
    env: std::sync::Arc<Vec<(String, String)>>,
    /// User-requested commands still running, by the client's request id.
    requests: Mutex<HashMap<String, CancellationToken>>,
}

impl UserShell {
    pub(crate) fn new(env: std::sync::Arc<Vec<(String, String)>>) -> Self {
        Self { shells: Default::default(), env, requests: Default::default() }
    }

    /// Commands started from now on run under `policy` (unconfined with `None`).
    pub(crate) fn set_sandbox(&self, policy: Option<std::sync::Arc<sandbox::Policy>>) {
        self.shells.set_sandbox(policy);
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a command; returns its process id.
    pub fn start(&self, command: &str, cwd: &Path) -> std::io::Result<String> {
        self.shells.forget_finished();
        self.shells.start(command, cwd, &self.env)
    }

    pub fn kill(&self, process_id: &str) -> bool {
        self.shells.kill(process_id)
    }

    /// Runs a command the user asked for to its end, or until `cancel(request_id)`.
    pub async fn run_requested(
        &self,
        request_id: &str,
        command: &str,
        cwd: &Path,
    ) -> std::io::Result<ClientCommandEnd> {
        let cancel = CancellationToken::new();
        self.requests().insert(request_id.to_string(), cancel.clone());
        let started = self.shells.start(command, cwd, &self.env);
        let end = match started {
            Ok(id) => Ok(self.shells.wait(&id, &cancel).await.unwrap_or(ClientCommandEnd {
                output: String::new(),
                exit_code: None,
                cancelled: true,
            })),
            Err(e) => Err(e),
        };
        self.requests().remove(request_id);
        end
    }

    /// Stops a user-requested command; `false` when none runs under that request id.
    pub fn cancel(&self, request_id: &str) -> bool {
        match self.requests().get(request_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}
