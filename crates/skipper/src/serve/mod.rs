//! `skipper serve`: the self-hosted team server. One engine, shared by tenants; JSON-RPC over a
//! WebSocket (`GET /rpc`) and over raw TCP for the SDKs (`--sdk-listen`), health and metrics
//! over HTTP; Copilot Extensions agents and an OpenAI-compatible endpoint (`extensions/`). See
//! issues 10 and 12 and the README.

pub mod args;
mod command_sandbox;
pub mod config;
mod credentials;
pub(crate) mod extensions;
mod http;
pub mod metrics;
mod metrics_format;
mod reload;
pub mod shared_root;
pub mod tenants_cmd;

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use rpc_server::tenancy::{token_digest, Tenancy, TenantLimits, TenantSpec};
use rpc_server::Server;
use tokio::net::TcpListener;

use args::ServeArgs;
use config::ServerConfig;

/// Where the default tenant's token comes from when no tenant is configured.
const TOKEN_VAR: &str = "SKIPPER_TOKEN";

pub async fn run(args: ServeArgs, env: HashMap<String, String>) -> anyhow::Result<i32> {
    let home = match &args.home {
        Some(h) => h.clone(),
        None => crate::default_home(&env)?,
    };
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    let home = home.canonicalize().with_context(|| format!("resolving {}", home.display()))?;
    let database = check_database_url(args.database_url.as_deref(), &home)?;
    let config_path = args.config.clone().unwrap_or_else(|| PathBuf::from(ServeArgs::DEFAULT_CONFIG));
    let config = ServerConfig::load(&config_path, args.config.is_some())?;
    tracing::info!(node_id = %config.cluster.node_id, lease_ttl_s = config.cluster.lease_ttl_s, "cluster settings");
    // Several nodes keep workspaces and session directories on the volume they all mount; one
    // node keeps them under --home.
    let shared_dir = match &database {
        Database::Postgres(_) => Some(shared_root::resolve(config.cluster.shared_root.as_deref(), &config_path)?),
        Database::Sqlite => None,
    };
    let data_root = shared_dir.as_deref().unwrap_or(&home);
    let specs = tenant_specs(&config, data_root, &home, &env, &args)?;

    // The tenancy's index is a second pool on the engine's SQLite file (WAL: readers and one
    // writer at a time, with a busy timeout), so the engine needs no knowledge of tenants. It
    // opens first: the tools are confined to the workspaces it prepares. On PostgreSQL the
    // tenancy and the engine share one pool.
    let (storage, index) = match database {
        Database::Sqlite => {
            let index = store::SessionIndex::open(store::Layout::new(&home).db_path())
                .await
                .context("opening the session index")?;
            (None, index)
        }
        Database::Postgres(url) => {
            let timeout = std::time::Duration::from_millis(config.cluster.database_timeout_ms.max(1));
            let index = store::SessionIndex::connect_postgres(&url, timeout)
                .await
                .context("connecting to PostgreSQL (--database-url)")?;
            let pool = index.postgres().context("a PostgreSQL index without a pool")?.clone();
            let events = store::pg::PgEvents::new(pool, &url, &config.cluster.node_id);
            let shared_root = shared_dir.clone().context("several nodes without a shared root")?;
            shared_root::check_volume(&shared_root, &events).await?;
            let settings = cluster::ClusterSettings {
                lease_ttl: std::time::Duration::from_secs(config.cluster.lease_ttl_s.max(1)),
                shared_root,
            };
            let cluster = Arc::new(cluster::Cluster::new(settings, events.clone()));
            let storage =
                Storage { index: index.clone(), events: store::EventStore::Postgres(events), cluster: Some(cluster) };
            (Some(storage), index)
        }
    };
    let tenancy = Arc::new(Tenancy::open(specs, index).await.context("preparing the tenants")?);
    for t in tenancy.tenants() {
        tracing::info!(tenant = %t.name, workspace = %t.workspace.display(), "tenant");
        if shared_dir.as_ref().is_some_and(|root| !t.workspace.starts_with(root)) {
            // It may be on the shared volume all the same (mounted elsewhere); if not, the other
            // nodes do not see what this tenant's sessions write.
            tracing::warn!(tenant = %t.name, workspace = %t.workspace.display(),
                "the tenant's workspace is outside [cluster] shared_root: every node must see the same files at this path");
        }
    }
    let metrics = metrics::Metrics::new();
    let cluster = storage.as_ref().and_then(|s| s.cluster.clone());
    // File tools and the command sandbox confine sessions to the same workspaces.
    let workspaces: Vec<PathBuf> = tenancy.tenants().map(|t| t.workspace.clone()).collect();
    let tenants = command_sandbox::tenant_scopes(&config.sandbox, &tenancy, &config.tenants)?;
    let setup = crate::build_engine(
        crate::EngineOptions {
            home: home.clone(),
            default_cwd: data_root.join("workspaces"),
            model: None,
            auth_token_env: None,
            no_auto_login: false,
            allow_all_tools: false,
            secret_env_vars: Vec::new(),
            bash_env: false,
            trusted_folders: Vec::new(),
            metrics: Some(metrics.clone()),
            sandbox: Some(command_sandbox::floor(&config.sandbox, workspaces, &home)?),
            tenants,
            store: storage,
        },
        &env,
    )
    .await?;
    let server = Server::shared(setup.engine, setup.auth, setup.limits, setup.inference, tenancy.clone(), cluster);
    if let Some(target) = config.audit.target() {
        let audit = rpc_server::audit::Audit::start(target.clone())
            .with_context(|| format!("opening the audit log ({target:?})"))?;
        let _ = server.audit.set(Arc::new(audit));
    }
    let meter = rpc_server::metering::TeamMeter::new(tenancy.clone(), server.audit.get().cloned());
    server.engine.set_meter(meter.clone());
    let _ = server.meter.set(meter.clone());
    let meter_stop = tokio_util::sync::CancellationToken::new();
    let meter_writer = meter.spawn_writer(meter_stop.clone());
    reload::spawn(
        server.clone(),
        tenancy.clone(),
        reload::Source {
            path: config_path.clone(),
            explicit: args.config.is_some(),
            data_root: data_root.to_path_buf(),
            home: home.clone(),
            env: env.clone(),
            args: args.clone(),
        },
    );
    let draining = tokio_util::sync::CancellationToken::new();
    spawn_drain_on_signal(server.clone(), draining.clone(), Duration::from_secs(config.limits.drain_timeout_s));

    let http = TcpListener::bind(args.listen).await.with_context(|| format!("binding --listen {}", args.listen))?;
    let sdk = TcpListener::bind(args.sdk_listen)
        .await
        .with_context(|| format!("binding --sdk-listen {}", args.sdk_listen))?;
    let (http_addr, sdk_addr) = (http.local_addr()?, sdk.local_addr()?);
    let slots = Arc::new(tokio::sync::Semaphore::new(config.limits.max_connections));
    let agents = extensions::Extensions::new(&config.agents, &config.extensions, server.clone(), tenancy.clone())
        .context("configuring the agents")?;
    let app = http::router(http::App { server: server.clone(), tenancy, metrics, slots: slots.clone() })
        .merge(extensions::routes(agents));
    // Draining stops both listeners; open connections go on until `server.shutdown`.
    let stop_http = draining.clone();
    let http_task = tokio::spawn(async move {
        axum::serve(http, app).with_graceful_shutdown(async move { stop_http.cancelled().await }).await
    });
    let all_slots = slots.clone();
    let stop_sdk = draining.clone();
    let sdk_server = server.clone();
    let preauth = rpc_server::preauth::PreauthLimits::new(
        config.limits.max_unauthenticated,
        Duration::from_secs(config.limits.handshake_timeout_s.max(1)),
        config.limits.unauthenticated_frame_bytes,
    );
    let sdk_task = tokio::spawn(async move {
        tokio::select! {
            _ = rpc_server::transport::serve_tcp_limited(sdk_server, sdk, slots, Some(preauth)) => {}
            _ = stop_sdk.cancelled() => {}
        }
    });
    if let Some(cluster) = server.cluster.clone() {
        tokio::spawn(cluster_loop(server.clone(), cluster));
    }
    // Both sockets are bound and listening: connections are accepted (queued by the kernel)
    // from here on, so the line may be printed.
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "skipper serve listening on http://{http_addr} (WebSocket /rpc) and tcp://{sdk_addr} (SDK)")?;
        out.flush()?;
    }
    let http_result = http_task.await;
    let _ = sdk_task.await;
    server.shutdown.cancelled().await;
    // Connections flush what they queued (each gives its writer a few seconds) and release
    // their slots; then the sessions stop.
    let all = u32::try_from(config.limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(10), all_slots.acquire_many(all)).await;
    server.engine.shutdown_all();
    server.engine.flush_index().await;
    // What the stopped sessions used last is written before the process ends.
    meter_stop.cancel();
    let _ = meter_writer.await;
    match http_result {
        Ok(Ok(())) => Ok(0),
        Ok(Err(e)) => Err(e).context("HTTP server"),
        Err(e) => Err(anyhow::anyhow!("HTTP server task: {e}")),
    }
}

