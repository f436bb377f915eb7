//! The `skipper` binary: flags, logging, wiring the engine to a transport.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cli;
mod commands;
mod provider_env;
mod run_attachments;
mod run_mcp;
mod run_permissions;
mod run_session;
mod run_share;
mod run_summary;
mod runner;
mod serve;
mod usage_exit;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use llm_providers::copilot::{CopilotClient, CopilotConfig};
use llm_providers::transport::{HttpTransport, ReqwestTransport};
use llm_providers::{ModelClient, UnavailableClient};
use loop_engine::{Engine, EngineConfig};
use rpc_server::{AuthInfo, Server};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `config/defaults.toml`, compiled in.
#[derive(serde::Deserialize)]
struct Defaults {
    default_model: String,
    pending_grace_ms: u64,
    idle_unload_ms: u64,
    web_fetch_allow_private: bool,
    limits: LimitDefaults,
}

#[derive(serde::Deserialize)]
struct LimitDefaults {
    max_frame_bytes: usize,
    max_queued_event_bytes: usize,
    lane_capacity: usize,
    max_parallel_requests: usize,
}

impl LimitDefaults {
    fn with_env(&self, env: &HashMap<String, String>) -> rpc_server::Limits {
        // A value that is not a positive byte count is refused loudly: `0` would refuse every
        // frame (or every event), and a typo would otherwise pass unnoticed.
        let var = |name: &str, default: usize| match env.get(name) {
            None => default,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    tracing::warn!(variable = name, value = %v, default, "not a positive number of bytes; using the default");
                    default
                }
            },
        };
        rpc_server::Limits {
            max_frame_bytes: var("SKIPPER_MAX_FRAME_BYTES", self.max_frame_bytes),
            max_queued_event_bytes: var("SKIPPER_MAX_QUEUED_EVENT_BYTES", self.max_queued_event_bytes),
            lane_capacity: self.lane_capacity,
            max_parallel_requests: self.max_parallel_requests,
        }
    }
}

