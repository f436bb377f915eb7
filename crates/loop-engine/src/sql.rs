//! The `sql` tool: statements against the session's own SQLite database (local, or the
//! client's through sessionFs), results in the original's words; changes to `todos` or
//! `todo_deps` are announced with `session.todos_changed`.

use std::sync::Arc;

use llm_providers::ToolSpec;
use protocol::generated::types as t;
use serde_json::{json, Value};
use store::session_db::{QueryKind, SqlBackend, SqlResult, TODO_SCHEMA};
use tools::ToolOutput;

use crate::run_ctx::RunCtx;

pub const SQL: &str = "sql";

const DESCRIPTION: &str = "Query the session SQLite database for structured workflows. `todos` and `todo_deps` already exist; do not recreate them; create other tables as needed. Supports SQLite SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, and DROP.

**Session database** (`database: \"session\"`, default): persists for this session and is isolated from other sessions. Use it for structured operational data such as todos, test cases, batches, and state.

**Built-in tables:**
- `todos`: id, title, description, status (pending/in_progress/done/blocked), created_at, updated_at
- `todo_deps`: todo_id, depends_on

`todos` and `todo_deps` already exist; insert into them; never create them.

**Todo tracking with dependencies:** Use descriptive kebab-case IDs, gerund titles (for example \"Creating user auth module\"), and self-contained descriptions. Status meanings:
- `pending`: not started
- `in_progress`: active; set before starting
- `done`: complete
- `blocked`: cannot proceed; explain why in the description

Record every actual prerequisite in `todo_deps`; do not infer dependencies from list order. Before inserting a dependency, insert both todos referenced by its `todo_deps` row. Todos with no prerequisites should remain independent.

Create other tables as needed to load/query data (including CSVs, API responses, and file listings), store structured intermediate results, or manage workflows.";

pub fn spec() -> ToolSpec {
    static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| ToolSpec {
        name: SQL.into(),
        description: DESCRIPTION.into(),
        parameters: Arc::new(json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A 2-5 word summary of what this query does (e.g., 'Insert auth todos', 'Query ready todos')."},
                "query": {"type": "string", "description": "The SQL query to execute. Supports SELECT, INSERT, UPDATE, DELETE, CREATE TABLE, ALTER TABLE, DROP TABLE, and other SQLite-compatible SQL."},
            },
            "required": ["description", "query"],
        })),
    })
    .clone()
}

/// Splits SQL text into statements at top-level `;` (not inside quotes or comments).
pub fn split_statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' => {
                cur.push(c);
                for d in chars.by_ref() {
                    cur.push(d);
                    if d == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        cur.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                cur.push(' ');
            }
            ';' => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The statement's leading keyword, upper-cased (`INSERT`, `SELECT`, ...).
fn keyword(stmt: &str) -> String {
    stmt.split(|c: char| !c.is_ascii_alphabetic()).find(|w| !w.is_empty()).unwrap_or("").to_ascii_uppercase()
}