/// SIGTERM (or Ctrl-C) drains the server: the listeners close at once, running turns go on
/// for up to `deadline` (their clients see them finish), then every connection closes and the
/// sessions stop. A second signal skips the wait.
fn spawn_drain_on_signal(server: Arc<Server>, draining: tokio_util::sync::CancellationToken, deadline: Duration) {
    tokio::spawn(async move {
        let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            tracing::warn!("cannot listen for SIGTERM; the server stops only when killed");
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        draining.cancel();
        let running = server.engine.running_count();
        tracing::info!(
            running,
            deadline_s = deadline.as_secs(),
            "draining: no new connections, waiting for running turns"
        );
        let turns_done = async {
            while server.engine.running_count() > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            _ = turns_done => tracing::info!("drained: no turn is running"),
            _ = tokio::time::sleep(deadline) => {
                tracing::warn!(running = server.engine.running_count(), "drain deadline passed: cancelling running turns");
            }
            _ = term.recv() => tracing::warn!("second signal: stopping now"),
            _ = tokio::signal::ctrl_c() => tracing::warn!("second signal: stopping now"),
        }
        server.shutdown.cancel();
    });
}

/// The index, event store and cluster `skipper serve` runs on.
pub struct Storage {
    pub index: store::SessionIndex,
    pub events: store::EventStore,
    /// Several nodes on one PostgreSQL: the engine's placement.
    pub cluster: Option<Arc<cluster::Cluster>>,
}

