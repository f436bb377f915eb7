//! Wire types shared by every Skipper crate. This crate performs no I/O.
//!
//! - [`frame`]: LSP-style `Content-Length` framing (an incremental decoder over bytes).
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope and error codes.
//! - [`event`]: the session event envelope (`id`, `timestamp`, `parentId`, `ephemeral`).
//!
//! ```
//! use protocol::frame::{encode, FrameDecoder};
//! let bytes = encode(br#"{"jsonrpc":"2.0","method":"ping","params":{}}"#);
//! let mut dec = FrameDecoder::default();
//! dec.push(&bytes);
//! let body = dec.next_frame().unwrap().unwrap();
//! assert!(body.starts_with(b"{"));
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod event;
pub mod extensions;
pub mod frame;
#[rustfmt::skip] pub mod generated;
pub mod hooks;
pub mod jsonrpc;
pub mod methods;
pub mod nullable;
pub mod rpc;
pub mod secret;
pub mod tagged;

/// Protocol version the SDKs require (they accept exactly 3).
pub const PROTOCOL_VERSION: u32 = 3;

/// Current time as the ISO-8601 string with millisecond precision and `Z`, as events carry it.
pub fn now_iso() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}
