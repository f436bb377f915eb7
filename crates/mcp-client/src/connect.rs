//! Opening one connection: spawn the local server (in a process group of its own, killed with
//! the connection) or reach the remote one, then the MCP handshake and the first `tools/list`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::config::{ServerConfig, Transport};
use crate::oauth::{AuthClient, ServerAuth};
use crate::sampling::Client;
use crate::stderr_tail::StderrTail;

pub(crate) type Running = RunningService<RoleClient, Client>;

pub(crate) struct Connected {
    pub running: Running,
    /// A local server's process group (its leader's pid).
    pub process_group: Option<u32>,
    pub tools: Vec<Value>,
    pub server_info: Option<Value>,
}

/// Connects to a server. Errors are the message a client sees in `session.mcp.list`.
pub(crate) async fn connect(
    config: &ServerConfig,
    default_cwd: &Path,
    base_env: &[(String, String)],
    stderr: &StderrTail,
    auth: Option<std::sync::Arc<ServerAuth>>,
    client: Client,
    sandbox: Option<&sandbox::Policy>,
) -> Result<Connected, String> {
    let mut process_group = None;
    let running = match &config.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let dir = match cwd {
                Some(c) if Path::new(c).is_absolute() => Path::new(c).to_path_buf(),
                Some(c) => default_cwd.join(c),
                None => default_cwd.to_path_buf(),
            };
            // The server's own variables over the session's.
            let mut all_env: Vec<(String, String)> =
                base_env.iter().filter(|(k, _)| !env.contains_key(k)).cloned().collect();
            all_env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
            let mut cmd = match sandbox {
                None => {
                    let mut cmd = tokio::process::Command::new(command);
                    cmd.args(args).env_clear().envs(all_env);
                    cmd
                }
                Some(policy) => {
                    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
                    let w = policy
                        .wrap(std::ffi::OsStr::new(command), &args, &dir, &all_env)
                        .map_err(|e| format!("Failed to start MCP server command \"{command}\" in the sandbox: {e}"))?;
                    let mut cmd = tokio::process::Command::new(w.program);
                    cmd.args(w.args).env_clear().envs(w.env);
                    cmd
                }
            };
            cmd.current_dir(dir);
            let mut wrap = CommandWrap::from(cmd);
            wrap.wrap(ProcessGroup::leader());
            wrap.wrap(KillOnDrop);
            let (process, err) = TokioChildProcess::builder(wrap)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("Failed to start MCP server command \"{command}\": {e}"))?;
            process_group = process.id();
            let reader = err.map(|mut err| {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    let mut chunk = [0u8; 1024];
                    while let Ok(n) = err.read(&mut chunk).await {
                        if n == 0 {
                            break;
                        }
                        tail.push(&chunk[..n]);
                    }
                })
            });
            match client.serve(process).await {
                Ok(r) => r,
                Err(e) => {
                    // A server that exits at once has said why on stderr: let the reader catch up.
                    if let Some(reader) = reader {
                        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), reader).await;
                    }
                    return Err(handshake_error(&e.to_string(), stderr));
                }
            }
        }
        Transport::Remote { url, headers, .. } => {
            if sandbox.is_some_and(|p| !p.internal_network) {
                // Names are checked as they resolve; an address in the URL is checked here.
                let parsed = rmcp_reqwest::Url::parse(url).map_err(|e| format!("Invalid MCP server URL {url}: {e}"))?;
                sandbox::egress::check_host(parsed.host_str().unwrap_or_default())
                    .map_err(|e| format!("Failed to connect to MCP server at {url}: {e}"))?;
            }
            let mut custom = HashMap::new();
            for (k, v) in headers {
                let name =
                    http::HeaderName::try_from(k.as_str()).map_err(|_| format!("Invalid header name \"{k}\""))?;
                let value =
                    http::HeaderValue::try_from(v.as_str()).map_err(|_| format!("Invalid value for header \"{k}\""))?;
                custom.insert(name, value);
            }
            let cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let failed =
                |e: rmcp::service::ClientInitializeError| format!("Failed to connect to MCP server at {url}: {e}");
            // The host sets up every remote server's `ServerAuth`, and with it the HTTP client.
            let auth = auth.ok_or_else(|| format!("MCP server at {url}: no HTTP client was set up"))?;
            let transport = StreamableHttpClientTransport::with_client(AuthClient::new(auth), cfg);
            client.serve(transport).await.map_err(failed)?
        }
    };
    let server_info = running.peer().peer_info().and_then(|i| serde_json::to_value(i).ok());
    let tools = running.peer().list_all_tools().await.map_err(|e| format!("Failed to list tools: {e}"))?;
    let tools = tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
    Ok(Connected { running, process_group, tools, server_info })
}

/// Asks a local server's whole process group to end (what it spawned included). Synchronous,
/// so it works while the runtime winds down; the connection's own close follows up.
pub(crate) fn terminate_group(pgid: u32) {
    if let Ok(pid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
    }
}

fn handshake_error(e: &str, stderr: &StderrTail) -> String {
    let tail = stderr.text();
    if tail.is_empty() {
        format!("MCP server failed to start: {e}")
    } else {
        format!("MCP server failed to start: {e}: {tail}")
    }
}