/// What `--database-url` names.
#[derive(Debug, PartialEq, Eq)]
enum Database {
    /// The SQLite index under --home, logs as files there.
    Sqlite,
    /// Index, logs and leases in PostgreSQL, shared by every node.
    Postgres(String),
}

/// How often a node renews its leases and tells other nodes of its sessions' updates. Small
/// against any sensible `lease_ttl_s`.
const CLUSTER_TICK: std::time::Duration = std::time::Duration::from_millis(250);

/// While the database wakes a node up (LISTEN/NOTIFY), followers and lifecycle rows are still
/// polled every this many ticks: a notification sent while the listener reconnected is lost,
/// and a lapsed lease (a dead owner) notifies nobody.
const POLL_EVERY_TICKS_WHEN_LISTENING: u32 = 4;

async fn cluster_loop(server: Arc<Server>, cluster: Arc<cluster::Cluster>) {
    let mut tick = tokio::time::interval(CLUSTER_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut wakeups = cluster.wakeups().await;
    let engine = &server.engine;
    // The first read marks where this node starts hearing of other nodes' sessions.
    relay_lifecycle(&server, &cluster).await;
    let mut ticks: u32 = 0;
    loop {
        tokio::select! {
            _ = server.shutdown.cancelled() => return,
            _ = tick.tick() => {
                cluster.tick_own(engine).await;
                ticks = ticks.wrapping_add(1);
                if wakeups.is_none() || ticks.is_multiple_of(POLL_EVERY_TICKS_WHEN_LISTENING) {
                    cluster.follow(engine).await;
                    relay_lifecycle(&server, &cluster).await;
                    rpc_server::forwarding::serve_inbox(&server, None).await;
                }
            }
            woken = next_wakeup(&mut wakeups) => match woken {
                Ok(cluster::Wakeup::Session(id)) => cluster.session_changed(engine, &id).await,
                Ok(cluster::Wakeup::Lifecycle) => relay_lifecycle(&server, &cluster).await,
                Ok(cluster::Wakeup::Ephemeral(batch)) => cluster.ephemeral(engine, batch).await,
                Ok(cluster::Wakeup::Inbox(id)) => rpc_server::forwarding::serve_inbox(&server, Some(&id)).await,
                Ok(cluster::Wakeup::Answered(row)) => cluster.answered(row),
                Err(e) => {
                    tracing::warn!(error = %e, "lost the cluster wake-ups; polling only");
                    wakeups = None;
                }
            },
        }
    }
}

/// The next wake-up from the database; never, without a listener.
async fn next_wakeup(wakeups: &mut Option<cluster::Wakeups>) -> Result<cluster::Wakeup, store::StoreError> {
    match wakeups {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

/// Sessions created or deleted on other nodes reach this node's clients of the owning tenant.
async fn relay_lifecycle(server: &Server, cluster: &cluster::Cluster) {
    for (tenant, notification) in cluster.remote_lifecycle().await {
        let id = notification.session_id.clone();
        let deleted = notification.kind == "session.deleted";
        if let (Some(tenancy), Some(tenant)) = (&server.tenancy, &tenant) {
            tenancy.note_owner(&id, tenant);
        }
        server.engine.tell_lifecycle(notification);
        if let (true, Some(tenancy)) = (deleted, &server.tenancy) {
            tenancy.forget(&id);
        }
    }
}

/// `postgres://…` selects PostgreSQL; a SQLite URL must name the index under --home (logs are
/// files beside it). A URL naming anything else is refused rather than silently ignored.
fn check_database_url(url: Option<&str>, home: &Path) -> anyhow::Result<Database> {
    let Some(url) = url else { return Ok(Database::Sqlite) };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Database::Postgres(url.to_string()));
    }
    let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) else {
        bail!("--database-url: expected sqlite://PATH or postgres://…");
    };
    let expected = store::Layout::new(home).db_path();
    let given = Path::new(path);
    let given = given.canonicalize().unwrap_or_else(|_| given.to_path_buf());
    if given != expected {
        bail!("--database-url: the SQLite index must be {} (under --home)", expected.display());
    }
    Ok(Database::Sqlite)
}

