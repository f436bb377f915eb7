//! The end of a local server's stderr, kept while it runs to explain a failure (in
//! `session.mcp.list` and the server's log). What a server prints is not trusted: the tail is
//! bounded, control characters (terminal escapes, carriage returns) are shown escaped, and
//! secrets — the values the server was given in its `env`, and anything shaped like a GitHub
//! token or a bearer credential — are masked.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// How much of a local server's stderr is kept.
const TAIL: usize = 2048;

/// What replaces a secret.
const MASK: &str = "******";

/// Values shorter than this are too likely to occur by chance to be masked.
const MIN_SECRET: usize = 8;

/// Prefixes of GitHub's token formats.
const TOKEN_PREFIXES: &[&str] = &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];

#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    buf: Arc<Mutex<VecDeque<u8>>>,
    secrets: Arc<Vec<String>>,
}

impl StderrTail {
    /// A tail that masks `secrets` (the values a server was started with).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= MIN_SECRET).collect();
        // Longest first, so a value containing another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { buf: Default::default(), secrets: Arc::new(secrets) }
    }

    pub fn text(&self) -> String {
        let bytes: Vec<u8> = {
            let buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
            buf.iter().copied().collect()
        };
        let mut text = String::from_utf8_lossy(&bytes).trim().to_string();
        for s in self.secrets.iter() {
            text = text.replace(s.as_str(), MASK);
        }
        escape_controls(&mask_token_shapes(&text))
    }

    pub fn push(&self, chunk: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend(chunk);
        while buf.len() > TAIL {
            buf.pop_front();
        }
    }
}

/// GitHub tokens (by their prefixes) and `Bearer` credentials, masked.
fn mask_token_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let lower = rest.to_ascii_lowercase();
        let token_at = TOKEN_PREFIXES.iter().filter_map(|p| rest.find(p)).min();
        let bearer_at = lower.find("bearer ").map(|i| i + "bearer ".len());
        let Some(start) = [token_at, bearer_at].into_iter().flatten().min() else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let len = tail.find(|c: char| !(c.is_ascii_alphanumeric() || "_-.=/+".contains(c))).unwrap_or(tail.len());
        if len == 0 {
            // "Bearer " followed by nothing credential-like: keep the next character and go on.
            let next = tail.chars().next().map_or(0, char::len_utf8);
            out.push_str(&tail[..next]);
            rest = &tail[next..];
            continue;
        }
        out.push_str(MASK);
        rest = &tail[len..];
    }
    out
}

/// Control characters but newline and tab as `\u{..}`: a server's output cannot move the
/// cursor of whoever reads the log, or forge a log line with a bare carriage return.
fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' && c != '\t' { c.escape_unicode().to_string() } else { c.to_string() })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_bounded_escaped_and_masked() {
        let tail = StderrTail::new(["s3cr3t-api-key".to_string(), "short".to_string()]);
        tail.push(&vec![b'x'; 5000]);
        tail.push(b"\nkey=s3cr3t-api-key token gho_abcdefghijklmnopqrstuvwxyz012345 Authorization: Bearer eyJhbGc.x-y\x1b[31mred\rshort");
        let text = tail.text();
        assert!(text.len() <= TAIL + 64, "{}", text.len());
        assert!(!text.contains("s3cr3t") && !text.contains("gho_abc") && !text.contains("eyJhbGc"), "{text}");
        assert!(text.contains("key=******") && text.contains("Bearer ******"), "{text}");
        assert!(!text.contains('\x1b') && !text.contains('\r') && text.contains("\\u{1b}[31mred"), "{text}");
        assert!(text.ends_with("short"), "values under 8 bytes are not masked: {text}");
    }
}
