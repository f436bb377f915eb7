//! `grep`: ripgrep-style content search (regex, ignore rules, globs, file types, context).

use std::io;

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{optional_bool, optional_count, optional_str, paths, required_str, ArgError};
use crate::context::{PermissionRequest, ToolContext};
use crate::files::Files;
use crate::output::ToolOutput;
use crate::tool::Tool;
use crate::walk::{parallel_files, resolve_roots, walker, GlobFilter, SearchRoot};

pub struct GrepTool;

pub const NO_MATCHES_TEXT: &str = "No matches found.";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Debug, Clone)]
struct Options {
    pattern: String,
    mode: Mode,
    glob: Option<String>,
    file_type: Option<String>,
    case_insensitive: bool,
    line_numbers: bool,
    before: usize,
    after: usize,
    head_limit: Option<usize>,
    multiline: bool,
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (ripgrep syntax), honouring .gitignore \
         and skipping hidden and binary files. paths: files or directories to search (default: \
         the working directory). output_mode: files_with_matches (default, one path per line), \
         content (matching lines as path:text, with -n for line numbers and -A/-B/-C for \
         context), or count (path:number). Narrow the search with glob (e.g. \"*.rs\") or type \
         (e.g. rust, py, js, ts, go). -i ignores case, multiline lets a pattern span lines, \
         head_limit keeps only the first N result lines."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("grep")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let opts = match parse_options(&args) {
            Ok(o) => o,
            Err(e) => return e.into(),
        };
        let given = match paths(&args) {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let roots = match resolve_roots(ctx, given).await {
            Ok(r) => r,
            Err(e) => return e,
        };
        for root in &roots {
            let shown = root.abs.display().to_string();
            let request = PermissionRequest::Read { intention: format!("Search in directory: {shown}"), path: shown };
            if let Err(denied) = ctx.ask_permission(request).await {
                return denied;
            }
        }

        let cancel = ctx.cancel.clone();
        let cwd = ctx.cwd.clone();
        let files = ctx.files.clone();
        let task = tokio::task::spawn_blocking(move || search(&opts, &roots, &cwd, &files, &cancel));
        tokio::select! {
            _ = ctx.cancel.cancelled() => ToolOutput::interrupted(),
            joined = task => match joined {
                Ok(Ok(lines)) if lines.is_empty() => ToolOutput::ok(NO_MATCHES_TEXT),
                Ok(Ok(lines)) => ToolOutput::ok(lines.join("\n")),
                Ok(Err(msg)) => ToolOutput::fail(msg),
                Err(e) => ToolOutput::fail(format!("Search failed: {e}")),
            },
        }
    }
}

fn parse_options(args: &Value) -> Result<Options, ArgError> {
    let pattern = required_str(args, "pattern")?.to_string();
    let mode = match optional_str(args, "output_mode")? {
        None | Some("files_with_matches") => Mode::FilesWithMatches,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return Err(ArgError(format!(
                "Invalid output_mode \"{other}\": expected content, files_with_matches or count."
            )))
        }
    };
    let context = optional_count(args, "-C")?;
    // As in ripgrep, -A/-B win over -C for their side.
    let before = optional_count(args, "-B")?.or(context).unwrap_or(0);
    let after = optional_count(args, "-A")?.or(context).unwrap_or(0);
    Ok(Options {
        pattern,
        mode,
        glob: optional_str(args, "glob")?.filter(|g| !g.is_empty()).map(str::to_string),
        file_type: optional_str(args, "type")?.filter(|t| !t.is_empty()).map(|t| type_alias(t).to_string()),
        case_insensitive: optional_bool(args, "-i")?.unwrap_or(false),
        line_numbers: optional_bool(args, "-n")?.unwrap_or(false),
        before,
        after,
        head_limit: optional_count(args, "head_limit")?.filter(|n| *n > 0),
        multiline: optional_bool(args, "multiline")?.unwrap_or(false),
    })
}

