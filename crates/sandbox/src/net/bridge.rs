//! The sandbox's end of its proxy. A sandboxed process has a network namespace of its own,
//! with only a loopback device; this small program runs first inside it, listens on that
//! loopback, relays each connection to the proxy's Unix socket (bound into the sandbox), and
//! starts the command with the usual proxy variables pointing at it. Programs that honour
//! them reach what the proxy allows; anything else reaches nothing.
//!
//! It is the server's own binary, started as `skipper __sandbox-net-bridge SOCKET PROGRAM
//! ARGS…` (see [`BRIDGE_ARG`]); plain threads, no runtime: it must start fast.

use std::ffi::OsString;
use std::io;
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first argument that makes the server's binary run as the bridge.
pub const BRIDGE_ARG: &str = "__sandbox-net-bridge";

/// Where the bridge and the proxy's socket are bound inside the sandbox.
pub(crate) const INSIDE_EXE: &str = "/run/skipper-net/bridge";
pub(crate) const INSIDE_SOCKET: &str = "/run/skipper-net/proxy.sock";

/// Runs the bridge with the arguments after [`BRIDGE_ARG`]; the command's exit code (128 +
/// the signal that ended it), 127 when it cannot start.
pub fn main(args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    let (Some(socket), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: {BRIDGE_ARG} SOCKET PROGRAM [ARGS…]");
        return 2;
    };
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("sandbox network bridge: {e}");
            return 127;
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let socket = PathBuf::from(socket);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || relay(conn, &socket));
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let mut cmd = Command::new(&program);
    cmd.args(args);
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        cmd.env(name, &url);
    }
    // The sandbox's own loopback is its own: servers a command starts there are reached
    // directly. Node's fetch reads the variables only when asked to.
    cmd.env("NO_PROXY", "localhost,127.0.0.1,::1")
        .env("no_proxy", "localhost,127.0.0.1,::1")
        .env("NODE_USE_ENV_PROXY", "1");
    match cmd.status() {
        Ok(status) => status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        Err(e) => {
            eprintln!("{}: {e}", Path::new(&program).display());
            127
        }
    }
}

/// One connection, both ways, until each side has closed.
fn relay(tcp: TcpStream, socket: &Path) {
    let Ok(unix) = UnixStream::connect(socket) else { return };
    let (Ok(mut tcp_in), Ok(mut unix_out)) = (tcp.try_clone(), unix.try_clone()) else { return };
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut tcp_in, &mut unix_out);
        let _ = unix_out.shutdown(Shutdown::Write);
    });
    let (mut unix_in, mut tcp_out) = (unix, tcp);
    let _ = io::copy(&mut unix_in, &mut tcp_out);
    let _ = tcp_out.shutdown(Shutdown::Write);
    let _ = up.join();
}