fn defaults() -> anyhow::Result<Defaults> {
    toml::from_str(include_str!("../../../config/defaults.toml")).context("parsing config/defaults.toml")
}
/// Variables that must not leak into tool subprocesses.
const SECRET_VARS: &[&str] =
    &["COPILOT_SDK_AUTH_TOKEN", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_CONNECTION_TOKEN"];

fn main() -> anyhow::Result<()> {
    // Inside a sandbox, as its network bridge: before anything else (no runtime, no logging).
    if std::env::args_os().nth(1).is_some_and(|a| a == sandbox::net::bridge::BRIDGE_ARG) {
        std::process::exit(sandbox::net::bridge::main(std::env::args_os().skip(2).collect()));
    }
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => return serve_main(&args),
        Some("tenants") => {
            use clap::Parser;
            let tenants = serve::args::TenantsArgs::parse_from(args.iter().skip(1));
            return serve::tenants_cmd::run(tenants, &mut std::io::stdout().lock());
        }
        _ => {}
    }
    let stdio = usage_exit::stdio_requested(&args);
    let mut cli = match cli::parse(args) {
        Ok(cli) => cli,
        Err(usage) => {
            eprintln!("{}", usage.trim_end());
            if stdio {
                usage_exit::wait_for_client_write();
            }
            std::process::exit(1);
        }
    };
    if cli.prompt.is_none() && !cli.serves() {
        match commands::decide_here(&cli) {
            commands::Asked::Task(task) => cli.prompt = Some(task),
            commands::Asked::Exit(code) => std::process::exit(code),
        }
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    init_logging(&cli);
    let runtime = runtime_for(&cli, &env).context("starting the runtime")?;
    let one_run = cli.prompt.is_some();
    let code = runtime.block_on(run(cli, env))?;
    if one_run {
        // Everything is written (the runner waited for it). The blocking pool's idle threads
        // need not be joined before the process ends.
        runtime.shutdown_background();
    } else {
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    }
    std::process::exit(code);
}

/// A `-p` run drives one session: every hop of an event between threads costs a wake-up (a
/// futex call and a context switch), and starting worker threads is a good part of a short
/// run. One thread serves it; the model calls are I/O, and the tools that compute (grep, glob,
/// file writes) run on the blocking pool. A server keeps every core: an SDK may run many
/// sessions at once, and a long step of one (loading a big session) must not stall the others.
/// `SKIPPER_RUNTIME=multi|single` overrides the choice (for measuring).
fn runtime_for(cli: &cli::Cli, env: &HashMap<String, String>) -> std::io::Result<tokio::runtime::Runtime> {
    let single = match env.get("SKIPPER_RUNTIME").map(String::as_str) {
        Some("multi") => false,
        Some("single") => true,
        _ => cli.prompt.is_some(),
    };
    if single {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    }
}

/// `skipper serve …`: strict flags, logs to stderr.
fn serve_main(args: &[String]) -> anyhow::Result<()> {
    use clap::Parser;
    let serve_args = serve::args::ServeArgs::parse_from(args.iter().skip(1));
    let env: HashMap<String, String> = std::env::vars().collect();
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKIPPER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&serve_args.log_level));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(std::io::stderr);
    match serve_args.log_format {
        serve::args::LogFormat::Text => logs.init(),
        serve::args::LogFormat::Json => logs.json().init(),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    let code = match runtime.block_on(serve::run(serve_args, env)) {
        Ok(code) => code,
        Err(e) => {
            // Through the logger, so that a JSON log stays JSON to its last line.
            tracing::error!(error = %format!("{e:#}"), "skipper serve stopped");
            1
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    std::process::exit(code);
}

fn init_logging(cli: &cli::Cli) {
    let level = match cli.log_level.as_deref() {
        Some("none") => "off",
        Some("error") => "error",
        Some("info") => "info",
        Some("debug") => "debug",
        Some("all") => "trace",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKIPPER_LOG").unwrap_or_else(|_| level.into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    if let Some(dir) = &cli.log_dir {
        let _ = std::fs::create_dir_all(dir);
        let path = PathBuf::from(dir).join(format!("process-{}-{}.log", epoch_ms(), std::process::id()));
        if let Ok(file) = std::fs::File::create(path) {
            builder.with_writer(std::sync::Mutex::new(file)).init();
            return;
        }
    }
    builder.with_writer(std::io::stderr).init();
}

fn epoch_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// `$COPILOT_HOME`, else `~/.copilot`.
fn default_home(env: &HashMap<String, String>) -> anyhow::Result<PathBuf> {
    env.get("COPILOT_HOME")
        .map(PathBuf::from)
        .or_else(|| env.get("HOME").map(|h| PathBuf::from(h).join(".copilot")))
        .context("neither COPILOT_HOME nor HOME is set")
}

/// What the engine is built from, besides the environment.
struct EngineOptions {
    home: PathBuf,
    default_cwd: PathBuf,
    model: Option<String>,
    auth_token_env: Option<String>,
    /// `--no-auto-login` (the SDKs' `useLoggedInUser: false`): only a token handed over with
    /// `--auth-token-env` counts; `GH_TOKEN` and friends are not picked up.
    no_auto_login: bool,
    allow_all_tools: bool,
    /// `--secret-env-vars`: kept from shell commands and MCP servers.
    secret_env_vars: Vec<String>,
    /// `--bash-env` or the `bashEnv` setting: the session's shells read `BASH_ENV`.
    bash_env: bool,
    /// `-p --trust-folder`: the run's working directory, trusted for its session only.
    trusted_folders: Vec<PathBuf>,
    /// `skipper serve`: the model client and the tools are timed.
    metrics: Option<Arc<serve::metrics::Metrics>>,
    /// `skipper serve`: the sandbox every session's processes run under.
    sandbox: Option<sandbox::Policy>,
    /// `skipper serve`: each tenant's workspace, configuration home and resource group.
    tenants: Vec<loop_engine::TenantScope>,
    /// `skipper serve`: the index and event store it opened (PostgreSQL, or SQLite and files);
    /// `-p`: the write-behind index and log files under `home`; `None`: the SQLite index and
    /// log files under `home`.
    store: Option<serve::Storage>,
}

struct EngineSetup {
    engine: Arc<Engine>,
    inference: Arc<rpc_server::inference::InferenceBridge>,
    auth: AuthInfo,
    limits: rpc_server::Limits,
}

/// `--bash-env [on|off]` and `--no-bash-env`, else the user's `bashEnv` setting, else off.
fn bash_env(cli: &cli::Cli, home: &std::path::Path) -> bool {
    match (cli.bash_env.as_deref(), cli.no_bash_env) {
        (_, true) | (Some("off"), _) => false,
        (Some(_), false) => true,
        (None, false) => agent_config::user_settings::file(home)
            .read()
            .ok()
            .and_then(|settings| agent_config::user_settings::bash_env(&settings))
            .unwrap_or(false),
    }
}

/// The engine every mode shares: model client from the environment (GitHub token or
/// `COPILOT_PROVIDER_*`), the session store under `home`, the built-in tools.
async fn build_engine(opts: EngineOptions, env: &HashMap<String, String>) -> anyhow::Result<EngineSetup> {
    let (token, auth_type, token_env_var) = match &opts.auth_token_env {
        Some(var) => (env.get(var).cloned().filter(|t| !t.is_empty()), "token", Some(var.clone())),
        None if opts.no_auto_login => (None, "env", None),
        None => {
            let found = ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"]
                .iter()
                .find_map(|v| env.get(*v).filter(|t| !t.is_empty()).map(|t| (t.clone(), v.to_string())));
            match found {
                Some((t, var)) => (Some(t), "env", Some(var)),
                None => (None, "env", None),
            }
        }
    };
    // `account.login` switches the Copilot client to the signed-in account's token.
    let signed_in = llm_providers::copilot::SignedInToken::default();
    let host = env
        .get("COPILOT_GH_HOST")
        .or_else(|| env.get("GH_HOST"))
        .map(|h| if h.starts_with("http") { h.clone() } else { format!("https://{h}") })
        .unwrap_or_else(|| "https://github.com".into());
    let requested_model = opts.model.clone().or_else(|| env.get("COPILOT_MODEL").cloned().filter(|m| !m.is_empty()));
    let network: Arc<dyn HttpTransport> =
        Arc::new(ReqwestTransport::new(ReqwestTransport::default_client().context("creating the HTTP client")?));
    // Every model request goes through the bridge: to the network, or to an SDK client that
    // registered with `llmInference.setProvider`.
    let inference = rpc_server::inference::InferenceBridge::new(network);
    let http: Arc<dyn HttpTransport> = inference.clone();
    let env_provider =
        provider_env::from_env(env, requested_model.as_deref()).context("reading COPILOT_PROVIDER_* settings")?;
    let offline = env.get("COPILOT_OFFLINE").is_some_and(|v| v == "true" || v == "1");
    let model_client: Arc<dyn ModelClient> = match env_provider {
        Some(provider) => llm_providers::provider_client(provider, http.clone()),
        None if offline => Arc::new(UnavailableClient::new(
            "COPILOT_OFFLINE is set and no provider is configured (set COPILOT_PROVIDER_BASE_URL)",
        )),
        None => {
            let mut config = CopilotConfig::from_env_map(env, token.clone(), VERSION.to_string());
            config.signed_in = signed_in.clone();
            Arc::new(CopilotClient::with_transport(config, http.clone()))
        }
    };
    let defaults = defaults()?;
    let limits = defaults.limits.with_env(env);
    let default_model = requested_model.or_else(|| provider_env::default_model(env)).unwrap_or(defaults.default_model);
    let allow_all = opts.allow_all_tools || env.get("COPILOT_ALLOW_ALL").is_some_and(|v| v == "true" || v == "1");
    let tool_env = env
        .iter()
        .filter(|(k, _)| {
            !SECRET_VARS.contains(&k.as_str())
                && !provider_env::SECRET_VARS.contains(&k.as_str())
                && !opts.secret_env_vars.contains(k)
                // The original's shells read no `BASH_ENV` unless asked to.
                && (opts.bash_env || k.as_str() != "BASH_ENV")
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // A team server's tenants reach its internal networks only where its config allows it.
    let tenants_internal = opts.sandbox.as_ref().map(|p| p.internal_network);
    let allow_private = tenants_internal.unwrap_or_else(|| {
        env.get("SKIPPER_WEB_FETCH_ALLOW_PRIVATE")
            .map_or(defaults.web_fetch_allow_private, |v| matches!(v.trim(), "1" | "true"))
    });
    // Sessions' own providers (`provider` on create/resume) go where their client says; a
    // tenant's may not go inside the server's network.
    let session_http: Arc<dyn HttpTransport> = match tenants_internal {
        Some(false) => Arc::new(ReqwestTransport::guarded().context("creating the HTTP client")?),
        _ => http.clone(),
    };
    let builtins = tools::Registry::builtins_with(if allow_private {
        tools::web_fetch::WebFetchTool::allowing_private()
    } else {
        tools::web_fetch::WebFetchTool::default()
    });
    let (model_client, builtins) = match &opts.metrics {
        Some(m) => (m.model(model_client), m.tools(&builtins)),
        None => (model_client, builtins),
    };
    let config = EngineConfig {
        home: opts.home,
        version: VERSION.to_string(),
        default_model,
        default_cwd: opts.default_cwd,
        allow_all_tools: allow_all,
        tool_env,
        model: model_client,
        http: session_http,
        builtins,
        pending_grace: std::time::Duration::from_millis(
            env.get("SKIPPER_PENDING_GRACE_MS").and_then(|v| v.parse().ok()).unwrap_or(defaults.pending_grace_ms),
        ),
        // A relative file path is the process's working directory's, where the SDK starts it.
        sandbox: opts.sandbox,
        tenants: opts.tenants,
        trusted_folders: opts.trusted_folders,
        telemetry: loop_engine::telemetry::TelemetryConfig::from_env(
            |k| env.get(k).cloned(),
            &std::env::current_dir().unwrap_or_default(),
        ),
    };
    let engine = match opts.store {
        Some(store) => {
            let placement: Arc<dyn loop_engine::Placement> = match store.cluster {
                Some(cluster) => cluster,
                None => Arc::new(loop_engine::placement::OneNode),
            };
            Engine::with_store(config, store.index, store.events, placement)
        }
        None => Engine::open(config).await.context("opening the session store")?,
    };
    let auth = AuthInfo {
        token_present: token.is_some(),
        auth_type: auth_type.into(),
        host,
        expose_provider_endpoint: env
            .get("COPILOT_ALLOW_GET_PROVIDER_ENDPOINT")
            .is_some_and(|v| v == "true" || v == "1"),
        token: token.map(llm_providers::provider::Secret::new),
        token_env_var,
        signed_in,
    };
    let engine = Arc::new(engine);
    let idle_unload =
        env.get("SKIPPER_IDLE_UNLOAD_MS").and_then(|v| v.trim().parse().ok()).unwrap_or(defaults.idle_unload_ms);
    if idle_unload > 0 {
        engine.start_idle_unloader(std::time::Duration::from_millis(idle_unload));
    }
    Ok(EngineSetup { engine, inference, auth, limits })
}

async fn run(cli: cli::Cli, mut env: HashMap<String, String>) -> anyhow::Result<i32> {
    if let Some(secs) = cli.session_idle_timeout {
        // The SDKs' `sessionIdleTimeoutSeconds`: here it unloads (never deletes) sessions
        // without a client; 0 keeps them loaded.
        env.insert("SKIPPER_IDLE_UNLOAD_MS".into(), secs.saturating_mul(1000).to_string());
    }
    let home = default_home(&env)?;
    let config_home = home.clone();
    let default_cwd = match &cli.cwd {
        Some(c) => PathBuf::from(c),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    // A `-p` run opens the index in the background and writes it behind (see
    // `SessionIndex::open_write_behind`): nothing in the run reads it.
    let store = match cli.prompt {
        Some(_) => {
            let layout = store::Layout::new(&home);
            Some(serve::Storage {
                index: store::SessionIndex::open_write_behind(layout.db_path())
                    .context("starting the session index")?,
                events: store::EventStore::Files(layout),
                cluster: None,
            })
        }
        None => None,
    };
    let bash_env = bash_env(&cli, &home);
    let trusted_folders = match (&cli.prompt, cli.trust_folder) {
        (Some(_), true) => vec![default_cwd.clone()],
        _ => Vec::new(),
    };
    let setup = build_engine(
        EngineOptions {
            home,
            default_cwd,
            model: cli.model.clone(),
            auth_token_env: cli.auth_token_env.clone(),
            no_auto_login: cli.no_auto_login,
            allow_all_tools: cli.allow_all_tools || cli.allow_all || cli.yolo,
            secret_env_vars: cli.secret_env_vars.clone(),
            bash_env,
            trusted_folders,
            metrics: None,
            sandbox: None,
            tenants: Vec::new(),
            store,
        },
        &env,
    )
    .await?;
    let EngineSetup { engine, inference, auth, limits } = setup;
    if let Some(prompt) = cli.prompt.clone() {
        let cwd = match &cli.cwd {
            Some(c) => c.clone(),
            None => std::env::current_dir()?.to_string_lossy().to_string(),
        };
        let opts = match run_options(&cli, prompt, cwd, &config_home, &engine).await {
            Ok(opts) => opts,
            Err(refused) => {
                eprintln!("{refused}");
                return Ok(1);
            }
        };
        let code = runner::run(engine.clone(), opts).await;
        engine.leave_index_open_at_exit();
        return code;
    }
    let server = Server::new(
        engine,
        auth,
        env.get("COPILOT_CONNECTION_TOKEN").cloned().filter(|t| !t.is_empty()),
        limits,
        inference,
    );
    spawn_signal_handler(server.clone());

    if cli.stdio {
        rpc_server::transport::serve_stdio(server.clone()).await;
    } else {
        let (listener, port) =
            rpc_server::transport::bind_tcp(cli.port.unwrap_or(0)).await.context("binding the TCP port")?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "CLI server listening on port {port}")?;
            out.flush()?;
        }
        if server.connection_token.is_none() {
            eprintln!("Warning: No COPILOT_CONNECTION_TOKEN was set, so connections will be accepted from any client");
        }
        spawn_parent_watch(server.clone());
        rpc_server::transport::serve_tcp(server.clone(), listener).await;
    }
    server.engine.shutdown_all();
    server.engine.flush_index().await;
    server.engine.leave_index_open_at_exit();
    Ok(0)
}

/// What a `-p` run is asked to do, read and checked before anything runs. `Err` is the
/// message for stderr (the run exits 1, nothing written).
async fn run_options(
    cli: &cli::Cli,
    prompt: String,
    cwd: String,
    home: &std::path::Path,
    engine: &Engine,
) -> Result<runner::RunOptions, String> {
    let dir = std::path::Path::new(&cwd);
    let refused: Vec<&str> = cli.refused.iter().map(String::as_str).chain(cli.remote.then_some("--remote")).collect();
    if !refused.is_empty() {
        return Err(format!(
            "error: {} cannot be honoured by Skipper (it needs GitHub's remote sessions, gists or services Skipper \
             does not have); see `skipper --help`",
            refused.join(", ")
        ));
    }
    let permissions = run_permissions::RunPermissions::from_cli(cli, dir)?;
    let mut mcp =
        run_mcp::read(&cli.additional_mcp_config, &cli.disable_mcp_server, &cli.enable_mcp_server, dir, home)?;
    if cli.disable_builtin_mcps {
        mcp.disabled.push(run_mcp::GITHUB_SERVER.into());
    }
    let github_mcp = (cli.enable_all_github_mcp_tools
        || !cli.add_github_mcp_toolset.is_empty()
        || !cli.add_github_mcp_tool.is_empty())
    .then(|| protocol::generated::types::GitHubMcpToolConfig {
        enable_all_tools: cli.enable_all_github_mcp_tools.then_some(true),
        additional_toolsets: (!cli.add_github_mcp_toolset.is_empty()).then(|| cli.add_github_mcp_toolset.clone()),
        additional_tools: (!cli.add_github_mcp_tool.is_empty()).then(|| cli.add_github_mcp_tool.clone()),
        enable_insiders_mode: None,
    });
    let attachments = run_attachments::read(&cli.attachment, dir)?;
    if cli.max_ai_credits.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
        return Err("error: --max-ai-credits must be a positive number".into());
    }
    let session = run_session::choose(engine, cli).await?;
    Ok(runner::RunOptions {
        prompt,
        autopilot: cli.autopilot || cli.mode.as_deref() == Some("autopilot"),
        plan: cli.plan || cli.mode.as_deref() == Some("plan"),
        json: cli.output_format == "json",
        silent: cli.silent,
        model: cli.model.clone(),
        permissions,
        available_tools: cli.available_tools.clone(),
        excluded_tools: cli.excluded_tools.clone(),
        max_autopilot_continues: cli.max_autopilot_continues,
        reasoning_effort: cli.reasoning_effort.clone(),
        no_custom_instructions: cli.no_custom_instructions,
        session,
        agent: cli.agent.clone(),
        mcp,
        github_mcp,
        plugin_dirs: cli.plugin_dir.clone(),
        attachments,
        streaming: cli.stream.as_deref() != Some("off"),
        max_ai_credits: cli.max_ai_credits,
        share: cli.share.as_ref().map(PathBuf::from),
        usage_output_file: cli.usage_output_file.as_ref().map(PathBuf::from),
        cwd,
    })
}

/// A TCP server an SDK started must not outlive it: when the parent process goes away (it
/// crashed, or was killed without stopping us), the server stops. Stdio servers stop on EOF.
/// Started by init (a container's entry point, a service manager), there is no parent to watch.
fn spawn_parent_watch(server: Arc<Server>) {
    let parent = std::os::unix::process::parent_id();
    if parent <= 1 {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = server.shutdown.cancelled() => return,
            }
            if std::os::unix::process::parent_id() != parent {
                tracing::info!(parent, "the parent process is gone; stopping");
                server.shutdown.cancel();
                return;
            }
        }
    });
}

fn spawn_signal_handler(server: Arc<Server>) {
    tokio::spawn(async move {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return,
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        server.shutdown.cancel();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn limits_from_the_environment() {
        let d = super::defaults().expect("defaults").limits;
        let env = |v: &str| [("SKIPPER_MAX_FRAME_BYTES".to_string(), v.to_string())].into_iter().collect();
        assert_eq!(d.with_env(&env("1048576")).max_frame_bytes, 1048576);
        assert_eq!(d.with_env(&env(" 4096 ")).max_frame_bytes, 4096);
        for bad in ["0", "-1", "1MB", "", "99999999999999999999999"] {
            assert_eq!(d.with_env(&env(bad)).max_frame_bytes, d.max_frame_bytes, "{bad:?}");
        }
    }

    #[test]
    fn compiled_in_defaults_parse() {
        let d = super::defaults();
        assert!(d.as_ref().is_ok_and(|d| !d.default_model.is_empty() && d.pending_grace_ms > 0), "{:?}", d.err());
    }
}
