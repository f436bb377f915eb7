//! Incremental server-sent-events parser: push raw body bytes as they arrive, pull complete
//! events. Network chunks split lines (and UTF-8 sequences) anywhere, so bytes are buffered
//! until a whole line is available and only complete lines are decoded.

/// One dispatched event. `event` is the `event:` field (Anthropic / Responses streams name
/// their events; chat-completions streams don't); `data` is the joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// Start of the first unconsumed byte in `buf`; consumed bytes are dropped lazily so a
    /// long body isn't memmoved once per line.
    pos: usize,
    event: Option<String>,
    data: String,
    has_data: bool,
    started: bool,
    finished: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append body bytes. Call [`SseParser::next_event`] until it returns `None` afterwards.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.finished {
            return;
        }
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Mark end of input: a last line without a newline and a last event without the blank
    /// line that normally terminates it still count. Drain with `next_event` afterwards.
    pub fn finish(&mut self) {
        if !self.finished {
            // A blank line completes whatever is pending; a second newline ends a partial line.
            self.buf.extend_from_slice(b"\n\n");
            self.finished = true;
        }
    }

    /// The next complete event, if one is buffered.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if !self.started {
                // Need enough bytes to tell whether the stream opens with a BOM.
                let pending = &self.buf[self.pos..];
                if pending.len() < BOM.len() && BOM.starts_with(pending) && !self.finished {
                    return None;
                }
                if pending.starts_with(BOM) {
                    self.pos += BOM.len();
                }
                self.started = true;
            }
            let rest = &self.buf[self.pos..];
            let newline = rest.iter().position(|&b| b == b'\n')?;
            let mut line = &rest[..newline];
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            let line = String::from_utf8_lossy(line).into_owned();
            self.pos += newline + 1;
            if let Some(event) = self.process_line(&line) {
                return Some(event);
            }
        }
    }

    fn process_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            // `id` and `retry` matter only for EventSource reconnection, which model APIs don't use.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent { event, data: std::mem::take(&mut self.data) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(ev) = parser.next_event() {
                out.push(ev);
            }
        }
        parser.finish();
        while let Some(ev) = parser.next_event() {
            out.push(ev);
        }
        out
    }

    fn data(s: &str) -> SseEvent {
        SseEvent { event: None, data: s.to_string() }
    }

    #[test]
    fn data_with_and_without_space() {
        let evs = parse_chunks(&[b"data: a\n\ndata:b\n\ndata:  c\n\n"]);
        assert_eq!(evs, vec![data("a"), data("b"), data(" c")]);
    }

    #[test]
    fn crlf_line_endings() {
        let evs = parse_chunks(&[b"data: one\r\n\r\ndata: two\r\n\r\n"]);
        assert_eq!(evs, vec![data("one"), data("two")]);
    }

    #[test]
    fn crlf_split_between_chunks() {
        let evs = parse_chunks(&[b"data: one\r", b"\n\r", b"\ndata: two\r\n\r\n"]);
        assert_eq!(evs, vec![data("one"), data("two")]);
    }

    #[test]
    fn comments_are_ignored() {
        let evs = parse_chunks(&[b": keep-alive\n\n:another\ndata: x\n\n"]);
        assert_eq!(evs, vec![data("x")]);
    }

    #[test]
    fn multi_line_data_joined_with_newline() {
        let evs = parse_chunks(&[b"data: first\ndata: second\ndata\n\n"]);
        assert_eq!(evs, vec![data("first\nsecond\n")]);
    }

    #[test]
    fn event_names() {
        let evs = parse_chunks(&[b"event: message_start\ndata: {}\n\ndata: plain\n\n"]);
        assert_eq!(evs, vec![SseEvent { event: Some("message_start".into()), data: "{}".into() }, data("plain")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let evs = parse_chunks(&[b"event: ping\n\ndata: x\n\n"]);
        assert_eq!(evs, vec![data("x")]);
    }

    #[test]
    fn unknown_fields_ignored() {
        let evs = parse_chunks(&[b"id: 7\nretry: 100\nfoo: bar\ndata: x\n\n"]);
        assert_eq!(evs, vec![data("x")]);
    }

    #[test]
    fn split_at_every_byte() {
        let body = "event: e\r\ndata: {\"text\":\"héllo wörld\"}\r\n\r\ndata: [DONE]\n\n";
        let bytes = body.as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        let evs = parse_chunks(&chunks);
        assert_eq!(
            evs,
            vec![SseEvent { event: Some("e".into()), data: "{\"text\":\"héllo wörld\"}".into() }, data("[DONE]")]
        );
    }

    #[test]
    fn final_event_without_blank_line() {
        assert_eq!(parse_chunks(&[b"data: a\n\ndata: last"]), vec![data("a"), data("last")]);
        assert_eq!(parse_chunks(&[b"data: last\n"]), vec![data("last")]);
        assert_eq!(parse_chunks(&[b"data: last\r\n"]), vec![data("last")]);
    }

    #[test]
    fn nothing_until_blank_line() {
        let mut parser = SseParser::new();
        parser.push(b"data: a\n");
        assert_eq!(parser.next_event(), None);
        parser.push(b"\n");
        assert_eq!(parser.next_event(), Some(data("a")));
        assert_eq!(parser.next_event(), None);
    }

    #[test]
    fn leading_bom_stripped() {
        assert_eq!(parse_chunks(&[b"\xEF\xBB", b"\xBFdata: x\n\n"]), vec![data("x")]);
    }

    #[test]
    fn many_events_in_long_body() {
        let body: String = (0..1000).map(|i| format!("data: {i}\n\n")).collect();
        let chunks: Vec<&[u8]> = body.as_bytes().chunks(7).collect();
        let evs = parse_chunks(&chunks);
        assert_eq!(evs.len(), 1000);
        assert_eq!(evs[999], data("999"));
    }
}
