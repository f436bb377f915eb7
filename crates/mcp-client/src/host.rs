//! A session's MCP servers: each connects on a task of its own (nothing waits for it), the host
//! keeps their status and tools, calls tools with a timeout and cancellation, and stops them
//! (their processes killed) on request or when the host shuts down.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::connect::{connect, terminate_group};
use crate::stderr_tail::StderrTail;

/// How long a server may take to start and answer the handshake.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// A tool call's limit when the server's config sets none.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Connected,
    Failed,
    Disabled,
    Stopped,
    /// A remote server whose host declined to provide a token.
    NeedsAuth,
}

impl Status {
    /// The wire name (`McpServerStatus`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Connected => "connected",
            Status::Failed => "failed",
            Status::Disabled => "disabled",
            Status::Stopped => "stopped",
            Status::NeedsAuth => "needs-auth",
        }
    }
}

/// Where a server's configuration came from (`source` in `session.mcp.list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// The session's or the user's configuration.
    #[default]
    User,
    /// Bundled with the runtime (the GitHub MCP server).
    Builtin,
    /// The work tree's own file (`.mcp.json`), in a folder the user trusts.
    Workspace,
}

/// Makes a deferred server's configuration when it is first needed (it may have to ask the
/// network where to connect). `Ok(None)`: the server is not available, drop it quietly.
pub type Resolver = Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<Option<Value>, String>> + Send + Sync>;

/// A server that starts only when first needed ([`McpHost::start_deferred`]).
#[derive(Clone)]
struct Deferred {
    make: Make,
    disabled: bool,
    source: Source,
}

/// How a deferred server gets its configuration when it starts.
#[derive(Clone)]
enum Make {
    Resolve(Resolver),
    Config(Value),
}

/// One server as `session.mcp.list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSummary {
    pub name: String,
    pub status: Status,
    pub source: Source,
    pub error: Option<String>,
    /// `stdio`, `http` or `sse`; `None` for a config that could not be read.
    pub transport: Option<&'static str>,
    /// `serverInfo` from the handshake.
    pub server_info: Option<Value>,
}

/// A tool the model may call, with the name it sees.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `<server>-<tool>`.
    pub qualified: String,
    pub server: String,
    pub tool: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Arc<Value>,
    /// The server annotated it `readOnlyHint`.
    pub read_only: bool,
}

