//! Tenants of a shared server (`skipper serve`): a token's SHA-256 selects the tenant (and the
//! user of it, when the token is a user's), each session belongs to the tenant that created it
//! (and records the user who did), and each tenant's sessions run under its own workspace root.
//!
//! Isolation is "invisible, not forbidden": a session of another tenant is answered exactly as
//! an unknown id is ([`crate::ctx::Ctx::visible`]), so nothing tells a caller that it exists.
//! Ownership is kept in memory (checked on every session-scoped request, and synchronously by
//! the lifecycle notifications) and persisted in the session index's `session_owners` table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use protocol::secret::SecretString;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

mod reload;
pub use reload::Reloaded;
pub use store::Claim;
use store::{SessionIndex, StoreError};

/// One tenant: a name, the directory its sessions run under (canonical, existing), and what
/// it configures for itself alone.
pub struct Tenant {
    pub name: String,
    pub workspace: PathBuf,
    /// Its `$COPILOT_HOME`: MCP configuration, plugins, skills, agents, instructions, settings.
    /// Never the server's, so nothing a tenant configures reaches another tenant's sessions.
    pub config_home: PathBuf,
    /// Its tool approvals per location and trusted folders.
    pub permissions: loop_engine::permission_settings::ServerPermissions,
    /// Its connections open at once (authenticated ones; the server's own limit counts all).
    connections: Arc<tokio::sync::Semaphore>,
    /// How many places `connections` started with.
    connections_limit: usize,
    /// `<name>.`: what its sessions' ids begin with inside the server (`crate::session_ids`).
    id_prefix: String,
    /// Its credentials and users: what a reload of the configuration changes in place.
    access: RwLock<Access>,
}

/// What a tenant's configuration may change while the server runs (`reload.rs`).
struct Access {
    /// What its sessions' model calls carry when they bring nothing of their own.
    credentials: Credentials,
    /// Its users, by name.
    users: HashMap<String, Arc<TenantUser>>,
    limits: TenantLimits,
}

/// How much a tenant may hold and use. Sessions are counted in the database
/// (`Tenancy::claim`); the rest by `crate::metering`.
pub use protocol::methods::TenantLimits;

/// A tenant's model credentials (`crate::tenant_credentials`). Secrets: never logged, never
/// sent to a client.
/// `Debug` shows no secret (`SecretString` prints as redacted).
#[derive(Debug, Default, Clone)]
pub struct Credentials {
    /// The GitHub token its sessions' Copilot calls carry when neither the session nor its
    /// creator brings one.
    pub github_token: Option<SecretString>,
    /// Its own model provider, for sessions that name none.
    pub provider: Option<protocol::generated::types::ProviderConfig>,
    /// Whether a session with no credentials at all may use the server's own.
    pub server_fallback: bool,
}

/// One user of a tenant: connects with a token of their own; the sessions they create carry
/// their GitHub token.
pub struct TenantUser {
    pub name: String,
    pub github_token: Option<SecretString>,
}

/// Who a connection authenticated as: a tenant, and the user of it when the token was a user's
/// (`None`: the tenant's own token).
#[derive(Clone)]
pub struct Principal {
    pub tenant: Arc<Tenant>,
    user: Option<Arc<str>>,
    /// Cancelled when a reload removes or replaces the token: its connections close.
    revoked: Arc<CancellationToken>,
}

impl Principal {
    /// The same tenant and the same user (or both the tenant's own token).
    pub fn same_as(&self, other: &Principal) -> bool {
        Arc::ptr_eq(&self.tenant, &other.tenant) && self.user_name() == other.user_name()
    }

    pub fn user_name(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The user's configuration now (`None`: the tenant's own token, or a user no longer
    /// configured).
    pub fn user(&self) -> Option<Arc<TenantUser>> {
        self.tenant.user(self.user_name()?)
    }

    /// Resolves once the token this principal authenticated with is no longer configured.
    pub async fn revoked(&self) {
        self.revoked.cancelled().await
    }
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant").field("name", &self.name).field("workspace", &self.workspace).finish_non_exhaustive()
    }
}

