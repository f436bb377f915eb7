//! Files mirrored for nodes that share no disk, in one of two scopes ([`FileScope`]): a
//! session's own files (everything in its directory but the log and `workspace.yaml`) in
//! `session_files` (migration `postgres/0004_shared_files.sql`), and a tenant's workspace in
//! `workspace_files` (`postgres/0008_workspace_files.sql`). A file over [`INLINE_MAX_BYTES`] is
//! kept in pieces of [`CHUNK_BYTES`] (`*_file_chunks`, `postgres/0005_large_files.sql`), read and
//! written one piece at a time so neither side holds it whole.

use futures::TryStreamExt;
use sqlx::Row;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::PgEvents;
use crate::StoreError;

/// Files up to this size are one row; larger ones go in pieces.
pub const INLINE_MAX_BYTES: u64 = 16 << 20;

/// The size of one piece of a large file.
pub const CHUNK_BYTES: usize = 4 << 20;

/// Which set of mirrored files a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileScope {
    /// A session's directory, keyed by session id.
    Session,
    /// A tenant's workspace, keyed by tenant name.
    Workspace,
}

impl FileScope {
    /// (files table, chunks table, key column, version sequence)
    fn names(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            FileScope::Session => ("session_files", "session_file_chunks", "session_id", "session_files_version"),
            FileScope::Workspace => ("workspace_files", "workspace_file_chunks", "tenant", "workspace_files_version"),
        }
    }
}

/// One file's latest state: its content inline, in `chunks` pieces, or neither once removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// Relative to the session's directory or the workspace root, `/`-separated.
    pub path: String,
    pub content: Option<Vec<u8>>,
    /// Pieces in `session_file_chunks` (0: inline or removed); read them with
    /// [`PgEvents::copy_file_chunks`].
    pub chunks: i32,
    pub version: i64,
}

impl SharedFile {
    pub fn removed(&self) -> bool {
        self.content.is_none() && self.chunks == 0
    }
}

impl PgEvents {
    /// Records a file's content (`None`: removed), dropping the pieces of an earlier large copy.
    /// Returns the row's new version.
    pub async fn put_file(
        &self,
        scope: FileScope,
        key: &str,
        path: &str,
        content: Option<&[u8]>,
    ) -> Result<i64, StoreError> {
        let (files, chunks, col, seq) = scope.names();
        let (version,): (i64,) = sqlx::query_as(&format!(
            "WITH gone AS (DELETE FROM {chunks} WHERE {col} = $1 AND path = $2) \
             INSERT INTO {files} ({col}, path, content, chunks, size) VALUES ($1, $2, $3, 0, $4) \
             ON CONFLICT ({col}, path) DO UPDATE \
               SET content = excluded.content, chunks = 0, size = excluded.size, version = nextval('{seq}') \
             RETURNING version"
        ))
        .bind(key)
        .bind(path)
        .bind(content)
        .bind(content.map(|c| c.len() as i64))
        .fetch_one(self.pool())
        .await?;
        Ok(version)
    }

    /// Records a large file's content in pieces read from `source` one at a time; readers see
    /// the old pieces or the new ones, never a mix (one transaction). Returns the new version.
    pub async fn put_file_chunked(
        &self,
        scope: FileScope,
        key: &str,
        path: &str,
        source: &mut (dyn AsyncRead + Unpin + Send),
    ) -> Result<i64, StoreError> {
        let (files, chunks, col, seq) = scope.names();
        let mut tx = self.pool().begin().await?;
        sqlx::query(&format!("DELETE FROM {chunks} WHERE {col} = $1 AND path = $2"))
            .bind(key)
            .bind(path)
            .execute(&mut *tx)
            .await?;
        let mut n: i32 = 0;
        let mut size: i64 = 0;
        let mut piece = Vec::with_capacity(CHUNK_BYTES);
        let insert = format!("INSERT INTO {chunks} ({col}, path, n, data) VALUES ($1, $2, $3, $4)");
        loop {
            piece.clear();
            let read = (&mut *source)
                .take(CHUNK_BYTES as u64)
                .read_to_end(&mut piece)
                .await
                .map_err(|source| StoreError::Io { path: path.to_string(), source })?;
            if read == 0 && n > 0 {
                break;
            }
            sqlx::query(&insert).bind(key).bind(path).bind(n).bind(&piece).execute(&mut *tx).await?;
            n += 1;
            size += read as i64;
            if read < CHUNK_BYTES {
                break;
            }
        }
        let (version,): (i64,) = sqlx::query_as(&format!(
            "INSERT INTO {files} ({col}, path, content, chunks, size) VALUES ($1, $2, NULL, $3, $4) \
             ON CONFLICT ({col}, path) DO UPDATE \
               SET content = NULL, chunks = excluded.chunks, size = excluded.size, version = nextval('{seq}') \
             RETURNING version"
        ))
        .bind(key)
        .bind(path)
        .bind(n)
        .bind(size)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(version)
    }

