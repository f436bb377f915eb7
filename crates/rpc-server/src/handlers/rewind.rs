//! `session.history.listRewindPoints` / `previewRewind` / `rewind`: going back to a user
//! message, putting back the files the later turns changed (with `enableFileChangeTracking`)
//! and truncating the conversation there.

use loop_engine::file_tracking;
use loop_engine::SessionHandle;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// The session's rewind points as its log has them now, oldest first.
async fn turns(ctx: &Ctx, session: &SessionHandle) -> Result<Vec<file_tracking::Turn>, RpcError> {
    let events = ctx.server.engine.messages(session.id()).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(file_tracking::turns(&events))
}

/// The original's error for an event id that is no rewind point.
fn check_point(ctx: &Ctx, turns: &[file_tracking::Turn], event_id: &str) -> Result<(), RpcError> {
    if turns.iter().any(|t| t.event_id == event_id) {
        return Ok(());
    }
    Err(ctx.failed(format!("Rewind event '{event_id}' is not a current root user turn")))
}

pub async fn list_points(
    ctx: &Ctx,
    p: t::SessionHistoryListRewindPointsParams,
) -> Result<t::HistoryListRewindPointsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tracker = session.file_tracker();
    let enabled = tracker.enabled();
    if enabled && session.view().running {
        let reason = Some(t::HistoryRewindUnavailableReason::SessionBusy);
        return Ok(t::HistoryListRewindPointsResult {
            file_change_tracking_enabled: true,
            unavailable_reason: reason,
            points: vec![],
        });
    }
    // Without tracking the points are the conversation's alone (nothing to restore).
    let points = tracker.points(&turns(ctx, &session).await?, &session.files());
    Ok(t::HistoryListRewindPointsResult { file_change_tracking_enabled: enabled, unavailable_reason: None, points })
}

pub async fn preview(
    ctx: &Ctx,
    p: t::SessionHistoryPreviewRewindParams,
) -> Result<t::HistoryPreviewRewindResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let reason = if !session.file_tracker().enabled() {
        Some(t::HistoryRewindUnavailableReason::FileChangeTrackingDisabled)
    } else if session.view().running {
        Some(t::HistoryRewindUnavailableReason::SessionBusy)
    } else {
        None
    };
    if let Some(reason) = reason {
        return Ok(t::HistoryPreviewRewindResult {
            available: false,
            reason: Some(reason),
            file_count: 0,
            files: vec![],
        });
    }
    let turns = turns(ctx, &session).await?;
    check_point(ctx, &turns, &p.event_id)?;
    let changes = session.file_tracker().changes_since(&p.event_id, &turns, &session.files()).unwrap_or_default();
    let files: Vec<_> = changes
        .iter()
        .map(|c| t::HistoryRewindFilePreview {
            path: c.path.to_string_lossy().into_owned(),
            change_type: c.change,
            lines_added: c.lines_added,
            lines_removed: c.lines_removed,
        })
        .collect();
    Ok(t::HistoryPreviewRewindResult { available: true, reason: None, file_count: files.len() as u64, files })
}

pub async fn rewind(ctx: &Ctx, p: t::SessionHistoryRewindParams) -> Result<t::HistoryRewindResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let with_files = p.mode == t::HistoryRewindMode::ConversationAndFiles;
    let outcome = |outcome| result(outcome, None, Vec::new());
    if with_files && !session.file_tracker().enabled() {
        return Ok(outcome(t::HistoryRewindOutcome::FileChangeTrackingDisabled));
    }
    if session.view().running {
        return Ok(outcome(t::HistoryRewindOutcome::SessionBusy));
    }
    let turns = turns(ctx, &session).await?;
    check_point(ctx, &turns, &p.event_id)?;
    let mut restored = Vec::new();
    if with_files {
        let files = session.files();
        let changes = session.file_tracker().changes_since(&p.event_id, &turns, &files).unwrap_or_default();
        match file_tracking::restore(&changes, &files) {
            Ok(files) => restored = files.into_iter().map(|f| f.to_string_lossy().into_owned()).collect(),
            Err(true) => return Ok(outcome(t::HistoryRewindOutcome::FilesRolledBack)),
            Err(false) => return Ok(outcome(t::HistoryRewindOutcome::RollbackIncomplete)),
        }
    }
    let truncated = match session.truncate(p.event_id.clone()).await {
        Ok(truncated) => truncated,
        Err(e) => {
            tracing::debug!(session = session.id(), error = %e, "rewind: truncation failed");
            return Ok(result(t::HistoryRewindOutcome::TruncationFailed, None, restored));
        }
    };
    let left: Vec<_> = turns.into_iter().take_while(|t| t.event_id != p.event_id).collect();
    session.file_tracker().retain(&left);
    Ok(result(t::HistoryRewindOutcome::Success, Some(truncated.events_removed), restored))
}

fn result(
    outcome: t::HistoryRewindOutcome,
    events_removed: Option<u64>,
    restored: Vec<String>,
) -> t::HistoryRewindResult {
    t::HistoryRewindResult { outcome, events_removed, restored_files: restored, skipped_files: Vec::new(), error: None }
}