impl Tenant {
    /// A place for one more of its connections, held as long as the connection is open;
    /// `None` when it has as many as it may.
    pub fn admit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.connections.clone().try_acquire_owned().ok()
    }

    /// What the ids of its sessions begin with inside the server (`<name>.`; see
    /// [`crate::session_ids`]).
    pub fn id_prefix(&self) -> &str {
        &self.id_prefix
    }

    /// A fresh id for a session of this tenant, as the server knows it.
    pub fn new_session_id(&self) -> String {
        format!("{}{}", self.id_prefix, uuid::Uuid::new_v4())
    }

    /// The working directory for a session of this tenant: the workspace root when none is
    /// asked for; a relative one is taken from the root. After resolving `..` and symlinks it
    /// must be the root or below it.
    pub fn confine(&self, requested: Option<&str>) -> Result<PathBuf, String> {
        let Some(requested) = requested.filter(|r| !r.is_empty()) else { return Ok(self.workspace.clone()) };
        // One message for "missing" and "outside": it must not tell what exists elsewhere.
        let refused = || format!("workingDirectory {requested:?} is not a directory in this tenant's workspace");
        self.resolve(&self.workspace, requested).filter(|p| p.is_dir()).ok_or_else(refused)
    }

    /// `path` (a relative one against `base`) with `..` and symlinks resolved, when it exists
    /// and is the workspace or beneath it.
    pub fn resolve(&self, base: &Path, path: &str) -> Option<PathBuf> {
        let real = base.join(path).canonicalize().ok()?;
        real.starts_with(&self.workspace).then_some(real)
    }

    /// Its user named `name`, while configured.
    pub fn user(&self, name: &str) -> Option<Arc<TenantUser>> {
        self.access().users.get(name).cloned()
    }

    /// What its sessions' model calls carry when they bring nothing of their own, as now
    /// configured.
    pub fn credentials(&self) -> Credentials {
        self.access().credentials.clone()
    }

    /// Sessions it may own at once, as now configured.
    pub fn max_sessions(&self) -> Option<u64> {
        self.access().limits.sessions
    }

    /// Its limits, as now configured.
    pub fn limits(&self) -> TenantLimits {
        self.access().limits
    }

    fn access(&self) -> std::sync::RwLockReadGuard<'_, Access> {
        // Only whole values are swapped under this lock; a poisoned one is still consistent.
        self.access.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// A tenant as configured: the SHA-256 of its tokens, never the tokens.
pub struct TenantSpec {
    pub name: String,
    /// Its own token's (`None`: only its users connect).
    pub token_sha256: Option<[u8; 32]>,
    pub workspace: PathBuf,
    pub config_home: PathBuf,
    /// Connections it may have open at once.
    pub max_connections: usize,
    pub credentials: Credentials,
    pub users: Vec<UserSpec>,
    pub limits: TenantLimits,
}

impl TenantSpec {
    /// Its tokens' digests, each with the user it authenticates (`None`: the tenant's own).
    fn tokens(&self) -> Vec<([u8; 32], Option<Arc<str>>)> {
        let own = self.token_sha256.map(|digest| (digest, None));
        own.into_iter().chain(self.users.iter().map(|u| (u.token_sha256, Some(Arc::from(u.name.as_str()))))).collect()
    }
}

impl Access {
    fn new(credentials: Credentials, users: Vec<UserSpec>, limits: TenantLimits) -> Self {
        let users = users
            .into_iter()
            .map(|u| (u.name.clone(), Arc::new(TenantUser { name: u.name, github_token: u.github_token })))
            .collect();
        Self { credentials, users, limits }
    }
}

/// A user of a tenant as configured.
pub struct UserSpec {
    pub name: String,
    pub token_sha256: [u8; 32],
    pub github_token: Option<SecretString>,
}

