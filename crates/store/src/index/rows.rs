//! The `sessions` table's rows and the statements that write them, shared by the index's
//! queries (the parent), its writer of modification times (`touches`) and a `-p` run's
//! write-behind thread (`behind`). In a leaf: in the parent, which imports those files, they
//! made an import circle of them (issue 32).

use std::time::Duration;

/// One row of the `sessions` table. Timestamps are the ISO strings events carry
/// (`2026-11-22T11:29:03.301Z`), which sort chronologically as text.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub cwd: String,
    pub git_root: Option<String>,
    pub repository: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    /// `name` in `session.list`: the first prompt, or the name set by the user.
    pub title: Option<String>,
    /// `summary` in `session.list`: the first prompt.
    pub summary: Option<String>,
    pub client_name: Option<String>,
    /// `startTime` in `session.list`.
    pub created_at: String,
    /// `modifiedTime` in `session.list`: time of the last persisted event.
    pub updated_at: String,
    /// Only sessions with a user message are visible to list / getLastId / getMetadata.
    pub has_user_message: bool,
}

pub(super) const COLUMNS: &str = "id, cwd, git_root, repository, branch, model, title, summary, \
                                  client_name, created_at, updated_at, has_user_message";

// Right-hand sides see the old row, so both CASEs test the title from before.
pub(super) const MARK_USER_MESSAGE_SQL: &str = "UPDATE sessions SET has_user_message = TRUE, \
     title = CASE WHEN title IS NULL THEN ?1 ELSE title END, \
     summary = CASE WHEN title IS NULL THEN ?1 ELSE summary END \
     WHERE id = ?2";

pub(super) fn upsert_sql() -> String {
    format!(
        "INSERT INTO sessions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT(id) DO UPDATE SET \
             cwd = excluded.cwd, git_root = excluded.git_root, \
             repository = excluded.repository, branch = excluded.branch, \
             model = excluded.model, title = excluded.title, summary = excluded.summary, \
             client_name = excluded.client_name, created_at = excluded.created_at, \
             updated_at = excluded.updated_at, \
             has_user_message = (sessions.has_user_message OR excluded.has_user_message)"
    )
}

/// How long touches gather before they are written.
pub(crate) const DELAY: Duration = Duration::from_millis(20);

pub(crate) const TOUCH_SQL: &str = "UPDATE sessions SET updated_at = ?1 WHERE id = ?2";
