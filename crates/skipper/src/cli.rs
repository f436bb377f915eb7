//! Command-line flags. The SDKs pass flags in varying order and may add ones we do not know;
//! unknown flags are accepted and ignored, never fatal.

use clap::Parser;

#[derive(Debug, Parser, Default)]
#[command(name = "skipper", version, about = "Agent-loop runtime speaking the Copilot CLI headless JSON-RPC protocol")]
pub struct Cli {
    /// Server mode without a UI (what every SDK passes).
    #[arg(long)]
    pub headless: bool,
    /// Same as --headless (Rust and Java SDKs).
    #[arg(long)]
    pub server: bool,
    /// JSON-RPC on stdin/stdout.
    #[arg(long)]
    pub stdio: bool,
    /// TCP port on 127.0.0.1 (0 or absent = any free port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Read the GitHub token from this environment variable.
    #[arg(long)]
    pub auth_token_env: Option<String>,
    #[arg(long)]
    pub no_auto_login: bool,
    #[arg(long)]
    pub no_auto_update: bool,
    /// none, error, warning, info, debug, all, default.
    #[arg(long)]
    pub log_level: Option<String>,
    /// Write logs to files in this directory instead of stderr.
    #[arg(long)]
    pub log_dir: Option<String>,
    #[arg(long)]
    pub session_idle_timeout: Option<u64>,
    #[arg(long)]
    pub remote: bool,
    /// Default model for new sessions.
    #[arg(long)]
    pub model: Option<String>,
    /// Approve every tool without asking.
    #[arg(long)]
    pub allow_all_tools: bool,
    /// Working directory.
    #[arg(short = 'C')]
    pub cwd: Option<String>,
    /// Run one task to completion in-process and exit (the headless runner).
    #[arg(short = 'p', long = "prompt")]
    pub prompt: Option<String>,
    /// With -p: keep going until the model calls task_complete.
    #[arg(long)]
    pub autopilot: bool,
    /// With -p: `text` (readable progress) or `json` (one event per line).
    #[arg(long, default_value = "text")]
    pub output_format: String,
}

/// Parses flags, skipping any we do not know (with their value, when one follows).
pub fn parse(args: Vec<String>) -> Cli {
    const WITH_VALUE: &[&str] = &[
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
    ];
    const FLAGS: &[&str] = &[
        "--headless",
        "--server",
        "--stdio",
        "--no-auto-login",
        "--no-auto-update",
        "--remote",
        "--allow-all-tools",
        "--autopilot",
        "--help",
        "-h",
        "--version",
        "-V",
    ];
    let mut kept = vec![args.first().cloned().unwrap_or_else(|| "skipper".into())];
    let mut it = args.into_iter().skip(1).peekable();
    while let Some(arg) = it.next() {
        let name = arg.split('=').next().unwrap_or("").to_string();
        if WITH_VALUE.contains(&name.as_str()) {
            kept.push(arg.clone());
            if !arg.contains('=') {
                if let Some(v) = it.next() {
                    kept.push(v);
                }
            }
        } else if FLAGS.contains(&name.as_str()) {
            kept.push(arg);
        } else if arg.starts_with('-') && !arg.contains('=') {
            // Unknown flag: drop it and a value that plainly belongs to it.
            if it.peek().is_some_and(|next| !next.starts_with('-')) {
                it.next();
            }
        }
    }
    Cli::parse_from(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sdk_launch_lines_parse() {
        let c = parse(args("skipper --headless --no-auto-update --log-level info --auth-token-env COPILOT_SDK_AUTH_TOKEN --no-auto-login --stdio"));
        assert!(c.headless && c.stdio && c.no_auto_login);
        assert_eq!(c.auth_token_env.as_deref(), Some("COPILOT_SDK_AUTH_TOKEN"));
        let c = parse(args("skipper --server --port 4321 --no-auto-update"));
        assert!(c.server);
        assert_eq!(c.port, Some(4321));
    }

    #[test]
    fn unknown_flags_are_ignored() {
        let c = parse(args("skipper --headless --frobnicate 3 --add-dir /x --stdio --experimental"));
        assert!(c.headless && c.stdio);
    }
}