    /// Writes a large file's pieces to `out` in order, one at a time (a single statement: the
    /// pieces of one version). Returns the bytes written.
    pub async fn copy_file_chunks(
        &self,
        scope: FileScope,
        key: &str,
        path: &str,
        out: &mut (dyn AsyncWrite + Unpin + Send),
    ) -> Result<u64, StoreError> {
        let (_, chunks, col, _) = scope.names();
        let sql = format!("SELECT data FROM {chunks} WHERE {col} = $1 AND path = $2 ORDER BY n");
        let mut rows = sqlx::query(&sql).bind(key).bind(path).fetch(self.pool());
        let mut written = 0u64;
        let io = |source| StoreError::Io { path: path.to_string(), source };
        while let Some(row) = rows.try_next().await? {
            let data: Vec<u8> = row.try_get(0)?;
            out.write_all(&data).await.map_err(io)?;
            written += data.len() as u64;
        }
        out.flush().await.map_err(io)?;
        Ok(written)
    }

    /// The files changed after `version`, in the order they changed.
    pub async fn files_after(&self, scope: FileScope, key: &str, version: i64) -> Result<Vec<SharedFile>, StoreError> {
        let (files, _, col, _) = scope.names();
        let rows = sqlx::query(&format!(
            "SELECT path, content, chunks, version FROM {files} \
             WHERE {col} = $1 AND version > $2 ORDER BY version"
        ))
        .bind(key)
        .bind(version)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(SharedFile {
                    path: row.try_get(0)?,
                    content: row.try_get(1)?,
                    chunks: row.try_get(2)?,
                    version: row.try_get(3)?,
                })
            })
            .collect()
    }
}

/// Sessions created or deleted on some node, as `session.lifecycle` tells them.
#[derive(Debug, Clone)]
pub struct LifecycleRow {
    pub seq: i64,
    /// The tenant owning the session when the row was written.
    pub tenant: Option<String>,
    /// The notification's params.
    pub json: String,
}

impl PgEvents {
    /// Records a lifecycle notification of this node, with the session's owner (if any) now.
    pub async fn publish_lifecycle(&self, session_id: &str, json: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_lifecycle (node_id, tenant, json) \
             VALUES ($1, (SELECT tenant FROM session_owners WHERE session_id = $2), $3)",
        )
        .bind(self.node_id())
        .bind(session_id)
        .bind(json)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The position of the newest lifecycle row (a node starts reading after it).
    pub async fn lifecycle_head(&self) -> Result<i64, StoreError> {
        let (head,): (Option<i64>,) =
            sqlx::query_as("SELECT MAX(seq) FROM session_lifecycle").fetch_one(self.pool()).await?;
        Ok(head.unwrap_or(0))
    }

    /// Other nodes' lifecycle rows after `seq`; rows older than an hour are dropped on the way.
    pub async fn lifecycle_after(&self, seq: i64) -> Result<Vec<LifecycleRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, tenant, json FROM session_lifecycle WHERE seq > $1 AND node_id <> $2 ORDER BY seq",
        )
        .bind(seq)
        .bind(self.node_id())
        .fetch_all(self.pool())
        .await?;
        let rows = rows
            .into_iter()
            .map(|row| Ok(LifecycleRow { seq: row.try_get(0)?, tenant: row.try_get(1)?, json: row.try_get(2)? }))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(rows)
    }

    /// Drops lifecycle rows every node has long read.
    pub async fn prune_lifecycle(&self) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_lifecycle WHERE created_at < now() - interval '1 hour'")
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