/// What the host reports as it goes (the session turns these into events).
#[derive(Debug, Clone)]
pub enum HostEvent {
    StatusChanged(ServerSummary),
    /// Every server of a configuration has settled (connected, failed, ...).
    Loaded(Vec<ServerSummary>),
    /// The set of tools the model may call changed.
    ToolsChanged,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CallError {
    #[error("MCP server \"{0}\" is not connected")]
    NotConnected(String),
    #[error("MCP server \"{server}\" did not answer the call to \"{tool}\" within {secs} seconds")]
    TimedOut { server: String, tool: String, secs: f64 },
    #[error("The call was cancelled")]
    Cancelled,
    #[error("MCP server \"{server}\" failed the call to \"{tool}\": {message}")]
    Failed { server: String, tool: String, message: String },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HostError {
    #[error("MCP server \"{0}\" is not configured")]
    NotConfigured(String),
    #[error("MCP server \"{0}\" is not connected")]
    NotConnected(String),
    #[error("{0}")]
    Server(String),
}

type Sink = Arc<dyn Fn(HostEvent) + Send + Sync>;

struct Entry {
    config: Result<ServerConfig, String>,
    status: Status,
    error: Option<String>,
    tools: Vec<Value>,
    peer: Option<Peer<RoleClient>>,
    server_info: Option<Value>,
    /// Cancels this server's current connection.
    stop: Option<CancellationToken>,
    /// Bumped on every start or stop, so a stale connection task changes nothing.
    generation: u64,
    /// The running local server's process group.
    process_group: Option<u32>,
    source: Source,
    /// Registered with [`McpHost::defer`]: no configuration replaces or removes it.
    deferred: bool,
}

impl Entry {
    fn new(config: Result<ServerConfig, String>, status: Status) -> Self {
        let error = config.as_ref().err().cloned();
        Entry {
            config,
            status,
            error,
            tools: Vec::new(),
            peer: None,
            server_info: None,
            stop: None,
            generation: 0,
            process_group: None,
            source: Source::User,
            deferred: false,
        }
    }

    fn summary(&self, name: &str) -> ServerSummary {
        ServerSummary {
            name: name.to_string(),
            status: self.status,
            source: self.source,
            error: self.error.clone(),
            transport: self.config.as_ref().ok().map(ServerConfig::transport_name),
            server_info: self.server_info.clone(),
        }
    }
}

struct Inner {
    servers: Mutex<BTreeMap<String, Entry>>,
    sink: Mutex<Option<Sink>>,
    shutdown: CancellationToken,
    cwd: Mutex<PathBuf>,
    env: Arc<Vec<(String, String)>>,
    /// A configuration is loading: `Loaded` goes out when nothing is pending any more.
    loading: Mutex<bool>,
    /// Woken whenever a server's status changes.
    changed: tokio::sync::Notify,
    /// What the session's MCP App guests are told of the host (`session.mcp.apps.*HostContext`).
    app_context: Mutex<Option<Value>>,
    /// Where OAuth-protected remote servers get their tokens.
    auth_provider: Mutex<Option<crate::oauth::AuthProvider>>,
    /// Servers registered with [`McpHost::defer`] not started yet: they start on the first
    /// turn or listing.
    deferred: Mutex<BTreeMap<String, Deferred>>,
    /// Who answers servers' sampling requests.
    sampling: crate::sampling::HandlerSlot,
    /// What local servers start under, when the session is sandboxed.
    sandbox: Mutex<Option<Arc<sandbox::Policy>>>,
}

/// The MCP servers of one session (or one agent). Cheap to clone.
#[derive(Clone)]
pub struct McpHost {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The name the model sees for a server's tool (the original's `<server>-<tool>`; characters a
/// function name cannot hold become `_`).
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("{server}-{tool}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect()
}

impl McpHost {
    /// A host whose local servers start in `cwd` with environment `env` (plus their own).
    /// `env` may be shared: every session's host can hold the same copy.
    pub fn new(cwd: PathBuf, env: impl Into<Arc<Vec<(String, String)>>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::new(BTreeMap::new()),
                sink: Mutex::new(None),
                shutdown: CancellationToken::new(),
                cwd: Mutex::new(cwd),
                env: env.into(),
                loading: Mutex::new(false),
                changed: tokio::sync::Notify::new(),
                app_context: Mutex::new(None),
                auth_provider: Mutex::new(None),
                deferred: Mutex::new(BTreeMap::new()),
                sampling: Default::default(),
                sandbox: Mutex::new(None),
            }),
        }
    }

    /// Local servers started from now on run under `policy` (unconfined with `None`).
    pub fn set_sandbox(&self, policy: Option<Arc<sandbox::Policy>>) {
        *lock(&self.inner.sandbox) = policy;
    }

    /// Where the host reports status changes.
    pub fn set_sink(&self, sink: impl Fn(HostEvent) + Send + Sync + 'static) {
        *lock(&self.inner.sink) = Some(Arc::new(sink));
    }

    /// Where remote servers that answer with an OAuth challenge get their tokens; without one
    /// such a server needs auth.
    pub fn set_auth_provider(&self, provider: crate::oauth::AuthProvider) {
        *lock(&self.inner.auth_provider) = Some(provider);
    }

    /// Who answers the servers' `sampling/createMessage` requests (running servers included).
    pub fn set_sampling_handler(&self, handler: crate::sampling::SamplingHandler) {
        *lock(&self.inner.sampling) = Some(handler);
    }

    /// Records the host context MCP App guests see.
    pub fn set_app_context(&self, context: Value) {
        *lock(&self.inner.app_context) = Some(context);
    }

    /// The host context last set, if any.
    pub fn app_context(&self) -> Option<Value> {
        lock(&self.inner.app_context).clone()
    }

    pub fn set_cwd(&self, cwd: PathBuf) {
        *lock(&self.inner.cwd) = cwd;
    }

