//! What a shared server's tenants used, per user and UTC day: the `tenant_usage` table
//! (migrations sqlite 0004, postgres 0013). Each node adds what it counted since its last
//! write, so the sums are the cluster's.

use super::{on_pool, SessionIndex};
use crate::error::StoreError;

/// One user's use on one day (`user` empty: the tenant's own token), or what a node adds to it.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct UsageRow {
    pub tenant: String,
    #[sqlx(rename = "user_name")]
    pub user: String,
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub model_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub premium_requests: f64,
    pub tool_calls: i64,
    pub sandbox_denials: i64,
}

impl SessionIndex {
    /// Adds each row's figures to what its tenant, user and day hold, all or none.
    pub async fn add_usage(&self, rows: &[UsageRow]) -> Result<(), StoreError> {
        let text = "INSERT INTO tenant_usage (tenant, user_name, day, model_calls, input_tokens, output_tokens, \
                    cache_read_tokens, cache_write_tokens, premium_requests, tool_calls, sandbox_denials) \
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                    ON CONFLICT (tenant, user_name, day) DO UPDATE SET \
                    model_calls = tenant_usage.model_calls + excluded.model_calls, \
                    input_tokens = tenant_usage.input_tokens + excluded.input_tokens, \
                    output_tokens = tenant_usage.output_tokens + excluded.output_tokens, \
                    cache_read_tokens = tenant_usage.cache_read_tokens + excluded.cache_read_tokens, \
                    cache_write_tokens = tenant_usage.cache_write_tokens + excluded.cache_write_tokens, \
                    premium_requests = tenant_usage.premium_requests + excluded.premium_requests, \
                    tool_calls = tenant_usage.tool_calls + excluded.tool_calls, \
                    sandbox_denials = tenant_usage.sandbox_denials + excluded.sandbox_denials";
        if rows.is_empty() {
            return Ok(());
        }
        // One transaction: all of a node's figures go in, or none (and it tries again).
        on_pool!(self, text, |pool, sql| {
            let mut tx = pool.begin().await?;
            for row in rows {
                sqlx::query(&sql)
                    .bind(&row.tenant)
                    .bind(&row.user)
                    .bind(&row.day)
                    .bind(row.model_calls)
                    .bind(row.input_tokens)
                    .bind(row.output_tokens)
                    .bind(row.cache_read_tokens)
                    .bind(row.cache_write_tokens)
                    .bind(row.premium_requests)
                    .bind(row.tool_calls)
                    .bind(row.sandbox_denials)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?
        });
        Ok(())
    }

    /// Takes up to `want` of `tenant`'s `max` model requests of `minute` and says how many it
    /// took (0: all are taken). Counted in the statement, so nodes sharing the database hold
    /// the limit together.
    pub async fn take_requests(&self, tenant: &str, minute: &str, max: u64, want: u64) -> Result<u64, StoreError> {
        let (max, want) = (i64::try_from(max).unwrap_or(i64::MAX), i64::try_from(want).unwrap_or(i64::MAX));
        // Every expression of SET reads the row as it was, so both columns see the old count.
        let text = "INSERT INTO tenant_requests (tenant, minute, count, last_grant) \
                    SELECT ?1, ?2, CASE WHEN ?3 < ?4 THEN ?3 ELSE ?4 END, CASE WHEN ?3 < ?4 THEN ?3 ELSE ?4 END \
                    WHERE ?3 > 0 AND ?4 > 0 \
                    ON CONFLICT (tenant, minute) DO UPDATE SET \
                    last_grant = CASE WHEN ?3 - tenant_requests.count < ?4 THEN ?3 - tenant_requests.count ELSE ?4 END, \
                    count = tenant_requests.count \
                    + CASE WHEN ?3 - tenant_requests.count < ?4 THEN ?3 - tenant_requests.count ELSE ?4 END \
                    WHERE tenant_requests.count < ?3 \
                    RETURNING last_grant";
        let taken = on_pool!(self, text, |pool, sql| sqlx::query_scalar::<_, i64>(&sql)
            .bind(tenant)
            .bind(minute)
            .bind(max)
            .bind(want)
            .fetch_optional(pool)
            .await?);
        Ok(taken.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    }

    /// Forgets the request counts of minutes before `minute`.
    pub async fn forget_requests_before(&self, minute: &str) -> Result<(), StoreError> {
        let text = "DELETE FROM tenant_requests WHERE minute < ?1";
        on_pool!(self, text, |pool, sql| sqlx::query(&sql).bind(minute).execute(pool).await?.rows_affected());
        Ok(())
    }

    /// `tenant`'s rows from `from_day` on (every tenant's when `None`), oldest day first.
    pub async fn usage(&self, tenant: Option<&str>, from_day: &str) -> Result<Vec<UsageRow>, StoreError> {
        let text = "SELECT tenant, user_name, day, model_calls, input_tokens, output_tokens, cache_read_tokens, \
                    cache_write_tokens, premium_requests, tool_calls, sandbox_denials FROM tenant_usage \
                    WHERE (?1 IS NULL OR tenant = ?1) AND day >= ?2 ORDER BY day, tenant, user_name";
        Ok(on_pool!(self, text, |pool, sql| sqlx::query_as::<_, UsageRow>(&sql)
            .bind(tenant)
            .bind(from_day)
            .fetch_all(pool)
            .await?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::UsageRow;
    use crate::SessionIndex;

    fn row(tenant: &str, user: &str, day: &str, input: i64) -> UsageRow {
        UsageRow {
            tenant: tenant.into(),
            user: user.into(),
            day: day.into(),
            model_calls: 1,
            input_tokens: input,
            output_tokens: 2,
            premium_requests: 0.5,
            tool_calls: 3,
            sandbox_denials: 1,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn additions_sum_per_tenant_user_and_day() {
        let index = SessionIndex::open_in_memory().await.unwrap();
        index.add_usage(&[row("a", "ann", "2026-12-01", 10), row("a", "", "2026-12-01", 1)]).await.unwrap();
        index.add_usage(&[row("a", "ann", "2026-12-01", 5), row("b", "bo", "2026-12-01", 7)]).await.unwrap();
        index.add_usage(&[row("a", "ann", "2026-11-30", 100)]).await.unwrap();
        let today = index.usage(Some("a"), "2026-12-01").await.unwrap();
        assert_eq!(today.len(), 2, "{today:?}");
        let ann = today.iter().find(|r| r.user == "ann").unwrap();
        assert_eq!((ann.model_calls, ann.input_tokens, ann.output_tokens), (2, 15, 4));
        assert_eq!((ann.premium_requests, ann.tool_calls, ann.sandbox_denials), (1.0, 6, 2));
        assert_eq!(index.usage(Some("a"), "2026-11-01").await.unwrap().len(), 3);
        assert_eq!(index.usage(None, "2026-12-01").await.unwrap().len(), 3, "every tenant");
        assert!(index.usage(Some("c"), "2026-01-01").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_minute_gives_as_many_requests_as_allowed() {
        let index = SessionIndex::open_in_memory().await.unwrap();
        let minute = "2026-12-01T10:00";
        assert_eq!(index.take_requests("a", minute, 5, 2).await.unwrap(), 2);
        assert_eq!(index.take_requests("a", minute, 5, 2).await.unwrap(), 2);
        assert_eq!(index.take_requests("a", minute, 5, 2).await.unwrap(), 1, "what is left of five");
        assert_eq!(index.take_requests("a", minute, 5, 1).await.unwrap(), 0, "the sixth is refused");
        assert_eq!(index.take_requests("b", minute, 5, 9).await.unwrap(), 5, "per tenant, at most all");
        assert_eq!(index.take_requests("a", "2026-12-01T10:01", 5, 1).await.unwrap(), 1, "the next minute");
        index.forget_requests_before("2026-12-01T10:01").await.unwrap();
        assert_eq!(index.take_requests("a", minute, 1, 1).await.unwrap(), 1, "forgotten");
    }
}
