//! What a command line does, as far as a permission decision needs it: the commands it runs
//! (named as the original names them: `git push`, `gh pr create`, else the first word), which
//! of them only read, the paths and URLs it names, and whether it writes a file through a
//! redirection. Quote-aware and best effort: a shell is not parsed here, so anything unsure
//! counts as not read-only.

use std::path::{Component, Path, PathBuf};

use crate::context::ShellCommand;

/// One command line, analysed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    pub commands: Vec<ShellCommand>,
    /// Absolute paths the line names (arguments and redirection targets, `~` and `..`
    /// resolved against `home` and the working directory).
    pub possible_paths: Vec<String>,
    /// `http://` and `https://` URLs the line names.
    pub possible_urls: Vec<String>,
    /// A `>` or `>>` into a file (not `/dev/null`, not a descriptor).
    pub writes_files: bool,
}

pub fn analyze(command: &str, cwd: &Path, home: Option<&Path>) -> CommandLine {
    let mut line = CommandLine::default();
    for words in split_simple_commands(command) {
        let (command_words, redirect_targets) = split_redirections(&words);
        for target in &redirect_targets {
            if !target.starts_with('&') && target != "/dev/null" {
                line.writes_files = true;
            }
            push_path(&mut line.possible_paths, target, cwd, home);
        }
        for word in &words {
            if word.starts_with("http://") || word.starts_with("https://") {
                if !line.possible_urls.contains(word) {
                    line.possible_urls.push(word.clone());
                }
            } else if looks_like_path(word) {
                push_path(&mut line.possible_paths, word, cwd, home);
            }
        }
        let Some(named) = named_words(&command_words) else { continue };
        let identifier = identifier(named);
        let read_only = redirect_targets.iter().all(|t| t.starts_with('&') || t == "/dev/null") && reads_only(named);
        match line.commands.iter_mut().find(|c| c.identifier == identifier) {
            Some(known) => known.read_only &= read_only,
            None => line.commands.push(ShellCommand { identifier, read_only }),
        }
    }
    line
}

/// The first word of each simple command in `command` (what a permission prompt lists):
/// `cd x && npm test | tee log` → `cd`, `npm`, `tee`; `git` and `gh` with their subcommands.
#[cfg(test)]
pub(crate) fn command_identifiers(command: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (id, _) in named_commands(command) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// Each simple command's approval name and its words (assignments, keywords and
/// redirections left out): what a `shell(...)` rule is matched against.
pub fn named_commands(command: &str) -> Vec<(String, Vec<String>)> {
    split_simple_commands(command)
        .iter()
        .filter_map(|words| {
            let words = split_redirections(words).0;
            let named = named_words(&words)?;
            Some((identifier(named), named.to_vec()))
        })
        .collect()
}

/// The words that name the command, past assignments and shell keywords (never empty);
/// `None` for loop and case headers, which run nothing.
fn named_words(words: &[String]) -> Option<&[String]> {
    const KEYWORDS: &[&str] =
        &["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time", "exec", "esac"];
    let start = words.iter().position(|w| {
        let is_assignment = w
            .split_once('=')
            .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        !is_assignment && !KEYWORDS.contains(&w.as_str())
    })?;
    let rest = &words[start..];
    if ["for", "case", "select", "in"].contains(&rest[0].as_str()) {
        return None;
    }
    Some(rest)
}

/// How the original names a command for approval: `git` and `gh` by their subcommands
/// (`git push`, `gh pr create`), everything else by its first word. `words`: a command's
/// [`named_words`].
fn identifier(words: &[String]) -> String {
    let depth = match words[0].as_str() {
        "git" => 1,
        "gh" => 2,
        _ => 0,
    };
    let mut id = words[0].clone();
    for word in words[1..].iter().take(depth) {
        if word.starts_with('-') {
            break;
        }
        id.push(' ');
        id.push_str(word);
    }
    id
}

/// Commands that only read, with the options that would make them write or run something
/// else. `git log` is left out as the original leaves it out (its `--output` writes).
/// `words`: a command's [`named_words`].
fn reads_only(words: &[String]) -> bool {
    const PLAIN: &[&str] = &[
        "cat", "grep", "egrep", "fgrep", "rg", "head", "tail", "wc", "ls", "pwd", "echo", "printf", "which", "type",
        "date", "true", "false", "cd", "basename", "dirname", "realpath", "readlink", "stat", "file", "du", "df",
        "tree", "uniq", "cut", "tr", "diff", "cmp", "nl", "whoami", "uname", "test", "[",
    ];
    let has =
        |options: &[&str]| words[1..].iter().any(|w| options.iter().any(|o| w == o || w.starts_with(&format!("{o}="))));
    match words[0].as_str() {
        name if PLAIN.contains(&name) => true,
        "find" => !has(&["-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"]),
        "sed" => !words[1..].iter().any(|w| w.starts_with("-i") || w.starts_with("--in-place")),
        "sort" => !words[1..].iter().any(|w| w.starts_with("-o") || w.starts_with("--output")),
        "git" => matches!(
            words.get(1).map(String::as_str),
            Some("status" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "grep")
        ),
        _ => false,
    }
}

/// Splits a simple command's words into the command's own and its redirection targets
/// (`> f`, `>>f`, `2> f`, `&> f`; a target of `>&2` is `&2`). Input redirections are kept out
/// of both: they read.
fn split_redirections(words: &[String]) -> (Vec<String>, Vec<String>) {
    let mut command = Vec::new();
    let mut targets = Vec::new();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        let operator = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if let Some(rest) = operator.strip_prefix('>') {
            let rest = rest.trim_start_matches(['>', '|']);
            let target = if rest.is_empty() { iter.next().cloned().unwrap_or_default() } else { rest.to_string() };
            if !target.is_empty() {
                targets.push(target);
            }
        } else if let Some(rest) = operator.strip_prefix('<') {
            if rest.is_empty() {
                iter.next();
            }
        } else {
            command.push(word.clone());
        }
    }
    (command, targets)
}