/// ripgrep knows most languages by short name (`py`, `js`, `rust`); models also use the long
/// or other common spellings.
fn type_alias(t: &str) -> &str {
    match t {
        "javascript" => "js",
        "rs" => "rust",
        "golang" => "go",
        "yml" => "yaml",
        "bash" | "shell" => "sh",
        "text" => "txt",
        "c++" => "cpp",
        other => other,
    }
}

/// Runs the search (blocking) and returns the result lines, in path order. Without a
/// `head_limit` every root is searched on several threads and the files sorted afterwards;
/// with one, a sequential walk in path order stops as soon as the limit is reached.
fn search(
    opts: &Options,
    roots: &[SearchRoot],
    cwd: &std::path::Path,
    files: &Files,
    cancel: &CancellationToken,
) -> Result<Vec<String>, String> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(opts.case_insensitive).multi_line(true);
    if opts.multiline {
        builder.dot_matches_new_line(true);
    } else {
        // Line-oriented search: a match can never cross a line break.
        builder.line_terminator(Some(b'\n'));
    }
    let matcher =
        builder.build(&opts.pattern).map_err(|e| format!("Invalid regex pattern \"{}\": {e}", opts.pattern))?;
    let filter = opts.glob.as_deref().map(GlobFilter::new).transpose()?;
    let with_context = opts.mode == Mode::Content && (opts.before > 0 || opts.after > 0);

    let mut lines: Vec<String> = Vec::new();
    let add = |lines: &mut Vec<String>, hits: FileHits| match opts.mode {
        Mode::Content => {
            if with_context && !lines.is_empty() {
                lines.push("--".into());
            }
            lines.extend(hits.lines);
        }
        Mode::FilesWithMatches => lines.push(hits.shown),
        Mode::Count => lines.push(format!("{}:{}", hits.shown, hits.matched_lines)),
    };
    let wanted = |root: &SearchRoot, entry: &ignore::DirEntry| match (&filter, entry.path().strip_prefix(&root.abs)) {
        // A file named explicitly as a root is searched whatever the glob says.
        (Some(filter), Ok(rel)) => entry.depth() == 0 || filter.matches(rel),
        _ => true,
    };

    if let Some(limit) = opts.head_limit {
        let mut searcher = searcher(opts);
        'roots: for root in roots {
            for entry in walker(cwd, root, opts.file_type.as_deref(), files)? {
                if cancel.is_cancelled() || lines.len() >= limit {
                    break 'roots;
                }
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::debug!(error = %e, "grep: skipping unreadable entry");
                        continue;
                    }
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) || !wanted(root, &entry) {
                    continue;
                }
                if let Some(hits) =
                    search_file(&mut searcher, &matcher, opts, files, entry.path(), root.display(entry.path()))
                {
                    add(&mut lines, hits);
                }
            }
        }
        lines.truncate(limit);
        return Ok(lines);
    }

    for root in roots {
        let found = parallel_files(cwd, root, opts.file_type.as_deref(), files, cancel, || {
            let mut searcher = searcher(opts);
            let matcher = matcher.clone();
            let wanted = &wanted;
            move |entry: &ignore::DirEntry| {
                if !wanted(root, entry) {
                    return None;
                }
                search_file(&mut searcher, &matcher, opts, files, entry.path(), root.display(entry.path()))
            }
        })?;
        if cancel.is_cancelled() {
            break;
        }
        for (_, hits) in found {
            add(&mut lines, hits);
        }
    }
    Ok(lines)
}

