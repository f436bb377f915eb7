//! `skipper skill list|add|remove|enable|disable`: the skills sessions started here would
//! offer, and the user's changes to them. Skills are found by agent-config's `skills::discover`
//! (what `skills.discover` answers); what is changed goes through `skills::manage` (the
//! registered directories in `settings.json`, `disabledSkills` in `config.json`, skill files in
//! the personal or project skill directories).

use std::path::{Path, PathBuf};

use agent_config::skills::{self, manage, SkillDef};
use clap::{Parser, Subcommand};
use protocol::generated::types::SkillSource;
use serde_json::json;

use super::here::{self, Here};

const LONG_ABOUT: &str = "\
Manage skills available to sessions.

Skills are reusable instructions (SKILL.md files) that extend the agent with
specialized capabilities. They are discovered from several sources:
  Project   .github/skills/, .agents/skills/, or .claude/skills/
  Personal  $COPILOT_HOME/skills/ (default ~/.copilot/skills/)
  Custom    Directories added with `skipper skill add <directory>`

Use `skipper skill add` to add a skill from a file or directory.";

#[derive(Debug, Parser)]
#[command(name = "skill", disable_help_subcommand = true, bin_name = "skipper skill", about = "Manage skills", long_about = LONG_ABOUT)]
struct SkillArgs {
    #[command(subcommand)]
    command: SkillCommand,
}

#[derive(Debug, Subcommand)]
enum SkillCommand {
    /// List available skills, grouped by source
    List {
        /// Output as JSON
        #[arg(long)]
        json: bool,
    },
    /// Add a skill from a SKILL.md file, or register a directory of skills
    Add {
        /// Skill source (file path or directory; URLs need the network and are refused)
        source: String,
        /// Install the skill into the project's .github/skills directory
        #[arg(long)]
        project: bool,
    },
    /// Remove a personal or project skill, or a custom skill directory
    Remove {
        /// Skill name or custom skill directory
        #[arg(value_name = "name-or-directory")]
        name_or_directory: String,
    },
    /// Enable a skill
    Enable {
        /// Skill name
        name: String,
    },
    /// Disable a skill
    Disable {
        /// Skill name
        name: String,
    },
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <SkillArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    let parsed: SkillArgs = match here::parse_or_help("skipper skill", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match parsed.command {
        SkillCommand::List { json } => list(json, here),
        SkillCommand::Add { source, project } => add(&source, project, here),
        SkillCommand::Remove { name_or_directory } => remove(&name_or_directory, here),
        SkillCommand::Enable { name } => switch(&name, true, here),
        SkillCommand::Disable { name } => switch(&name, false, here),
    }
}

/// Every skill a session here would find, in the order sessions find them.
fn found(here: &Here<'_>) -> Vec<SkillDef> {
    let directories = manage::user_directories(&here.home);
    let (found, _) = skills::discover(std::slice::from_ref(&here.cwd), &directories, Some(&here.home));
    found.into_iter().map(|(skill, _)| skill).collect()
}

/// The heading a skill is listed under (the original's names).
fn group(source: SkillSource) -> &'static str {
    match source {
        SkillSource::Project => "Project",
        SkillSource::Inherited => "Inherited",
        SkillSource::PersonalCopilot | SkillSource::PersonalAgents => "Personal",
        SkillSource::Plugin => "Plugin",
        SkillSource::Custom => "Custom",
        SkillSource::Builtin => "Builtin",
        _ => "Other",
    }
}

const GROUPS: &[&str] = &["Project", "Inherited", "Personal", "Plugin", "Custom", "Builtin", "Other"];