fn looks_like_path(word: &str) -> bool {
    word.starts_with('/') || word.starts_with("~/") || word == "~" || word.split('/').any(|part| part == "..")
}

fn push_path(paths: &mut Vec<String>, word: &str, cwd: &Path, home: Option<&Path>) {
    if word.starts_with('&') || word.is_empty() {
        return;
    }
    let path = match (word.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => home.join(rest.trim_start_matches('/')),
        (Some(_), _) => return,
        _ => cwd.join(word),
    };
    let shown = lexically_normal(&path).display().to_string();
    if !paths.contains(&shown) {
        paths.push(shown);
    }
}

/// `path` with `.` and `..` resolved by name alone (the path need not exist).
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Splits a command line into simple commands (on unquoted `;`, `&`, `|`, newlines and
/// parentheses), each as its words with quotes removed.
fn split_simple_commands(command: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            // `2>&1`, `>&2`, `&>file`: redirections, not command separators.
            (None, '&') if word.ends_with(['>', '<']) || chars.peek() == Some(&'>') => {
                word.push('&');
                in_word = true;
            }
            // `>|` forces a redirection over noclobber; not a pipe.
            (None, '|') if word.ends_with('>') => word.push('|'),
            // `a>>f`: a word ends where a redirection starts (`2>` keeps its descriptor).
            (None, '>' | '<') => {
                if in_word && !word.chars().all(|c| c.is_ascii_digit() || c == '&') && !word.ends_with(['>', '<']) {
                    words.push(std::mem::take(&mut word));
                }
                word.push(c);
                in_word = true;
            }
            (None, ';' | '&' | '|' | '\n' | '(' | ')') => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    segments.push(std::mem::take(&mut words));
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        segments.push(words);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(command: &str) -> CommandLine {
        analyze(command, Path::new("/work/repo"), Some(Path::new("/home/u")))
    }

    fn ids(command: &str) -> Vec<(String, bool)> {
        line(command).commands.into_iter().map(|c| (c.identifier, c.read_only)).collect()
    }

    #[test]
    fn git_and_gh_are_named_by_their_subcommands() {
        assert_eq!(ids("git push origin main"), vec![("git push".into(), false)]);
        assert_eq!(ids("git status --short"), vec![("git status".into(), true)]);
        assert_eq!(ids("git --no-pager log"), vec![("git".into(), false)]);
        assert_eq!(ids("gh pr create --fill"), vec![("gh pr create".into(), false)]);
        assert_eq!(command_identifiers("cd src && git diff | less"), vec!["cd", "git diff", "less"]);
    }

    #[test]
    fn read_only_commands_as_the_original_judges_them() {
        for ro in
            ["cat x.txt", "grep x x.txt", "find . -name x", "sed -n 1p x", "ls | wc -l", "echo hi", "cd sub && ls"]
        {
            assert!(line(ro).commands.iter().all(|c| c.read_only), "{ro}");
        }
        for rw in ["git log -1", "cat x > y", "find . -delete", "env", "sed -i s/a/b/ x", "rm -f x", "sort -o x y"] {
            assert!(line(rw).commands.iter().any(|c| !c.read_only), "{rw}");
        }
        assert!(line("ls 2>/dev/null >&2").commands[0].read_only);
    }

    #[test]
    fn redirections_paths_and_urls() {
        let l = line("cat ../other/a.txt ~/notes > /srv/out.txt && curl -s https://example.com/x");
        assert!(l.writes_files);
        assert_eq!(l.possible_paths, vec!["/srv/out.txt", "/work/other/a.txt", "/home/u/notes"]);
        assert_eq!(l.possible_urls, vec!["https://example.com/x"]);
        let l = line("make 2>&1 | tee log");
        assert!(!l.writes_files && l.possible_paths.is_empty());
        assert!(line("echo a>>f").writes_files);
    }
}
