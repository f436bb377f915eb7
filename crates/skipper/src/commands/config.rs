//! `skipper config [KEY] [VALUE]`: read and change one settings file — the user's
//! `settings.json` (default), or a repository's `.github/copilot/settings.json` (`--repo`) or
//! `settings.local.json` (`--local`). Keys and their types are agent-config's
//! (`settings_keys`); the files are read and written by their owners there.

use agent_config::settings_edit::{self, Changed, EditError};
use agent_config::settings_keys::{self, Setting};
use agent_config::user_settings::UserSettings;
use agent_config::{repo_settings, user_settings, FileError, JsonFile};
use clap::Parser;
use serde_json::Value;

use super::here::{self, Here};

const ABOUT: &str = "Read or change a setting";

const LONG_ABOUT: &str = "\
Read or change a setting.

With a KEY, print its value; with a KEY and a VALUE, set it. A list setting
(allowedUrls, disabledSkills, ...) gains the VALUE as an item, once. Lists print
one item per line and groups print as JSON. A key that is not set prints nothing
and exits with status 1.

VALUE must fit the setting: on/off, true/false or yes/no for a switch, a number
for a count, one of the listed words for a choice. Put -- before a VALUE that
starts with a dash. Values whose names say they are credentials are shown as
<redacted>.

KEY is dotted for nested settings (footer.showQuota). The file is your
settings.json in $COPILOT_HOME (default ~/.copilot); --repo uses the
repository's .github/copilot/settings.json and --local its
.github/copilot/settings.local.json, which take only the settings a repository
may override.

`skipper help config` describes the settings.";

const EXAMPLES: &str = "\
Examples:
  skipper config theme                       print a setting
  skipper config footer.showQuota off        set a nested switch
  skipper config allowedUrls github.com      add an item to a list
  skipper config powershellFlags -- -NoLogo  an item starting with a dash
  skipper config --rm theme                  remove a setting
  skipper config --rm allowedUrls github.com remove one item of a list
  skipper config --repo --list --json        the repository's settings as JSON";

#[derive(Debug, Parser)]
#[command(name = "config", bin_name = "skipper config", about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct ConfigArgs {
    /// Setting key, dotted for nested settings
    key: Option<String>,
    /// Value to set, to add to a list, or (with --rm) to take out of one
    value: Option<String>,
    /// Print every setting in the file as key=value lines
    #[arg(long, conflicts_with_all = ["key", "rm"])]
    list: bool,
    /// Remove the key, or with a value only that item of a list
    #[arg(long, requires = "key")]
    rm: bool,
    /// With --list: print the file's settings as JSON
    #[arg(long, requires = "list")]
    json: bool,
    /// The user's settings.json (the default)
    #[arg(long, conflicts_with_all = ["repo", "local"])]
    global: bool,
    /// The repository's .github/copilot/settings.json
    #[arg(long, conflicts_with = "local")]
    repo: bool,
    /// The repository's .github/copilot/settings.local.json
    #[arg(long)]
    local: bool,
}

/// Which file, and how messages name it.
struct Target {
    file: JsonFile<UserSettings>,
    shown: String,
    repo: bool,
}

fn target(args: &ConfigArgs, here: &Here<'_>) -> Target {
    if args.repo || args.local {
        let root = repo_settings::root(&here.cwd);
        let (file, shown) = if args.local {
            (repo_settings::local_file(&root), repo_settings::LOCAL)
        } else {
            (repo_settings::shared_file(&root), repo_settings::SHARED)
        };
        Target { file, shown: shown.into(), repo: true }
    } else {
        Target { file: user_settings::file(&here.home), shown: user_settings::FILE_NAME.into(), repo: false }
    }
}

#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    File(#[from] FileError),
}

/// The command's parser, for completion scripts.
pub fn command() -> clap::Command {
    <ConfigArgs as clap::CommandFactory>::command()
}

