//! Command-line flags. Every option the original CLI (1.0.102) accepts is accepted, in any
//! order; the ones Skipper has no use for are ignored. An option the original does not know is
//! a usage error, as there (the SDKs show the process's stderr when it fails to start).

use clap::Parser;

#[derive(Debug, Parser, Default)]
#[command(
    name = "skipper",
    version,
    about = "Agent-loop runtime speaking the Copilot CLI headless JSON-RPC protocol",
    after_help = NOT_HONOURED
)]
pub struct Cli {
    /// The model (a server's default for new sessions; with -p, one the catalogue lists).
    #[arg(long, help_heading = "Running a task")]
    pub model: Option<String>,
    /// With -p: print only the agent's final answer on stdout; progress goes to stderr.
    #[arg(short = 's', long, help_heading = "Running a task")]
    pub silent: bool,
    /// Working directory.
    #[arg(short = 'C', help_heading = "Running a task")]
    pub cwd: Option<String>,
    /// Run one task to completion in-process and exit (the headless runner).
    #[arg(short = 'p', long = "prompt", help_heading = "Running a task")]
    pub prompt: Option<String>,
    /// With -p: keep going until the model calls task_complete.
    #[arg(long, help_heading = "Running a task")]
    pub autopilot: bool,
    /// With --autopilot: continuations before the run stops (default 5; 0 allows none).
    #[arg(long, value_name = "COUNT", help_heading = "Running a task")]
    pub max_autopilot_continues: Option<u32>,
    /// With -p: the model's reasoning effort (none, minimal, low, medium, high, xhigh, max).
    #[arg(long, value_name = "LEVEL", help_heading = "Running a task")]
    pub reasoning_effort: Option<String>,
    /// With -p: AGENTS.md and the other instruction files are not read.
    #[arg(long, help_heading = "Running a task")]
    pub no_custom_instructions: bool,
    /// With -p: the custom agent (`.github/agents/NAME.agent.md` and the like) that runs the task.
    #[arg(long, value_name = "AGENT", help_heading = "Running a task")]
    pub agent: Option<String>,
    /// With -p: the mode the task runs in.
    #[arg(long, value_name = "MODE", value_parser = ["interactive", "plan", "autopilot"], help_heading = "Running a task")]
    pub mode: Option<String>,
    /// With -p: plan, do not change (the plan goes to the session's plan.md); with --autopilot,
    /// plan first, then carry the plan out.
    #[arg(long, help_heading = "Running a task")]
    pub plan: bool,
    /// With -p: an image or PDF given to the model with the task (repeatable).
    #[arg(long, value_name = "PATH", help_heading = "Running a task")]
    pub attachment: Vec<String>,
    /// With -p: the AI credits the session may spend.
    #[arg(long, value_name = "CREDITS", help_heading = "Running a task")]
    pub max_ai_credits: Option<f64>,
    /// With -p: the model is not offered `ask_user` (a `-p` run never offers it: nobody answers).
    #[arg(long, help_heading = "Running a task")]
    pub no_ask_user: bool,
    /// With -p: continue a session, named by its id, an id prefix (7+ characters) or its name
    /// (any case); alone, the most recent session.
    #[arg(short = 'r', long, value_name = "ID|NAME", num_args = 0..=1, default_missing_value = "",
          conflicts_with_all = ["session_id", "continue_session", "name"], help_heading = "Sessions")]
    pub resume: Option<String>,
    /// With -p: continue the most recent session.
    #[arg(long = "continue", conflicts_with_all = ["session_id", "name"], help_heading = "Sessions")]
    pub continue_session: bool,
    /// With -p: continue the session with this id, or start a new one with this UUID.
    #[arg(long, value_name = "ID", help_heading = "Sessions")]
    pub session_id: Option<String>,
    /// With -p: a name for the new session (`--resume NAME` finds it again).
    #[arg(short = 'n', long, value_name = "NAME", help_heading = "Sessions")]
    pub name: Option<String>,
    /// Approve every tool without asking.
    #[arg(long, help_heading = "Permissions")]
    pub allow_all_tools: bool,
    /// Every permission (the original's `--allow-all`; tools are what Skipper asks about).
    #[arg(long, help_heading = "Permissions")]
    pub allow_all: bool,
    /// Same as --allow-all.
    #[arg(long, help_heading = "Permissions")]
    pub yolo: bool,
    /// Tools that run without asking: `shell`, `shell(git:*)`, `shell(npm test)`, `write`,
    /// `write(path)`, `read`, `url(domain)`, `memory`, `MCP-SERVER`, `MCP-SERVER(tool)`.
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',', help_heading = "Permissions")]
    pub allow_tool: Vec<String>,
    /// Tools that never run, as --allow-tool's patterns; a denial beats every allowance.
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',', help_heading = "Permissions")]
    pub deny_tool: Vec<String>,
    /// URLs or domains reached without asking (`github.com` means `https://github.com`).
    #[arg(long, value_name = "URLS", num_args = 0.., value_delimiter = ',', help_heading = "Permissions")]
    pub allow_url: Vec<String>,
    /// URLs or domains never reached; beats --allow-url.
    #[arg(long, value_name = "URLS", num_args = 0.., value_delimiter = ',', help_heading = "Permissions")]
    pub deny_url: Vec<String>,
    /// Every URL without asking.
    #[arg(long, help_heading = "Permissions")]
    pub allow_all_urls: bool,
    /// Environment variables kept from shell commands and MCP servers (beside the tokens
    /// Skipper always keeps from them).
    #[arg(long, value_name = "VARS", num_args = 0.., value_delimiter = ',', help_heading = "Permissions")]
    pub secret_env_vars: Vec<String>,
    /// File access beyond the working directory and the temporary directory (repeatable).
    #[arg(long, value_name = "DIRECTORY", help_heading = "Permissions")]
    pub add_dir: Vec<String>,
    /// No file path check.
    #[arg(long, help_heading = "Permissions")]
    pub allow_all_paths: bool,
    /// The temporary directory is not allowed without asking.
    #[arg(long, help_heading = "Permissions")]
    pub disallow_temp_dir: bool,
    /// With -p: MCP servers for this run beside the configured ones, as `{"mcpServers":{…}}`
    /// JSON or `@FILE` (repeatable).
    #[arg(long, value_name = "JSON", help_heading = "Tools and MCP servers")]
    pub additional_mcp_config: Vec<String>,
    /// With -p: a configured MCP server not started for this run (repeatable).
    #[arg(long, value_name = "SERVER", help_heading = "Tools and MCP servers")]
    pub disable_mcp_server: Vec<String>,
    /// With -p: a server disabled in the configuration, started for this run (repeatable).
    #[arg(long, value_name = "SERVER", help_heading = "Tools and MCP servers")]
    pub enable_mcp_server: Vec<String>,
    /// With -p: the built-in GitHub MCP server is not started.
    #[arg(long, help_heading = "Tools and MCP servers")]
    pub disable_builtin_mcps: bool,
    /// With -p: every tool of the GitHub MCP server, not the default subset.
    #[arg(long, help_heading = "Tools and MCP servers")]
    pub enable_all_github_mcp_tools: bool,
    /// With -p: a GitHub MCP toolset beside the default subset (`all` for every one; repeatable).
    #[arg(long, value_name = "TOOLSET", help_heading = "Tools and MCP servers")]
    pub add_github_mcp_toolset: Vec<String>,
    /// With -p: a GitHub MCP tool beside the default subset (`*` for every one; repeatable).
    #[arg(long, value_name = "TOOL", help_heading = "Tools and MCP servers")]
    pub add_github_mcp_tool: Vec<String>,
    /// With -p: load a plugin from this directory (repeatable).
    #[arg(long, value_name = "DIRECTORY", help_heading = "Tools and MCP servers")]
    pub plugin_dir: Vec<String>,
    /// With -p: trust the working directory's configuration (its `.mcp.json` servers) for
    /// this run's session only; nothing is saved.
    #[arg(long, help_heading = "Tools and MCP servers")]
    pub trust_folder: bool,
    /// BASH_ENV for the shells sessions run: `on` (the default when given) or `off`. Off
    /// unless given here or set in settings (`bashEnv`), as the original's.
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_missing_value = "on",
          value_parser = ["on", "off"], help_heading = "Tools and MCP servers")]
    pub bash_env: Option<String>,
    /// Same as --bash-env off.
    #[arg(long, conflicts_with = "bash_env", help_heading = "Tools and MCP servers")]
    pub no_bash_env: bool,
    /// Only these tools are offered to the model.
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',', help_heading = "Tools and MCP servers")]
    pub available_tools: Option<Vec<String>>,
    /// These tools are not offered to the model.
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',', help_heading = "Tools and MCP servers")]
    pub excluded_tools: Vec<String>,
    /// none, error, warning, info, debug, all, default.
    #[arg(long, help_heading = "Output")]
    pub log_level: Option<String>,
    /// Write logs to files in this directory instead of stderr.
    #[arg(long, help_heading = "Output")]
    pub log_dir: Option<String>,
    /// With -p: stream the answer as it is written (`on`, the default) or not (`off`).
    #[arg(long, value_name = "MODE", value_parser = ["on", "off"], help_heading = "Output")]
    pub stream: Option<String>,
    /// With -p: write the session as Markdown when the run ends (default
    /// `./copilot-session-<id>.md`).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "", help_heading = "Output")]
    pub share: Option<String>,
    /// With -p: write the run's usage (requests, tokens, time, per model) as JSON to this file.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub usage_output_file: Option<String>,
    /// With -p: `text` (readable progress) or `json` (one event per line).
    #[arg(long, default_value = "text", help_heading = "Output")]
    pub output_format: String,
    /// Server mode without a UI (what every SDK passes).
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub headless: bool,
    /// Same as --headless (Rust and Java SDKs).
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub server: bool,
    /// JSON-RPC on stdin/stdout.
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub stdio: bool,
    /// TCP port on 127.0.0.1 (0 or absent = any free port).
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub port: Option<u16>,
    /// Read the GitHub token from this environment variable.
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub auth_token_env: Option<String>,
    /// Only the token named by --auth-token-env counts (GH_TOKEN and the like are not read).
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub no_auto_login: bool,
    /// Accepted (Skipper never updates itself).
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub no_auto_update: bool,
    /// Seconds before a session no client holds is unloaded (never deleted); 0 keeps it.
    #[arg(long, value_name = "SECONDS", help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub session_idle_timeout: Option<u64>,
    /// Accepted on a server launch line (Skipper has no remote sessions); a -p run refuses it.
    #[arg(long, help_heading = "Serving JSON-RPC (what the SDKs start)")]
    pub remote: bool,
    /// The original's interactive mode with a first prompt; Skipper has none (refused).
    #[arg(short = 'i', long, value_name = "PROMPT", help_heading = "Not in Skipper (refused)")]
    pub interactive: Option<String>,
    /// The Agent Client Protocol; not served yet (refused).
    #[arg(long, help_heading = "Not in Skipper (refused)")]
    pub acp: bool,
    /// Words that are not options: a command (`version`, `help`), or a mistake.
    #[arg(skip)]
    pub words: Vec<String>,
    /// The original's options that need what Skipper does not have (GitHub's remote sessions,
    /// gists, fleets): a run given one is refused rather than run without it.
    #[arg(skip)]
    pub refused: Vec<String>,
}

