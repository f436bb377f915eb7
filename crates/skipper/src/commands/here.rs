//! What a command works on: the user's Copilot home and the working directory, and where its
//! output goes.

use std::io::Write;
use std::path::PathBuf;

/// The home and directory a command reads and writes, and its two output streams.
pub struct Here<'a> {
    /// `$COPILOT_HOME`, else `~/.copilot`.
    pub home: PathBuf,
    /// The working directory (`-C`, else the process's).
    pub cwd: PathBuf,
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Here<'_> {
    /// Prints `Error: …` on stderr; the command's status is 1.
    pub fn fail(&mut self, message: impl std::fmt::Display) -> i32 {
        let _ = writeln!(self.err, "Error: {message}");
        1
    }
}

/// A command with subcommands given none prints its help (status 0), as the original's do;
/// otherwise as [`parse`].
pub fn parse_or_help<P: clap::Parser>(name: &str, args: &[String], here: &mut Here<'_>) -> Result<P, i32> {
    if args.is_empty() {
        let _ = write!(here.out, "{}", P::command().render_help());
        return Err(0);
    }
    parse(name, args, here)
}

/// Parses a command's own arguments with clap: `--help` is printed on stdout (status 0), a
/// usage error on stderr (status 1, as the original's).
pub fn parse<P: clap::Parser>(name: &str, args: &[String], here: &mut Here<'_>) -> Result<P, i32> {
    let line = std::iter::once(name.to_string()).chain(args.iter().cloned());
    P::try_parse_from(line).map_err(|e| {
        if e.use_stderr() {
            let _ = write!(here.err, "{}", e.render());
            1
        } else {
            let _ = write!(here.out, "{}", e.render());
            0
        }
    })
}