    fn emit(&self, event: HostEvent) {
        if matches!(event, HostEvent::StatusChanged(_)) {
            self.inner.changed.notify_waiters();
        }
        let sink = lock(&self.inner.sink).clone();
        if let Some(sink) = sink {
            sink(event);
        }
    }

    /// Replaces the configured servers: removed or changed ones stop, new or changed ones
    /// start in the background, unchanged running ones stay. `disabled` ones are listed but not
    /// started. Returns at once.
    pub fn configure(&self, servers: &serde_json::Map<String, Value>, disabled: &[String]) {
        if self.inner.shutdown.is_cancelled() {
            return;
        }
        let mut to_start = Vec::new();
        let mut removed = false;
        {
            let mut map = lock(&self.inner.servers);
            // Deferred servers are not part of a configuration: they stay.
            let stale: Vec<String> =
                map.iter().filter(|(k, e)| !servers.contains_key(*k) && !e.deferred).map(|(k, _)| k.clone()).collect();
            for name in stale {
                if let Some(e) = map.remove(&name) {
                    if let Some(stop) = e.stop {
                        stop.cancel();
                    }
                    removed = true;
                }
            }
            for (name, raw) in servers {
                let config = ServerConfig::parse(name, raw).map_err(|e| e.to_string());
                let off = disabled.iter().any(|d| d == name);
                if let Some(existing) = map.get(name) {
                    let same = existing.config == config;
                    let running = matches!(existing.status, Status::Connected | Status::Pending);
                    if same && (running != off) {
                        continue;
                    }
                }
                if let Some(old) = map.remove(name) {
                    if let Some(stop) = old.stop {
                        stop.cancel();
                    }
                }
                let status = match (&config, off) {
                    (_, true) => Status::Disabled,
                    (Err(_), _) => Status::Failed,
                    (Ok(_), false) => Status::Pending,
                };
                map.insert(name.clone(), Entry::new(config, status));
                if status == Status::Pending {
                    to_start.push(name.clone());
                }
            }
        }
        if removed {
            self.emit(HostEvent::ToolsChanged);
        }
        *lock(&self.inner.loading) = true;
        for name in &to_start {
            self.spawn_connect(name);
        }
        self.check_loaded();
    }

    /// Registers a server that starts only when first needed ([`Self::start_deferred`]): until
    /// then nothing is listed and nothing contacted or spawned. A `disabled` one is then listed
    /// as disabled and never contacted. A server of the same name from a configuration wins; a
    /// started deferred one is left alone unless it changes between disabled and enabled.
    pub fn defer(&self, name: &str, resolve: Resolver, disabled: bool, source: Source) {
        self.defer_make(name, Make::Resolve(resolve), disabled, source);
    }

    /// [`Self::defer`] for a server whose configuration is known now (`mcpServers` JSON).
    pub fn defer_config(&self, name: &str, raw: Value, disabled: bool, source: Source) {
        self.defer_make(name, Make::Config(raw), disabled, source);
    }

    fn defer_make(&self, name: &str, make: Make, disabled: bool, source: Source) {
        if self.inner.shutdown.is_cancelled() {
            return;
        }
        let replaced = {
            let mut map = lock(&self.inner.servers);
            match map.get(name) {
                Some(e) if !e.deferred => return,
                Some(e) if (e.status == Status::Disabled) == disabled => return,
                Some(_) => map.remove(name),
                None => None,
            }
        };
        if let Some(stop) = replaced.and_then(|e| e.stop) {
            stop.cancel();
            self.emit(HostEvent::ToolsChanged);
        }
        lock(&self.inner.deferred).insert(name.to_string(), Deferred { make, disabled, source });
    }

    /// Drops the servers registered with [`Self::defer`] from `source` (started or not) whose
    /// names `keep` does not hold.
    pub fn undefer_except(&self, source: Source, keep: &[String]) {
        let mut names: Vec<String> = lock(&self.inner.deferred)
            .iter()
            .filter(|(n, d)| d.source == source && !keep.contains(n))
            .map(|(n, _)| n.clone())
            .collect();
        names.extend(
            lock(&self.inner.servers)
                .iter()
                .filter(|(n, e)| e.deferred && e.source == source && !keep.contains(n))
                .map(|(n, _)| n.clone()),
        );
        for name in names {
            self.undefer(&name);
        }
    }