/// A searcher for `opts` (each search thread has its own).
fn searcher(opts: &Options) -> Searcher {
    let context = opts.mode == Mode::Content;
    SearcherBuilder::new()
        .line_number(true)
        .multi_line(opts.multiline)
        .before_context(if context { opts.before } else { 0 })
        .after_context(if context { opts.after } else { 0 })
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// One file's results (`None`: no match, or the file could not be searched).
struct FileHits {
    shown: String,
    lines: Vec<String>,
    matched_lines: u64,
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &grep_regex::RegexMatcher,
    opts: &Options,
    files: &Files,
    path: &std::path::Path,
    shown: String,
) -> Option<FileHits> {
    let mut sink =
        Collect { shown: &shown, numbers: opts.line_numbers, lines: Vec::new(), matched_lines: 0, mode: opts.mode };
    // Opened as the file tools open (beneath the workspace on a shared server): the walk found
    // the name, but what it names may have changed since.
    let searched = files.open_read(path).and_then(|file| searcher.search_file(matcher, &file, &mut sink));
    if let Err(e) = searched {
        tracing::debug!(path = %path.display(), error = %e, "grep: skipping unsearchable file");
        return None;
    }
    if sink.matched_lines == 0 && sink.lines.is_empty() {
        return None;
    }
    let (lines, matched_lines) = (sink.lines, sink.matched_lines);
    Some(FileHits { shown, lines, matched_lines })
}

/// Collects one file's results the way ripgrep prints them: `path:N:text` for matching lines,
/// `path-N-text` for context lines, `--` between non-adjacent groups.
struct Collect<'a> {
    shown: &'a str,
    numbers: bool,
    lines: Vec<String>,
    matched_lines: u64,
    mode: Mode,
}

