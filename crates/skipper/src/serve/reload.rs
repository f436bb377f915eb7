//! Reloading the tenants while the server runs: on SIGHUP, and when the configuration file
//! changes. The file is polled (its modification time and size) rather than watched: inotify
//! sees nothing of a change made by another host on the network file system a cluster's
//! configuration may live on, and editors and `skipper tenants` replace the file rather than
//! write it. A configuration that does not load is logged and the one in force stays.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rpc_server::tenancy::Tenancy;

use super::args::ServeArgs;
use super::config::ServerConfig;

/// How often the file is looked at.
const POLL: Duration = Duration::from_secs(2);

/// Everything `tenant_specs` reads the configuration with, as at start.
pub struct Source {
    pub path: PathBuf,
    pub explicit: bool,
    pub data_root: PathBuf,
    pub home: PathBuf,
    pub env: HashMap<String, String>,
    pub args: ServeArgs,
}

pub fn spawn(server: Arc<rpc_server::Server>, tenancy: Arc<Tenancy>, source: Source) {
    tokio::spawn(async move {
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; the tenants reload when the file changes only");
                None
            }
        };
        let mut seen = stamp(&source.path);
        loop {
            let signalled = async {
                match &mut hangup {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = signalled => tracing::info!("SIGHUP: reloading the tenants"),
                _ = tokio::time::sleep(POLL) => {
                    let now = stamp(&source.path);
                    if now == seen {
                        continue;
                    }
                    tracing::info!(config = %source.path.display(), "the configuration changed: reloading the tenants");
                }
            }
            seen = stamp(&source.path);
            reload(&server, &tenancy, &source);
        }
    });
}

/// The file's modification time and size (`None`: not there).
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn reload(server: &rpc_server::Server, tenancy: &Tenancy, source: &Source) {
    let specs = ServerConfig::load(&source.path, source.explicit)
        .and_then(|config| super::tenant_specs(&config, &source.data_root, &source.home, &source.env, &source.args));
    let specs = match specs {
        Ok(specs) => specs,
        Err(e) => {
            tracing::error!(
                error = format!("{e:#}"),
                "the tenants' configuration does not load; the one in force stays"
            );
            server.audit().record("config.reload", None, None, serde_json::json!({"applied": false}));
            return;
        }
    };
    match tenancy.reload(specs) {
        Ok(done) => {
            let detail = serde_json::json!({
                "applied": true,
                "added_tokens": done.added_tokens,
                "revoked_tokens": done.revoked_tokens,
                "new_tenants": done.new_tenants,
                "needs_restart": done.needs_restart,
            });
            server.audit().record("config.reload", None, None, detail);
            tracing::info!(added_tokens = done.added_tokens, revoked_tokens = done.revoked_tokens, "tenants reloaded");
            for name in done.new_tenants {
                tracing::warn!(tenant = %name, "a new tenant: restart the server to add it");
            }
            for name in done.needs_restart {
                tracing::warn!(tenant = %name, "the tenant's workspace, configuration home or connection limit changed: restart the server to apply it");
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "the tenants' configuration does not apply; the one in force stays");
            server.audit().record("config.reload", None, None, serde_json::json!({"applied": false}));
        }
    }
}
