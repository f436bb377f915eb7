//! `skipper completion bash|zsh|fish`: a completion script for the shell, made by
//! `clap_complete` from the flags and the commands' own parsers.

use clap::{Parser, ValueEnum};
use clap_complete::Shell;

use super::here::{self, Here};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Target {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Parser)]
#[command(
    name = "completion",
    bin_name = "skipper completion",
    about = "Print a shell completion script",
    long_about = "Print a completion script for the shell on stdout: Skipper's flags and commands.\n\n\
                  Examples:\n  source <(skipper completion bash)\n  skipper completion zsh > \"${fpath[1]}/_skipper\"\n  \
                  skipper completion fish > ~/.config/fish/completions/skipper.fish"
)]
struct CompletionArgs {
    /// The shell
    shell: Target,
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <CompletionArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let parsed: CompletionArgs = match here::parse("skipper completion", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let shell = match parsed.shell {
        Target::Bash => Shell::Bash,
        Target::Zsh => Shell::Zsh,
        Target::Fish => Shell::Fish,
    };
    let mut cmd = super::whole_command();
    // Into memory first: `generate` panics on a failed write, and a reader that stops early
    // (`| head`) is no failure of ours.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "skipper", &mut script);
    let _ = here.out.write_all(&script);
    0
}