impl Collect<'_> {
    fn push(&mut self, sep: char, line_number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let line = match (self.numbers, line_number) {
            (true, Some(n)) => format!("{}{sep}{n}{sep}{text}", self.shown),
            _ => format!("{}{sep}{text}", self.shown),
        };
        self.lines.push(line);
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let mut number = m.line_number();
        for line in m.lines() {
            self.matched_lines += 1;
            if self.mode == Mode::Content {
                self.push(':', number, line);
            }
            number = number.map(|n| n + 1);
        }
        // One match is enough to list the file.
        Ok(self.mode != Mode::FilesWithMatches)
    }

    fn context(&mut self, _searcher: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.push('-', c.line_number(), c.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.lines.push("--".into());
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::context::{PermissionDecision, PermissionGate};
    use serde_json::json;

    fn tree() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.txt"), "one\ntwo\ntwo\nthree\n").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/b.txt"), "two\n").unwrap();
        std::fs::write(d.join("code.rs"), "fn two() {}\n").unwrap();
        let ctx = ToolContext::simple(d);
        (dir, ctx)
    }

    async fn grep(ctx: &ToolContext, args: Value) -> String {
        let out = GrepTool.run(args, ctx).await;
        assert!(out.success, "{}", out.text_for_llm);
        out.text_for_llm
    }

    #[tokio::test]
    async fn content_with_line_numbers_for_a_file_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("data.txt");
        std::fs::write(&p, "apple\nbanana\napricot\n").unwrap();
        let ctx = ToolContext::simple(dir.path());
        let p = p.display().to_string();
        let text = grep(&ctx, json!({"pattern": "^ap", "path": p, "output_mode": "content", "-n": true})).await;
        assert_eq!(text, format!("{p}:1:apple\n{p}:3:apricot"));
    }

    #[tokio::test]
    async fn content_default_cwd() {
        let (_d, ctx) = tree();
        let text = grep(&ctx, json!({"pattern": "t[wh]", "output_mode": "content", "-n": true, "glob": "*.txt"})).await;
        assert_eq!(text, "./a.txt:2:two\n./a.txt:3:two\n./a.txt:4:three\n./sub/b.txt:1:two");
        let text = grep(&ctx, json!({"pattern": "three", "output_mode": "content"})).await;
        assert_eq!(text, "./a.txt:three");
    }

    #[tokio::test]
    async fn files_with_matches_is_default_and_sorted() {
        let (d, ctx) = tree();
        assert_eq!(grep(&ctx, json!({"pattern": "two"})).await, "./a.txt\n./code.rs\n./sub/b.txt");
        let abs = d.path().display().to_string();
        assert_eq!(
            grep(&ctx, json!({"pattern": "two", "paths": [abs]})).await,
            format!("{abs}/a.txt\n{abs}/code.rs\n{abs}/sub/b.txt")
        );
        assert_eq!(grep(&ctx, json!({"pattern": "two", "paths": "sub"})).await, "sub/b.txt");
    }

    #[tokio::test]
    async fn count_mode() {
        let (_d, ctx) = tree();
        assert_eq!(
            grep(&ctx, json!({"pattern": "two", "output_mode": "count", "type": "txt"})).await,
            "./a.txt:2\n./sub/b.txt:1"
        );
        assert_eq!(grep(&ctx, json!({"pattern": "two", "output_mode": "count", "type": "rust"})).await, "./code.rs:1");
    }

    #[tokio::test]
    async fn no_match_and_errors() {
        let (_d, ctx) = tree();
        assert_eq!(grep(&ctx, json!({"pattern": "zebra"})).await, "No matches found.");
        let out = GrepTool.run(json!({"pattern": "("}), &ctx).await;
        assert!(!out.success);
        assert!(out.text_for_llm.starts_with("Invalid regex pattern \"(\""), "{}", out.text_for_llm);
        let out = GrepTool.run(json!({"pattern": "x", "type": "nolang"}), &ctx).await;
        assert!(!out.success);
        let out = GrepTool.run(json!({"pattern": "x", "paths": "missing"}), &ctx).await;
        assert!(!out.success);
        assert!(
            out.text_for_llm.ends_with("missing does not exist. Please provide a valid path."),
            "{}",
            out.text_for_llm
        );
    }

    #[tokio::test]
    async fn case_insensitive_and_head_limit() {
        let (_d, ctx) = tree();
        assert_eq!(grep(&ctx, json!({"pattern": "TWO", "-i": true, "head_limit": 2})).await, "./a.txt\n./code.rs");
        assert_eq!(grep(&ctx, json!({"pattern": "TWO"})).await, "No matches found.");
    }

    #[tokio::test]
    async fn context_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.txt"), "l1\nhit1\nl3\nl4\nl5\nl6\nhit2\nl8\n").unwrap();
        std::fs::write(dir.path().join("d.txt"), "x\nhit3\n").unwrap();
        let ctx = ToolContext::simple(dir.path());
        let text = grep(&ctx, json!({"pattern": "hit", "output_mode": "content", "-n": true, "-C": 1})).await;
        assert_eq!(
            text,
            "./c.txt-1-l1\n./c.txt:2:hit1\n./c.txt-3-l3\n--\n./c.txt-6-l6\n./c.txt:7:hit2\n./c.txt-8-l8\n--\n./d.txt-1-x\n./d.txt:2:hit3"
        );
        let text = grep(&ctx, json!({"pattern": "hit2", "output_mode": "content", "-n": true, "-A": 1, "-C": 3})).await;
        assert_eq!(text, "./c.txt-4-l4\n./c.txt-5-l5\n./c.txt-6-l6\n./c.txt:7:hit2\n./c.txt-8-l8");
    }

    #[tokio::test]
    async fn multiline() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.txt"), "start\nmiddle\nend\n").unwrap();
        let ctx = ToolContext::simple(dir.path());
        let args = json!({"pattern": "start.middle", "output_mode": "content", "-n": true, "multiline": true});
        assert_eq!(grep(&ctx, args).await, "./m.txt:1:start\n./m.txt:2:middle");
        let args = json!({"pattern": "start.middle", "output_mode": "content"});
        assert_eq!(grep(&ctx, args).await, "No matches found.");
    }

    #[tokio::test]
    async fn ignore_rules() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join(".git")).unwrap();
        std::fs::write(d.join(".gitignore"), "ignored.txt\nbuild/\n").unwrap();
        std::fs::write(d.join("ignored.txt"), "needle\n").unwrap();
        std::fs::create_dir(d.join("build")).unwrap();
        std::fs::write(d.join("build/out.txt"), "needle\n").unwrap();
        std::fs::write(d.join(".hidden"), "needle\n").unwrap();
        std::fs::write(d.join("kept.txt"), "needle\n").unwrap();
        std::fs::write(d.join("bin.dat"), b"needle\0\x01").unwrap();
        let ctx = ToolContext::simple(d);
        assert_eq!(grep(&ctx, json!({"pattern": "needle"})).await, "./kept.txt");
    }

    /// The threaded search (no head_limit) gives exactly what the sequential, name-sorted walk
    /// gives (a head_limit larger than the results takes that path).
    #[tokio::test]
    async fn parallel_search_matches_the_sequential_walk() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join(".git")).unwrap();
        std::fs::write(d.join(".gitignore"), "skip/\n").unwrap();
        let names = [
            "a", "a.txt", "a-b/x", "a/b", "a/b.txt", "a/b/c", "B/x", "b", "z/y/x/w", "z/y.txt", "ä/x", "skip/x", "_/x",
        ];
        for (i, n) in names.iter().enumerate() {
            // A name used as a file here is a directory elsewhere: keep the files unique.
            let p = d.join(format!("{n}.f{i}"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("pre\nhit {i}\npost\nhit again\n")).unwrap();
        }
        for i in 0..300 {
            let p = d.join(format!("many/d{}/f{i:03}.txt", i % 7));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, if i % 3 == 0 { "hit\n" } else { "miss\n" }).unwrap();
        }
        let ctx = ToolContext::simple(d);
        for args in [
            json!({"pattern": "hit"}),
            json!({"pattern": "hit", "output_mode": "count"}),
            json!({"pattern": "hit", "output_mode": "content", "-n": true, "-C": 1}),
            json!({"pattern": "hit", "glob": "*.txt*", "output_mode": "content"}),
            json!({"pattern": "hit", "paths": ["a", "z", "many/d3"]}),
        ] {
            let parallel = grep(&ctx, args.clone()).await;
            let mut sequential_args = args.clone();
            sequential_args["head_limit"] = json!(100_000);
            let sequential = grep(&ctx, sequential_args).await;
            assert_eq!(parallel, sequential, "{args}");
            assert!(!parallel.contains("skip/"), "{parallel}");
        }
        let files = grep(&ctx, json!({"pattern": "hit"})).await;
        assert_eq!(files.lines().count(), names.len() - 1 + 100);
        // Each directory's entries by name, a directory's files right after its name.
        let head = "./B/x.f6\n./_/x.f12\n./a/b/c.f5\n./a/b.f3\n./a/b.txt.f4\n./a-b/x.f2\n./a.f0\n./a.txt.f1\n";
        assert!(files.starts_with(head), "{files}");
    }

    struct Recorder(Mutex<Vec<PermissionRequest>>);
    #[async_trait]
    impl PermissionGate for Recorder {
        async fn request(&self, req: PermissionRequest) -> PermissionDecision {
            self.0.lock().unwrap().push(req);
            PermissionDecision::Denied { text_for_llm: "no".into(), code: "denied".into() }
        }
    }

    #[tokio::test]
    async fn asks_permission_per_root() {
        let (d, mut ctx) = tree();
        let gate = Arc::new(Recorder(Mutex::new(Vec::new())));
        ctx.permissions = gate.clone();
        let out = GrepTool.run(json!({"pattern": "two"}), &ctx).await;
        assert!(!out.success);
        let p = d.path().display().to_string();
        assert_eq!(
            gate.0.lock().unwrap()[0],
            PermissionRequest::Read { intention: format!("Search in directory: {p}"), path: p }
        );
    }
}
