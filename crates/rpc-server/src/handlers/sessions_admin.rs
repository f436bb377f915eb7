//! `sessions.*`: persisted sessions as a whole — listing, finding, sizes, closing, pruning and
//! deleting, opening by kind. Sessions live in the engine's index and session-state
//! directories; a session "in use" is one loaded in this server.

use std::collections::BTreeMap;
use std::path::Path;

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::methods::{SessionConfigParams, SessionListEntry};
use protocol::rpc::NoParams;

use crate::ctx::Ctx;

/// Every persisted session the caller may see, most recent first.
async fn visible_sessions(ctx: &Ctx, filter: &store::ListFilter) -> Result<Vec<SessionListEntry>, RpcError> {
    ctx.learn_owners(None).await?;
    let mut sessions = ctx.server.engine.list(filter).await.map_err(|e| ctx.engine_error(&e))?;
    sessions.retain(|s| ctx.visible(&s.session_id));
    Ok(sessions)
}

fn store_filter(f: Option<t::SessionListFilter>) -> store::ListFilter {
    let f = f.unwrap_or_default();
    store::ListFilter { cwd: f.cwd, git_root: f.git_root, repository: f.repository, branch: f.branch }
}

/// The original refuses an id that could not name a session directory.
fn check_id(ctx: &Ctx, id: &str) -> Result<(), RpcError> {
    store::Layout::check_id(id)
        .map_err(|_| ctx.failed(format!("Invalid sessionId: {}", protocol::jsonrpc::json_string(id))))
}

pub async fn list(ctx: &Ctx, p: t::SessionsListRequest) -> Result<t::SessionList, RpcError> {
    if p.source == Some(t::SessionSource::Remote) {
        return Ok(t::SessionList { sessions: Vec::new() });
    }
    let sessions = visible_sessions(ctx, &store_filter(p.filter)).await?;
    let include_detached = p.include_detached.unwrap_or(true);
    let sessions = sessions
        .into_iter()
        .filter(|s| include_detached || !s.is_detached)
        .filter_map(|s| serde_json::to_value(s).ok())
        .collect();
    Ok(t::SessionList { sessions })
}

/// Events reach the log as they happen: there is nothing buffered to write, only the id to check.
pub async fn save(ctx: &Ctx, p: t::SessionsSaveRequest) -> Result<t::SessionsSaveResult, RpcError> {
    check_id(ctx, &p.session_id)?;
    if !ctx.visible(&p.session_id) {
        return Err(ctx.not_found(&p.session_id));
    }
    Ok(t::SessionsSaveResult {})
}

/// Ends a loaded session here (its state stays on disk); a session not loaded is already closed.
pub async fn close(ctx: &Ctx, p: t::SessionsCloseRequest) -> Result<t::SessionsCloseResult, RpcError> {
    check_id(ctx, &p.session_id)?;
    if ctx.visible(&p.session_id) && ctx.server.engine.get(&p.session_id).is_some() {
        ctx.server
            .engine
            .shutdown_session(&p.session_id, t::ShutdownType::Routine)
            .await
            .map_err(|e| ctx.engine_error(&e))?;
    }
    Ok(t::SessionsCloseResult {})
}

/// A session is held only while it is loaded here; `sessions.close` lets it go.
pub async fn release_lock(
    ctx: &Ctx,
    p: t::SessionsReleaseLockRequest,
) -> Result<t::SessionsReleaseLockResult, RpcError> {
    check_id(ctx, &p.session_id)?;
    Ok(t::SessionsReleaseLockResult {})
}

pub async fn check_in_use(ctx: &Ctx, p: t::SessionsCheckInUseRequest) -> Result<t::SessionsCheckInUseResult, RpcError> {
    for id in &p.session_ids {
        check_id(ctx, id)?;
    }
    let in_use =
        p.session_ids.into_iter().filter(|id| ctx.visible(id) && ctx.server.engine.get(id).is_some()).collect();
    Ok(t::SessionsCheckInUseResult { in_use })
}

pub async fn get_metadata(
    ctx: &Ctx,
    p: t::SessionsGetMetadataRequest,
) -> Result<t::SessionsGetMetadataResult, RpcError> {
    ctx.learn_owners(Some(&p.session_id)).await?;
    if !ctx.visible(&p.session_id) {
        return Ok(t::SessionsGetMetadataResult { session: None });
    }
    let entry = ctx.server.engine.metadata(&p.session_id).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(t::SessionsGetMetadataResult { session: entry.map(local_metadata) })
}

