//! Session ownership on a shared server: the `session_owners` table (migrations 0002, and
//! sqlite 0003 / postgres 0012 for the creating user). Ownership is a claim made before the
//! session is created and dropped when it is deleted.

use super::{on_pool, SessionIndex};
use crate::error::StoreError;

/// What a claim of a session's ownership came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Claimed,
    /// It has an owner already (this tenant or another).
    Taken,
    /// The tenant owns as many sessions as it may.
    Full,
}

impl SessionIndex {
    /// Records `tenant` as the owner of `session_id` (and `creator`, the tenant's user who
    /// created it, if any) unless the session already has one. Returns whether this call made
    /// the claim.
    pub async fn claim_owner(&self, session_id: &str, tenant: &str, creator: Option<&str>) -> Result<bool, StoreError> {
        Ok(self.claim_owner_within(session_id, tenant, creator, None).await? == Claim::Claimed)
    }

    /// [`SessionIndex::claim_owner`] while `tenant` owns fewer than `max_sessions` sessions:
    /// counted in the same statement, so that nodes sharing the database hold the limit
    /// together.
    pub async fn claim_owner_within(
        &self,
        session_id: &str,
        tenant: &str,
        creator: Option<&str>,
        max_sessions: Option<u64>,
    ) -> Result<Claim, StoreError> {
        let max = max_sessions.map_or(i64::MAX, |m| i64::try_from(m).unwrap_or(i64::MAX));
        let text = "INSERT INTO session_owners (session_id, tenant, creator) SELECT ?1, ?2, ?3 \
                    WHERE (SELECT COUNT(*) FROM session_owners WHERE tenant = ?2) < ?4 ON CONFLICT DO NOTHING";
        let done = on_pool!(self, text, |pool, sql| sqlx::query(&sql)
            .bind(session_id)
            .bind(tenant)
            .bind(creator)
            .bind(max)
            .execute(pool)
            .await?
            .rows_affected());
        if done > 0 {
            return Ok(Claim::Claimed);
        }
        Ok(if self.ownership(session_id).await?.is_some() { Claim::Taken } else { Claim::Full })
    }

    /// Forgets who owns `session_id` (the session was deleted, or its creation failed).
    pub async fn release_owner(&self, session_id: &str) -> Result<(), StoreError> {
        let text = "DELETE FROM session_owners WHERE session_id = ?1";
        on_pool!(self, text, |pool, sql| sqlx::query(&sql).bind(session_id).execute(pool).await?.rows_affected());
        Ok(())
    }

    /// The owning tenant of a session, if any.
    pub async fn owner(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.ownership(session_id).await?.map(|(tenant, _)| tenant))
    }

    /// The owning tenant of a session and the user of it who created the session, if any.
    pub async fn ownership(&self, session_id: &str) -> Result<Option<(String, Option<String>)>, StoreError> {
        let text = "SELECT tenant, creator FROM session_owners WHERE session_id = ?1";
        Ok(on_pool!(self, text, |pool, sql| sqlx::query_as(&sql).bind(session_id).fetch_optional(pool).await?))
    }

    /// Every `(session id, tenant)` pair, for a server loading its ownership map at start.
    pub async fn owners(&self) -> Result<Vec<(String, String)>, StoreError> {
        let text = "SELECT session_id, tenant FROM session_owners";
        Ok(on_pool!(self, text, |pool, sql| sqlx::query_as(&sql).fetch_all(pool).await?))
    }

    /// Whether the database answers (`/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(self, "SELECT 1", |pool, sql| sqlx::query(&sql).execute(pool).await?.rows_affected());
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
        assert!(index.claim_owner("s1", "alpha", Some("alice")).await.unwrap());
        assert!(!index.claim_owner("s1", "beta", None).await.unwrap(), "a second tenant cannot take it");
        assert_eq!(index.owner("s1").await.unwrap().as_deref(), Some("alpha"));
        assert_eq!(index.ownership("s1").await.unwrap(), Some(("alpha".to_string(), Some("alice".to_string()))));
        assert_eq!(index.owners().await.unwrap(), vec![("s1".to_string(), "alpha".to_string())]);
        index.release_owner("s1").await.unwrap();
        assert_eq!(index.owner("s1").await.unwrap(), None);
        assert!(index.claim_owner("s1", "beta", None).await.unwrap());
        assert_eq!(index.ownership("s1").await.unwrap(), Some(("beta".to_string(), None)));
        index.ping().await.unwrap();
    }

    #[tokio::test]
    async fn a_tenant_claims_no_more_sessions_than_it_may_hold() {
        use super::Claim;
        let index = SessionIndex::open_in_memory().await.unwrap();
        assert_eq!(index.claim_owner_within("s1", "alpha", None, Some(2)).await.unwrap(), Claim::Claimed);
        assert_eq!(index.claim_owner_within("s2", "alpha", None, Some(2)).await.unwrap(), Claim::Claimed);
        assert_eq!(index.claim_owner_within("s3", "alpha", None, Some(2)).await.unwrap(), Claim::Full);
        assert_eq!(index.claim_owner_within("s3", "beta", None, Some(2)).await.unwrap(), Claim::Claimed, "per tenant");
        assert_eq!(index.claim_owner_within("s1", "beta", None, Some(2)).await.unwrap(), Claim::Taken);
        index.release_owner("s1").await.unwrap();
        assert_eq!(index.claim_owner_within("s4", "alpha", None, Some(2)).await.unwrap(), Claim::Claimed);
        assert_eq!(index.ownership("s3").await.unwrap(), Some(("beta".to_string(), None)));
    }

    #[tokio::test]
    async fn ownership_survives_an_index_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let layout = crate::Layout::new(dir.path());
        let index = SessionIndex::open(layout.db_path()).await.unwrap();
        index.claim_owner("s1", "alpha", Some("alice")).await.unwrap();
        index.rebuild_from_logs(&layout).await.unwrap();
        assert_eq!(index.owner("s1").await.unwrap().as_deref(), Some("alpha"));
    }
}