impl Cli {
    /// An SDK's launch line: serve JSON-RPC (every SDK passes one of these).
    pub fn serves(&self) -> bool {
        self.headless || self.server || self.stdio || self.port.is_some()
    }
}

/// Options Skipper reads that take a list of values (`--deny-tool a b`, `--deny-tool=a,b`).
const OURS_WITH_VALUES: &[&str] = &[
    "--allow-tool",
    "--deny-tool",
    "--available-tools",
    "--excluded-tools",
    "--allow-url",
    "--deny-url",
    "--secret-env-vars",
];

/// Options Skipper reads, with a value.
const OURS_WITH_VALUE: &[&str] = &[
    "--port",
    "--auth-token-env",
    "--log-level",
    "--log-dir",
    "--session-idle-timeout",
    "--model",
    "-C",
    "-p",
    "--prompt",
    "--output-format",
    "--add-dir",
    "--max-autopilot-continues",
    "--reasoning-effort",
    "--session-id",
    "-n",
    "--name",
    "--agent",
    "--mode",
    "--additional-mcp-config",
    "--disable-mcp-server",
    "--enable-mcp-server",
    "--plugin-dir",
    "--attachment",
    "--stream",
    "--max-ai-credits",
    "--usage-output-file",
    "-i",
    "--interactive",
    "--add-github-mcp-toolset",
    "--add-github-mcp-tool",
];
/// Options Skipper reads, without a value.
const OURS_FLAGS: &[&str] = &[
    "--headless",
    "--server",
    "--stdio",
    "--no-auto-login",
    "--no-auto-update",
    "--no-bash-env",
    "--trust-folder",
    "--remote",
    "--allow-all-tools",
    "--allow-all",
    "--yolo",
    "--autopilot",
    "--allow-all-urls",
    "--allow-all-paths",
    "--disallow-temp-dir",
    "--acp",
    "--no-custom-instructions",
    "--continue",
    "--plan",
    "--no-ask-user",
    "-s",
    "--silent",
    "--help",
    "-h",
    "--version",
    "-V",
    "--disable-builtin-mcps",
    "--enable-all-github-mcp-tools",
];
/// The original's other options that take a value (accepted, ignored).
const OTHER_WITH_VALUE: &[&str] = &[
    "--context",
    "--auto-tier",
    "--extension-sdk-path",
    "--mcp-github-auth",
    "--environment-compute-id",
    "--dynamic-retrieval",
];
/// The original's options with an optional value, or a list of values.
const OTHER_WITH_VALUES: &[&str] = &["--mouse"];
/// Options Skipper reads that take `on` or `off`, or nothing (meaning `on`).
const OURS_ON_OFF: &[&str] = &["--bash-env"];
/// Options Skipper reads whose value may be left out (`--resume`, `--resume=ID`, `--resume ID`).
const OURS_OPTIONAL_VALUE: &[&str] = &["-r", "--resume", "--share"];
/// The original's other options without a value.
const OTHER_FLAGS: &[&str] = &[
    "--embedded-host",
    "--disable-client-telemetry",
    "--enable-memory",
    "--banner",
    "--screen-reader",
    "--plain-diff",
    "--allow-all-mcp-server-instructions",
    "--experimental",
    "--no-color",
    "--no-experimental",
    "--no-mouse",
    "--no-remote",
    "--no-remote-export",
    "--no-eager-powershell-resolution",
];