    /// Drops a server registered with [`Self::defer`] (started or not); whether there was one.
    pub fn undefer(&self, name: &str) -> bool {
        let was_deferred = lock(&self.inner.deferred).remove(name).is_some();
        let removed = {
            let mut map = lock(&self.inner.servers);
            match map.get(name) {
                Some(e) if e.deferred => map.remove(name),
                _ => None,
            }
        };
        let was_started = removed.is_some();
        if let Some(e) = removed {
            if let Some(stop) = e.stop {
                stop.cancel();
            }
            self.emit(HostEvent::ToolsChanged);
        }
        was_deferred || was_started
    }

    /// Starts the servers registered with [`Self::defer`] (a no-op once they have started).
    /// Returns at once, with the names of the servers now starting.
    pub fn start_deferred(&self) -> Vec<String> {
        if self.inner.shutdown.is_cancelled() {
            return Vec::new();
        }
        let deferred = std::mem::take(&mut *lock(&self.inner.deferred));
        if deferred.is_empty() {
            return Vec::new();
        }
        let mut to_resolve = Vec::new();
        let mut to_connect = Vec::new();
        {
            let mut map = lock(&self.inner.servers);
            for (name, d) in deferred {
                if map.get(&name).is_some_and(|e| !e.deferred) {
                    continue;
                }
                let mut entry = match &d.make {
                    Make::Config(raw) => {
                        let config = ServerConfig::parse(&name, raw).map_err(|e| e.to_string());
                        let status = match (&config, d.disabled) {
                            (_, true) => Status::Disabled,
                            (Err(_), _) => Status::Failed,
                            (Ok(_), false) => Status::Pending,
                        };
                        if status == Status::Pending {
                            to_connect.push(name.clone());
                        }
                        Entry::new(config, status)
                    }
                    Make::Resolve(resolve) => {
                        let status = if d.disabled { Status::Disabled } else { Status::Pending };
                        let mut entry = Entry::new(Err(format!("MCP server \"{name}\" has not started")), status);
                        entry.error = None;
                        if !d.disabled {
                            let token = self.inner.shutdown.child_token();
                            entry.stop = Some(token.clone());
                            to_resolve.push((name.clone(), resolve.clone(), token));
                        }
                        entry
                    }
                };
                entry.source = d.source;
                entry.deferred = true;
                if let Some(old) = map.insert(name, entry).and_then(|e| e.stop) {
                    old.cancel();
                }
            }
        }
        *lock(&self.inner.loading) = true;
        let mut starting: Vec<String> = to_resolve.iter().map(|(n, _, _)| n.clone()).collect();
        starting.extend(to_connect.iter().cloned());
        for (name, resolve, token) in to_resolve {
            self.spawn_resolve(name, resolve, token);
        }
        for name in &to_connect {
            self.spawn_connect(name);
        }
        self.check_loaded();
        starting
    }

