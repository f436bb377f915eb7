//! The management commands (`skipper config`, `skipper mcp`, …) run as a user runs them: the
//! real binary, a scratch home and working directory, its output, files and exit status.

mod completion;
mod config;
mod help;
mod instruction;
mod mcp;
mod plugin;
mod sessions;
mod skill;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A scratch home (`$HOME`, with `$COPILOT_HOME` beneath it) and a working directory that is
/// a git work tree.
pub(crate) struct Scratch {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(home.join(".copilot")).unwrap();
        std::fs::create_dir_all(work.join(".git")).unwrap();
        Self { _dir: dir, home, work }
    }

    pub fn copilot_home(&self) -> PathBuf {
        self.home.join(".copilot")
    }

    /// `skipper ARGS` in the working directory, with nothing of this process's environment
    /// but `PATH`.
    pub fn run(&self, args: &[&str]) -> Ran {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skipper"))
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("COPILOT_HOME", self.copilot_home())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        Ran::from(out)
    }

    pub fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }
}

/// What a command printed, and its status.
#[derive(Debug)]
pub(crate) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Ran {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Ran {
    /// Asserts the status, showing both streams when it differs.
    #[track_caller]
    pub fn status(self, code: i32) -> Self {
        assert_eq!(self.code, code, "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        self
    }
}
