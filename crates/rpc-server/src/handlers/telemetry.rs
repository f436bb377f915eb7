//! Forwarded GitHub telemetry: a client that asked for it (`enableGitHubTelemetryForwarding` on
//! `connect` or on a session) gets the session's telemetry events as `gitHubTelemetry.event`
//! notifications instead of them going to GitHub. Skipper sends nothing to GitHub itself; the
//! events it forwards are the ones a host can act on, starting with `session_start`.

use std::collections::BTreeMap;

use loop_engine::SessionHandle;
use protocol::generated::types as t;
use protocol::methods::SessionConfigParams;

use crate::ctx::Ctx;

/// The notification's method name.
const METHOD: &str = "gitHubTelemetry.event";

/// A session was created: an opted-in client hears `session_start`.
pub fn session_created(ctx: &Ctx, session: &SessionHandle, p: &SessionConfigParams) {
    if p.enable_github_telemetry_forwarding == Some(true) {
        ctx.caller.set_wants_github_telemetry();
    }
    if !ctx.caller.wants_github_telemetry() {
        return;
    }
    let view = session.view();
    let mut properties = BTreeMap::new();
    properties.insert("model".to_string(), view.settings.model.clone());
    properties.insert("session_source".to_string(), "sdk".to_string());
    if let Some(name) = &p.client_name {
        properties.insert("client_name".to_string(), name.clone());
    }
    let event = t::GitHubTelemetryEvent {
        kind: "session_start".into(),
        created_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        properties,
        metrics: BTreeMap::new(),
        session_id: Some(session.id().to_string()),
        client: Some(client_info(ctx, p.client_name.clone())),
        ..Default::default()
    };
    let notification =
        t::GitHubTelemetryNotification { session_id: Some(session.id().to_string()), restricted: false, event };
    match serde_json::to_value(&notification) {
        Ok(params) => {
            ctx.caller.notify(METHOD, &params);
        }
        Err(e) => tracing::debug!(error = %e, "telemetry notification not serializable"),
    }
}

fn client_info(ctx: &Ctx, client_name: Option<String>) -> t::GitHubTelemetryClientInfo {
    t::GitHubTelemetryClientInfo {
        cli_version: ctx.server.engine.version().to_string(),
        os_platform: std::env::consts::OS.to_string(),
        os_version: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        os_arch: node_arch(std::env::consts::ARCH).to_string(),
        // No Node.js runtime here: the field is required, so it is sent empty.
        node_version: String::new(),
        client_type: Some("sdk".into()),
        client_name,
        cpu_count: std::thread::available_parallelism().ok().map(|n| n.get() as u64),
        ..Default::default()
    }
}

/// Architecture names as the original (a Node.js program) reports them.
fn node_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    }
}