#[derive(Debug, thiserror::Error)]
pub enum TenancyError {
    #[error("tenant {name}: workspace {path}: {source}")]
    Workspace { name: String, path: String, source: std::io::Error },
    #[error("tenant {name}: configuration home {path}: {source}")]
    ConfigHome { name: String, path: String, source: std::io::Error },
    #[error("tenants {0} and {1} have the same token")]
    DuplicateToken(String, String),
    /// Its sessions' ids begin with its name and a `.` (see [`crate::session_ids`]).
    #[error("tenant name {0:?} may hold only letters, digits, `-` and `_`")]
    BadName(String),
    #[error("tenant {0} is configured twice")]
    DuplicateName(String),
    /// One tenant's sessions could reach into the other's files.
    #[error("the workspaces of tenants {0} and {1} overlap")]
    OverlappingWorkspaces(String, String),
    /// A tenant's sessions could rewrite what another tenant (or itself, behind the server's
    /// back) is configured with.
    #[error("the configuration home of tenant {0} is inside the workspace of tenant {1}")]
    ConfigHomeInWorkspace(String, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Tenancy {
    /// Token digest → who it authenticates; replaced whole by a reload.
    by_token: RwLock<HashMap<[u8; 32], Principal>>,
    tenants: Vec<Arc<Tenant>>,
    index: SessionIndex,
    /// Session id → owning tenant's name; the persisted `session_owners` table, in memory.
    owners: Mutex<HashMap<String, Arc<str>>>,
    auth_failures: AtomicU64,
}

/// SHA-256 of a token's UTF-8 bytes, as configured (`token_sha256`).
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tenancy {
    /// Creates each tenant's workspace if missing and loads who owns which session.
    pub async fn open(specs: Vec<TenantSpec>, index: SessionIndex) -> Result<Self, TenancyError> {
        let mut by_token: HashMap<[u8; 32], Principal> = HashMap::new();
        let mut tenants: Vec<Arc<Tenant>> = Vec::new();
        let mut names = std::collections::HashSet::new();
        for spec in specs {
            let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            if spec.name.is_empty() || !spec.name.chars().all(plain) {
                return Err(TenancyError::BadName(spec.name));
            }
            if !names.insert(spec.name.clone()) {
                return Err(TenancyError::DuplicateName(spec.name));
            }
            let workspace = prepare_workspace(&spec.name, &spec.workspace)?;
            let config_home = prepare_config_home(&spec.name, &spec.config_home)?;
            let tokens = spec.tokens();
            let tenant = Arc::new(Tenant {
                id_prefix: format!("{}.", spec.name),
                name: spec.name,
                workspace,
                config_home,
                permissions: Default::default(),
                connections: Arc::new(tokio::sync::Semaphore::new(spec.max_connections)),
                connections_limit: spec.max_connections,
                access: RwLock::new(Access::new(spec.credentials, spec.users, spec.limits)),
            });
            for (digest, user) in tokens {
                let principal = Principal { tenant: tenant.clone(), user, revoked: Arc::default() };
                if let Some(other) = by_token.insert(digest, principal) {
                    return Err(TenancyError::DuplicateToken(other.tenant.name.clone(), tenant.name.clone()));
                }
            }
            tenants.push(tenant);
        }
        for a in &tenants {
            for b in &tenants {
                if !Arc::ptr_eq(a, b) && a.workspace.starts_with(&b.workspace) {
                    return Err(TenancyError::OverlappingWorkspaces(b.name.clone(), a.name.clone()));
                }
                if a.config_home.starts_with(&b.workspace) {
                    return Err(TenancyError::ConfigHomeInWorkspace(a.name.clone(), b.name.clone()));
                }
            }
        }
        let owners = index.owners().await?.into_iter().map(|(id, tenant)| (id, Arc::from(tenant))).collect();
        Ok(Self {
            by_token: RwLock::new(by_token),
            tenants,
            index,
            owners: Mutex::new(owners),
            auth_failures: AtomicU64::new(0),
        })
    }

    pub fn tenants(&self) -> impl Iterator<Item = &Arc<Tenant>> {
        self.tenants.iter()
    }

    /// The tenant (and user) a token selects. A failure is counted (metrics), never logged
    /// with the token.
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        let found = self.by_token.read().unwrap_or_else(|e| e.into_inner()).get(&token_digest(token)).cloned();
        if found.is_none() {
            self.record_auth_failure();
        }
        found
    }

    pub fn record_auth_failure(&self) {
        self.auth_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Refused authentications since start.
    pub fn auth_failures(&self) -> u64 {
        self.auth_failures.load(Ordering::Relaxed)
    }

    fn owners(&self) -> MutexGuard<'_, HashMap<String, Arc<str>>> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tenant owning `session_id`, if one does.
    pub fn tenant_of(&self, session_id: &str) -> Option<Arc<Tenant>> {
        let owner = self.owners().get(session_id).cloned()?;
        self.tenants.iter().find(|t| *t.name == *owner).cloned()
    }

    /// The session index the tenancy keeps its owners in (the team's usage is counted there).
    pub fn index(&self) -> &SessionIndex {
        &self.index
    }

    /// Whether `tenant` owns `session_id`. Sessions with no owner belong to no tenant.
    pub fn owns(&self, tenant: &Tenant, session_id: &str) -> bool {
        self.owners().get(session_id).is_some_and(|owner| **owner == *tenant.name)
    }

    /// Claims `session_id` for `tenant` (created by its user `creator`, if any) before it is
    /// created. `Ok(false)`: it already has an owner (this tenant or another), and nothing
    /// changed.
    /// Past the tenant's `max_sessions` (counted in the database, so across nodes):
    /// `Claim::Full`, and nothing changed.
    pub async fn claim(&self, tenant: &Tenant, creator: Option<&str>, session_id: &str) -> Result<Claim, StoreError> {
        {
            let mut owners = self.owners();
            if owners.contains_key(session_id) {
                return Ok(Claim::Taken);
            }
            owners.insert(session_id.to_string(), Arc::from(tenant.name.as_str()));
        }
        let max = tenant.max_sessions();
        match self.index.claim_owner_within(session_id, &tenant.name, creator, max).await {
            Ok(Claim::Claimed) => Ok(Claim::Claimed),
            // Another process claimed it in the database meanwhile (not possible with one node,
            // but the table is the truth), or the tenant is full: take back the in-memory claim.
            Ok(other) => {
                self.owners().remove(session_id);
                Ok(other)
            }
            Err(e) => {
                self.owners().remove(session_id);
                Err(e)
            }
        }
    }

    /// The user of its tenant who created `session_id` (`None`: the tenant's own token did, or
    /// it has no owner). Read from the table: another node may have created it.
    pub async fn creator(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.index.ownership(session_id).await?.and_then(|(_, creator)| creator))
    }

    /// Drops the ownership of a deleted session (or of a creation that failed).
    pub async fn release(&self, session_id: &str) -> Result<(), StoreError> {
        self.owners().remove(session_id);
        self.index.release_owner(session_id).await
    }

    /// Several nodes share the database: another may have claimed a session since this one
    /// loaded the owners. Looks `session_id` up there when it is not known here (a no-op on a
    /// one-node SQLite server, where the table has nothing the memory lacks).
    pub async fn learn(&self, session_id: &str) -> Result<(), StoreError> {
        if self.index.postgres().is_none() || self.owners().contains_key(session_id) {
            return Ok(());
        }
        if let Some(tenant) = self.index.owner(session_id).await? {
            self.owners().insert(session_id.to_string(), Arc::from(tenant));
        }
        Ok(())
    }

    /// Another node told of a session `tenant` owns (created there): known here from now on.
    pub fn note_owner(&self, session_id: &str, tenant: &str) {
        self.owners().entry(session_id.to_string()).or_insert_with(|| Arc::from(tenant));
    }

    /// Another node deleted a session: its ownership is gone here too.
    pub fn forget(&self, session_id: &str) {
        self.owners().remove(session_id);
    }

    /// [`Tenancy::learn`] for every session (before a listing).
    pub async fn learn_all(&self) -> Result<(), StoreError> {
        if self.index.postgres().is_none() {
            return Ok(());
        }
        let all = self.index.owners().await?;
        let mut owners = self.owners();
        for (id, tenant) in all {
            owners.entry(id).or_insert_with(|| Arc::from(tenant));
        }
        Ok(())
    }

    /// Whether the database answers (`/readyz`) within a second: a probe gives up after one,
    /// and would take a slow answer for a dead process.
    pub async fn ready(&self) -> bool {
        let ping = tokio::time::timeout(std::time::Duration::from_millis(900), self.index.ping());
        matches!(ping.await, Ok(Ok(())))
    }
}

fn prepare_workspace(name: &str, path: &Path) -> Result<PathBuf, TenancyError> {
    let err = |source| TenancyError::Workspace { name: name.to_string(), path: path.display().to_string(), source };
    std::fs::create_dir_all(path).map_err(err)?;
    path.canonicalize().map_err(err)
}

/// The tenant's configuration home, made readable by the server's user alone.
fn prepare_config_home(name: &str, path: &Path) -> Result<PathBuf, TenancyError> {
    use std::os::unix::fs::DirBuilderExt;
    let err = |source| TenancyError::ConfigHome { name: name.to_string(), path: path.display().to_string(), source };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(err)?;
    path.canonicalize().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, token: &str, workspace: PathBuf, config_home: PathBuf) -> TenantSpec {
        TenantSpec {
            name: name.into(),
            token_sha256: Some(token_digest(token)),
            workspace,
            config_home,
            max_connections: 2,
            credentials: Credentials::default(),
            users: Vec::new(),
            limits: Default::default(),
        }
    }

