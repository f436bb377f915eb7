//! A minimal "where do these differ" for the drift message (no diff algorithm needed: the
//! point is to say which lines to look at, then `just codegen` fixes it).

use std::fmt::Write as _;

const CONTEXT: usize = 3;

/// The first differing line of `committed` vs `generated`, with a few lines of each.
pub fn first_difference(committed: &str, generated: &str) -> String {
    let a: Vec<&str> = committed.lines().collect();
    let b: Vec<&str> = generated.lines().collect();
    let first = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let mut out = String::new();
    let _ = writeln!(out, "  first difference at line {}:", first + 1);
    let show = |out: &mut String, label: &str, lines: &[&str]| {
        let end = (first + CONTEXT).min(lines.len());
        if first >= lines.len() {
            let _ = writeln!(out, "  {label} (ends at line {})", lines.len());
        }
        for (i, l) in lines.iter().enumerate().take(end).skip(first) {
            let _ = writeln!(out, "  {label} {:>5} | {l}", i + 1);
        }
    };
    show(&mut out, "committed", &a);
    show(&mut out, "generated", &b);
    if a.len() == b.len() && first >= a.len() {
        out.push_str("  (only line endings or the final newline differ)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_first_line() {
        let d = first_difference("a\nb\nc\n", "a\nx\nc\n");
        assert!(d.contains("line 2"), "{d}");
        assert!(d.contains("committed     2 | b"), "{d}");
        assert!(d.contains("generated     2 | x"), "{d}");
    }
}
