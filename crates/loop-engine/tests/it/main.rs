//! In-process engine tests: the engine against the fake model on loopback, sessions driven
//! through their handles (see `support`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod session_state;
mod subagent;
mod support;
