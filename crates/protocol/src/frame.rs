//! `Content-Length: N\r\n\r\n<body>` framing, as vscode-jsonrpc and the SDKs speak it.

use bytes::{Buf, Bytes, BytesMut};

/// Default limit on one body. A larger declared length is refused (its body skipped unread).
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// The largest refused body the decoder skips as it arrives. A longer declared length is not
/// a body anyone is sending (`Content-Length: 1000000000000000`): waiting for it would swallow
/// every later frame, so only its header is dropped and decoding resynchronises at the next
/// header.
pub const MAX_SKIP_BYTES: u64 = 1 << 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("malformed frame header: {0}")]
    BadHeader(String),
    /// The body is skipped as it arrives, so the stream stays in sync and memory stays flat.
    #[error("frame of {declared} bytes exceeds the limit of {limit} bytes; skipped")]
    TooLarge { declared: usize, limit: usize },
}

/// Encodes one message body with the only header the Python SDK tolerates.
pub fn encode(body: &[u8]) -> Vec<u8> {
    encode_parts(&[body])
}

/// Encodes one body given in pieces (concatenated), without joining them first.
pub fn encode_parts(parts: &[&[u8]]) -> Vec<u8> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let header = format!("Content-Length: {len}\r\n\r\n");
    let mut out = Vec::with_capacity(header.len() + len);
    out.extend_from_slice(header.as_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

/// Incremental decoder: push bytes as they arrive, pull complete bodies.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    limit: usize,
    /// Bytes of a refused oversized body still to discard.
    skip: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(MAX_FRAME_BYTES)
    }
}

impl FrameDecoder {
    /// A decoder refusing bodies larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self { buf: BytesMut::new(), limit, skip: 0 }
    }

    /// Changes the largest body accepted from the next frame on (a connection that has
    /// authenticated gets the full limit).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    pub fn push(&mut self, mut data: &[u8]) {
        if self.skip > 0 {
            let n = self.skip.min(data.len());
            self.skip -= n;
            data = &data[n..];
        }
        self.buf.extend_from_slice(data);
    }

    /// Returns the next complete body, `Ok(None)` when more bytes are needed, or an error for
    /// a header block that can never become valid. After an error the bad header block has
    /// been discarded, so the caller may keep decoding.
    /// The body shares the decoder's buffer (no copy is made of it).
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.skip > 0 {
            return Ok(None);
        }
        // Resynchronise: a frame starts at a header line. Bytes before the next
        // `Content-Length` (junk, the body of a frame whose header was bad) are dropped.
        let at_header = starts_with_header_line(&self.buf);
        match if at_header { Some(0) } else { find_header_start(&self.buf) } {
            Some(0) => {}
            Some(pos) => {
                let junk = self.buf.split_to(pos);
                if junk.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Err(FrameError::BadHeader(format!("skipped {} bytes of junk before a frame", junk.len())));
                }
            }
            None => {
                // Keep a tail that may be the start of a header split across reads.
                let keep = self.buf.len().min(HEADER_NAME.len() - 1);
                let junk = self.buf.split_to(self.buf.len() - keep);
                if junk.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Err(FrameError::BadHeader(format!("skipped {} bytes of junk before a frame", junk.len())));
                }
                return Ok(None);
            }
        }
        let Some(header_end) = find(&self.buf, b"\r\n\r\n") else {
            if self.buf.len() > 8192 {
                let junk = self.buf.split_to(HEADER_NAME.len());
                return Err(FrameError::BadHeader(format!("no header terminator after {} bytes", junk.len())));
            }
            return Ok(None);
        };
        let header = String::from_utf8_lossy(&self.buf[..header_end]).to_string();
        let mut length: Option<usize> = None;
        for line in header.split("\r\n") {
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok();
                }
            }
        }
        if let Some(declared) = length.filter(|l| *l > self.limit) {
            self.buf.advance(header_end + 4);
            if declared as u64 > MAX_SKIP_BYTES {
                return Err(FrameError::TooLarge { declared, limit: self.limit });
            }
            let n = declared.min(self.buf.len());
            self.buf.advance(n);
            self.skip = declared - n;
            return Err(FrameError::TooLarge { declared, limit: self.limit });
        }
        let Some(len) = length else {
            // Junk glued to the front of a real header (`garbageContent-Length: 2`): resync on
            // the header name inside the block instead of dropping the frame behind it.
            let skip = find_header_start(&self.buf[1..header_end]).map(|p| p + 1).unwrap_or(header_end + 4);
            self.buf.advance(skip);
            return Err(FrameError::BadHeader(header));
        };
        let total = header_end + 4 + len;
        if self.buf.len() < total {
            self.buf.reserve(total - self.buf.len());
            return Ok(None);
        }
        self.buf.advance(header_end + 4);
        let body = self.buf.split_to(len).freeze();
        if len >= RELEASE_AFTER {
            // The rest of the buffer still shares the body's allocation and would reclaim all
            // of it on the next read: a connection would keep its largest frame's memory for
            // good. The remainder (what was read past this frame) moves to a buffer of its own,
            // so the allocation goes when the body does.
            self.buf = BytesMut::from(&self.buf[..]);
        }
        Ok(Some(body))
    }
}

/// Bodies from this size on do not leave their allocation to the decoder's buffer.
const RELEASE_AFTER: usize = 1024 * 1024;

const HEADER_NAME: &[u8] = b"content-length";

