//! `sessionFs.setProvider` (a connection keeps its sessions' state itself) and the `sql`
//! tool's todo tables (`session.plan.readSqlTodos*`).

use loop_engine::session_fs::FsProvider;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// Declared before any session exists (sessions made earlier keep their state where they
/// began), once per connection.
pub async fn set_provider(
    ctx: &Ctx,
    p: t::SessionFsSetProviderRequest,
) -> Result<t::SessionFsSetProviderResult, RpcError> {
    if p.session_state_path.trim().is_empty() {
        return Err(RpcError::invalid_params(ctx.method, "sessionStatePath: must not be empty"));
    }
    if ctx.server.engine.loaded_count() > 0 {
        return Err(ctx.failed("Cannot set a sessionFs provider: sessions already exist"));
    }
    let fs =
        FsProvider { state_path: p.session_state_path, sqlite: p.capabilities.and_then(|c| c.sqlite).unwrap_or(false) };
    if !ctx.caller.set_session_fs(fs) {
        return Err(ctx.failed("A sessionFs provider is already set for this connection"));
    }
    Ok(t::SessionFsSetProviderResult { success: true })
}

async fn todos(
    ctx: &Ctx,
    session_id: &str,
) -> Result<(Vec<t::PlanSqlTodosRow>, Vec<t::PlanSqlTodoDependency>), RpcError> {
    let session = ctx.session(session_id)?;
    let db = session.sql_db().await.map_err(|e| ctx.failed(e))?;
    loop_engine::sql::read_todos(db.as_ref()).await.map_err(|e| ctx.failed(e))
}

pub async fn read_sql_todos(
    ctx: &Ctx,
    p: t::SessionPlanReadSqlTodosParams,
) -> Result<t::PlanReadSqlTodosResult, RpcError> {
    let (rows, _) = todos(ctx, &p.session_id).await?;
    Ok(t::PlanReadSqlTodosResult { rows })
}

pub async fn read_sql_todos_with_dependencies(
    ctx: &Ctx,
    p: t::SessionPlanReadSqlTodosWithDependenciesParams,
) -> Result<t::PlanReadSqlTodosWithDependenciesResult, RpcError> {
    let (rows, dependencies) = todos(ctx, &p.session_id).await?;
    Ok(t::PlanReadSqlTodosWithDependenciesResult { rows, dependencies })
}
