//! Schema descriptions -> `///` comments that rustdoc renders as the text they were.
//!
//! Descriptions are prose written for TypeScript docs. Outside `code spans` we escape what
//! Markdown/rustdoc would otherwise interpret: `[x]` (an intra-doc link), `<tag>` (HTML), and
//! a line that starts like a list item or heading after wrapping.

const WIDTH: usize = 100;

/// Escapes Markdown outside backtick code spans. An unmatched backtick is escaped too.
fn escape(text: &str) -> String {
    let ticks = text.matches('`').count();
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    let mut seen_ticks = 0;
    for c in text.chars() {
        if c == '`' {
            seen_ticks += 1;
            // The last tick of an odd count has no partner: literal.
            if ticks % 2 == 1 && seen_ticks == ticks {
                out.push_str("\\`");
            } else {
                in_code = !in_code;
                out.push(c);
            }
            continue;
        }
        if !in_code && matches!(c, '[' | ']' | '<' | '>' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A word that must not begin a line: it would turn the line into a list item, a heading,
/// a block quote or a setext underline.
fn starts_block(word: &str) -> bool {
    matches!(word, "-" | "+" | "*" | "=" | "#" | "|")
        || word.starts_with('#')
        || word.starts_with("\\>")
        || (word.len() > 1 && word.ends_with(['.', ')']) && word[..word.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

/// Greedy word wrap; a block-starting word stays on the previous line.
fn wrap(paragraph: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in paragraph.split_whitespace() {
        if line.is_empty() {
            line.push_str(word);
        } else if line.len() + 1 + word.len() <= width || starts_block(word) {
            line.push(' ');
            line.push_str(word);
        } else {
            lines.push(std::mem::take(&mut line));
            line.push_str(word);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `///` lines for `text`, indented by `indent`, each ending in a newline.
pub fn render(text: &str, indent: &str) -> String {
    let width = WIDTH.saturating_sub(indent.len() + 4).max(40);
    let mut out = String::new();
    let text = text.replace("\r\n", "\n").replace('\t', " ");
    let paragraphs: Vec<&str> = text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).collect();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 {
            out.push_str(indent);
            out.push_str("///\n");
        }
        for line in wrap(&escape(paragraph), width) {
            out.push_str(indent);
            out.push_str("/// ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// `render` for an optional description.
pub fn render_opt(text: Option<&str>, indent: &str) -> String {
    text.map(|t| render(t, indent)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_outside_code() {
        assert_eq!(
            escape("e.g. ['16x16'] or <tagged_files> but `a[0] <b>` stays"),
            "e.g. \\['16x16'\\] or \\<tagged_files\\> but `a[0] <b>` stays"
        );
        assert_eq!(escape("odd ` tick"), "odd \\` tick");
    }

    #[test]
    fn wraps_without_starting_blocks() {
        let lines = wrap("aaaa bbbb - cccc", 9);
        assert_eq!(lines, vec!["aaaa bbbb -", "cccc"]);
        assert_eq!(render("x\n\ny", ""), "/// x\n///\n/// y\n");
    }
}