fn list(as_json: bool, here: &mut Here<'_>) -> i32 {
    let all = found(here);
    let disabled = skills::user_disabled(&here.home);
    let on = |s: &SkillDef| !disabled.contains(&s.name);
    if as_json {
        let entries: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                json!({"name": s.name, "description": s.description, "source": s.source.as_str(),
                       "path": s.dir().to_string_lossy(), "enabled": on(s)})
            })
            .collect();
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&entries).unwrap_or_default());
        return 0;
    }
    if all.is_empty() {
        let _ = writeln!(here.out, "No skills found.\n\nAdd a skill with:\n  skipper skill add <file | directory>");
        return 0;
    }
    for title in GROUPS {
        let in_group: Vec<&SkillDef> = all.iter().filter(|s| group(s.source) == *title).collect();
        if in_group.is_empty() {
            continue;
        }
        let _ = writeln!(here.out, "{title} skills:");
        for s in in_group {
            let off = if on(s) { "" } else { " (disabled)" };
            let description = if s.description.is_empty() { String::new() } else { format!(" - {}", s.description) };
            let _ = writeln!(here.out, "  {}{off}{description}", s.name);
        }
        let _ = writeln!(here.out);
    }
    0
}

/// `source` against the working directory, `..` and `.` taken out even when it does not exist
/// (a message names the path the user meant).
fn absolute(source: &str, cwd: &Path) -> PathBuf {
    let path = cwd.join(source);
    std::fs::canonicalize(&path).unwrap_or_else(|_| {
        let mut out = PathBuf::new();
        for part in path.components() {
            match part {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::CurDir => {}
                other => out.push(other),
            }
        }
        out
    })
}

fn add(source: &str, project: bool, here: &mut Here<'_>) -> i32 {
    let failed = |here: &mut Here<'_>, e: &dyn std::fmt::Display| {
        let _ = writeln!(here.err, "Failed to add skill: {e}");
        1
    };
    if source.starts_with("http://") || source.starts_with("https://") {
        return failed(here, &"fetching a skill from a URL needs network access, which Skipper's commands do not use. Download the SKILL.md and add the file.");
    }
    let path = absolute(source, &here.cwd);
    if !path.exists() {
        return failed(here, &format!("Path does not exist: {}", path.display()));
    }
    if path.is_dir() {
        if let Err(e) = manage::add_directory(&here.home, &path) {
            return failed(here, &e);
        }
        let _ = writeln!(
            here.out,
            "Added custom skill directory: {}\nRun `skipper skill list` to see the skills it provides.",
            path.display()
        );
        return 0;
    }
    let (root, scope) = if project {
        (agent_config::repo_settings::root(&here.cwd).join(".github").join("skills"), "project")
    } else {
        (here.home.join("skills"), "personal")
    };
    match manage::add_file(&path, &root) {
        Ok((name, dir)) => {
            let _ = writeln!(here.out, "Added {scope} skill \"{name}\" from file.\nCreated {}", dir.display());
            0
        }
        Err(e) => failed(here, &e),
    }
}

fn remove(target: &str, here: &mut Here<'_>) -> i32 {
    let path = absolute(target, &here.cwd);
    let result = (|| -> anyhow::Result<Option<String>> {
        if manage::remove_directory(&here.home, &path)? {
            return Ok(Some(format!("Removed custom skill directory: {}", path.display())));
        }
        let gone = manage::remove_named(&here.cwd, &here.home, target)?;
        Ok(gone.map(|dir| format!("Removed skill \"{target}\" ({}).", dir.display())))
    })();
    match result {
        Ok(Some(done)) => {
            let _ = writeln!(here.out, "{done}");
            0
        }
        Ok(None) => here.fail(format!(
            "No custom, personal, or project skill found matching \"{target}\". Run `skipper skill list` to see removable skills."
        )),
        Err(e) => here.fail(e),
    }
}

/// Records the change even for a name no source has (a skill added later starts as asked),
/// with a warning, as the original does.
fn switch(name: &str, enable: bool, here: &mut Here<'_>) -> i32 {
    let known = found(here).iter().any(|s| s.name == name);
    let (done, word, verb) =
        if enable { ("Enabled", "enabled", "enable") } else { ("Disabled", "disabled", "disable") };
    if let Err(e) = manage::set_user_disabled(&here.home, name, !enable) {
        let _ = writeln!(here.err, "Failed to {verb} skill: {e}");
        return 1;
    }
    if known {
        let _ = writeln!(here.out, "{done} skill \"{name}\".");
    } else {
        let _ = writeln!(
            here.err,
            "Warning: no skill named \"{name}\" is currently configured, so no active skill was {word}. \
             Run `skipper skill list` to see configured skills."
        );
    }
    0
}