    async fn tenancy(root: &Path) -> Tenancy {
        let specs = vec![
            spec("alpha", "a-token", root.join("a"), root.join("homes/a")),
            spec("beta", "b-token", root.join("b"), root.join("homes/b")),
        ];
        Tenancy::open(specs, SessionIndex::open_in_memory().await.unwrap()).await.unwrap()
    }

    #[tokio::test]
    async fn tokens_select_tenants_and_failures_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenancy(dir.path()).await;
        assert_eq!(t.authenticate("a-token").unwrap().tenant.name, "alpha");
        assert_eq!(t.authenticate("b-token").unwrap().tenant.name, "beta");
        assert!(t.authenticate("a-token ").is_none());
        assert!(t.authenticate("").is_none());
        assert_eq!(t.auth_failures(), 2);
    }

    #[tokio::test]
    async fn each_tenant_has_its_own_connection_places() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenancy(dir.path()).await;
        let (alpha, beta) = (t.authenticate("a-token").unwrap().tenant, t.authenticate("b-token").unwrap().tenant);
        let held = (alpha.admit(), alpha.admit());
        assert!(held.0.is_some() && held.1.is_some());
        assert!(alpha.admit().is_none(), "alpha has two places");
        assert!(beta.admit().is_some(), "alpha's connections take none of beta's");
        drop(held);
        assert!(alpha.admit().is_some(), "a closed connection's place comes back");
    }

    #[tokio::test]
    async fn a_session_belongs_to_the_first_claimant_only() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenancy(dir.path()).await;
        let (a, b) = (t.authenticate("a-token").unwrap(), t.authenticate("b-token").unwrap());
        let (a, b) = (a.tenant, b.tenant);
        assert_eq!(t.claim(&a, None, "s1").await.unwrap(), Claim::Claimed);
        assert_eq!(t.claim(&b, None, "s1").await.unwrap(), Claim::Taken);
        assert!(t.owns(&a, "s1") && !t.owns(&b, "s1") && !t.owns(&a, "unknown"));
        t.release("s1").await.unwrap();
        assert!(!t.owns(&a, "s1"));
    }

    #[tokio::test]
    async fn a_users_token_selects_the_user_and_their_sessions_record_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut alpha = spec("alpha", "a-token", dir.path().join("a"), dir.path().join("ha"));
        alpha.token_sha256 = None;
        alpha.users = ["alice", "bob"]
            .map(|name| UserSpec {
                name: name.into(),
                token_sha256: token_digest(&format!("{name}-token")),
                github_token: Some(SecretString::new(format!("gho-{name}"))),
            })
            .into();
        let t = Tenancy::open(vec![alpha], SessionIndex::open_in_memory().await.unwrap()).await.unwrap();
        assert!(t.authenticate("a-token").is_none(), "a tenant with users only has no token of its own");
        let alice = t.authenticate("alice-token").unwrap();
        let bob = t.authenticate("bob-token").unwrap();
        assert_eq!((alice.tenant.name.as_str(), alice.user_name()), ("alpha", Some("alice")));
        assert!(!alice.same_as(&bob) && alice.same_as(&t.authenticate("alice-token").unwrap()));
        assert_eq!(alice.tenant.user("bob").unwrap().github_token.as_ref().unwrap().expose(), "gho-bob");
        assert_eq!(alice.user().unwrap().name, "alice");
        assert_eq!(t.claim(&alice.tenant, alice.user_name(), "s1").await.unwrap(), Claim::Claimed);
        assert_eq!(t.creator("s1").await.unwrap().as_deref(), Some("alice"));
        assert!(t.owns(&bob.tenant, "s1"), "the session is the tenant's, whichever user made it");
        assert_eq!(t.creator("unknown").await.unwrap(), None);
    }

    #[tokio::test]
    async fn nested_workspaces_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let specs = vec![
            spec("a", "a", dir.path().join("x"), dir.path().join("ha")),
            spec("b", "b", dir.path().join("x/y"), dir.path().join("hb")),
        ];
        let opened = Tenancy::open(specs, SessionIndex::open_in_memory().await.unwrap()).await;
        assert!(matches!(opened, Err(TenancyError::OverlappingWorkspaces(..))));
    }

    #[tokio::test]
    async fn a_configuration_home_inside_a_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let specs = vec![
            spec("a", "a", dir.path().join("x"), dir.path().join("ha")),
            spec("b", "b", dir.path().join("y"), dir.path().join("x/.copilot")),
        ];
        let opened = Tenancy::open(specs, SessionIndex::open_in_memory().await.unwrap()).await;
        assert!(matches!(opened, Err(TenancyError::ConfigHomeInWorkspace(b, a)) if b == "b" && a == "a"));
        let home = dir.path().join("ha");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&home).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700, "only the server's user reads a tenant's configuration");
    }

    #[tokio::test]
    async fn readiness_follows_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenancy(dir.path()).await;
        assert!(t.ready().await);
        t.index.close().await;
        assert!(!t.ready().await, "a closed database is not ready");
    }

    #[tokio::test]
    async fn working_directories_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenancy(dir.path()).await;
        let a = t.authenticate("a-token").unwrap().tenant;
        std::fs::create_dir_all(a.workspace.join("sub")).unwrap();
        assert_eq!(a.confine(None).unwrap(), a.workspace);
        assert_eq!(a.confine(Some("sub")).unwrap(), a.workspace.join("sub"));
        assert_eq!(a.confine(Some(a.workspace.join("sub").to_str().unwrap())).unwrap(), a.workspace.join("sub"));
        assert!(a.confine(Some("..")).is_err());
        assert!(a.confine(Some("sub/../../b")).is_err());
        assert!(a.confine(Some("/")).is_err());
        std::os::unix::fs::symlink(dir.path(), a.workspace.join("escape")).unwrap();
        assert!(a.confine(Some("escape")).is_err(), "a symlink out of the workspace is refused");
    }
}
