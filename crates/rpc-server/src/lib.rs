//! The only crate that speaks the wire. A [`Server`] holds the engine and server-wide settings;
//! each transport ([`transport`]) hands byte streams to [`connection::serve`], which decodes
//! frames, routes requests through the method table ([`router`]) and writes responses and
//! `session.event` notifications in order.
//!
//! Requests that name a `sessionId` run in that session's lane (ordered); others run in
//! parallel. A malformed frame, an unknown method or bad params get a JSON-RPC error and the
//! connection stays up.

pub mod connection;
mod errors;
mod handlers;
pub mod router;
pub mod transport;

use std::sync::Arc;

use loop_engine::Engine;
use tokio_util::sync::CancellationToken;

/// How the server authenticated to GitHub, for `auth.getStatus`.
#[derive(Debug, Clone, Default)]
pub struct AuthInfo {
    pub token_present: bool,
    /// `token` (from `--auth-token-env`) or `env` (GH_TOKEN and friends).
    pub auth_type: String,
    pub host: String,
}

pub struct Server {
    pub engine: Arc<Engine>,
    pub auth: AuthInfo,
    /// `COPILOT_CONNECTION_TOKEN`: when set, every connection must `connect` with it first.
    pub connection_token: Option<String>,
    /// Cancelled by `runtime.shutdown`.
    pub shutdown: CancellationToken,
}

impl Server {
    pub fn new(engine: Arc<Engine>, auth: AuthInfo, connection_token: Option<String>) -> Arc<Self> {
        Arc::new(Self { engine, auth, connection_token, shutdown: CancellationToken::new() })
    }
}
