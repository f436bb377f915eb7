//! `skipper instruction list [--json]`: the instruction files a session started here would
//! read, grouped as the original groups them. Found by agent-config's `instructions::discover`
//! (what `instructions.discover` answers).

use agent_config::instructions;
use clap::{Parser, Subcommand};
use protocol::generated::types::{InstructionSource, InstructionSourceLocation as L};
use serde_json::{json, Value};

use super::here::{self, Here};

#[derive(Debug, Parser)]
#[command(
    name = "instruction",
    bin_name = "skipper instruction",
    about = "Inspect instruction sources",
    long_about = "Inspect the instruction sources a session would load.\n\n\
                  Instructions come from your repository, the working directory and your\n\
                  personal configuration ($COPILOT_HOME/copilot-instructions.md)."
)]
struct InstructionArgs {
    #[command(subcommand)]
    command: InstructionCommand,
}

#[derive(Debug, Subcommand)]
enum InstructionCommand {
    /// List discovered instruction sources
    List {
        /// Output as JSON
        #[arg(long)]
        json: bool,
    },
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <InstructionArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let parsed: InstructionArgs = match here::parse_or_help("skipper instruction", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match parsed.command {
        InstructionCommand::List { json } => list(json, here),
    }
}

/// A repository file by its path in the repository, the user's by its full path (as the
/// original shows them).
fn shown_path(s: &InstructionSource) -> String {
    match &s.project_path {
        Some(root) => std::path::Path::new(&s.source_path)
            .strip_prefix(root)
            .map_or_else(|_| s.source_path.clone(), |p| p.to_string_lossy().into_owned()),
        None => s.source_path.clone(),
    }
}

fn list(as_json: bool, here: &mut Here<'_>) -> i32 {
    let found = instructions::discover(std::slice::from_ref(&here.cwd), Some(&here.home));
    if as_json {
        let entries: Vec<Value> = found.iter().map(|s| to_json(s, &shown_path(s))).collect();
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
        return 0;
    }
    if found.is_empty() {
        let _ = writeln!(here.out, "No instruction sources found.");
        return 0;
    }
    let groups = [
        ("Repository instructions", L::Repository),
        ("Working directory instructions", L::WorkingDirectory),
        ("Personal instructions", L::User),
        ("Plugin instructions", L::Plugin),
    ];
    let mut first = true;
    for (title, location) in groups {
        let in_group: Vec<&InstructionSource> = found.iter().filter(|s| s.location == location).collect();
        if in_group.is_empty() {
            continue;
        }
        if !first {
            let _ = writeln!(here.out);
        }
        first = false;
        let _ = writeln!(here.out, "{title}:");
        for s in in_group {
            let description = s.description.as_deref().map(|d| format!(" - {d}")).unwrap_or_default();
            let _ = writeln!(here.out, "  • {}{description}\n      from {}", s.label, shown_path(s));
        }
    }
    0
}

/// One source as the original's `--json` has it: no content, no project path, the path shown.
fn to_json(s: &InstructionSource, path: &str) -> Value {
    let mut o = json!({"id": s.id, "label": s.label});
    if let Some(d) = &s.description {
        o["description"] = json!(d);
    }
    o["location"] = json!(s.location.as_str());
    o["type"] = json!(s.r#type.as_str());
    o["sourcePath"] = json!(path);
    o["defaultDisabled"] = json!(s.default_disabled.unwrap_or(false));
    if let Some(a) = &s.apply_to {
        o["applyTo"] = json!(a);
    }
    o
}
