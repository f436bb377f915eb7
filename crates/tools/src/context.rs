//! What a tool may use: cwd, permission gate, progress sink, cancellation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::bash::shell::ShellManager;
// Kept under this path too: it lives with what tools return, below the shells that report
// through it (which this file's `ToolContext` holds).
use crate::files::Files;
pub use crate::output::ProgressSink;
use crate::output::ToolOutput;

/// A request for the user's approval, before a tool touches the world. The loop turns it into
/// a `permission.requested` event.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionRequest {
    Shell {
        full_command_text: String,
        intention: String,
        commands: Vec<ShellCommand>,
        possible_paths: Vec<String>,
        possible_urls: Vec<String>,
        has_write_file_redirection: bool,
    },
    /// `old_file_contents`: what the file holds now (`None`: it does not exist yet).
    Write {
        intention: String,
        file_name: String,
        diff: String,
        new_file_contents: String,
        old_file_contents: Option<String>,
    },
    Read {
        intention: String,
        path: String,
    },
    Url {
        intention: String,
        url: String,
    },
}

impl PermissionRequest {
    pub fn kind(&self) -> &'static str {
        match self {
            PermissionRequest::Shell { .. } => "shell",
            PermissionRequest::Write { .. } => "write",
            PermissionRequest::Read { .. } => "read",
            PermissionRequest::Url { .. } => "url",
        }
    }
}

/// One command of a shell command line, as a permission prompt names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    pub identifier: String,
    pub read_only: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    Approved,
    /// Denied; `text_for_llm` is what the model sees, `code` goes to `error.code`.
    Denied {
        text_for_llm: String,
        code: String,
    },
    /// Refused by a policy that says itself what the tool returns (the command sandbox's
    /// refusal of a write outside it, with its remediation).
    Blocked(Box<ToolOutput>),
}

#[async_trait]
pub trait PermissionGate: Send + Sync {
    async fn request(&self, req: PermissionRequest) -> PermissionDecision;
}

/// Approves everything (`--allow-all-tools`, tests).
pub struct AllowAll;

#[async_trait]
impl PermissionGate for AllowAll {
    async fn request(&self, _req: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Approved
    }
}

#[derive(Clone)]
pub struct ToolContext {
    /// The session's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Where large outputs are spilled (`$COPILOT_HOME/session-state/temp`).
    pub temp_dir: PathBuf,
    pub tool_call_id: String,
    pub permissions: Arc<dyn PermissionGate>,
    pub progress: ProgressSink,
    pub cancel: CancellationToken,
    /// Environment for child processes (the loop decides what tools may see).
    pub env: Vec<(String, String)>,
    /// The session's shells (one manager per session): commands still running after their
    /// `bash` call returned live here until read to completion, stopped, or killed.
    pub shells: Arc<ShellManager>,
    /// Where file tools may open files (anywhere, or beneath a tenant's workspace).
    pub files: Files,
}

impl ToolContext {
    /// A context for tests and simple callers: approve-all, no progress, fresh token.
    pub fn simple(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        Self {
            temp_dir: std::env::temp_dir(),
            cwd,
            tool_call_id: "call_0".into(),
            permissions: Arc::new(AllowAll),
            progress: Arc::new(|_| {}),
            cancel: CancellationToken::new(),
            env: Vec::new(),
            shells: Arc::new(ShellManager::new()),
            files: Files::default(),
        }
    }

    /// Asks the permission gate; a denial becomes the failed output the tool returns as is
    /// (the model sees the gate's text, `error.code` carries the gate's code).
    pub async fn ask_permission(&self, req: PermissionRequest) -> Result<(), ToolOutput> {
        match self.permissions.request(req).await {
            PermissionDecision::Approved => Ok(()),
            PermissionDecision::Denied { text_for_llm, code } => {
                Err(ToolOutput::fail_with(text_for_llm.clone(), text_for_llm, &code))
            }
            PermissionDecision::Blocked(output) => Err(*output),
        }
    }

    /// Resolves a tool path argument against the session cwd.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }
}
