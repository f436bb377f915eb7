//! The payloads that describe a session when it starts or resumes.

use protocol::generated::types as t;

use crate::settings::SessionSettings;

/// The session's working directory as an event's `context`.
pub(crate) fn cwd_context(s: &SessionSettings) -> t::WorkingDirectoryContext {
    t::WorkingDirectoryContext { cwd: s.cwd.to_string_lossy().into_owned(), ..Default::default() }
}

/// `session.resume` for a session with these settings.
pub(crate) fn resume_data(
    s: &SessionSettings,
    event_count: usize,
    events_file_size_bytes: Option<u64>,
    session_was_active: bool,
    continue_pending_work: bool,
) -> t::ResumeData {
    t::ResumeData {
        resume_time: protocol::now_iso(),
        event_count: event_count as u64,
        events_file_size_bytes,
        selected_model: Some(s.model.clone()),
        context: Some(cwd_context(s)),
        session_was_active: Some(session_was_active),
        already_in_use: Some(false),
        continue_pending_work: Some(continue_pending_work),
        ..Default::default()
    }
}
