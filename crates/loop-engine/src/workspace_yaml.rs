//! `workspace.yaml`: a session's metadata (name, cwd, counts) beside its log, in the session's
//! store or the client's sessionFs.

use crate::deps::Deps;
use crate::handle::SessionHandle;
use crate::settings::SessionSettings;

pub(crate) async fn write_workspace_yaml(
    deps: &Deps,
    session: &SessionHandle,
    s: &SessionSettings,
    title: Option<&str>,
) {
    write_workspace_yaml_named(deps, session, s, title, false).await
}

/// `workspace.yaml` with the session's name; `user_named` when a client chose it.
pub(crate) async fn write_workspace_yaml_named(
    deps: &Deps,
    session: &SessionHandle,
    s: &SessionSettings,
    title: Option<&str>,
    user_named: bool,
) {
    let summaries = deps.layout.list_checkpoints(session.id()).await.map_or(0, |c| c.len() as u32);
    let meta = store::layout::WorkspaceMeta {
        id: session.id().to_string(),
        cwd: s.cwd.to_string_lossy().to_string(),
        client_name: Some(s.client_name.clone()),
        name: title.map(str::to_string),
        user_named,
        summary_count: summaries,
        fork_count: 0,
        created_at: session.start_time().to_string(),
        updated_at: protocol::now_iso(),
        ..Default::default()
    };
    let written = match session.remote_state() {
        Some(remote) => remote.write_meta(&meta).await,
        None => deps.events.write_meta(session.id(), &meta).await,
    };
    if let Err(e) = written {
        tracing::warn!(session = %session.id(), error = %e, "workspace.yaml write failed");
    }
}
