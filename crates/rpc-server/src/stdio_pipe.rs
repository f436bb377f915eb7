//! Stdin and stdout read and written on the runtime's own reactor when they are pipes or
//! sockets (what an SDK spawns the server with). Tokio's `stdin()` / `stdout()` hand every read
//! and write to a blocking thread: two thread hops per batch of frames, which under a burst of
//! sessions is a large share of a turn's CPU and latency. A pipe or socket can be polled
//! instead; a file or terminal (not pollable, or shared with a shell that must not see it turned
//! non-blocking) keeps tokio's blocking stdio.
//!
//! The server polls a duplicate of fd 0 / 1. The duplicate shares the open file description,
//! so the non-blocking flag is cleared again when the stream is dropped.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;
use tokio::net::UnixStream;

enum Stream {
    PipeIn(pipe::Receiver),
    PipeOut(pipe::Sender),
    Socket(UnixStream),
}

/// A polled duplicate of stdin or stdout (see the module docs).
pub struct PolledStdio {
    stream: Option<Stream>,
}

impl PolledStdio {
    /// Stdin and stdout as a polled reader and writer, when both are pipes or sockets and
    /// stdin, stdout and stderr are three different ones. A stream shared by two of them (one
    /// socket for both directions, `2>&1`) stays blocking: the flag would reach the other
    /// user too, and a blocking writer (the log on stderr, a child process) must not see
    /// `EAGAIN`. Must run inside the runtime.
    pub fn pair() -> Option<(Self, Self)> {
        let ids: Vec<(u64, u64)> = [std::io::stdin().as_fd(), std::io::stdout().as_fd(), std::io::stderr().as_fd()]
            .into_iter()
            .map(file_id)
            .collect::<Option<_>>()?;
        if ids[0] == ids[1] || ids[0] == ids[2] || ids[1] == ids[2] {
            return None;
        }
        let stdin = Self::open(std::io::stdin().as_fd().try_clone_to_owned().ok()?, true)?;
        let stdout = Self::open(std::io::stdout().as_fd().try_clone_to_owned().ok()?, false)?;
        Some((stdin, stdout))
    }

    fn open(fd: OwnedFd, read: bool) -> Option<Self> {
        let kind = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?.file_type();
        let stream = if kind.is_fifo() {
            if read {
                Stream::PipeIn(pipe::Receiver::from_owned_fd(fd).ok()?)
            } else {
                Stream::PipeOut(pipe::Sender::from_owned_fd(fd).ok()?)
            }
        } else if kind.is_socket() {
            let std = std::os::unix::net::UnixStream::from(fd);
            std.set_nonblocking(true).ok()?;
            match UnixStream::from_std(std) {
                Ok(s) => Stream::Socket(s),
                Err(e) => {
                    tracing::debug!(error = %e, "stdio socket is not pollable; using blocking stdio");
                    return None;
                }
            }
        } else {
            return None;
        };
        Some(Self { stream: Some(stream) })
    }
}

impl Drop for PolledStdio {
    fn drop(&mut self) {
        // Back to blocking, as the process found it. Failures change nothing worth reporting:
        // the process is done with its stdio.
        match self.stream.take() {
            Some(Stream::PipeIn(r)) => drop(r.into_blocking_fd()),
            Some(Stream::PipeOut(w)) => drop(w.into_blocking_fd()),
            Some(Stream::Socket(s)) => {
                if let Ok(std) = s.into_std() {
                    let _ = std.set_nonblocking(false);
                }
            }
            None => {}
        }
    }
}

/// Device and inode: which pipe, socket or file a descriptor refers to.
fn file_id(fd: std::os::fd::BorrowedFd<'_>) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::File::from(fd.try_clone_to_owned().ok()?).metadata().ok()?;
    Some((meta.dev(), meta.ino()))
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "stdio stream already closed")
}

impl AsyncRead for PolledStdio {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().stream.as_mut() {
            Some(Stream::PipeIn(r)) => Pin::new(r).poll_read(cx, buf),
            Some(Stream::Socket(s)) => Pin::new(s).poll_read(cx, buf),
            Some(Stream::PipeOut(_)) => Poll::Ready(Err(io::Error::other("stdout is not readable"))),
            None => Poll::Ready(Err(closed())),
        }
    }
}

impl AsyncWrite for PolledStdio {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut().stream.as_mut() {
            Some(Stream::PipeOut(w)) => Pin::new(w).poll_write(cx, data),
            Some(Stream::Socket(s)) => Pin::new(s).poll_write(cx, data),
            Some(Stream::PipeIn(_)) => Poll::Ready(Err(io::Error::other("stdin is not writable"))),
            None => Poll::Ready(Err(closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().stream.as_mut() {
            Some(Stream::PipeOut(w)) => Pin::new(w).poll_flush(cx),
            Some(Stream::Socket(s)) => Pin::new(s).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Stdout is closed by the process's exit, not half-closed here (a socket shared with
        // stdin would stop the client's side too).
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn nonblocking(fd: &impl AsFd) -> bool {
        let file = std::fs::File::from(fd.as_fd().try_clone_to_owned().expect("dup"));
        // O_NONBLOCK is visible through /proc's fdinfo flags (octal).
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", file.as_raw_fd())).expect("fdinfo");
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).expect("flags line").trim();
        u32::from_str_radix(flags, 8).expect("octal") & 0o4000 != 0
    }

    async fn round_trip(reader: OwnedFd, writer: OwnedFd) {
        let (r_orig, w_orig) = (reader.try_clone().expect("dup"), writer.try_clone().expect("dup"));
        let mut r = PolledStdio::open(reader, true).expect("pollable");
        let mut w = PolledStdio::open(writer, false).expect("pollable");
        assert!(nonblocking(&r_orig) && nonblocking(&w_orig));
        // More than a pipe or socket buffer holds, so the writer must wait for the reader.
        let payload: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let expected = payload.clone();
        let send = tokio::spawn(async move {
            w.write_all(&payload).await.expect("write");
            w.flush().await.expect("flush");
            drop(w);
        });
        let mut got = vec![0u8; expected.len()];
        r.read_exact(&mut got).await.expect("read");
        send.await.expect("writer task");
        assert!(got == expected, "the bytes arrived changed");
        drop(r);
        assert!(!nonblocking(&r_orig) && !nonblocking(&w_orig), "left non-blocking");
    }

    #[tokio::test]
    async fn a_pipe_is_polled_carries_bytes_and_is_left_blocking() {
        let (r, w) = std::io::pipe().expect("pipe");
        round_trip(OwnedFd::from(r), OwnedFd::from(w)).await;
    }

    #[tokio::test]
    async fn a_socket_is_polled_carries_bytes_and_is_left_blocking() {
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        round_trip(OwnedFd::from(a), OwnedFd::from(b)).await;
    }

    #[tokio::test]
    async fn a_regular_file_is_left_to_blocking_stdio() {
        let file = tempfile::tempfile().expect("temp file");
        let fd = OwnedFd::from(file.try_clone().expect("dup"));
        assert!(PolledStdio::open(fd, true).is_none());
        assert!(!nonblocking(&file));
    }
}