    /// Waits until none of `names` is starting any more (connected, failed, ...). Unbounded but
    /// for the startup timeout: callers bound it themselves.
    pub async fn wait_started(&self, names: &[String]) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let pending = {
                let map = lock(&self.inner.servers);
                names.iter().any(|n| map.get(n).is_some_and(|e| e.status == Status::Pending))
            };
            if !pending || self.inner.shutdown.is_cancelled() {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = self.inner.shutdown.cancelled() => return,
            }
        }
    }

    /// Makes a deferred server's configuration, then connects it.
    fn spawn_resolve(&self, name: String, resolve: Resolver, token: CancellationToken) {
        let host = self.clone();
        tokio::spawn(async move {
            let resolved = tokio::select! {
                r = tokio::time::timeout(STARTUP_TIMEOUT, resolve()) => r,
                _ = token.cancelled() => return,
            };
            let raw = match resolved {
                Ok(Ok(Some(raw))) => raw,
                Ok(Ok(None)) => {
                    // Not available here (no Copilot API, say): as if never configured.
                    let removed = {
                        let mut map = lock(&host.inner.servers);
                        let ours = map.get(&name).is_some_and(|e| e.generation == 0 && e.deferred);
                        if ours {
                            map.remove(&name)
                        } else {
                            None
                        }
                    };
                    if removed.is_some() {
                        host.inner.changed.notify_waiters();
                        host.check_loaded();
                    }
                    return;
                }
                Ok(Err(e)) => return host.settle(&name, 0, Status::Failed, Some(e)),
                Err(_) => {
                    let e = format!("MCP server \"{name}\" did not start within {} seconds", STARTUP_TIMEOUT.as_secs());
                    return host.settle(&name, 0, Status::Failed, Some(e));
                }
            };
            let config = match ServerConfig::parse(&name, &raw) {
                Ok(mut c) => {
                    // The credentials stay in the transport, never in what is shown of the config.
                    if let Some(headers) = c.raw.get_mut("headers").and_then(Value::as_object_mut) {
                        headers.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
                    }
                    c
                }
                Err(e) => return host.settle(&name, 0, Status::Failed, Some(e.to_string())),
            };
            {
                let mut map = lock(&host.inner.servers);
                match map.get_mut(&name).filter(|e| e.generation == 0 && e.deferred) {
                    Some(entry) => entry.config = Ok(config),
                    None => return,
                }
            }
            host.spawn_connect(&name);
        });
    }

    /// Adds a server (or replaces its configuration) and starts it in the background.
    pub fn upsert(&self, name: &str, raw: Value) -> Result<(), HostError> {
        let config = ServerConfig::parse(name, &raw).map_err(|e| HostError::Server(e.to_string()))?;
        {
            let mut map = lock(&self.inner.servers);
            let entry = map.entry(name.to_string()).or_insert_with(|| Entry::new(Ok(config.clone()), Status::Stopped));
            entry.config = Ok(config);
        }
        self.spawn_connect(name);
        Ok(())
    }

    /// Starts (or restarts) a configured server in the background.
    pub fn start(&self, name: &str) -> Result<(), HostError> {
        {
            let map = lock(&self.inner.servers);
            let entry = map.get(name).ok_or_else(|| HostError::NotConfigured(name.to_string()))?;
            if let Err(e) = &entry.config {
                return Err(HostError::Server(e.clone()));
            }
        }
        self.spawn_connect(name);
        Ok(())
    }

    /// Stops a server: its connection closes and its process is killed. Status `stopped`.
    pub fn stop(&self, name: &str) -> Result<(), HostError> {
        self.halt(name, Status::Stopped)
    }

    /// Stops a server and marks it `disabled` until enabled again.
    pub fn disable(&self, name: &str) -> Result<(), HostError> {
        self.halt(name, Status::Disabled)
    }

    fn halt(&self, name: &str, status: Status) -> Result<(), HostError> {
        let summary = {
            let mut map = lock(&self.inner.servers);
            let entry = map.get_mut(name).ok_or_else(|| HostError::NotConfigured(name.to_string()))?;
            entry.generation += 1;
            if let Some(stop) = entry.stop.take() {
                stop.cancel();
            }
            entry.peer = None;
            entry.process_group = None;
            entry.tools.clear();
            entry.server_info = None;
            entry.error = None;
            entry.status = status;
            entry.summary(name)
        };
        self.emit(HostEvent::StatusChanged(summary));
        self.emit(HostEvent::ToolsChanged);
        Ok(())
    }

    /// Restarts every configured server that is not disabled.
    pub fn reload(&self) {
        let names: Vec<String> = lock(&self.inner.servers)
            .iter()
            .filter(|(_, e)| e.status != Status::Disabled && e.config.is_ok())
            .map(|(n, _)| n.clone())
            .collect();
        *lock(&self.inner.loading) = true;
        for n in names {
            self.spawn_connect(&n);
        }
    }

    fn spawn_connect(&self, name: &str) {
        let token = self.inner.shutdown.child_token();
        let (config, generation, summary) = {
            let mut map = lock(&self.inner.servers);
            let Some(entry) = map.get_mut(name) else { return };
            let Ok(config) = entry.config.clone() else { return };
            entry.generation += 1;
            if let Some(old) = entry.stop.replace(token.clone()) {
                old.cancel();
            }
            entry.status = Status::Pending;
            entry.error = None;
            entry.peer = None;
            entry.process_group = None;
            entry.tools.clear();
            entry.server_info = None;
            (config, entry.generation, entry.summary(name))
        };
        self.emit(HostEvent::StatusChanged(summary));
        let host = self.clone();
        let name = name.to_string();
        let cwd = lock(&self.inner.cwd).clone();
        let sandbox = lock(&self.inner.sandbox).clone();
        let auth = match &config.transport {
            crate::config::Transport::Remote { url, .. } => {
                let provider = lock(&self.inner.auth_provider).clone();
                let guarded = sandbox.as_ref().is_some_and(|p| !p.internal_network);
                crate::oauth::ServerAuth::new(&name, url, &config.raw, provider, guarded).map(Some)
            }
            crate::config::Transport::Stdio { .. } => Ok(None),
        };
        let client = crate::sampling::Client { server: name.clone(), handler: self.inner.sampling.clone() };
        tokio::spawn(async move {
            let auth = match auth {
                Ok(auth) => auth,
                Err(e) => return host.settle(&name, generation, Status::Failed, Some(e)),
            };
            let stderr = StderrTail::new(secrets_of(&config));
            let attempt = tokio::time::timeout(
                STARTUP_TIMEOUT,
                connect(&config, &cwd, &host.inner.env, &stderr, auth.clone(), client, sandbox.as_deref()),
            );
            let outcome = tokio::select! {
                r = attempt => r,
                _ = token.cancelled() => return,
            };
            let connected = match outcome {
                Ok(Ok(c)) => c,
                Ok(Err(_)) if auth.as_ref().is_some_and(|a| a.needs_auth()) => {
                    return host.settle(&name, generation, Status::NeedsAuth, None)
                }
                Ok(Err(e)) => return host.settle(&name, generation, Status::Failed, Some(e)),
                Err(_) => {
                    let e = format!("MCP server \"{name}\" did not start within {} seconds", STARTUP_TIMEOUT.as_secs());
                    return host.settle(&name, generation, Status::Failed, Some(e));
                }
            };
            let running = connected.running;
            let accepted = {
                let mut map = lock(&host.inner.servers);
                match map.get_mut(&name).filter(|e| e.generation == generation) {
                    Some(entry) => {
                        entry.peer = Some(running.peer().clone());
                        entry.process_group = connected.process_group;
                        entry.tools = connected.tools;
                        entry.server_info = connected.server_info;
                        true
                    }
                    None => false,
                }
            };
            if !accepted {
                // Stopped or restarted meanwhile: this connection is not wanted.
                drop(running);
                return;
            }
            host.settle(&name, generation, Status::Connected, None);
            host.emit(HostEvent::ToolsChanged);
            let ct = running.cancellation_token();
            let waiting = running.waiting();
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => {}
                _ = token.cancelled() => {
                    ct.cancel();
                    let _ = waiting.await;
                    return;
                }
            }
            // The connection ended without anyone stopping it: the server exited or hung up.
            let mut message = format!("MCP server \"{name}\" exited");
            let tail = stderr.text();
            if !tail.is_empty() {
                message = format!("{message}: {tail}");
            }
            host.settle(&name, generation, Status::Failed, Some(message));
            host.emit(HostEvent::ToolsChanged);
        });
    }

    /// Records where a connection attempt ended, unless a newer one replaced it.
    fn settle(&self, name: &str, generation: u64, status: Status, error: Option<String>) {
        let summary = {
            let mut map = lock(&self.inner.servers);
            let Some(entry) = map.get_mut(name).filter(|e| e.generation == generation) else { return };
            entry.status = status;
            if status != Status::Connected {
                entry.peer = None;
                entry.process_group = None;
                entry.tools.clear();
                entry.server_info = None;
            }
            if let Some(e) = &error {
                tracing::warn!(server = name, error = ?e, "MCP server failed");
            }
            entry.error = error;
            entry.summary(name)
        };
        self.emit(HostEvent::StatusChanged(summary));
        self.check_loaded();
    }

    fn check_loaded(&self) {
        let summaries = self.list();
        if summaries.iter().any(|s| s.status == Status::Pending) {
            return;
        }
        let was_loading = std::mem::replace(&mut *lock(&self.inner.loading), false);
        if was_loading {
            self.emit(HostEvent::Loaded(summaries));
        }
    }

    pub fn list(&self) -> Vec<ServerSummary> {
        lock(&self.inner.servers).iter().map(|(n, e)| e.summary(n)).collect()
    }

    /// Servers registered to start when first needed and not started yet: name, where they
    /// were configured, and whether they are turned off.
    pub fn waiting(&self) -> Vec<(String, Source, bool)> {
        lock(&self.inner.deferred).iter().map(|(n, d)| (n.clone(), d.source, d.disabled)).collect()
    }

    pub fn is_configured(&self, name: &str) -> bool {
        lock(&self.inner.servers).contains_key(name)
    }

    /// The raw configuration of a server.
    pub fn config(&self, name: &str) -> Option<Value> {
        lock(&self.inner.servers).get(name).and_then(|e| e.config.as_ref().ok().map(|c| c.raw.clone()))
    }

    pub fn is_running(&self, name: &str) -> bool {
        lock(&self.inner.servers).get(name).is_some_and(|e| e.status == Status::Connected)
    }

    /// Waits until no server is starting (each start is bounded by the startup timeout), or
    /// until `cancel`.
    pub async fn wait_settled(&self, cancel: &CancellationToken) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.any_pending() || self.inner.shutdown.is_cancelled() {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = cancel.cancelled() => return,
                _ = self.inner.shutdown.cancelled() => return,
            }
        }
    }

    /// Whether any server is still starting.
    pub fn any_pending(&self) -> bool {
        lock(&self.inner.servers).values().any(|e| e.status == Status::Pending)
    }

    /// The tools the model may call now: connected servers' tools that pass their allowlist.
    pub fn tools(&self) -> Vec<McpTool> {
        let map = lock(&self.inner.servers);
        let mut out = Vec::new();
        for (server, e) in map.iter().filter(|(_, e)| e.status == Status::Connected) {
            let Ok(config) = &e.config else { continue };
            for t in &e.tools {
                let Some(tool) = t.get("name").and_then(Value::as_str) else { continue };
                if !config.allows(tool) {
                    continue;
                }
                let annotations = t.get("annotations");
                out.push(McpTool {
                    qualified: qualified_name(server, tool),
                    server: server.clone(),
                    tool: tool.to_string(),
                    title: t
                        .get("title")
                        .or_else(|| annotations.and_then(|a| a.get("title")))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    description: t.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
                    input_schema: Arc::new(
                        t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                    ),
                    read_only: annotations
                        .and_then(|a| a.get("readOnlyHint"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                });
            }
        }
        out
    }

    fn peer(&self, name: &str) -> Result<(Peer<RoleClient>, Option<Duration>), HostError> {
        let map = lock(&self.inner.servers);
        let entry = map.get(name).ok_or_else(|| HostError::NotConnected(name.to_string()))?;
        let peer = entry.peer.clone().ok_or_else(|| HostError::NotConnected(name.to_string()))?;
        Ok((peer, entry.config.as_ref().ok().and_then(|c| c.timeout)))
    }

    /// A live `tools/list` of a connected server (each tool as the server described it).
    pub async fn list_tools(&self, name: &str) -> Result<Vec<Value>, HostError> {
        let (peer, _) = self.peer(name)?;
        let tools = peer.list_all_tools().await.map_err(|e| HostError::Server(e.to_string()))?;
        Ok(tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect())
    }

    /// `resources/list` of one connected server.
    pub async fn list_resources(&self, name: &str) -> Result<Vec<Value>, HostError> {
        let (peer, _) = self.peer(name)?;
        let list = peer.list_all_resources().await.map_err(|e| HostError::Server(e.to_string()))?;
        Ok(list.iter().filter_map(|r| serde_json::to_value(r).ok()).collect())
    }

    /// One page of `prompts/list` (from `cursor`), as the server sent it.
    pub async fn list_prompts(&self, name: &str, cursor: Option<String>) -> Result<Value, HostError> {
        let (peer, _) = self.peer(name)?;
        let r = peer.list_prompts(page(cursor)?).await.map_err(|e| HostError::Server(e.to_string()))?;
        serde_json::to_value(r).map_err(|e| HostError::Server(e.to_string()))
    }

    /// `prompts/get`: the prompt's messages, not sent to any model.
    pub async fn get_prompt(&self, name: &str, prompt: &str, arguments: Option<Value>) -> Result<Value, HostError> {
        let (peer, _) = self.peer(name)?;
        let params: GetPromptRequestParams = serde_json::from_value(json!({"name": prompt, "arguments": arguments}))
            .map_err(|e| HostError::Server(e.to_string()))?;
        let r = peer.get_prompt(params).await.map_err(|e| HostError::Server(e.to_string()))?;
        serde_json::to_value(r).map_err(|e| HostError::Server(e.to_string()))
    }

    /// One page of `resources/templates/list` (from `cursor`), as the server sent it.
    pub async fn list_resource_templates(&self, name: &str, cursor: Option<String>) -> Result<Value, HostError> {
        let (peer, _) = self.peer(name)?;
        let r = peer.list_resource_templates(page(cursor)?).await.map_err(|e| HostError::Server(e.to_string()))?;
        serde_json::to_value(r).map_err(|e| HostError::Server(e.to_string()))
    }

    /// `resources/read`: the contents as the server sent them.
    pub async fn read_resource(&self, name: &str, uri: &str) -> Result<Value, HostError> {
        let (peer, _) = self.peer(name)?;
        let params: ReadResourceRequestParams =
            serde_json::from_value(json!({"uri": uri})).map_err(|e| HostError::Server(e.to_string()))?;
        let r = peer.read_resource(params).await.map_err(|e| HostError::Server(e.to_string()))?;
        serde_json::to_value(r).map_err(|e| HostError::Server(e.to_string()))
    }

    /// Calls a tool; the answer is the `CallToolResult` as JSON. `meta` becomes the request's
    /// `_meta`. Ends at the server's timeout, on `cancel`, or when the server goes away.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        meta: Option<Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let (peer, timeout) = self.peer(server).map_err(|_| CallError::NotConnected(server.to_string()))?;
        let timeout = timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        let mut req = json!({"name": tool, "arguments": arguments});
        if let Some(m) = meta.filter(|m| m.is_object()) {
            req["_meta"] = m;
        }
        let failed = |message: String| CallError::Failed { server: server.into(), tool: tool.into(), message };
        let params: CallToolRequestParams = serde_json::from_value(req).map_err(|e| failed(e.to_string()))?;
        let call = peer.call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, call) => r,
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match result {
            Err(_) => {
                Err(CallError::TimedOut { server: server.into(), tool: tool.into(), secs: timeout.as_secs_f64() })
            }
            Ok(Err(e)) => Err(failed(e.to_string())),
            Ok(Ok(r)) => serde_json::to_value(r).map_err(|e| failed(e.to_string())),
        }
    }

    /// Stops every server and kills their processes; the host starts nothing after this.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let mut map = lock(&self.inner.servers);
        for e in map.values_mut() {
            if let Some(pgid) = e.process_group.take() {
                terminate_group(pgid);
            }
            e.peer = None;
            e.tools.clear();
            if matches!(e.status, Status::Connected | Status::Pending) {
                e.status = Status::Stopped;
            }
        }
    }
}

/// What a local server was given that its stderr must not repeat: its `env` values.
fn secrets_of(config: &ServerConfig) -> Vec<String> {
    match &config.transport {
        crate::config::Transport::Stdio { env, .. } => env.values().cloned().collect(),
        crate::config::Transport::Remote { .. } => Vec::new(),
    }
}

/// The params of a paged list request from a client's cursor (none: the first page).
fn page(cursor: Option<String>) -> Result<Option<PaginatedRequestParams>, HostError> {
    let Some(cursor) = cursor else { return Ok(None) };
    serde_json::from_value(json!({"cursor": cursor})).map(Some).map_err(|e| HostError::Server(e.to_string()))
}