/// The configured tenants, or the default one (`default`, token from SKIPPER_TOKEN or a file
/// under home), which listens on loopback only. Default workspaces are under
/// `<data_root>/workspaces` (home, or the nodes' shared root).
fn tenant_specs(
    config: &ServerConfig,
    data_root: &Path,
    home: &Path,
    env: &HashMap<String, String>,
    args: &ServeArgs,
) -> anyhow::Result<Vec<TenantSpec>> {
    let workspace_of = |name: &str, configured: Option<&PathBuf>| match configured {
        Some(w) => w.clone(),
        None => data_root.join("workspaces").join(name),
    };
    // On the shared root with several nodes, so that every node reads the same configuration.
    let config_home_of = |name: &str, configured: Option<&PathBuf>| match configured {
        Some(h) => h.clone(),
        None => data_root.join("tenants").join(name),
    };
    let limits = &config.limits;
    let shared_default = match config.tenants.len() {
        0 | 1 => limits.max_connections,
        _ => limits.max_connections.div_ceil(2),
    };
    let per_tenant = limits.max_connections_per_tenant.unwrap_or(shared_default);
    if !config.tenants.is_empty() {
        return config
            .tenants
            .iter()
            .map(|t| {
                Ok(TenantSpec {
                    name: t.name.clone(),
                    token_sha256: t.token_sha256.as_deref().map(config::parse_digest).transpose()?,
                    workspace: workspace_of(&t.name, t.workspace.as_ref()),
                    config_home: config_home_of(&t.name, t.config_home.as_ref()),
                    max_connections: t.max_connections.unwrap_or(per_tenant),
                    credentials: credentials::of_tenant(t, &config.credentials, env)?,
                    users: credentials::users(t, env)?,
                    limits: tenant_limits(limits, Some(t)),
                })
            })
            .collect();
    }
    if !is_loopback(args.listen) || !is_loopback(args.sdk_listen) {
        bail!("no tenants are configured: refusing to listen beyond loopback (add [[tenants]] to the config)");
    }
    let token = match env.get(TOKEN_VAR).filter(|t| !t.is_empty()) {
        Some(t) => t.clone(),
        None => {
            let path = home.join("serve-token");
            let token = stored_token(&path)?;
            eprintln!(
                "no tenants configured: tenant `default`, its token is in {} (or set {TOKEN_VAR})",
                path.display()
            );
            token
        }
    };
    Ok(vec![TenantSpec {
        name: "default".into(),
        token_sha256: Some(token_digest(&token)),
        workspace: workspace_of("default", None),
        config_home: config_home_of("default", None),
        max_connections: per_tenant,
        // The one person using a loopback server: the server's own identity is theirs.
        credentials: rpc_server::tenancy::Credentials { server_fallback: true, ..Default::default() },
        users: Vec::new(),
        limits: tenant_limits(limits, None),
    }])
}