/// The original's options that a run cannot honour without what Skipper does not have: a run
/// given one is refused (a server launch line accepts them). With whether each takes a value.
const REFUSED: &[(&str, Takes)] = &[
    ("--connect", Takes::Optional),
    ("--remote-export", Takes::Nothing),
    ("--share-gist", Takes::Nothing),
    ("--environment-host", Takes::One),
    ("--fleet", Takes::Nothing),
    ("--assisted-approval", Takes::Nothing),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    One,
    Optional,
}

/// What `--help` says of the original's options Skipper accepts and ignores, and of those a
/// run refuses.
const NOT_HONOURED: &str = "\
Accepted and ignored (the original's terminal UI, or settings Skipper has no use for):
  --banner, --screen-reader, --plain-diff, --mouse, --no-mouse, --no-color,
  --no-eager-powershell-resolution, --experimental, --no-experimental,
  --disable-client-telemetry (Skipper sends no telemetry), --context, --auto-tier,
  --dynamic-retrieval, --extension-sdk-path, --embedded-host, --environment-compute-id,
  --mcp-github-auth, --allow-all-mcp-server-instructions, --enable-memory, --no-remote,
  --no-remote-export.

Refused by a -p run (they need GitHub's remote sessions, gists or services Skipper does not
have): --connect, --remote, --remote-export, --share-gist, --environment-host, --fleet,
--assisted-approval.";

