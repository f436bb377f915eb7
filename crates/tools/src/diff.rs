//! Unified diffs for the `detailedContent` of file edits and for write permission prompts.

use similar::TextDiff;

/// A git-style unified diff of `old` → `new` for the file at `path` (absolute paths become
/// `a/abs/path`, the way git prints them).
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let rel = path.trim_start_matches('/');
    let a = format!("a/{rel}");
    let b = format!("b/{rel}");
    let body = TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(&a, &b).to_string();
    format!("diff --git {a} {b}\n{body}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn diff_has_git_header_and_hunk() {
        let d = unified_diff("/tmp/x.txt", "Hello World\nGoodbye World\n", "Hi Universe\nGoodbye World\n");
        assert!(d.starts_with("diff --git a/tmp/x.txt b/tmp/x.txt\n--- a/tmp/x.txt\n+++ b/tmp/x.txt\n@@ "), "{d}");
        assert!(d.contains("-Hello World\n+Hi Universe\n Goodbye World\n"), "{d}");
    }
}
