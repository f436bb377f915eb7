//! A client's sessionFs provider: the session's state files and (when the client declared
//! SQLite) its database live with the client, reached by `sessionFs.*` requests naming the
//! session. The store decides what is written where; this is only the transport.

use std::sync::Arc;

use protocol::generated::types as t;
use serde_json::{json, Value};
use store::session_db::{QueryKind, SqlBackend, SqlResult};
use store::session_fs::{RemoteState, SessionFs};

use crate::handle::{PlanOp, PlanResult};

use crate::emitter::ClientRequester;

/// What a connection declared with `sessionFs.setProvider`.
#[derive(Clone, Debug)]
pub struct FsProvider {
    /// The client's directory for a session's state (the client namespaces it per session).
    pub state_path: String,
    /// The client also keeps each session's SQLite database.
    pub sqlite: bool,
}

/// `sessionFs.*` for one session through one client.
pub struct ClientFs {
    pub(crate) client: Arc<dyn ClientRequester>,
    pub(crate) session_id: String,
}

impl ClientFs {
    async fn call(&self, method: &str, mut params: Value) -> Result<Value, String> {
        params["sessionId"] = Value::String(self.session_id.clone());
        self.client.request(method, params).await
    }
}

/// A provider's error result (`{code, message}`, or `{error: {...}}`) as a message; `None`
/// when the answer carries none. ENOENT is reported as such so callers can tell "missing".
fn fs_error(answer: &Value) -> Option<t::SessionFsError> {
    let e = match answer.get("error") {
        Some(e) if !e.is_null() => e,
        _ if answer.get("code").is_some() => answer,
        _ => return None,
    };
    serde_json::from_value(e.clone()).ok()
}

fn message(e: t::SessionFsError) -> String {
    format!("{}: {}", e.code.as_str(), e.message.unwrap_or_default())
}

fn unit(answer: Value) -> Result<(), String> {
    match fs_error(&answer) {
        Some(e) => Err(message(e)),
        None => Ok(()),
    }
}

#[async_trait::async_trait]
impl SessionFs for ClientFs {
    async fn read_file(&self, path: &str) -> Result<Option<String>, String> {
        let answer = self.call("sessionFs.readFile", json!({"path": path})).await?;
        match fs_error(&answer) {
            Some(e) if e.code == t::SessionFsErrorCode::Enoent => Ok(None),
            Some(e) => Err(message(e)),
            None => {
                let read: t::SessionFsReadFileResult = serde_json::from_value(answer).map_err(|e| e.to_string())?;
                Ok(Some(read.content))
            }
        }
    }

    async fn write_file(&self, path: &str, content: &str) -> Result<(), String> {
        unit(self.call("sessionFs.writeFile", json!({"path": path, "content": content})).await?)
    }

    async fn append_file(&self, path: &str, content: &str) -> Result<(), String> {
        unit(self.call("sessionFs.appendFile", json!({"path": path, "content": content})).await?)
    }

    async fn exists(&self, path: &str) -> Result<bool, String> {
        let answer = self.call("sessionFs.exists", json!({"path": path})).await?;
        let r: t::SessionFsExistsResult = serde_json::from_value(answer).map_err(|e| e.to_string())?;
        Ok(r.exists)
    }

    async fn mkdir(&self, path: &str) -> Result<(), String> {
        unit(self.call("sessionFs.mkdir", json!({"path": path, "recursive": true})).await?)
    }

    async fn rm(&self, path: &str) -> Result<(), String> {
        unit(self.call("sessionFs.rm", json!({"path": path, "recursive": false, "force": true})).await?)
    }
}

/// `plan.md` in the client's state directory (the actor's plan operation for such sessions).
pub(crate) async fn plan(
    remote: RemoteState,
    op: PlanOp,
    emit: impl Fn(t::PlanChangedData) -> String,
) -> Result<PlanResult, store::StoreError> {
    match op {
        PlanOp::Read => {
            Ok(PlanResult::Read { content: remote.read("plan.md").await?, path: remote.path("plan.md").into() })
        }
        PlanOp::Update(content) => {
            let existed = remote.read("plan.md").await?.is_some();
            remote.write("plan.md", &content).await?;
            let operation = if existed { t::PlanChangedOperation::Update } else { t::PlanChangedOperation::Create };
            emit(t::PlanChangedData { operation });
            Ok(PlanResult::Changed)
        }
        PlanOp::Delete => {
            if remote.remove("plan.md").await? {
                emit(t::PlanChangedData { operation: t::PlanChangedOperation::Delete });
            }
            Ok(PlanResult::Changed)
        }
    }
}

/// Saves a result too large for the model under `temp/` in the client's state directory and
/// returns the text that replaces it; `None` when small, or when the write failed.
pub(crate) async fn spill_if_large(remote: &RemoteState, text: &str) -> Option<String> {
    if text.len() <= tools::large_output::LARGE_OUTPUT_THRESHOLD {
        return None;
    }
    let name = tools::large_output::spill_name();
    let relative = format!("temp/{name}");
    if let Err(e) = remote.write(&relative, text).await {
        tracing::warn!(error = %e, "could not save large tool output through sessionFs");
        return None;
    }
    Some(tools::large_output::large_output_text(text, std::path::Path::new(&remote.path(&relative))))
}

#[async_trait::async_trait]
impl SqlBackend for ClientFs {
    async fn execute(&self, kind: QueryKind, sql: &str) -> Result<SqlResult, String> {
        let answer = self.call("sessionFs.sqliteQuery", json!({"queryType": kind.as_str(), "query": sql})).await?;
        let r: t::SessionFsSqliteQueryResult = serde_json::from_value(answer).map_err(|e| e.to_string())?;
        if let Some(e) = r.error {
            return Err(e.message.unwrap_or_else(|| e.code.as_str().to_string()));
        }
        Ok(SqlResult {
            columns: r.columns,
            rows: r.rows,
            rows_affected: r.rows_affected,
            last_insert_rowid: r.last_insert_rowid,
        })
    }
}

/// [`tools::ToolOutput::spill_if_large`] into the client's state directory.
pub(crate) async fn spill_output(remote: &RemoteState, mut output: tools::ToolOutput) -> tools::ToolOutput {
    if let Some(short) = spill_if_large(remote, &output.text_for_llm).await {
        let full = std::mem::replace(&mut output.text_for_llm, short);
        output.detailed_content.get_or_insert(full);
    }
    output
}