/// Parses flags. `Err` is the usage error to print (stderr) before exiting with status 1.
pub fn parse(args: Vec<String>) -> Result<Cli, String> {
    let mut kept = vec![args.first().cloned().unwrap_or_else(|| "skipper".into())];
    let mut words = Vec::new();
    let mut refused = Vec::new();
    let mut it = args.into_iter().skip(1).peekable();
    while let Some(arg) = it.next() {
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            // A command (`version`), or a prompt without -p: judged once the options are read.
            // What follows one of the original's commands is that command's (`config --list`).
            let command = words.is_empty() && crate::commands::is_command(&arg);
            words.push(arg);
            if command {
                words.extend(it.by_ref());
                break;
            }
            continue;
        }
        let name = arg.split('=').next().unwrap_or("").to_string();
        let inline_value = arg.contains('=');
        if OURS_WITH_VALUE.contains(&name.as_str()) {
            kept.push(arg.clone());
            if !inline_value {
                if let Some(v) = it.next() {
                    kept.push(v);
                }
            }
        } else if OURS_WITH_VALUES.contains(&name.as_str()) {
            // Handed to clap one value at a time, so a value is never taken for a prompt.
            let mut values = Vec::new();
            match arg.split_once('=') {
                Some((_, v)) => values.push(v.to_string()),
                None => {
                    while it.peek().is_some_and(|next| !next.starts_with('-')) {
                        values.extend(it.next());
                    }
                }
            }
            for value in values {
                kept.push(format!("{name}={value}"));
            }
        } else if OURS_ON_OFF.contains(&name.as_str()) {
            // Only `on` or `off` is its value: another word is the prompt or a command.
            match it.peek() {
                Some(next) if !inline_value && matches!(next.as_str(), "on" | "off") => {
                    let value = it.next().unwrap_or_default();
                    kept.push(format!("{name}={value}"));
                }
                _ => kept.push(arg),
            }
        } else if OURS_OPTIONAL_VALUE.contains(&name.as_str()) {
            match it.peek() {
                Some(next) if !inline_value && !next.starts_with('-') => {
                    let value = it.next().unwrap_or_default();
                    kept.push(format!("{name}={value}"));
                }
                _ => kept.push(arg),
            }
        } else if OURS_FLAGS.contains(&name.as_str()) && !inline_value {
            kept.push(arg);
        } else if name == "-v" && !inline_value {
            kept.push("--version".into());
        } else if OTHER_WITH_VALUE.contains(&name.as_str()) {
            if !inline_value {
                it.next();
            }
        } else if OTHER_WITH_VALUES.contains(&name.as_str()) {
            while !inline_value && it.peek().is_some_and(|next| !next.starts_with('-')) {
                it.next();
            }
        } else if OTHER_FLAGS.contains(&name.as_str()) && !inline_value {
        } else if let Some((_, takes)) = REFUSED.iter().find(|(n, _)| *n == name) {
            let next_is_value = it.peek().is_some_and(|next| !next.starts_with('-'));
            match takes {
                Takes::One if !inline_value => {
                    it.next();
                }
                Takes::Optional if !inline_value && next_is_value => {
                    it.next();
                }
                Takes::Nothing if inline_value => return Err(format!("error: unexpected value for '{name}'")),
                _ => {}
            }
            refused.push(name);
        } else {
            return Err(format!(
                "error: unexpected argument '{name}' found\n\nUsage: skipper [OPTIONS] [COMMAND]\n\nFor more information, try '--help'."
            ));
        }
    }
    match Cli::try_parse_from(kept) {
        Ok(cli) => Ok(Cli { words, refused, ..cli }),
        // --help lists the commands too; --help and --version print on stdout, status 0.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            print!("{}", crate::commands::whole_command().render_long_help());
            std::process::exit(0)
        }
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sdk_launch_lines_parse() {
        let c = parse(args("skipper --headless --no-auto-update --log-level info --auth-token-env COPILOT_SDK_AUTH_TOKEN --no-auto-login --stdio")).unwrap();
        assert!(c.headless && c.stdio && c.no_auto_login);
        assert_eq!(c.auth_token_env.as_deref(), Some("COPILOT_SDK_AUTH_TOKEN"));
        let c = parse(args("skipper --server --port 4321 --no-auto-update")).unwrap();
        assert!(c.server);
        assert_eq!(c.port, Some(4321));
    }

    #[test]
    fn the_originals_options_are_accepted_in_any_order() {
        let c = parse(args(
            "skipper --add-dir /x --headless --allow-tool shell write --experimental --resume --stdio --mode plan --yolo",
        ))
        .unwrap();
        assert!(c.headless && c.stdio && c.yolo);
        let c = parse(args("skipper --embedded-host --no-auto-update --log-level debug --remote")).unwrap();
        assert_eq!(c.log_level.as_deref(), Some("debug"));
        assert!(c.remote);
        let c = parse(args("skipper -p hello -s --allow-all-tools --share=out.md")).unwrap();
        assert!(c.silent && c.allow_all_tools);
        assert_eq!(c.prompt.as_deref(), Some("hello"));
    }

    #[test]
    fn an_option_the_original_does_not_know_is_a_usage_error() {
        let e = parse(args("skipper --headless --stdio --nonexistent-flag-for-testing")).unwrap_err();
        assert!(e.starts_with("error: unexpected argument '--nonexistent-flag-for-testing' found"), "{e}");
        let e = parse(args("skipper --capture-file x")).unwrap_err();
        assert!(e.contains("'--capture-file'"), "{e}");
        assert!(parse(args("skipper --yolo=1")).is_err(), "a flag takes no value");
    }
}