/// Whether the buffer starts like a header line (`Name:`), e.g. `Content-Type` before
/// `Content-Length`. An incomplete name at the end of the buffer counts (more bytes may come).
fn starts_with_header_line(buf: &[u8]) -> bool {
    let name_len = buf.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'-').count();
    name_len > 0 && (buf.get(name_len) == Some(&b':') || name_len == buf.len())
}

/// Position of the next `Content-Length` header name (any case). Only searched past offset 0
/// after junk, so a body that happens to contain the words is never mistaken for a header.
fn find_header_start(buf: &[u8]) -> Option<usize> {
    buf.windows(HEADER_NAME.len()).position(|w| w.eq_ignore_ascii_case(HEADER_NAME))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_joined_frames() {
        let mut all = encode(b"{\"a\":1}");
        all.extend(encode(b"{\"b\":2}"));
        let mut dec = FrameDecoder::default();
        for chunk in all.chunks(3) {
            dec.push(chunk);
        }
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{\"a\":1}");
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{\"b\":2}");
        assert_eq!(dec.next_frame().unwrap(), None);
    }

    #[test]
    fn accepts_content_type_and_lowercase() {
        let mut dec = FrameDecoder::default();
        dec.push(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn bad_header_is_skipped_and_decoding_continues() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: abc\r\n\r\n");
        dec.push(&encode(b"{}"));
        assert!(dec.next_frame().is_err());
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn junk_between_frames_resyncs() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: abc\r\n\r\n{}garbage");
        dec.push(&encode(b"{\"ok\":1}"));
        let mut errors = 0;
        let body = loop {
            match dec.next_frame() {
                Ok(Some(b)) => break b,
                Ok(None) => panic!("frame lost"),
                Err(_) => errors += 1,
            }
        };
        assert_eq!(body.as_ref(), b"{\"ok\":1}");
        assert!(errors >= 1);
        assert_eq!(dec.next_frame().unwrap(), None);
    }

    #[test]
    fn junk_glued_to_a_header_resyncs() {
        let mut dec = FrameDecoder::default();
        dec.push(b"garbage");
        dec.push(&encode(b"{}"));
        assert!(dec.next_frame().is_err());
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn content_type_first_is_fine() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn header_split_across_reads() {
        let mut dec = FrameDecoder::default();
        let bytes = encode(b"{}");
        dec.push(&bytes[..5]);
        assert_eq!(dec.next_frame().unwrap(), None);
        dec.push(&bytes[5..]);
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn oversized_body_is_skipped_and_the_stream_stays_in_sync() {
        let mut dec = FrameDecoder::new(8);
        let big = encode(br#"{"padding":"0123456789"}"#);
        let mut stream = big.clone();
        stream.extend(encode(b"{}"));
        // Arrives in small pieces: the refused body is discarded as it comes, never buffered.
        let mut errors = Vec::new();
        let mut bodies = Vec::new();
        for chunk in stream.chunks(5) {
            dec.push(chunk);
            loop {
                match dec.next_frame() {
                    Ok(Some(b)) => bodies.push(b),
                    Ok(None) => break,
                    Err(e) => errors.push(e),
                }
            }
            assert!(dec.buf.len() <= 64, "buffered {} bytes", dec.buf.len());
        }
        assert_eq!(errors, vec![FrameError::TooLarge { declared: 24, limit: 8 }]);
        assert_eq!(bodies, vec![bytes::Bytes::from_static(b"{}")]);
    }

    #[test]
    fn huge_declared_lengths_are_refused_without_allocating() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: 99999999999999\r\n\r\n{}");
        assert!(matches!(dec.next_frame(), Err(FrameError::TooLarge { .. })));
        assert!(dec.buf.capacity() < 1 << 20);
        // Nobody sends that many bytes: the next frame is not swallowed as its body.
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: 1000000000000000\r\n\r\n");
        dec.push(&encode(b"{}"));
        assert!(matches!(dec.next_frame(), Err(FrameError::TooLarge { declared: 1_000_000_000_000_000, .. })));
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
        assert!(dec.buf.capacity() < 1 << 20);
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: -5\r\n\r\n");
        dec.push(&encode(b"{}"));
        assert!(matches!(dec.next_frame(), Err(FrameError::BadHeader(_))));
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
    }

    #[test]
    fn a_large_body_does_not_leave_its_allocation_behind() {
        let mut dec = FrameDecoder::default();
        let big = vec![b'x'; 4 * RELEASE_AFTER];
        let mut stream = encode(&big);
        stream.extend(encode(b"{}"));
        for chunk in stream.chunks(64 * 1024) {
            dec.push(chunk);
        }
        let body = dec.next_frame().unwrap().unwrap();
        assert_eq!(body.len(), big.len());
        drop(body);
        assert!(dec.buf.capacity() < RELEASE_AFTER, "decoder kept {} bytes", dec.buf.capacity());
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{}");
        dec.push(&encode(b"{}"));
        assert!(dec.buf.capacity() < RELEASE_AFTER, "decoder reclaimed {} bytes", dec.buf.capacity());
    }

    #[test]
    fn partial_body_waits() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: 11\r\n\r\n{\"a\"");
        assert_eq!(dec.next_frame().unwrap(), None);
        dec.push(b":12345}");
        assert_eq!(dec.next_frame().unwrap().unwrap().as_ref(), b"{\"a\":12345}");
    }
}
