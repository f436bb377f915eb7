//! Deriving index rows from what is on disk: the logs are the truth, `workspace.yaml` adds
//! what events do not carry (client name, a user-set name).

use protocol::event::{Event, SessionEvent};
use protocol::generated::types::WorkingDirectoryContext;

use super::rows::SessionRow;
use crate::error::StoreError;
use crate::event_log::EventLog;
use crate::layout::{Layout, WorkspaceMeta};

pub(super) fn scan_logs(layout: &Layout) -> Result<Vec<SessionRow>, StoreError> {
    let dir = layout.session_state_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::error::io_err(&dir)(e)),
    };
    let mut rows = Vec::new();
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if Layout::check_id(&id).is_err() || !entry.path().is_dir() {
            continue;
        }
        let log = match EventLog::load(layout.events_path(&id)) {
            Ok(log) => log,
            Err(StoreError::NotFound(_)) => continue,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "skipping session in index rebuild");
                continue;
            }
        };
        let meta = layout.read_workspace_yaml(&id).unwrap_or_else(|e| {
            tracing::warn!(session = %id, error = %e, "ignoring unreadable workspace.yaml");
            None
        });
        if let Some(row) = row_from_events(&id, &log.events, meta.as_ref()) {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Derives an index row from a session's log; `None` for a log without events.
pub fn row_from_events(id: &str, events: &[Event], meta: Option<&WorkspaceMeta>) -> Option<SessionRow> {
    let first = events.first()?;
    let last = events.last()?;
    let mut row = SessionRow {
        id: id.to_string(),
        created_at: first.timestamp.clone(),
        updated_at: last.timestamp.clone(),
        ..Default::default()
    };
    for event in events {
        match &event.payload {
            SessionEvent::SessionStart(d) => {
                row.created_at = d.start_time.clone();
                set_model(&mut row, d.selected_model.as_ref());
                apply_context(&mut row, d.context.as_ref());
            }
            SessionEvent::SessionResume(d) => {
                set_model(&mut row, d.selected_model.as_ref());
                apply_context(&mut row, d.context.as_ref());
            }
            SessionEvent::SessionContextChanged(ctx) => apply_context(&mut row, Some(ctx)),
            SessionEvent::SessionModelChange(d) => set_model(&mut row, Some(&d.new_model)),
            SessionEvent::UserMessage(d) if !row.has_user_message => {
                row.has_user_message = true;
                row.title = Some(d.content.clone());
                row.summary = row.title.clone();
            }
            _ => {}
        }
    }
    if let Some(meta) = meta {
        if meta.name.is_some() {
            row.title = meta.name.clone();
        }
        row.client_name = meta.client_name.clone();
        if row.cwd.is_empty() {
            row.cwd = meta.cwd.clone();
        }
    }
    Some(row)
}

fn set_model(row: &mut SessionRow, model: Option<&String>) {
    if let Some(model) = model {
        row.model = Some(model.clone());
    }
}

/// A context object replaces the whole git context: moving out of a repository clears it.
fn apply_context(row: &mut SessionRow, ctx: Option<&WorkingDirectoryContext>) {
    let Some(ctx) = ctx else { return };
    row.cwd = ctx.cwd.clone();
    row.git_root = ctx.git_root.clone();
    row.repository = ctx.repository.clone();
    row.branch = ctx.branch.clone();
}
