//! What a handler gets ([`Ctx`]): the server, who is calling, and which method. In a file of its
//! own, below the method table: every handler imports it, and the table imports every handler,
//! so a `Ctx` kept with the table's machinery put all of them in one import circle (issue 32).

use std::sync::Arc;

use protocol::jsonrpc::RpcError;

use crate::caller::Caller;
use crate::extensions::ServeTrusted;
use crate::Server;

/// What a handler gets: the server, who is calling, and which method (for error messages).
pub struct Ctx {
    pub server: Arc<Server>,
    pub caller: Arc<Caller>,
    pub method: &'static str,
    /// Serves the connection of a session extension a handler starts (`session.create`):
    /// the connection that runs the handler hands its own trusted server in, so that handlers
    /// (which the connection's method table calls) never import the connection back.
    pub serve_trusted: ServeTrusted,
}

impl Ctx {
    /// The loaded session a request names, or "Session not found" — also for a session the
    /// caller may not see (another tenant's), which is answered exactly as an unknown id.
    pub fn session(&self, id: &str) -> Result<loop_engine::SessionHandle, RpcError> {
        if !self.visible(id) {
            return Err(self.not_found(id));
        }
        self.server.engine.require(id).map_err(|e| self.engine_error(&e))
    }

    /// Whether the caller may see this session (always, on a single-user server).
    pub fn visible(&self, id: &str) -> bool {
        self.caller.can_see(id)
    }

    /// Brings the caller's view of who owns what up to date with the shared database (several
    /// nodes): for one session, or for all (`None`, before a listing).
    pub async fn learn_owners(&self, id: Option<&str>) -> Result<(), RpcError> {
        let Some(tenancy) = &self.server.tenancy else { return Ok(()) };
        let learned = match id {
            Some(id) => tenancy.learn(id).await,
            None => tenancy.learn_all().await,
        };
        learned.map_err(|e| self.failed(e))
    }

    /// The node running a session this node only follows (several nodes).
    pub fn follower_of(&self, id: &str) -> Option<String> {
        self.server.cluster.as_ref().and_then(|c| c.follower_of(id))
    }

    /// The mode and title of a session this node follows, as the relayed events set them.
    pub fn followed_state(
        &self,
        id: &str,
    ) -> Option<(Option<protocol::generated::types::SessionMode>, Option<String>)> {
        self.server.cluster.as_ref().and_then(|c| c.followed_state(id))
    }

    /// The answer to a request naming an unknown session.
    pub fn not_found(&self, id: &str) -> RpcError {
        self.engine_error(&loop_engine::EngineError::SessionNotFound(id.to_string()))
    }

    /// Claims a session for a tenant before creating it (see [`crate::tenancy::Tenancy::claim`]).
    pub async fn tenancy_claim(&self, id: &str) -> Result<bool, RpcError> {
        match (&self.server.tenancy, self.caller.principal()) {
            (Some(t), Some(p)) => match t.claim(&p.tenant, p.user_name(), id).await.map_err(|e| self.failed(e))? {
                crate::tenancy::Claim::Claimed => {
                    // Its work is put to the user creating it from its first event on.
                    if let Some(meter) = self.server.meter.get() {
                        meter.attribute(id, &p.tenant, p.user_name());
                    }
                    Ok(true)
                }
                crate::tenancy::Claim::Taken => Ok(false),
                crate::tenancy::Claim::Full => {
                    let max = p.tenant.max_sessions().unwrap_or(0);
                    let text = format!(
                        "tenant {} holds {max} sessions, as many as it may: delete one to create another",
                        p.tenant.name
                    );
                    Err(self.limit_reached("sessions", max, text))
                }
            },
            _ => Ok(false),
        }
    }

    /// The caller's tenant reached `limit` (of `max`): audited, and the `-32012` error a client
    /// can act on, with the limit in its data.
    pub fn limit_reached(&self, limit: &str, max: u64, text: String) -> RpcError {
        let detail = serde_json::json!({"limit": limit, "max": max});
        self.audit("limit", None, detail.clone());
        let mut err = RpcError::new(protocol::jsonrpc::LIMIT_REACHED, text);
        err.data = Some(detail);
        err
    }

    /// Records `act` in the audit log, on a shared server (`crate::audit`).
    pub fn audit(&self, act: &str, session: Option<&str>, detail: serde_json::Value) {
        if self.tenant().is_some() {
            self.server.audit().record(act, self.caller.principal(), session, detail);
        }
    }

    /// Drops a session's ownership; a failure is logged (the id stays taken, nothing leaks).
    pub async fn tenancy_release(&self, id: &str) {
        if let Some(meter) = self.server.meter.get() {
            meter.forget(id);
        }
        if let Some(t) = &self.server.tenancy {
            if let Err(e) = t.release(id).await {
                tracing::warn!(session = %id, error = %e, "releasing session ownership failed");
            }
        }
    }

    /// The caller's tenant on a shared server (`None` on a single-user one).
    pub fn tenant(&self) -> Option<&Arc<crate::tenancy::Tenant>> {
        self.server.tenancy.as_ref().and(self.caller.tenant())
    }

    /// The caller's `$COPILOT_HOME`: its tenant's own on a shared server, so that what one
    /// tenant configures (MCP servers, plugins, skills, settings) never reaches another.
    pub fn config_home(&self) -> std::path::PathBuf {
        match self.tenant() {
            Some(t) => t.config_home.clone(),
            None => self.server.engine.home().to_path_buf(),
        }
    }

    /// Runs file work for the caller on the blocking pool, reading configuration files only
    /// inside its tenant's workspace and configuration home on a shared server (a link a
    /// tenant made to elsewhere is not followed; see `agent_config::read_scope`).
    pub async fn blocking<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, RpcError> {
        let roots = self.tenant().map(|t| vec![t.workspace.clone(), t.config_home.clone()]);
        tokio::task::spawn_blocking(move || agent_config::read_scope::within(roots.as_deref(), f))
            .await
            .map_err(|e| self.failed(e))
    }

    /// The caller's tool approvals per location and trusted folders (its tenant's own).
    pub fn permissions(&self) -> &loop_engine::permission_settings::ServerPermissions {
        match self.tenant() {
            Some(t) => &t.permissions,
            None => self.server.engine.permissions(),
        }
    }

    /// A directory or file a request names, resolved against `base` when relative. On a shared
    /// server it must be inside the caller's tenant's workspace (after `..` and symlinks), with
    /// one answer for "missing" and "elsewhere", so nothing tells what exists outside it.
    pub fn confine_path(&self, what: &str, base: &std::path::Path, path: &str) -> Result<std::path::PathBuf, RpcError> {
        let Some(tenant) = self.tenant() else { return Ok(base.join(path)) };
        tenant.resolve(base, path).ok_or_else(|| {
            RpcError::invalid_params(self.method, format!("{what} {path:?} is not in this tenant's workspace"))
        })
    }

    /// A path a request names outside any session: relative to the server's directory; on a
    /// shared server to the caller's tenant's workspace, and only inside it.
    pub fn request_path(&self, what: &str, path: &str) -> Result<std::path::PathBuf, RpcError> {
        let base = match self.tenant() {
            Some(t) => t.workspace.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| "/".into()),
        };
        self.confine_path(what, &base, path)
    }

    pub fn engine_error(&self, e: &loop_engine::EngineError) -> RpcError {
        crate::errors::engine_error(self.method, e)
    }

    pub fn failed(&self, detail: impl std::fmt::Display + 'static) -> RpcError {
        crate::errors::failed(self.method, &detail)
    }
}
