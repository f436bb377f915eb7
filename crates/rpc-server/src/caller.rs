//! What a handler knows of the connection it serves: who is calling, whether they have
//! authenticated, how to subscribe them to a session's events, and how to ask them something
//! (hooks, user input, system message transforms).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use loop_engine::{ClientRequester, EventSubscriber, LifecycleSubscriber};
use protocol::event::Event;
use protocol::jsonrpc::{self, Id, RpcError};
use protocol::methods::LifecycleNotification;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::outbound::Outbound;
use crate::tenancy::{Principal, Tenancy, Tenant};

type Waiting = HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>;

pub struct Caller {
    pub id: u64,
    out: Outbound,
    authenticated: AtomicBool,
    /// Woken when the connection authenticates (its reader then lifts the pre-authentication
    /// limits, see `crate::preauth`).
    authenticated_now: tokio::sync::Notify,
    /// Its place in the pre-authentication budget, given back as it authenticates (before
    /// `connect` is answered).
    preauth_permit: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// Our requests to the client awaiting an answer, by integer id (from 1, per connection).
    outstanding: Mutex<Waiting>,
    next_request_id: AtomicI64,
    /// On a shared server: the tenants and their sessions; `None` on a single-user server.
    tenancy: Option<Arc<Tenancy>>,
    /// On a shared server: who this connection authenticated as (set once).
    principal: OnceLock<Principal>,
    /// Its place among its tenant's connections, when it authenticated with `connect` (a
    /// WebSocket's is held by the transport that authenticated it).
    tenant_slot: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// The sessionFs provider this connection declared (`sessionFs.setProvider`, once).
    session_fs: OnceLock<loop_engine::session_fs::FsProvider>,
    /// The client asked for `gitHubTelemetry.event` notifications (`connect` or a session's
    /// `enableGitHubTelemetryForwarding`).
    github_telemetry: AtomicBool,
}

fn closed() -> RpcError {
    RpcError::new(jsonrpc::INTERNAL_ERROR, "client connection closed")
}

impl Caller {
    pub(crate) fn new(id: u64, out: Outbound, authenticated: bool, tenancy: Option<Arc<Tenancy>>) -> Self {
        Self {
            id,
            out,
            authenticated: AtomicBool::new(authenticated),
            authenticated_now: tokio::sync::Notify::new(),
            preauth_permit: Mutex::new(None),
            outstanding: Mutex::new(HashMap::new()),
            next_request_id: AtomicI64::new(1),
            tenancy,
            principal: OnceLock::new(),
            tenant_slot: Mutex::new(None),
            session_fs: OnceLock::new(),
            github_telemetry: AtomicBool::new(false),
        }
    }

    /// The tenant this connection authenticated as (shared server only).
    pub fn tenant(&self) -> Option<&Arc<Tenant>> {
        self.principal.get().map(|p| &p.tenant)
    }

    /// Resolves once the token this connection authenticated with is revoked (a reload of the
    /// configuration removed or replaced it); never before it authenticates.
    pub async fn revoked(&self) {
        match self.principal.get() {
            Some(p) => p.revoked().await,
            None => std::future::pending().await,
        }
    }

    pub fn principal(&self) -> Option<&Principal> {
        self.principal.get()
    }

    /// Authenticates the connection as `principal`. `false` if it already is someone else.
    pub fn set_tenant(&self, principal: Principal) -> bool {
        let current = self.principal.get_or_init(|| principal.clone());
        let same = current.same_as(&principal);
        if same {
            self.set_authenticated();
        }
        same
    }

    /// Authenticates a connection that had no tenant as `principal`, in one of its tenant's
    /// connection places. `Err(true)`: the tenant has no place left; `Err(false)`: the
    /// connection is someone else's.
    pub fn join_tenant(&self, principal: Principal) -> Result<(), bool> {
        if self.tenant().is_some() {
            return if self.set_tenant(principal) { Ok(()) } else { Err(false) };
        }
        let slot = principal.tenant.admit().ok_or(true)?;
        if !self.set_tenant(principal) {
            return Err(false);
        }
        *self.tenant_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(slot);
        Ok(())
    }