fn local_metadata(s: SessionListEntry) -> t::LocalSessionMetadataValue {
    let non_empty = |v: String| (!v.is_empty()).then_some(v);
    t::LocalSessionMetadataValue {
        session_id: s.session_id,
        start_time: s.start_time,
        modified_time: s.modified_time,
        summary: non_empty(s.summary),
        name: non_empty(s.name),
        client_name: non_empty(s.client_name),
        is_remote: false,
        is_detached: Some(s.is_detached),
        context: Some(t::SessionContext {
            cwd: s.context.cwd,
            git_root: s.context.git_root,
            repository: s.context.repository,
            host_type: None,
            branch: s.context.branch,
        }),
        mc_task_id: None,
    }
}

/// Fills what a client knows of its sessions (name, summary, context) from the index; a
/// session the index does not hold is returned as given.
pub async fn enrich_metadata(
    ctx: &Ctx,
    p: t::SessionsEnrichMetadataRequest,
) -> Result<t::SessionEnrichMetadataResult, RpcError> {
    let known = visible_sessions(ctx, &store::ListFilter::default()).await?;
    let sessions = p
        .sessions
        .into_iter()
        .map(|given| match known.iter().find(|k| k.session_id == given.session_id) {
            None => given,
            Some(k) => {
                let ours = local_metadata(k.clone());
                t::LocalSessionMetadataValue {
                    summary: given.summary.or(ours.summary),
                    name: given.name.or(ours.name),
                    client_name: given.client_name.or(ours.client_name),
                    is_detached: ours.is_detached,
                    context: given.context.or(ours.context),
                    ..given
                }
            }
        })
        .collect();
    Ok(t::SessionEnrichMetadataResult { sessions })
}

/// The one session whose id starts with `prefix`; none when no session or several match.
pub async fn find_by_prefix(
    ctx: &Ctx,
    p: t::SessionsFindByPrefixRequest,
) -> Result<t::SessionsFindByPrefixResult, RpcError> {
    if p.prefix.is_empty() {
        return Ok(t::SessionsFindByPrefixResult { session_id: None });
    }
    let sessions = visible_sessions(ctx, &store::ListFilter::default()).await?;
    let mut matches = sessions.into_iter().map(|s| s.session_id).filter(|id| id.starts_with(&p.prefix));
    let session_id = match (matches.next(), matches.next()) {
        (Some(id), None) => Some(id),
        _ => None,
    };
    Ok(t::SessionsFindByPrefixResult { session_id })
}

/// Sessions started for a Mission Control task are remote ones, which this runtime has none of.
pub async fn find_by_task_id(
    _ctx: &Ctx,
    _p: t::SessionsFindByTaskIDRequest,
) -> Result<t::SessionsFindByTaskIDResult, RpcError> {
    Ok(t::SessionsFindByTaskIDResult { session_id: None })
}

pub async fn get_last_for_context(
    ctx: &Ctx,
    p: t::SessionsGetLastForContextRequest,
) -> Result<t::SessionsGetLastForContextResult, RpcError> {
    let filter = match p.context {
        Some(c) => {
            store::ListFilter { cwd: Some(c.cwd), git_root: c.git_root, repository: c.repository, branch: c.branch }
        }
        None => store::ListFilter::default(),
    };
    let sessions = visible_sessions(ctx, &filter).await?;
    Ok(t::SessionsGetLastForContextResult { session_id: sessions.into_iter().next().map(|s| s.session_id) })
}

pub async fn get_sizes(ctx: &Ctx, _p: NoParams) -> Result<t::SessionSizes, RpcError> {
    let sessions = visible_sessions(ctx, &store::ListFilter::default()).await?;
    let mut sizes = BTreeMap::new();
    for s in sessions {
        let size = session_size(ctx, &s.session_id).await;
        sizes.insert(s.session_id, size);
    }
    Ok(t::SessionSizes { sizes })
}

