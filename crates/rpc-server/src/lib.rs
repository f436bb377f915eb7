//! The only crate that speaks the wire. A [`Server`] holds the engine and server-wide settings;
//! each transport ([`transport`]) hands byte streams to [`connection::serve`], which decodes
//! frames, routes requests through the method table ([`methods`]) and writes responses and
//! `session.event` notifications in order.
//!
//! The framing is pluggable ([`framing`]): `Content-Length` on byte streams, one message per
//! text frame on a WebSocket ([`websocket`]). On a shared server ([`tenancy`]) every connection
//! authenticates as a tenant and sees only that tenant's sessions.
//!
//! Requests that name a `sessionId` run in that session's lane (ordered); others run in
//! parallel. A malformed frame, an unknown method or bad params get a JSON-RPC error and the
//! connection stays up. Every queue is bounded ([`Limits`]).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod accounts;
pub mod audit;
pub mod caller;
pub mod connection;
pub mod ctx;
mod errors;
mod extensions;
pub mod follower_gate;
pub mod forwarding;
pub mod framing;
mod handlers;
pub mod inference;
mod lanes;
pub mod metering;
pub mod methods;
mod outbound;
pub mod preauth;
pub mod secret_filter;
pub mod session_auth;
pub mod session_ids;
mod stdio_pipe;
pub mod table;
pub mod tenancy;
pub mod tenant_credentials;
pub mod transport;
pub mod websocket;

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
    /// `COPILOT_ALLOW_GET_PROVIDER_ENDPOINT`: `session.provider.getEndpoint` may hand out the
    /// session's credentials.
    pub expose_provider_endpoint: bool,
    /// The token the server started with, for `account.getCurrentAuth` (the client that gave
    /// it may read it back, as from the original); never logged.
    pub token: Option<llm_providers::provider::Secret>,
    /// The variable the token came from (`GH_TOKEN`, `COPILOT_SDK_AUTH_TOKEN`, ...).
    pub token_env_var: Option<String>,
    /// Where `account.login` puts the signed-in account's token for the Copilot model client.
    pub signed_in: llm_providers::copilot::SignedInToken,
}

/// What one connection may hold. Past each bound the client gets a clear error (or, for a
/// client that does not read its events, is disconnected) instead of the server growing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame body accepted; a larger one is skipped unread and answered `-32700`.
    pub max_frame_bytes: usize,
    /// Bytes waiting for a client that does not read them. An event that would go past it
    /// closes the connection; while more than this waits, no further requests are read.
    pub max_queued_event_bytes: usize,
    /// Requests queued for one session on one connection; past it: `-32005`, retry later.
    pub lane_capacity: usize,
    /// Requests outside any session running at once on one connection; past it: `-32005`.
    pub max_parallel_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: protocol::frame::MAX_FRAME_BYTES,
            max_queued_event_bytes: 64 * 1024 * 1024,
            lane_capacity: 256,
            max_parallel_requests: 256,
        }
    }
}

pub struct Server {
    pub engine: Arc<Engine>,
    pub auth: AuthInfo,
    /// `COPILOT_CONNECTION_TOKEN`: when set, every connection must `connect` with it first.
    pub connection_token: Option<String>,
    /// Cancelled by `runtime.shutdown`.
    pub shutdown: CancellationToken,
    /// Set as `runtime.shutdown` is answered: later requests get an error at once. (An SDK
    /// whose request the exiting process never answers waits forever: it does not fail
    /// pending requests when the pipe closes.)
    pub stopping: std::sync::atomic::AtomicBool,
    pub limits: Limits,
    /// Hands model requests to an SDK client that asked to serve them (`llmInference.*`); the
    /// engine's providers send through it.
    pub inference: Arc<inference::InferenceBridge>,
    /// A shared server's tenants (`skipper serve`): every connection authenticates as one, and
    /// sees only its sessions. `None`: a single-user server.
    pub tenancy: Option<Arc<tenancy::Tenancy>>,
    /// Sessions given their own GitHub identity.
    pub session_identities: session_auth::SessionIdentities,
    /// The team server's audit log (`audit.rs`); off unless configured.
    pub audit: std::sync::OnceLock<Arc<audit::Audit>>,
    /// What the team server's tenants use, and their limits (`metering`); `None` elsewhere.
    pub meter: std::sync::OnceLock<Arc<metering::TeamMeter>>,
    /// Accounts signed in with `account.login` while the server runs.
    pub accounts: accounts::Accounts,
    /// Several nodes on one database: this node's leases, followers and forwarded requests
    /// (`None` on one node).
    pub cluster: Option<Arc<cluster::Cluster>>,
}

impl Server {
    /// The audit log (records nothing unless one was configured).
    pub fn audit(&self) -> &audit::Audit {
        static OFF: std::sync::OnceLock<audit::Audit> = std::sync::OnceLock::new();
        self.audit.get().map_or_else(|| OFF.get_or_init(Default::default), |a| a.as_ref())
    }

    pub fn new(
        engine: Arc<Engine>,
        auth: AuthInfo,
        connection_token: Option<String>,
        limits: Limits,
        inference: Arc<inference::InferenceBridge>,
    ) -> Arc<Self> {
        Arc::new(Self {
            engine,
            auth,
            connection_token,
            shutdown: CancellationToken::new(),
            stopping: Default::default(),
            limits,
            inference,
            tenancy: None,
            session_identities: Default::default(),
            audit: Default::default(),
            meter: Default::default(),
            accounts: Default::default(),
            cluster: None,
        })
    }

    /// A shared server: connections authenticate as one of `tenancy`'s tenants (by `connect`'s
    /// token, or at the transport), and each sees only its own sessions.
    pub fn shared(
        engine: Arc<Engine>,
        auth: AuthInfo,
        limits: Limits,
        inference: Arc<inference::InferenceBridge>,
        tenancy: Arc<tenancy::Tenancy>,
        cluster: Option<Arc<cluster::Cluster>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            engine,
            auth,
            connection_token: None,
            shutdown: CancellationToken::new(),
            stopping: Default::default(),
            limits,
            inference,
            tenancy: Some(tenancy),
            session_identities: Default::default(),
            audit: Default::default(),
            meter: Default::default(),
            accounts: Default::default(),
            cluster,
        })
    }
}
