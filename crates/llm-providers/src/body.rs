//! A request body in pieces: the bytes written for this call, and pieces it shares with what the
//! session keeps (the system prompt's JSON, the tools' JSON, a long conversation's sealed chunks).
//!
//! A call at turn 1,000 sends some 160 KB, nearly all of it text the session already holds. In
//! one buffer, every call copied all of it, and the allocator served such a body from a mapping
//! of its own; freeing that raised glibc's mmap and trim thresholds for good, so the heap kept a
//! few hundred KiB of freed space at its top (about 0.3 KiB of resident memory per turn of a
//! long session, measured). In pieces, a call allocates only what is new.

use bytes::Bytes;

/// A body's pieces, sent one after another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body {
    pieces: Vec<Bytes>,
    len: usize,
}

impl Body {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// The body in one piece: shared when it is one already, else copied together.
    pub fn to_bytes(&self) -> Bytes {
        match self.pieces.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => {
                let mut all = Vec::with_capacity(self.len);
                for piece in many {
                    all.extend_from_slice(piece);
                }
                Bytes::from(all)
            }
        }
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        let len = bytes.len();
        Self { pieces: if len == 0 { Vec::new() } else { vec![bytes] }, len }
    }
}

/// Shared pieces shorter than this are copied: a piece of its own costs more than the copy.
const SHARE_MIN: usize = 1024;

/// Writes a [`Body`]: copied bytes go to one buffer (the pieces between shared ones are slices
/// of it), shared pieces are only referenced.
#[derive(Debug, Default)]
pub(crate) struct BodyWriter {
    buffer: Vec<u8>,
    /// The body in order: runs of the buffer, and shared pieces.
    parts: Vec<Part>,
    /// Where the buffer's run not yet in `parts` starts.
    run_start: usize,
}

#[derive(Debug)]
enum Part {
    Written(std::ops::Range<usize>),
    Shared(Bytes),
}

impl BodyWriter {
    /// A writer whose buffer starts with room for `capacity` bytes.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self { buffer: Vec::with_capacity(capacity), ..Self::default() }
    }

    pub(crate) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    pub(crate) fn push(&mut self, byte: u8) {
        self.buffer.push(byte);
    }

    /// Appends `value`'s compact JSON.
    pub(crate) fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) {
        // Plain data written into a buffer: serializing cannot fail.
        let _ = serde_json::to_writer(&mut self.buffer, value);
    }

    /// Appends `piece` without copying it (unless it is short).
    pub(crate) fn share(&mut self, piece: Bytes) {
        if piece.len() < SHARE_MIN {
            self.buffer.extend_from_slice(&piece);
            return;
        }
        self.close_run();
        self.parts.push(Part::Shared(piece));
    }

    fn close_run(&mut self) {
        if self.buffer.len() > self.run_start {
            self.parts.push(Part::Written(self.run_start..self.buffer.len()));
            self.run_start = self.buffer.len();
        }
    }

    pub(crate) fn finish(mut self) -> Body {
        self.close_run();
        let written = Bytes::from(self.buffer);
        let mut len = 0;
        let pieces = self
            .parts
            .into_iter()
            .map(|part| match part {
                Part::Written(run) => written.slice(run),
                Part::Shared(piece) => piece,
            })
            .inspect(|piece| len += piece.len())
            .collect();
        Body { pieces, len }
    }
}

/// A [`Body`] as an HTTP body of known length: one frame per piece.
pub(crate) struct Frames {
    pieces: std::vec::IntoIter<Bytes>,
    left: u64,
}

impl From<Body> for Frames {
    fn from(body: Body) -> Self {
        Self { left: body.len as u64, pieces: body.pieces.into_iter() }
    }
}

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let next = self.pieces.next();
        if let Some(piece) = &next {
            self.left = self.left.saturating_sub(piece.len() as u64);
        }
        std::task::Poll::Ready(next.map(|piece| Ok(http_body::Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn long_shared_pieces_are_referenced_and_short_ones_copied() {
        let long = Bytes::from(vec![b'x'; SHARE_MIN]);
        let mut w = BodyWriter::default();
        w.extend_from_slice(b"{\"a\":");
        w.share(long.clone());
        w.push(b',');
        w.share(Bytes::from_static(b"\"short\""));
        w.push(b'}');
        let body = w.finish();
        assert_eq!(body.pieces().len(), 3);
        assert_eq!(body.pieces()[1].as_ptr(), long.as_ptr(), "the long piece is the same memory");
        assert_eq!(body.len(), 5 + SHARE_MIN + 9);
        let all = body.to_bytes();
        assert_eq!(all.len(), body.len());
        assert!(all.starts_with(b"{\"a\":xxx") && all.ends_with(b"x,\"short\"}"));
    }

    #[test]
    fn an_empty_writer_makes_an_empty_body() {
        let body = BodyWriter::default().finish();
        assert!(body.is_empty() && body.pieces().is_empty());
        assert_eq!(body.to_bytes(), Bytes::new());
        assert_eq!(Body::from(Bytes::new()), body);
    }

    #[tokio::test]
    async fn frames_report_the_exact_length_and_carry_every_piece_in_order() {
        let mut w = BodyWriter::default();
        w.extend_from_slice(b"head ");
        w.share(Bytes::from(vec![b'1'; 2000]));
        w.share(Bytes::from(vec![b'2'; 3000]));
        w.extend_from_slice(b" tail");
        let body = w.finish();
        let expected = body.to_bytes();
        let frames = Frames::from(body);
        assert_eq!(http_body::Body::size_hint(&frames).exact(), Some(expected.len() as u64));
        let collected = frames.collect().await.expect("infallible").to_bytes();
        assert_eq!(collected, expected);
    }
}
