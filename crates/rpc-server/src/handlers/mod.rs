//! Method handlers, grouped by what they touch.

pub mod server;
pub mod session;
pub mod session_state;
