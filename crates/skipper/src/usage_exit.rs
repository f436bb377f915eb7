//! Leaving on a usage error when a client started the server over stdio.
//!
//! An SDK that spawns the server writes its first request (`connect`) right after the spawn.
//! If the process has already exited, that write fails with a broken pipe and the SDK reports
//! only that its connection was disposed. If the write lands, the SDK sees the process exit
//! and reports the exit code with what the process printed on stderr: the usage error, which
//! names the flag. The original CLI takes long enough to start that the write always lands;
//! this server would be gone within milliseconds, so it waits for the client's first bytes.
//!
//! Then it waits a little more. The Python SDK reads stderr on a thread of its own, and when
//! stdout closes it fails the pending request with whatever that thread has read so far. The
//! usage error was written before that thread started, so an exit right after the client's
//! write can beat it to the line.

use std::io::Read;
use std::time::Duration;

/// The longest a usage error keeps the process: a client that never writes (a terminal) is
/// not held for long.
const LINGER: Duration = Duration::from_secs(1);

/// How long the process stays once the client has written: time for its stderr reader.
const GRACE: Duration = Duration::from_millis(100);

/// Whether the arguments ask for the JSON-RPC server on stdin and stdout (how SDKs start it).
pub fn stdio_requested(args: &[String]) -> bool {
    args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--stdio")
}

/// Returns [`GRACE`] after stdin has a byte to read or is closed, or once [`LINGER`] has passed.
pub fn wait_for_client_write() {
    let (tx, rx) = std::sync::mpsc::channel();
    // A blocking read on a thread: std has no read with a timeout on stdin. The thread is left
    // blocked if nothing comes; the process exits right after.
    let reader = std::thread::Builder::new().name("usage-exit".into()).spawn(move || {
        let mut byte = [0u8; 1];
        let _ = std::io::stdin().lock().read(&mut byte);
        let _ = tx.send(());
    });
    if reader.is_ok() && rx.recv_timeout(LINGER).is_ok() {
        std::thread::sleep(GRACE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_a_stdio_server_start_counts() {
        assert!(stdio_requested(&args(&["skipper", "--headless", "--stdio", "--bogus"])));
        assert!(!stdio_requested(&args(&["skipper", "--headless", "--port", "0", "--bogus"])));
        assert!(!stdio_requested(&args(&["skipper", "-p", "hi", "--", "--stdio"])));
        assert!(!stdio_requested(&args(&["--stdio"])), "the program name is not an argument");
    }
}