    /// The connection closed: its place among its tenant's connections is free again.
    pub(crate) fn leave_tenant(&self) {
        drop(self.tenant_slot.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    /// The namespace of session ids this caller names sessions in: its tenant's, on a shared
    /// server (`None`: ids as they are).
    pub fn namespace(&self) -> Option<crate::session_ids::Namespace<'_>> {
        Some(crate::session_ids::Namespace::new(self.tenancy.as_deref()?, self.tenant()?))
    }

    /// Whether this caller may see a session: on a single-user server every session; on a
    /// shared one only its tenant's (others are answered as unknown ids).
    pub fn can_see(&self, session_id: &str) -> bool {
        match &self.tenancy {
            None => true,
            Some(tenancy) => self.tenant().is_some_and(|t| tenancy.owns(t, session_id)),
        }
    }

    /// The sessionFs provider this connection declared, if any.
    pub fn session_fs(&self) -> Option<&loop_engine::session_fs::FsProvider> {
        self.session_fs.get()
    }

    /// Declares the connection's sessionFs provider; `false` when it already declared one.
    pub fn set_session_fs(&self, fs: loop_engine::session_fs::FsProvider) -> bool {
        self.session_fs.set(fs).is_ok()
    }

    /// Whether the client asked for forwarded GitHub telemetry.
    pub fn wants_github_telemetry(&self) -> bool {
        self.github_telemetry.load(Ordering::Acquire)
    }

    pub fn set_wants_github_telemetry(&self) {
        self.github_telemetry.store(true, Ordering::Release);
    }

    /// Sends a notification to the client; `false` once the connection is gone.
    pub fn notify(&self, method: &str, params: &Value) -> bool {
        let params = self.for_client(params);
        match serde_json::to_vec(&params) {
            Ok(params) => self.out.event(jsonrpc::notification_frame(method, &params)),
            Err(_) => true,
        }
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    pub fn set_authenticated(&self) {
        self.authenticated.store(true, Ordering::Release);
        drop(self.preauth_permit.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.authenticated_now.notify_one();
    }

    /// Holds the connection's place in the pre-authentication budget until it authenticates.
    pub(crate) fn hold_until_authenticated(&self, permit: Option<tokio::sync::OwnedSemaphorePermit>) {
        // Checked under the lock `set_authenticated` takes after setting the flag: the permit is
        // given back either here or there.
        let mut held = self.preauth_permit.lock().unwrap_or_else(|e| e.into_inner());
        *held = if self.is_authenticated() { None } else { permit };
    }

    /// Returns once the connection has authenticated.
    pub(crate) async fn authenticated(&self) {
        while !self.is_authenticated() {
            self.authenticated_now.notified().await;
        }
    }

    /// A message's params with the session ids they name as this client knows them.
    fn for_client<'v>(&self, params: &'v Value) -> std::borrow::Cow<'v, Value> {
        match self.namespace() {
            None => std::borrow::Cow::Borrowed(params),
            Some(ns) => {
                let mut params = params.clone();
                ns.value_out(&mut params);
                std::borrow::Cow::Owned(params)
            }
        }
    }

    fn outstanding(&self) -> MutexGuard<'_, Waiting> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.outstanding.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a request to the client and waits for its answer.
    pub async fn request(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.outstanding().insert(id, tx);
        let params = self.for_client(params);
        let params = serde_json::to_vec(&params).map_err(|e| RpcError::new(jsonrpc::INTERNAL_ERROR, e.to_string()))?;
        if !self.out.response(jsonrpc::request_frame(id, method, &params)) {
            self.outstanding().remove(&id);
            return Err(closed());
        }
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    /// The client answered one of our requests. Answers to ids we never sent are ignored.
    pub(crate) fn resolve(&self, id: &Id, result: Result<Value, RpcError>) {
        let Some(id) = id.as_i64() else { return };
        let waiting = self.outstanding().remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(result);
        } else {
            tracing::debug!(connection = self.id, id, "response to no outstanding request ignored");
        }
    }

    /// The connection is gone: nobody will answer what we asked.
    pub(crate) fn fail_outstanding(&self) {
        let pending: Vec<_> = self.outstanding().drain().collect();
        for (_, tx) in pending {
            let _ = tx.send(Err(closed()));
        }
    }

    /// This connection as an event subscriber for the sessions it creates or resumes.
    pub fn subscriber(self: &Arc<Self>) -> Arc<dyn EventSubscriber> {
        Arc::new(Subscriber(self.clone()))
    }

    pub(crate) fn lifecycle_subscriber(self: &Arc<Self>) -> Arc<dyn LifecycleSubscriber> {
        Arc::new(Subscriber(self.clone()))
    }
}

struct Subscriber(Arc<Caller>);

impl EventSubscriber for Subscriber {
    fn subscriber_id(&self) -> u64 {
        self.0.id
    }

    fn deliver(&self, session_id: &str, event: &Event, json: &str) -> bool {
        let ns = self.0.namespace();
        let (session_id, json) = match &ns {
            Some(ns) => (ns.outer(session_id), ns.event_out(event, json)),
            None => (session_id, std::borrow::Cow::Borrowed(json)),
        };
        let sid = jsonrpc::json_string(session_id);
        let json = crate::secret_filter::redact(&json);
        let params = [b"{\"sessionId\":", sid.as_bytes(), b",\"event\":", json.as_bytes(), b"}"].concat();
        self.0.out.event(jsonrpc::notification_frame("session.event", &params))
    }

    fn requester(&self) -> Option<Arc<dyn ClientRequester>> {
        Some(Arc::new(Requester(self.0.clone())))
    }
}

impl LifecycleSubscriber for Subscriber {
    fn subscriber_id(&self) -> u64 {
        self.0.id
    }

    fn notify(&self, params: &LifecycleNotification) -> bool {
        if !self.0.can_see(&params.session_id) {
            return true; // another tenant's session: not even its existence is told
        }
        let outer = self
            .0
            .namespace()
            .map(|ns| LifecycleNotification { session_id: ns.outer(&params.session_id).to_string(), ..params.clone() });
        match serde_json::to_vec(outer.as_ref().unwrap_or(params)) {
            Ok(params) => self.0.out.event(jsonrpc::notification_frame("session.lifecycle", &params)),
            Err(_) => true,
        }
    }
}

struct Requester(Arc<Caller>);

#[async_trait::async_trait]
impl ClientRequester for Requester {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        self.0.request(method, &params).await.map_err(|e| e.message)
    }
}
