//! `rpc-server` in-process: `connection::serve` over `tokio::io::duplex` pairs, with a real
//! `Engine` (temp `COPILOT_HOME`) whose model is a `fake-model` server on loopback.
//!
//! - `routing`: every method of the table is routed; error shapes of the wire.
//! - `auth`: the connection-token handshake.
//! - `lanes`: per-session ordering, other sessions unaffected, `-32005` when a lane is full.
//! - `slow_client`: a client that does not read its events is disconnected; one that does not
//!   read its answers is throttled, then served in full.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod auth;
mod lanes;
mod routing;
mod slow_client;
mod support;
