//! `Content-Length: N\r\n\r\n<body>` framing, as vscode-jsonrpc and the SDKs speak it.

use bytes::{Buf, BytesMut};

/// Largest body we accept; a bigger declared length is treated as a malformed header.
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("malformed frame header: {0}")]
    BadHeader(String),
}

/// Encodes one message body with the only header the Python SDK tolerates.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// Incremental decoder: push bytes as they arrive, pull complete bodies.
#[derive(Default, Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
}

impl FrameDecoder {
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Returns the next complete body, `Ok(None)` when more bytes are needed, or an error for
    /// a header block that can never become valid. After an error the bad header block has
    /// been discarded, so the caller may keep decoding.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        {
            // Skip stray line breaks between frames (some writers add a trailing newline).
            while matches!(self.buf.first(), Some(b'\r') | Some(b'\n')) {
                self.buf.advance(1);
            }
            let Some(header_end) = find(&self.buf, b"\r\n\r\n") else {
                if self.buf.len() > 8192 {
                    let junk = self.buf.split().freeze();
                    return Err(FrameError::BadHeader(format!(
                        "no header terminator in {} bytes",
                        junk.len()
                    )));
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
            let Some(len) = length.filter(|l| *l <= MAX_FRAME_BYTES) else {
                self.buf.advance(header_end + 4);
                return Err(FrameError::BadHeader(header));
            };
            let total = header_end + 4 + len;
            if self.buf.len() < total {
                self.buf.reserve(total - self.buf.len());
                return Ok(None);
            }
            self.buf.advance(header_end + 4);
            let body = self.buf.split_to(len).to_vec();
            Ok(Some(body))
        }
    }
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
        assert_eq!(dec.next_frame().unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(dec.next_frame().unwrap().unwrap(), b"{\"b\":2}");
        assert_eq!(dec.next_frame().unwrap(), None);
    }

    #[test]
    fn accepts_content_type_and_lowercase() {
        let mut dec = FrameDecoder::default();
        dec.push(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
        assert_eq!(dec.next_frame().unwrap().unwrap(), b"{}");
    }

    #[test]
    fn bad_header_is_skipped_and_decoding_continues() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: abc\r\n\r\n");
        dec.push(&encode(b"{}"));
        assert!(dec.next_frame().is_err());
        assert_eq!(dec.next_frame().unwrap().unwrap(), b"{}");
    }

    #[test]
    fn partial_body_waits() {
        let mut dec = FrameDecoder::default();
        dec.push(b"Content-Length: 11\r\n\r\n{\"a\"");
        assert_eq!(dec.next_frame().unwrap(), None);
        dec.push(b":12345}");
        assert_eq!(dec.next_frame().unwrap().unwrap(), b"{\"a\":12345}");
    }
}