/// Bytes under a session's state directory (0 when it has none).
async fn session_size(ctx: &Ctx, id: &str) -> u64 {
    if store::Layout::check_id(id).is_err() {
        return 0;
    }
    let dir = ctx.server.engine.session_dir(id);
    tokio::task::spawn_blocking(move || dir_size(&dir)).await.unwrap_or(0)
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(ft) if ft.is_dir() => dir_size(&e.path()),
            Ok(ft) if ft.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// Deletes each session (loaded or not); the answer gives the bytes each one freed, 0 for an
/// id that named nothing.
pub async fn bulk_delete(ctx: &Ctx, p: t::SessionsBulkDeleteRequest) -> Result<t::SessionBulkDeleteResult, RpcError> {
    let mut freed_bytes = BTreeMap::new();
    for id in p.session_ids {
        ctx.learn_owners(Some(&id)).await?;
        if !ctx.visible(&id) || store::Layout::check_id(&id).is_err() {
            freed_bytes.insert(id, 0);
            continue;
        }
        let size = session_size(ctx, &id).await;
        let freed = match ctx.server.engine.delete(&id).await {
            Ok(()) => {
                if ctx.server.tenancy.is_some() {
                    ctx.tenancy_release(&id).await;
                }
                size
            }
            Err(loop_engine::EngineError::SessionNotFound(_)) => 0,
            Err(e) => return Err(ctx.engine_error(&e)),
        };
        freed_bytes.insert(id, freed);
    }
    Ok(t::SessionBulkDeleteResult { freed_bytes })
}

/// Sessions not touched for `olderThanDays` and not loaded; named ones only when asked.
pub async fn prune_old(ctx: &Ctx, p: t::SessionsPruneOldRequest) -> Result<t::SessionPruneResult, RpcError> {
    let dry_run = p.dry_run.unwrap_or(false);
    let include_named = p.include_named.unwrap_or(false);
    let exclude = p.exclude_session_ids.unwrap_or_default();
    let days = i64::try_from(p.older_than_days).unwrap_or(i64::MAX / 86_400_000).min(i64::MAX / 86_400_000);
    let cutoff = chrono::Utc::now() - chrono::Duration::milliseconds(days * 86_400_000);
    let sessions = visible_sessions(ctx, &store::ListFilter::default()).await?;
    let (mut candidates, mut skipped) = (Vec::new(), Vec::new());
    for s in sessions {
        let modified = chrono::DateTime::parse_from_rfc3339(&s.modified_time).map(|d| d.with_timezone(&chrono::Utc));
        if !modified.is_ok_and(|m| m <= cutoff) {
            continue;
        }
        let named = ctx.server.engine.workspace_meta(&s.session_id).await.is_some_and(|m| m.user_named);
        if exclude.contains(&s.session_id)
            || ctx.server.engine.get(&s.session_id).is_some()
            || (named && !include_named)
        {
            skipped.push(s.session_id);
        } else {
            candidates.push(s.session_id);
        }
    }
    let mut freed = 0;
    let mut deleted = Vec::new();
    for id in &candidates {
        let size = session_size(ctx, id).await;
        if !dry_run {
            match ctx.server.engine.delete(id).await {
                Ok(()) => deleted.push(id.clone()),
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "pruning a session failed");
                    continue;
                }
            }
        }
        freed += size;
    }
    // Candidates are what a dry run would delete; a real run lists what it deleted instead.
    let candidates = if dry_run { candidates } else { Vec::new() };
    Ok(t::SessionPruneResult { deleted, candidates, skipped, freed_bytes: freed, dry_run })
}

/// Plugins supplied by the host for every session. This runtime loads no plugin hooks, so the
/// list is accepted and nothing further happens.
pub async fn set_additional_plugins(
    _ctx: &Ctx,
    _p: t::SessionsSetAdditionalPluginsRequest,
) -> Result<t::SessionsSetAdditionalPluginsResult, RpcError> {
    Ok(t::SessionsSetAdditionalPluginsResult {})
}

pub async fn reload_plugin_hooks(
    ctx: &Ctx,
    p: t::SessionsReloadPluginHooksRequest,
) -> Result<t::SessionsReloadPluginHooksResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::SessionsReloadPluginHooksResult {})
}

/// Repository hooks are not run by this runtime: none are deferred, none start a prompt.
pub async fn load_deferred_repo_hooks(
    ctx: &Ctx,
    p: t::SessionsLoadDeferredRepoHooksRequest,
) -> Result<t::SessionLoadDeferredRepoHooksResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::SessionLoadDeferredRepoHooksResult { startup_prompts: Vec::new(), hook_count: 0 })
}

/// Remote sessions live on GitHub; none is reachable from here.
pub async fn connect(
    ctx: &Ctx,
    p: t::ConnectRemoteSessionParams,
) -> Result<t::RemoteSessionConnectionResult, RpcError> {
    Err(ctx.failed(format!("Remote session {} not found", p.session_id)))
}

