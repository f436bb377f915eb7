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
    // The fixed RFC 3339 writer, not a format string parsed on every event.
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_iso_has_milliseconds_and_z() {
        let now = super::now_iso();
        let bytes = now.as_bytes();
        assert_eq!(now.len(), "2026-11-27T17:39:02.123Z".len(), "{now}");
        assert_eq!((bytes[4], bytes[10], bytes[19], bytes[23]), (b'-', b'T', b'.', b'Z'), "{now}");
        assert!(chrono::DateTime::parse_from_rfc3339(&now).is_ok(), "{now}");
    }
}
