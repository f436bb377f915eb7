//! A session's own SQLite database (the `sql` tool's `todos`, `todo_deps` and whatever tables
//! the model makes). One statement at a time through [`SqlBackend`]: either a local file
//! (`session-state/<id>/session.db`) or the client's database when it declared a sessionFs
//! provider with SQLite ([`SqlBackend`] implemented elsewhere).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

/// How a statement is executed: `exec` for schema changes (no result), `query` for rows,
/// `run` for changes (counts and the last row id). The sessionFs wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    Exec,
    Query,
    Run,
}

impl QueryKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            QueryKind::Exec => "exec",
            QueryKind::Query => "query",
            QueryKind::Run => "run",
        }
    }
}

/// What one statement produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlResult {
    pub columns: Vec<String>,
    pub rows: Vec<Map<String, Value>>,
    pub rows_affected: u64,
    pub last_insert_rowid: Option<i64>,
}

/// Runs one statement against a session's database; `Err` is SQLite's message.
#[async_trait::async_trait]
pub trait SqlBackend: Send + Sync {
    async fn execute(&self, kind: QueryKind, sql: &str) -> Result<SqlResult, String>;
}

/// The tables every session database starts with (the original's definitions).
pub const TODO_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS todos (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT,
    status TEXT DEFAULT 'pending' CHECK(status IN ('pending', 'in_progress', 'done', 'blocked')),
    created_at TEXT DEFAULT (datetime('now')),
    updated_at TEXT DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS todo_deps (
    todo_id TEXT NOT NULL,
    depends_on TEXT NOT NULL,
    PRIMARY KEY (todo_id, depends_on),
    FOREIGN KEY (todo_id) REFERENCES todos(id),
    FOREIGN KEY (depends_on) REFERENCES todos(id)
);";

/// The local database file, opened on first use; statements run on the blocking pool.
pub struct LocalSessionDb {
    path: PathBuf,
    conn: Arc<Mutex<Option<rusqlite::Connection>>>,
}

impl LocalSessionDb {
    pub fn new(path: PathBuf) -> Self {
        Self { path, conn: Arc::new(Mutex::new(None)) }
    }

    /// Whether the file exists (a session that never used `sql` has none).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }
}

fn open(path: &std::path::Path) -> Result<rusqlite::Connection, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
    conn.execute_batch(TODO_SCHEMA).map_err(|e| e.to_string())?;
    confine(&conn);
    Ok(conn)
}

/// Pragmas the model may use: reading the schema and checks, and the few settings that change
/// nothing outside this database.
const PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
    "foreign_keys",
    "integrity_check",
    "quick_check",
    "user_version",
    "application_id",
    "collation_list",
    "function_list",
    "pragma_list",
    "encoding",
    "page_count",
    "page_size",
    "freelist_count",
    "schema_version",
    "data_version",
];

/// The model's SQL reaches its own database and nothing else: no other file attached (nor
/// written by `VACUUM INTO`, which attaches its target), no extension loaded, no pragma that
/// changes how SQLite treats files. Denied statements fail with SQLite's "not authorized".
fn confine(conn: &rusqlite::Connection) {
    use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0);
    conn.authorizer(Some(|ctx: AuthContext<'_>| match ctx.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        AuthAction::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
            Authorization::Deny
        }
        AuthAction::Pragma { pragma_name, .. } if !PRAGMAS.iter().any(|p| p.eq_ignore_ascii_case(pragma_name)) => {
            Authorization::Deny
        }
        _ => Authorization::Allow,
    }));
}

fn to_json(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(format!("<blob {} bytes>", b.len())),
    }
}

fn run_on(conn: &rusqlite::Connection, kind: QueryKind, sql: &str) -> Result<SqlResult, String> {
    let e = |e: rusqlite::Error| e.to_string();
    match kind {
        QueryKind::Exec => {
            conn.execute_batch(sql).map_err(e)?;
            Ok(SqlResult::default())
        }
        QueryKind::Run => {
            let n = conn.execute(sql, []).map_err(e)?;
            Ok(SqlResult {
                rows_affected: n as u64,
                last_insert_rowid: Some(conn.last_insert_rowid()),
                ..Default::default()
            })
        }
        QueryKind::Query => {
            let mut stmt = conn.prepare(sql).map_err(e)?;
            let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
            let mut rows = Vec::new();
            let mut cursor = stmt.query([]).map_err(e)?;
            while let Some(row) = cursor.next().map_err(e)? {
                let mut obj = Map::new();
                for (i, c) in columns.iter().enumerate() {
                    obj.insert(c.clone(), to_json(row.get_ref(i).map_err(e)?));
                }
                rows.push(obj);
            }
            Ok(SqlResult { columns, rows, ..Default::default() })
        }
    }
}

#[async_trait::async_trait]
impl SqlBackend for LocalSessionDb {
    async fn execute(&self, kind: QueryKind, sql: &str) -> Result<SqlResult, String> {
        let (path, conn, sql) = (self.path.clone(), self.conn.clone(), sql.to_string());
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_none() {
                *guard = Some(open(&path)?);
            }
            match guard.as_ref() {
                Some(c) => run_on(c, kind, &sql),
                None => Err("session database is not open".into()),
            }
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_models_sql_cannot_reach_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = LocalSessionDb::new(dir.path().join("s").join("session.db"));
        let other = dir.path().join("other.db");
        let copy = dir.path().join("copy.db");
        rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE secrets (v TEXT)").unwrap();
        for sql in [
            format!("ATTACH DATABASE '{}' AS o", other.display()),
            format!("VACUUM INTO '{}'", copy.display()),
            "SELECT load_extension('/tmp/evil.so')".to_string(),
            "PRAGMA writable_schema = 1".to_string(),
            "PRAGMA temp_store_directory = '/tmp'".to_string(),
        ] {
            let err = db.execute(QueryKind::Exec, &sql).await.expect_err(&sql);
            let refused = ["not authorized", "authorization denied", "too many attached"];
            assert!(refused.iter().any(|r| err.contains(r)), "{sql}: {err}");
        }
        assert!(!copy.exists(), "VACUUM INTO wrote a file");
        // What the model needs still works.
        let info = db.execute(QueryKind::Query, "PRAGMA table_info(todos)").await.unwrap();
        assert!(info.rows.iter().any(|r| r["name"] == "title"));
        db.execute(QueryKind::Exec, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x')").await.unwrap();
    }

    #[tokio::test]
    async fn local_db_has_todo_tables_and_reports_changes() {
        let dir = tempfile::tempdir().unwrap();
        let db = LocalSessionDb::new(dir.path().join("s").join("session.db"));
        assert!(!db.exists());
        let r = db.execute(QueryKind::Run, "INSERT INTO todos (id, title) VALUES ('a', 'A')").await.unwrap();
        assert_eq!((r.rows_affected, r.last_insert_rowid), (1, Some(1)));
        assert!(db.exists());
        let q = db.execute(QueryKind::Query, "SELECT id, status FROM todos").await.unwrap();
        assert_eq!(q.columns, vec!["id", "status"]);
        assert_eq!(q.rows[0]["status"], "pending");
        let err = db.execute(QueryKind::Exec, "CREATE TABLE todos (x)").await.unwrap_err();
        assert!(err.contains("already exists"), "{err}");
    }
}
