//! Turns raw terminal output into plain text: CRLF → LF (the PTY's output processing turns
//! every `\n` into `\r\n`), ANSI escape sequences dropped, UTF-8 decoded across chunk
//! boundaries. Streaming, so it can be fed chunk by chunk as the process writes.

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Normal,
    /// Saw `\r`; a following `\n` (or more `\r`s then `\n`) collapses into one `\n`.
    CarriageReturn,
    /// Saw ESC.
    Escape,
    /// Inside `ESC [ ...` until a final byte 0x40..=0x7E.
    Csi,
    /// Inside `ESC ] ...` (or DCS/PM/APC/SOS strings) until BEL or `ESC \`.
    OscString,
    /// Saw ESC inside an OSC string: `\` ends it.
    OscEscape,
    /// `ESC (`-style charset designation: one more byte to skip.
    SkipOne,
}

#[derive(Debug)]
pub(crate) struct TerminalFilter {
    state: State,
    /// Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    pending: Vec<u8>,
}

impl Default for TerminalFilter {
    fn default() -> Self {
        Self { state: State::Normal, pending: Vec::new() }
    }
}

impl TerminalFilter {
    /// Filters one chunk and returns the text it completes.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.reserve(chunk.len());
        for &b in chunk {
            self.feed(b, &mut bytes);
        }
        self.decode(bytes, false)
    }

    /// Flushes what is left at the end of the stream (a lone `\r`, a truncated UTF-8 tail).
    pub fn finish(&mut self) -> String {
        let mut bytes = std::mem::take(&mut self.pending);
        if self.state == State::CarriageReturn {
            bytes.push(b'\r');
        }
        self.state = State::Normal;
        self.decode(bytes, true)
    }

    fn feed(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Normal => self.normal(b, out),
            State::CarriageReturn => match b {
                b'\n' => {
                    out.push(b'\n');
                    self.state = State::Normal;
                }
                // `\r\r\n` is what a program's own `\r\n` becomes on the PTY.
                b'\r' => {}
                _ => {
                    // A lone CR (progress bars) is kept as is.
                    out.push(b'\r');
                    self.state = State::Normal;
                    self.normal(b, out);
                }
            },
            State::Escape => {
                self.state = match b {
                    b'[' => State::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => State::OscString,
                    b'(' | b')' | b'*' | b'+' | b'#' | b'%' => State::SkipOne,
                    // Any other two-byte sequence (ESC =, ESC >, ESC 7, ...).
                    _ => State::Normal,
                }
            }
            State::Csi => {
                if (0x40..=0x7e).contains(&b) {
                    self.state = State::Normal;
                }
            }
            State::OscString => match b {
                0x07 => self.state = State::Normal,
                0x1b => self.state = State::OscEscape,
                _ => {}
            },
            State::OscEscape => {
                self.state = if b == b'\\' { State::Normal } else { State::OscString };
            }
            State::SkipOne => self.state = State::Normal,
        }
    }

    fn normal(&mut self, b: u8, out: &mut Vec<u8>) {
        match b {
            0x1b => self.state = State::Escape,
            b'\r' => self.state = State::CarriageReturn,
            // Bell, NUL and shift-in/out carry no text.
            0x00 | 0x07 | 0x0e | 0x0f => {}
            _ => out.push(b),
        }
    }

    /// Decodes `bytes`, keeping an incomplete trailing UTF-8 sequence for the next chunk
    /// unless this is the end of the stream; invalid bytes become U+FFFD.
    fn decode(&mut self, bytes: Vec<u8>, at_end: bool) -> String {
        let mut text = String::with_capacity(bytes.len());
        let mut rest: &[u8] = &bytes;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    text.push_str(s);
                    return text;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid` is valid UTF-8 by construction.
                    text.push_str(&String::from_utf8_lossy(valid));
                    match e.error_len() {
                        Some(n) => {
                            text.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None if at_end => {
                            text.push('\u{FFFD}');
                            return text;
                        }
                        None => {
                            self.pending = after.to_vec();
                            return text;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> String {
        let mut f = TerminalFilter::default();
        let mut s = String::new();
        for c in chunks {
            s.push_str(&f.push(c));
        }
        s.push_str(&f.finish());
        s
    }

    #[test]
    fn crlf_and_escapes() {
        assert_eq!(run(&[b"hello\r\nworld\r\n"]), "hello\nworld\n");
        assert_eq!(run(&[b"a\r", b"\nb\r\r\n"]), "a\nb\n");
        assert_eq!(run(&[b"\x1b[31mred\x1b[0m \x1b]0;title\x07x\x1b(By"]), "red xy");
        assert_eq!(run(&[b"\x1b[", b"1;32", b"mok"]), "ok");
        assert_eq!(run(&[b"50%\r100%\r\n"]), "50%\r100%\n");
        assert_eq!(run(&[b"end\r"]), "end\r");
    }

    #[test]
    fn utf8_split_across_chunks() {
        let s = "héllo ✓".as_bytes();
        let (a, b) = s.split_at(2);
        assert_eq!(run(&[a, b]), "héllo ✓");
        assert_eq!(run(&[b"bad\xff!"]), "bad\u{FFFD}!");
        assert_eq!(run(&[&s[..s.len() - 1]]), "héllo \u{FFFD}");
    }
}