/// A tenant's limits: its own where it sets them, else `[limits] …_per_tenant`.
fn tenant_limits(limits: &config::ServeLimits, t: Option<&config::TenantConfig>) -> TenantLimits {
    let own = |of: fn(&config::TenantConfig) -> Option<u64>| t.and_then(of);
    TenantLimits {
        sessions: own(|t| t.max_sessions).or(limits.max_sessions_per_tenant),
        turns: own(|t| t.max_turns).or(limits.max_turns_per_tenant),
        model_requests_per_minute: own(|t| t.model_requests_per_minute).or(limits.model_requests_per_minute_per_tenant),
        tokens_per_day: own(|t| t.tokens_per_day).or(limits.tokens_per_day_per_tenant),
    }
}

fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// The token kept in `path` (created, readable by the owner only, on first use).
fn stored_token(path: &Path) -> anyhow::Result<String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let token = text.trim().to_string();
        if !token.is_empty() {
            return Ok(token);
        }
    }
    let token = tenants_cmd::fresh_token();
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
    }
    .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{token}").with_context(|| format!("writing {}", path.display()))?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_select_sqlite_under_home_or_postgres() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let db = home.join("skipper-index.db");
        assert_eq!(check_database_url(None, &home).unwrap(), Database::Sqlite);
        assert_eq!(check_database_url(Some(&format!("sqlite://{}", db.display())), &home).unwrap(), Database::Sqlite);
        assert!(check_database_url(Some("sqlite:///elsewhere.db"), &home).is_err());
        assert_eq!(
            check_database_url(Some("postgres://u@h/db"), &home).unwrap(),
            Database::Postgres("postgres://u@h/db".into())
        );
        assert!(check_database_url(Some("mysql://x"), &home).is_err());
    }

    #[test]
    fn the_stored_token_is_private_and_stable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve-token");
        let first = stored_token(&path).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(stored_token(&path).unwrap(), first);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