pub fn run(args: &[String], here: &mut Here<'_>) -> i32 {
    if args.is_empty() {
        // Nothing asked: the summary of what can be, as the original does.
        let mut cmd = command();
        let _ = write!(here.out, "{}", cmd.render_help());
        return 0;
    }
    let args: ConfigArgs = match here::parse("skipper config", args, here) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let target = target(&args, here);
    let result = if args.list {
        list(&target, args.json, here)
    } else if let Some(key) = &args.key {
        one(&args, key, &target, here)
    } else {
        // --global / --repo / --local alone.
        let mut cmd = command();
        let _ = write!(here.out, "{}", cmd.render_help());
        Ok(0)
    };
    result.unwrap_or_else(|e| here.fail(e))
}

fn list(target: &Target, json: bool, here: &mut Here<'_>) -> Result<i32, Failed> {
    let object = target.file.read()?;
    if json {
        let shown = Value::Object(settings_edit::redacted_object(&object));
        let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
    } else {
        for line in settings_edit::lines(&object) {
            let _ = writeln!(here.out, "{line}");
        }
    }
    Ok(0)
}

fn one(args: &ConfigArgs, key: &str, target: &Target, here: &mut Here<'_>) -> Result<i32, Failed> {
    let setting = settings_keys::resolve(key).map_err(EditError::from)?;
    if args.rm {
        return remove(&setting, args.value.as_deref(), target, here);
    }
    match &args.value {
        None => Ok(print(&setting, target, here)?),
        Some(value) => set(&setting, value, target, here),
    }
}

/// Prints the stored value: 0, or 1 when it is not set.
fn print(setting: &Setting, target: &Target, here: &mut Here<'_>) -> Result<i32, FileError> {
    let object = target.file.read()?;
    let Some(value) = settings_edit::get(&object, setting) else { return Ok(1) };
    let name = setting.path.last().map(String::as_str).unwrap_or_default();
    match settings_edit::redacted(name, value) {
        Value::Array(items) => {
            for item in items {
                let _ = writeln!(here.out, "{}", settings_edit::plain(&item));
            }
        }
        v @ Value::Object(_) => {
            let _ = writeln!(here.out, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        v => {
            let _ = writeln!(here.out, "{}", settings_edit::plain(&v));
        }
    }
    Ok(0)
}

fn set(setting: &Setting, value: &str, target: &Target, here: &mut Here<'_>) -> Result<i32, Failed> {
    if target.repo {
        settings_edit::check_repo_key(setting, &target.shown)?;
    }
    let changed =
        target.file.update(|object| settings_edit::set(object, setting, value, &target.shown).map_err(Failed::from))?;
    let (key, file) = (setting.key(), &target.shown);
    let shown_value = |v: &Value| settings_edit::redacted(setting.path.last().map_or("", String::as_str), v);
    match changed {
        Changed::Set(v) => {
            let _ = writeln!(here.out, "Set {key} to {} in {file}.", shown_value(&v));
        }
        Changed::Added => {
            let _ = writeln!(here.out, "Added {} to {key} in {file}.", shown_value(&Value::String(value.into())));
        }
        Changed::AlreadyThere => {
            let _ = writeln!(here.err, "{key} already contains {}.", shown_value(&Value::String(value.into())));
        }
        Changed::Removed | Changed::WasNotSet => {}
    }
    Ok(0)
}

fn remove(setting: &Setting, item: Option<&str>, target: &Target, here: &mut Here<'_>) -> Result<i32, Failed> {
    let changed = target.file.update(|object| settings_edit::remove(object, setting, item).map_err(Failed::from))?;
    let (key, file) = (setting.key(), &target.shown);
    let item = item.map(|i| Value::String(i.into()));
    match (changed, item) {
        (Changed::Removed, None) => {
            let _ = writeln!(here.out, "Removed {key} from {file}.");
        }
        (Changed::Removed, Some(i)) => {
            let _ = writeln!(here.out, "Removed {i} from {key} in {file}.");
        }
        (_, None) => {
            let _ = writeln!(here.err, "{key} is not set in {file}.");
        }
        (_, Some(i)) => {
            let _ = writeln!(here.err, "{key} does not contain {i}.");
        }
    }
    Ok(0)
}
