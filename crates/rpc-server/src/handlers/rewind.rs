//! `session.history.listRewindPoints` / `previewRewind` / `rewind`: going back to a user
//! message, putting back the files the later turns changed (with `enableFileChangeTracking`)
//! and truncating the conversation there.

use loop_engine::file_tracking;
use loop_engine::SessionHandle;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::table::Ctx;

/// Why rewinding is not possible now, if it is not.
fn unavailable(session: &SessionHandle) -> Option<t::HistoryRewindUnavailableReason> {
    if !session.file_tracker().enabled() {
        Some(t::HistoryRewindUnavailableReason::FileChangeTrackingDisabled)
    } else if session.view().running {
        Some(t::HistoryRewindUnavailableReason::SessionBusy)
    } else {
        None
    }
}

pub async fn list_points(
    ctx: &Ctx,
    p: t::SessionHistoryListRewindPointsParams,
) -> Result<t::HistoryListRewindPointsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let tracker = session.file_tracker();
    Ok(t::HistoryListRewindPointsResult {
        file_change_tracking_enabled: tracker.enabled(),
        unavailable_reason: unavailable(&session),
        points: tracker.points(),
    })
}

pub async fn preview(
    ctx: &Ctx,
    p: t::SessionHistoryPreviewRewindParams,
) -> Result<t::HistoryPreviewRewindResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some(reason) = unavailable(&session) {
        return Ok(t::HistoryPreviewRewindResult {
            available: false,
            reason: Some(reason),
            file_count: 0,
            files: vec![],
        });
    }
    let changes = session.file_tracker().changes_since(&p.event_id).ok_or_else(|| not_a_point(ctx, &p.event_id))?;
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
    if session.view().running {
        return Ok(outcome(t::HistoryRewindOutcome::SessionBusy));
    }
    if with_files && !session.file_tracker().enabled() {
        return Ok(outcome(t::HistoryRewindOutcome::FileChangeTrackingDisabled));
    }
    let mut restored = Vec::new();
    if with_files {
        let changes = session.file_tracker().changes_since(&p.event_id).ok_or_else(|| not_a_point(ctx, &p.event_id))?;
        match file_tracking::restore(&changes) {
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
    session.file_tracker().drop_from(&p.event_id);
    Ok(result(t::HistoryRewindOutcome::Success, Some(truncated.events_removed), restored))
}

fn result(
    outcome: t::HistoryRewindOutcome,
    events_removed: Option<u64>,
    restored: Vec<String>,
) -> t::HistoryRewindResult {
    t::HistoryRewindResult { outcome, events_removed, restored_files: restored, skipped_files: Vec::new(), error: None }
}

fn not_a_point(ctx: &Ctx, event_id: &str) -> RpcError {
    ctx.failed(format!("Event {event_id} is not a rewind point"))
}
