//! A command line with neither `-p` nor a server flag (`--headless`, `--server`, `--stdio`,
//! `--port`): the original's commands, or a task piped on stdin. Nothing here starts a
//! listener: a word on the command line is never taken as "serve".

use std::io::{IsTerminal, Read, Write};

use clap::CommandFactory;

use crate::cli::Cli;

mod attachment_file;
mod completion;
mod config;
mod help;
mod here;
mod instruction;
mod mcp;
mod mcp_add;
mod mcp_show;
mod mcp_sources;
mod plugin;
mod plugin_list;
mod plugin_marketplace;
mod sessions;
mod sessions_import;
mod skill;

use here::Here;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Asked {
    /// Run this task, as with `-p`.
    Task(String),
    /// Done (a command ran, or the line was refused): exit with this status.
    Exit(i32),
}

/// The original's commands Skipper does not have yet.
const NOT_YET: &[&str] = &["app", "login", "init", "update", "workflow", "memories", "lsp", "sandbox"];

/// One of the original's commands (what follows it on the command line is its own).
pub fn is_command(word: &str) -> bool {
    IMPLEMENTED.contains(&word) || NOT_YET.contains(&word)
}

/// The original's commands Skipper has.
const IMPLEMENTED: &[&str] =
    &["version", "help", "config", "mcp", "plugin", "skill", "instruction", "sessions", "completion"];

const NO_PROMPT: &str =
    "No prompt provided. Run in an interactive terminal or provide a prompt with -p or via standard in.";

pub fn decide(cli: &Cli, stdin: &mut dyn Read, stdin_is_terminal: bool, out: &mut dyn Write) -> Asked {
    let mut err = std::io::stderr().lock();
    let refuse = |err: &mut dyn Write, text: &str| {
        let _ = writeln!(err, "{text}");
        Asked::Exit(1)
    };
    if cli.acp {
        return refuse(&mut err, "error: --acp (the Agent Client Protocol) is not served by Skipper yet.");
    }
    if cli.interactive.is_some() {
        return refuse(
            &mut err,
            "error: Skipper has no interactive mode. Give the task with -p (or on standard input) to run it to completion.",
        );
    }
    match cli.words.first().map(String::as_str) {
        None if stdin_is_terminal => refuse(&mut err, NO_PROMPT),
        None => {
            let mut task = String::new();
            match stdin.read_to_string(&mut task) {
                Ok(_) if !task.trim().is_empty() => Asked::Task(task.trim_end().to_string()),
                Ok(_) => refuse(&mut err, NO_PROMPT),
                Err(e) => refuse(&mut err, &format!("error: reading the prompt from standard input: {e}")),
            }
        }
        Some("version") => {
            let _ = writeln!(out, "skipper {}", env!("CARGO_PKG_VERSION"));
            Asked::Exit(0)
        }
        Some(command) if IMPLEMENTED.contains(&command) => Asked::Exit(run(cli, command, out, &mut err)),
        Some(command) if NOT_YET.contains(&command) => refuse(
            &mut err,
            &format!(
                "error: `skipper {command}` is not available yet. Sessions, MCP servers, plugins, skills and settings \
                 are managed through the JSON-RPC server's methods (what the SDKs call)."
            ),
        ),
        Some(word) => refuse(
            &mut err,
            &format!(
                "error: Invalid command format.\n\nDid you mean: skipper -p \"{word}\"?\n\n\
                 For non-interactive mode, use the -p or --prompt option.\nTry 'skipper --help' for more information."
            ),
        ),
    }
}

/// The flags and the commands, as `--help` and completion scripts show them.
pub fn whole_command() -> clap::Command {
    Cli::command()
        .disable_help_subcommand(true)
        .subcommand(config::command())
        .subcommand(mcp::command())
        .subcommand(plugin::command())
        .subcommand(skill::command())
        .subcommand(instruction::command())
        .subcommand(sessions::command())
        .subcommand(completion::command())
        .subcommand(clap::Command::new("help").about("Print help, or a help topic").arg(clap::Arg::new("topic")))
        .subcommand(clap::Command::new("version").about("Print the version"))
}

/// Runs one of the commands with the rest of the line; its exit status.
fn run(cli: &Cli, command: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let env: std::collections::HashMap<String, String> = std::env::vars().collect();
    let home = match crate::default_home(&env) {
        Ok(home) => home,
        Err(e) => {
            let _ = writeln!(err, "Error: {e}");
            return 1;
        }
    };
    let cwd = match (&cli.cwd, std::env::current_dir()) {
        (Some(dir), Ok(here)) => here.join(dir),
        (None, Ok(here)) => here,
        (_, Err(e)) => {
            let _ = writeln!(err, "Error: the working directory: {e}");
            return 1;
        }
    };
    let args = cli.words.get(1..).unwrap_or_default();
    let mut here = Here { home, cwd, out, err };
    match command {
        "config" => config::run(args, &mut here),
        "mcp" => mcp::run(args, &mut here),
        "plugin" => plugin::run(args, &cli.plugin_dir, &mut here),
        "skill" => skill::run(args, &mut here),
        "instruction" => instruction::run(args, &mut here),
        "sessions" => sessions::run(args, &mut here),
        "completion" => completion::run(args, &mut here),
        "help" => help::run(args, &mut here),
        _ => here.fail(format!("`skipper {command}` is not available yet.")),
    }
}

/// [`decide`] on the process's own standard input and output.
pub fn decide_here(cli: &Cli) -> Asked {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    decide(cli, &mut stdin.lock(), terminal, &mut std::io::stdout().lock())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(line: &str, stdin: &str, terminal: bool) -> (Asked, String) {
        let cli = crate::cli::parse(line.split_whitespace().map(String::from).collect()).unwrap();
        let mut out = Vec::new();
        let a = decide(&cli, &mut stdin.as_bytes(), terminal, &mut out);
        (a, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_task_on_stdin_runs_and_nothing_at_all_is_refused() {
        assert_eq!(asked("skipper --allow-all-tools", "fix it\n", false).0, Asked::Task("fix it".into()));
        assert_eq!(asked("skipper", "  \n", false).0, Asked::Exit(1));
        assert_eq!(asked("skipper", "", true).0, Asked::Exit(1), "no terminal UI to start");
    }

    #[test]
    fn words_are_commands_or_mistakes_never_a_server() {
        let (a, out) = asked("skipper version", "", true);
        assert_eq!((a, out.trim()), (Asked::Exit(0), format!("skipper {}", env!("CARGO_PKG_VERSION")).as_str()));
        let (a, out) = asked("skipper help", "", true);
        assert!(a == Asked::Exit(0) && out.contains("--deny-tool"), "{out}");
        for line in ["skipper login", "skipper sessions list", "skipper fix-it", "skipper --acp"] {
            assert_eq!(asked(line, "", false).0, Asked::Exit(1), "{line}");
        }
    }
}
