//! Directory walking shared by `grep` and `glob`, with ripgrep's default filters
//! (`.gitignore` inside git repositories, `.ignore`, hidden files skipped).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use crate::context::ToolContext;
use crate::files::Files;
use crate::output::ToolOutput;
use crate::view::missing_path_output;

/// One place to search: what the model named (used to spell result paths) and where it is.
#[derive(Debug, Clone)]
pub(crate) struct SearchRoot {
    /// The path as given, or `.` for the working directory; result paths start with it.
    pub shown: String,
    pub abs: PathBuf,
}

impl SearchRoot {
    /// How a file found under this root is printed: the root as given joined with the
    /// file's path below it (`./a.txt`, `/abs/dir/a.txt`), or the root itself for a file root.
    pub fn display(&self, found: &Path) -> String {
        match found.strip_prefix(&self.abs) {
            Ok(rel) if rel.as_os_str().is_empty() => self.shown.clone(),
            Ok(rel) => {
                let base = self.shown.trim_end_matches('/');
                format!("{base}/{}", rel.display())
            }
            Err(_) => found.display().to_string(),
        }
    }
}

/// The roots named by the `paths`/`path` arguments (the working directory when none).
pub(crate) async fn resolve_roots(ctx: &ToolContext, given: Vec<String>) -> Result<Vec<SearchRoot>, ToolOutput> {
    let given = if given.is_empty() { vec![".".to_string()] } else { given };
    let mut roots = Vec::with_capacity(given.len());
    for shown in given {
        // Collecting the components drops interior `.`s (`/cwd/./src` → `/cwd/src`).
        let abs: PathBuf = ctx.resolve(&shown).components().collect();
        match ctx.files.exists(&abs) {
            Ok(()) => {}
            Err(e) if crate::files::is_outside(&e) => {
                return Err(crate::files::outside_output(&abs.display().to_string()))
            }
            Err(_) => return Err(missing_path_output(&abs.display().to_string())),
        }
        roots.push(SearchRoot { shown, abs });
    }
    Ok(roots)
}

/// A sequential walker over `root` with ripgrep's default filters, sorted by file name so the
/// results are deterministic, restricted to a ripgrep `--type` when given.
pub(crate) fn walker(
    ctx_cwd: &Path,
    root: &SearchRoot,
    file_type: Option<&str>,
    files: &Files,
) -> Result<ignore::Walk, String> {
    let mut builder = walk_builder(ctx_cwd, root, file_type, files)?;
    builder.sort_by_file_name(|a, b| a.cmp(b));
    Ok(builder.build())
}

fn walk_builder(
    ctx_cwd: &Path,
    root: &SearchRoot,
    file_type: Option<&str>,
    files: &Files,
) -> Result<WalkBuilder, String> {
    let mut builder = WalkBuilder::new(&root.abs);
    if files.hides_any() {
        let files = files.clone();
        builder.filter_entry(move |e| !files.hides(e.path()));
    }
    builder
        // The walker would otherwise ask the process for its cwd; tools use the session's.
        .current_dir(ctx_cwd.to_path_buf())
        // The user's global git excludes depend on process-wide configuration; leave them out
        // so results only depend on the searched tree.
        .git_global(false);
    if let Some(file_type) = file_type {
        let mut types = TypesBuilder::new();
        types.add_defaults();
        types.select(file_type);
        let types = types.build().map_err(|e| format!("Invalid file type \"{file_type}\": {e}"))?;
        builder.types(types);
    }
    Ok(builder)
}

/// The files below `root` that `visit` keeps, found by a walk on several threads with the same
/// filters as [`walker`], in the order [`walker`] would give them. `make_visitor` makes one
/// visitor per thread (per-thread state, such as a searcher, lives in it).
pub(crate) fn parallel_files<T, F>(
    ctx_cwd: &Path,
    root: &SearchRoot,
    file_type: Option<&str>,
    files: &Files,
    cancel: &CancellationToken,
    make_visitor: impl Fn() -> F + Sync,
) -> Result<Vec<(PathBuf, T)>, String>
where
    T: Send,
    F: FnMut(&ignore::DirEntry) -> Option<T> + Send,
{
    let (tx, rx) = std::sync::mpsc::channel::<(PathBuf, T)>();
    walk_builder(ctx_cwd, root, file_type, files)?.build_parallel().run(|| {
        let tx = tx.clone();
        let mut visit = make_visitor();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    tracing::debug!(error = %e, "skipping unreadable entry");
                    return WalkState::Continue;
                }
            };
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Some(found) = visit(&entry) {
                    let _ = tx.send((entry.into_path(), found));
                }
            }
            WalkState::Continue
        })
    });
    drop(tx);
    let mut found: Vec<(PathBuf, T)> = rx.into_iter().collect();
    // `Path` orders by components: each directory's entries by name, a directory's contents
    // right after its name, which is the sequential walker's depth-first, name-sorted order.
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// A file-name glob applied on top of the ignore rules (unlike ripgrep's `--glob`, it never
/// brings back hidden or ignored files). As in `.gitignore`: a pattern without `/` matches the
/// file name at any depth, one with `/` matches the path below the search root, where `*`
/// stays within one directory and `**` crosses any number; a leading `!` negates.
#[derive(Debug, Clone)]
pub(crate) struct GlobFilter {
    matcher: GlobMatcher,
    whole_path: bool,
    negated: bool,
}

impl GlobFilter {
    pub fn new(pattern: &str) -> Result<Self, String> {
        let (negated, body) = match pattern.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let body = body.strip_prefix("./").unwrap_or(body);
        let body = body.strip_prefix('/').unwrap_or(body);
        let matcher = GlobBuilder::new(body)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("Invalid glob pattern \"{pattern}\": {e}"))?
            .compile_matcher();
        Ok(Self { matcher, whole_path: body.contains('/'), negated })
    }

    /// Whether the file at `rel` (relative to the search root) passes.
    pub fn matches(&self, rel: &Path) -> bool {
        let hit = if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name().is_some_and(|name| self.matcher.is_match(name))
        };
        hit != self.negated
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn glob_filter_semantics() {
        let m = |p: &str, path: &str| GlobFilter::new(p).unwrap().matches(Path::new(path));
        assert!(m("*.ts", "a/b/c.ts"));
        assert!(m("*.{ts,tsx}", "x.tsx"));
        assert!(!m("src/*.ts", "src/a/b.ts"));
        assert!(m("src/*.ts", "src/b.ts"));
        assert!(m("**/*.ts", "b.ts"));
        assert!(m("src/**/*.ts", "src/a/b/c.ts"));
        assert!(m("!*.min.js", "app.js"));
        assert!(!m("!*.min.js", "app.min.js"));
        assert!(GlobFilter::new("[").is_err());
    }
}
