//! `skipper sessions import <transcript.jsonl>`: a conversation from another tool becomes a
//! saved session (listed, resumed with `--resume`), as the original's command does. The
//! transcript's format and checks are `store::interchange`'s; this module reads the file and
//! its attachments, decides the name and working directory, and writes the session.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::here::{self, Here};
use super::sessions_import::{import, Options, Outcome};

#[derive(Debug, Parser)]
#[command(
    name = "sessions",
    disable_help_subcommand = true,
    bin_name = "skipper sessions",
    about = "Manage saved sessions"
)]
struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Import a semantic session from JSONL
    Import {
        /// Semantic session JSONL file
        #[arg(value_name = "transcript.jsonl")]
        transcript: PathBuf,
        /// Validate without writing a session
        #[arg(long)]
        dry_run: bool,
        /// Output format
        #[arg(long, value_name = "format")]
        output: Option<Format>,
        /// Override the imported working directory
        #[arg(long, value_name = "path")]
        working_directory: Option<PathBuf>,
        /// Override the imported session name
        #[arg(long, value_name = "name")]
        name: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <SessionsArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let parsed: SessionsArgs = match here::parse_or_help("skipper sessions", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match parsed.command {
        SessionsCommand::Import { transcript, dry_run, output, working_directory, name } => {
            let options = Options {
                input: here.cwd.join(transcript),
                dry_run,
                working_directory: working_directory.map(|d| here.cwd.join(d)),
                default_working_directory: here.cwd.clone(),
                name,
            };
            let outcome = import(&here.home, &options);
            report(&outcome, output.is_some(), here)
        }
    }
}

/// JSON on stdout; as text, the message on stdout when it worked, else it and each problem
/// (`Line N (id): message [code]`) on stderr. Status 1 unless it worked.
fn report(outcome: &Outcome, as_json: bool, here: &mut Here<'_>) -> i32 {
    if as_json {
        let _ = writeln!(here.out, "{}", serde_json::to_string(outcome).unwrap_or_default());
    } else if outcome.ok {
        let _ = writeln!(here.out, "{}", outcome.message);
    } else {
        let _ = writeln!(here.err, "{}", outcome.message);
        for d in &outcome.diagnostics {
            let id = d.external_id.as_ref().map(|id| format!(" ({id})")).unwrap_or_default();
            let _ = writeln!(here.err, "Line {}{id}: {} [{}]", d.line, d.message, d.code);
        }
    }
    i32::from(!outcome.ok)
}