/// `sessions.open`: create, resume (by id or unique prefix), resume the last one for a
/// context, or attach to a loaded one. Remote kinds have no service behind them here; no kind
/// at all finds nothing.
pub async fn open(ctx: &Ctx, p: protocol::methods::SessionsOpenParams) -> Result<t::SessionOpenResult, RpcError> {
    let Some(p) = p.0 else {
        return Ok(t::SessionOpenResult::new(t::SessionsOpenStatus::NotFound));
    };
    let resumed = |id: String| {
        let mut r = t::SessionOpenResult::new(t::SessionsOpenStatus::Resumed);
        r.session_id = Some(id);
        r
    };
    match p {
        t::SessionOpenParams::Create(c) => {
            let params = config_from(c.options, None);
            let session = super::session::create(ctx, params).await?;
            let mut r = t::SessionOpenResult::new(t::SessionsOpenStatus::Created);
            r.session_id = Some(session.session_id);
            Ok(r)
        }
        t::SessionOpenParams::Resume(r) => {
            let found = if ctx.server.engine.get(&r.session_id).is_some() {
                Some(r.session_id.clone())
            } else {
                find_by_prefix(ctx, t::SessionsFindByPrefixRequest { prefix: r.session_id.clone() }).await?.session_id
            };
            match found {
                Some(id) => resume_into(ctx, id, r.options).await.map(resumed),
                None => Ok(t::SessionOpenResult::new(t::SessionsOpenStatus::NotFound)),
            }
        }
        t::SessionOpenParams::ResumeLast(r) => {
            let Some(context) = r.context else {
                return Ok(t::SessionOpenResult::new(t::SessionsOpenStatus::NotFound));
            };
            let last =
                get_last_for_context(ctx, t::SessionsGetLastForContextRequest { context: Some(context) }).await?;
            match last.session_id {
                Some(id) => resume_into(ctx, id, r.options).await.map(resumed),
                None => Ok(t::SessionOpenResult::new(t::SessionsOpenStatus::NotFound)),
            }
        }
        t::SessionOpenParams::Attach(a) => {
            if ctx.visible(&a.session_id) && ctx.server.engine.get(&a.session_id).is_some() {
                resume_into(ctx, a.session_id, None).await.map(resumed)
            } else {
                Ok(t::SessionOpenResult::new(t::SessionsOpenStatus::NotFound))
            }
        }
        other => Err(ctx
            .failed(format!("sessions.open kind \"{}\" needs remote sessions, which are not available", other.tag()))),
    }
}

async fn resume_into(ctx: &Ctx, id: String, options: Option<t::SessionOpenOptions>) -> Result<String, RpcError> {
    let params = config_from(options, Some(id));
    super::session::resume(ctx, params).await.map(|s| s.session_id)
}

fn config_from(options: Option<t::SessionOpenOptions>, id: Option<String>) -> SessionConfigParams {
    let o = options.unwrap_or_default();
    SessionConfigParams {
        session_id: id.or(o.session_id),
        model: o.model,
        reasoning_effort: o.reasoning_effort,
        client_name: o.client_name,
        working_directory: o.working_directory,
        ..Default::default()
    }
}

/// A session's persisted events by cursor, whether or not it is loaded here. The cursor
/// `p<n>` is a position in the log: forward pages go on from it, backward pages end at it;
/// each page is in log order.
pub async fn read_persisted_events(
    ctx: &Ctx,
    p: t::SessionsReadPersistedEventsRequest,
) -> Result<t::EventsReadResult, RpcError> {
    check_id(ctx, &p.session_id)?;
    ctx.learn_owners(Some(&p.session_id)).await?;
    if !ctx.visible(&p.session_id) {
        return Err(ctx.not_found(&p.session_id));
    }
    let events = ctx.server.engine.persisted_events(&p.session_id).await.map_err(|e| ctx.engine_error(&e))?;
    let max = p.max.unwrap_or(200).clamp(1, 1000) as usize;
    let backward = matches!(p.direction, Some(t::EventsReadDirection::Backward));
    let total = events.len();
    let parsed = p.cursor.as_deref().map(|c| c.strip_prefix('p').and_then(|n| n.parse::<usize>().ok()));
    let at = match parsed {
        None => {
            if backward {
                total
            } else {
                0
            }
        }
        Some(Some(n)) if n <= total => n,
        // Not a cursor of this log: an empty last page, never a read from elsewhere.
        Some(_) => {
            let cursor = p.cursor.unwrap_or_default();
            return Ok(t::EventsReadResult {
                events: Vec::new(),
                cursor,
                has_more: false,
                cursor_status: t::EventsCursorStatus::Expired,
            });
        }
    };
    let (start, end) = if backward { (at.saturating_sub(max), at) } else { (at, (at + max).min(total)) };
    let page = events[start..end]
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ctx.failed(e))?;
    let (cursor, has_more) = if backward { (start, start > 0) } else { (end, end < total) };
    Ok(t::EventsReadResult {
        events: page,
        cursor: format!("p{cursor}"),
        has_more,
        cursor_status: t::EventsCursorStatus::Ok,
    })
}