pub fn kind_of(stmt: &str) -> QueryKind {
    match keyword(stmt).as_str() {
        "SELECT" | "WITH" | "PRAGMA" | "EXPLAIN" | "VALUES" => QueryKind::Query,
        "INSERT" | "UPDATE" | "DELETE" | "REPLACE" => QueryKind::Run,
        _ => QueryKind::Exec,
    }
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One statement's result in the original's words.
pub fn render(stmt: &str, r: &SqlResult) -> String {
    match (kind_of(stmt), keyword(stmt).as_str()) {
        (QueryKind::Run, "INSERT") | (QueryKind::Run, "REPLACE") => match r.last_insert_rowid {
            Some(id) => format!("{} row(s) inserted. Last inserted row ID: {id}.", r.rows_affected),
            None => format!("{} row(s) inserted.", r.rows_affected),
        },
        (QueryKind::Run, "UPDATE") => format!("{} row(s) updated.", r.rows_affected),
        (QueryKind::Run, _) => format!("{} row(s) deleted.", r.rows_affected),
        (QueryKind::Query, _) if r.rows.is_empty() => "Query returned 0 rows.".into(),
        (QueryKind::Query, _) => {
            let columns: Vec<String> =
                if r.columns.is_empty() { r.rows[0].keys().cloned().collect() } else { r.columns.clone() };
            let mut text = format!("{} row(s) returned:\n\n", r.rows.len());
            text.push_str(&format!("| {} |\n", columns.join(" | ")));
            text.push_str(&format!("|{}|\n", columns.iter().map(|_| "---").collect::<Vec<_>>().join("|")));
            for row in &r.rows {
                let cells: Vec<String> = columns.iter().map(|c| cell(row.get(c).unwrap_or(&Value::Null))).collect();
                text.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
            text.trim_end().to_string()
        }
        (QueryKind::Exec, _) => "Schema operation completed successfully.".into(),
    }
}

/// Whether a statement may change the todo tables.
fn touches_todos(stmt: &str) -> bool {
    kind_of(stmt) != QueryKind::Query && stmt.to_ascii_lowercase().contains("todo")
}

/// Runs `query` (one or more statements); returns the model's text, whether it failed, and
/// whether the todo tables may have changed.
pub async fn execute(db: &dyn SqlBackend, query: &str) -> (String, bool, bool) {
    let statements = split_statements(query);
    if statements.is_empty() {
        return ("Error: Empty query provided.".into(), true, false);
    }
    let mut todos = false;
    let mut done: Vec<(String, String)> = Vec::new();
    for stmt in &statements {
        match db.execute(kind_of(stmt), stmt).await {
            Ok(r) => {
                todos |= touches_todos(stmt);
                done.push((keyword(stmt), render(stmt, &r)));
            }
            Err(e) => {
                let text = if statements.len() == 1 {
                    format!("SQL Error: {e}")
                } else {
                    let mut t = format!("SQL Error: {e}");
                    if !done.is_empty() {
                        t.push_str(&format!("\n\nCompleted {} statement(s) before failure:\n\n", done.len()));
                        t.push_str(&numbered(&done));
                    }
                    t
                };
                return (text, true, todos);
            }
        }
    }
    if done.len() == 1 {
        return (done.remove(0).1, false, todos);
    }
    (format!("Executed {} statement(s):\n\n{}", done.len(), numbered(&done)), false, todos)
}

fn numbered(done: &[(String, String)]) -> String {
    done.iter()
        .enumerate()
        .map(|(i, (kw, text))| format!("{}. {kw}\n   {}", i + 1, text.replace('\n', "\n   ")))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Makes sure the todo tables exist in a database the client keeps (a local one creates
/// them when it opens).
pub async fn ensure_schema(db: &dyn SqlBackend) -> Result<(), String> {
    db.execute(QueryKind::Exec, TODO_SCHEMA).await.map(|_| ())
}

pub(crate) async fn run(ctx: &RunCtx, args: &Value) -> ToolOutput {
    let Some(query) = args.get("query").and_then(Value::as_str) else {
        return ToolOutput::fail("The `query` argument is required.");
    };
    let db = match ctx.handle.sql_db().await {
        Ok(db) => db,
        Err(e) => return ToolOutput::fail(format!("SQL Error: {e}")),
    };
    let (text, failed, todos) = execute(db.as_ref(), query).await;
    if todos {
        ctx.handle.emitter().emit(t::TodosChangedData {});
    }
    if failed {
        ToolOutput::fail(text)
    } else {
        ToolOutput::ok(text)
    }
}

/// The todo rows and their dependencies, for `session.plan.readSqlTodos*`.
pub async fn read_todos(
    db: &dyn SqlBackend,
) -> Result<(Vec<t::PlanSqlTodosRow>, Vec<t::PlanSqlTodoDependency>), String> {
    let s = |row: &serde_json::Map<String, Value>, k: &str| row.get(k).and_then(Value::as_str).map(str::to_string);
    let rows = db
        .execute(
            QueryKind::Query,
            "SELECT id, title, description, status, created_at FROM todos ORDER BY created_at, id",
        )
        .await?
        .rows
        .iter()
        .map(|r| t::PlanSqlTodosRow {
            id: s(r, "id"),
            title: s(r, "title"),
            description: s(r, "description"),
            status: s(r, "status"),
            created_at: s(r, "created_at"),
        })
        .collect();
    let deps = db
        .execute(QueryKind::Query, "SELECT todo_id, depends_on FROM todo_deps")
        .await?
        .rows
        .iter()
        .filter_map(|r| Some(t::PlanSqlTodoDependency { todo_id: s(r, "todo_id")?, depends_on: s(r, "depends_on")? }))
        .collect();
    Ok((rows, deps))
}

impl crate::handle::SessionHandle {
    /// The session's SQLite database, its todo tables made.
    pub async fn sql_db(&self) -> Result<Arc<dyn store::session_db::SqlBackend>, String> {
        let db = self.sql_backend().clone();
        if self.remote_state().is_some() {
            self.sql_ready().get_or_try_init(|| ensure_schema(db.as_ref())).await?;
        }
        Ok(db)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use store::session_db::LocalSessionDb;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let s = split_statements("INSERT INTO t VALUES ('a;b'); -- c;d\nSELECT 1;\n/* x; */ DELETE FROM t");
        assert_eq!(s, vec!["INSERT INTO t VALUES ('a;b')", "SELECT 1", "DELETE FROM t"]);
        assert_eq!(kind_of("create table x (a)"), QueryKind::Exec);
        assert_eq!(kind_of("  insert into x values (1)"), QueryKind::Run);
        assert_eq!(kind_of("WITH a AS (SELECT 1) SELECT * FROM a"), QueryKind::Query);
    }

    #[tokio::test]
    async fn results_read_as_the_original_words_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = LocalSessionDb::new(dir.path().join("session.db"));
        let (text, failed, todos) = execute(&db, "CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT)").await;
        assert_eq!((text.as_str(), failed, todos), ("Schema operation completed successfully.", false, false));
        let (text, _, _) = execute(&db, "INSERT INTO items (id, name) VALUES ('a1', 'Widget')").await;
        assert_eq!(text, "1 row(s) inserted. Last inserted row ID: 1.");
        let q = "INSERT INTO todos (id, title, status) VALUES ('alpha', 'First todo', 'pending');\nINSERT INTO todos (id, title, status) VALUES ('beta', 'Second todo', 'done');\nINSERT INTO todo_deps (todo_id, depends_on) VALUES ('beta', 'alpha');";
        let (text, failed, todos) = execute(&db, q).await;
        assert!(!failed && todos);
        assert_eq!(
            text,
            "Executed 3 statement(s):\n\n1. INSERT\n   1 row(s) inserted. Last inserted row ID: 1.\n\n2. INSERT\n   1 row(s) inserted. Last inserted row ID: 2.\n\n3. INSERT\n   1 row(s) inserted. Last inserted row ID: 1."
        );
        let (rows, deps) = read_todos(&db).await.unwrap();
        assert_eq!(rows.iter().filter_map(|r| r.id.clone()).collect::<Vec<_>>(), vec!["alpha", "beta"]);
        assert_eq!(deps, vec![t::PlanSqlTodoDependency { todo_id: "beta".into(), depends_on: "alpha".into() }]);
        let (text, _, _) = execute(&db, "UPDATE todos SET status = 'done' WHERE id = 'alpha'").await;
        assert_eq!(text, "1 row(s) updated.");
        let (text, failed, _) = execute(&db, "SELECT * FROM nope").await;
        assert!(failed && text.starts_with("SQL Error: no such table"), "{text}");
        let (text, _, _) = execute(&db, "SELECT id FROM items").await;
        assert_eq!(text, "1 row(s) returned:\n\n| id |\n|---|\n| a1 |");
    }
}
