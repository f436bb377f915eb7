//! Where each node keeps each tenant's workspace (`workspace_roots`, migration
//! `postgres/0009_workspace_roots.sql`): a session's working directory is a path on the node
//! that last ran it, and another node maps it onto its own copy of the workspace.

use super::PgEvents;
use crate::StoreError;

impl PgEvents {
    /// Records this node's workspace root of each tenant (at start; replaces earlier ones).
    pub async fn register_workspace_roots(&self, roots: &[(String, String)]) -> Result<(), StoreError> {
        for (tenant, root) in roots {
            sqlx::query(
                "INSERT INTO workspace_roots (tenant, node, root) VALUES ($1, $2, $3) \
                 ON CONFLICT (tenant, node) DO UPDATE SET root = EXCLUDED.root",
            )
            .bind(tenant)
            .bind(self.node_id())
            .bind(root)
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    /// Every node's workspace roots of `tenant`.
    pub async fn workspace_roots(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = sqlx::query_as("SELECT root FROM workspace_roots WHERE tenant = $1")
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|(r,)| r).collect())
    }
}
