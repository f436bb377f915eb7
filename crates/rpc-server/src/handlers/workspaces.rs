//! `session.workspaces.*` file methods: the session's client-managed files under
//! `session-state/<id>/files/`. Reads and housekeeping go to the session's files directly;
//! `createFile` goes through its actor, which emits `session.workspace_file_changed` with the write.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

pub async fn list_files(
    ctx: &Ctx,
    p: t::SessionWorkspacesListFilesParams,
) -> Result<t::WorkspacesListFilesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let files = session.list_workspace_files().await.map_err(|e| ctx.failed(e))?;
    Ok(t::WorkspacesListFilesResult { files })
}

pub async fn read_file(
    ctx: &Ctx,
    p: t::SessionWorkspacesReadFileParams,
) -> Result<t::WorkspacesReadFileResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let content = session.read_workspace_file(&p.path).await.map_err(|e| ctx.failed(e))?;
    Ok(t::WorkspacesReadFileResult { content })
}

pub async fn create_file(ctx: &Ctx, p: t::SessionWorkspacesCreateFileParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.write_workspace_file(p.path, p.content).await.map_err(|e| ctx.engine_error(&e))
}

pub async fn create_directory(ctx: &Ctx, p: t::SessionWorkspacesCreateDirectoryParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    let recursive = p.recursive.unwrap_or(false);
    session.create_workspace_dir(&p.path, recursive).await.map_err(|e| ctx.failed(e))
}

pub async fn stat_file(
    ctx: &Ctx,
    p: t::SessionWorkspacesStatFileParams,
) -> Result<t::WorkspacesStatFileResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let st = session.stat_workspace_path(&p.path).await.map_err(|e| ctx.failed(e))?;
    Ok(t::WorkspacesStatFileResult {
        is_file: st.is_file,
        is_directory: st.is_directory,
        // Sizes beyond 2^53 lose precision, as they do in the original's JavaScript numbers.
        size: st.size as f64,
        mtime_ms: st.mtime_ms,
        birthtime_ms: st.birthtime_ms,
    })
}

pub async fn remove_path(ctx: &Ctx, p: t::SessionWorkspacesRemovePathParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    let (recursive, force) = (p.recursive.unwrap_or(false), p.force.unwrap_or(false));
    session.remove_workspace_path(&p.path, recursive, force).await.map_err(|e| ctx.failed(e))
}

pub async fn rename_path(ctx: &Ctx, p: t::SessionWorkspacesRenamePathParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.rename_workspace_path(&p.source, &p.destination).await.map_err(|e| ctx.failed(e))
}

/// The session's `workspace.yaml` and its directory. A session whose metadata is not written
/// yet still has a workspace: it is described by its id alone.
pub async fn get_workspace(
    ctx: &Ctx,
    p: t::SessionWorkspacesGetWorkspaceParams,
) -> Result<t::WorkspacesGetWorkspaceResult, RpcError> {
    workspace_of(ctx, &p.session_id).await
}

/// A loaded session's workspace always exists (it is written at create), so ensuring it is
/// reading it; the client's `context` adds nothing a session does not already know.
pub async fn ensure(
    ctx: &Ctx,
    p: t::SessionWorkspacesEnsureParams,
) -> Result<t::WorkspacesGetWorkspaceResult, RpcError> {
    workspace_of(ctx, &p.session_id).await
}

pub(crate) async fn workspace_of(ctx: &Ctx, session_id: &str) -> Result<t::WorkspacesGetWorkspaceResult, RpcError> {
    let session = ctx.session(session_id)?;
    let meta = session.workspace_meta().await.map_err(|e| ctx.failed(e))?;
    let workspace = match meta {
        Some(m) => t::WorkspacesGetWorkspaceResultWorkspace {
            id: m.id,
            cwd: Some(m.cwd).filter(|c| !c.is_empty()),
            git_root: m.git_root,
            repository: m.repository,
            branch: m.branch,
            name: m.name,
            client_name: m.client_name,
            user_named: Some(m.user_named),
            summary_count: Some(u64::from(m.summary_count)),
            created_at: Some(m.created_at).filter(|s| !s.is_empty()),
            updated_at: Some(m.updated_at).filter(|s| !s.is_empty()),
            ..Default::default()
        },
        None => t::WorkspacesGetWorkspaceResultWorkspace { id: session.id().to_string(), ..Default::default() },
    };
    let path = session.workspace_path().to_string_lossy().into_owned();
    Ok(t::WorkspacesGetWorkspaceResult { workspace: Some(workspace), path: Some(path) })
}
