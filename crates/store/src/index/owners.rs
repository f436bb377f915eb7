//! Session ownership on a shared server: the `session_owners` table (migration 0002).
//! Ownership is a claim made before the session is created and dropped when it is deleted.

use super::SessionIndex;
use crate::StoreError;

impl SessionIndex {
    /// Records `tenant` as the owner of `session_id` unless the session already has one.
    /// Returns whether this call made the claim.
    pub async fn claim_owner(&self, session_id: &str, tenant: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("INSERT OR IGNORE INTO session_owners (session_id, tenant) VALUES (?1, ?2)")
            .bind(session_id)
            .bind(tenant)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Forgets who owns `session_id` (the session was deleted, or its creation failed).
    pub async fn release_owner(&self, session_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_owners WHERE session_id = ?1").bind(session_id).execute(&self.pool).await?;
        Ok(())
    }

    /// The owning tenant of a session, if any.
    pub async fn owner(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT tenant FROM session_owners WHERE session_id = ?1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(t,)| t))
    }

    /// Every `(session id, tenant)` pair, for a server loading its ownership map at start.
    pub async fn owners(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(sqlx::query_as("SELECT session_id, tenant FROM session_owners").fetch_all(&self.pool).await?)
    }

    /// Whether the database answers (`/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::SessionIndex;

    #[tokio::test]
    async fn the_first_claim_wins_and_release_frees_the_id() {
        let index = SessionIndex::open_in_memory().await.unwrap();
        assert!(index.claim_owner("s1", "alpha").await.unwrap());
        assert!(!index.claim_owner("s1", "beta").await.unwrap(), "a second tenant cannot take it");
        assert_eq!(index.owner("s1").await.unwrap().as_deref(), Some("alpha"));
        assert_eq!(index.owners().await.unwrap(), vec![("s1".to_string(), "alpha".to_string())]);
        index.release_owner("s1").await.unwrap();
        assert_eq!(index.owner("s1").await.unwrap(), None);
        assert!(index.claim_owner("s1", "beta").await.unwrap());
        index.ping().await.unwrap();
    }

    #[tokio::test]
    async fn ownership_survives_an_index_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let layout = crate::Layout::new(dir.path());
        let index = SessionIndex::open(layout.db_path()).await.unwrap();
        index.claim_owner("s1", "alpha").await.unwrap();
        index.rebuild_from_logs(&layout).await.unwrap();
        assert_eq!(index.owner("s1").await.unwrap().as_deref(), Some("alpha"));
    }
}
