//! `session.quota.*`: the session's account as the original projects it (plan tier, whether
//! premium requests bill, the quota snapshots). The account is the session's own identity when
//! it was given one, else the process's (never a shared server's own, which is not its tenants').
//! Skipper raises no quota warnings, so there are none to take.

use std::collections::BTreeMap;

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;
use crate::session_auth::fetch_copilot_user;

pub async fn get(ctx: &Ctx, p: t::SessionQuotaGetParams) -> Result<t::SessionQuotaProjection, RpcError> {
    projection(ctx, &p.session_id).await
}

/// Looks the account up again; a lookup that fails leaves the plan the session knows.
pub async fn refresh(ctx: &Ctx, p: t::SessionQuotaRefreshParams) -> Result<t::SessionQuotaProjection, RpcError> {
    projection(ctx, &p.session_id).await
}

pub async fn take_warnings(
    ctx: &Ctx,
    p: t::SessionQuotaTakeWarningsParams,
) -> Result<t::QuotaTakeWarningsResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(Vec::new())
}

async fn projection(ctx: &Ctx, session_id: &str) -> Result<t::SessionQuotaProjection, RpcError> {
    ctx.session(session_id)?;
    if let Some(id) = ctx.server.session_identities.get(session_id) {
        return Ok(project(id.copilot_plan.as_deref(), BTreeMap::new()));
    }
    let user = match crate::handlers::auth::process_token(ctx) {
        Some(token) => fetch_copilot_user(&token).await.ok(),
        None => None,
    };
    let plan = user.as_ref().and_then(|u| u.get("copilot_plan")).and_then(|v| v.as_str());
    let snapshots = user.as_ref().map(snapshots).unwrap_or_default();
    Ok(project(plan, snapshots))
}

fn project(plan: Option<&str>, snapshots: BTreeMap<String, t::SessionQuotaSnapshot>) -> t::SessionQuotaProjection {
    let tier = plan_tier(plan);
    let free = tier == t::SessionQuotaPlanTier::Free;
    t::SessionQuotaProjection {
        snapshots,
        provider_quotas: None,
        is_free_user: free,
        is_tbb_user: false,
        plan_tier: tier,
        premium_requests_billable: !free,
        model_cost_column_visible: true,
        delegate_available: !free,
        can_signup_for_copilot_free: false,
        dynamic_workflows_enabled: false,
        dynamic_workflows_ui_visible: false,
        upgrade_url: None,
        delegate_warning: None,
    }
}

/// The Copilot user record's `copilot_plan` as a tier (the original reads `individual_pro` as
/// Pro+).
fn plan_tier(plan: Option<&str>) -> t::SessionQuotaPlanTier {
    use t::SessionQuotaPlanTier as T;
    match plan {
        Some("free" | "free_limited_copilot") => T::Free,
        Some("individual") => T::Pro,
        Some("individual_pro") => T::ProPlus,
        Some("business") => T::Business,
        Some("enterprise") => T::Enterprise,
        Some("edu" | "education") => T::Edu,
        Some("max") => T::Max,
        _ => T::Unknown,
    }
}

/// The record's `quota_snapshots` in the projection's units.
fn snapshots(user: &serde_json::Value) -> BTreeMap<String, t::SessionQuotaSnapshot> {
    crate::handlers::auth::quota_snapshots(user)
        .into_iter()
        .map(|(name, q)| {
            let snapshot = t::SessionQuotaSnapshot {
                is_unlimited_entitlement: q.is_unlimited_entitlement,
                entitlement_requests: q.entitlement_requests as f64,
                used_requests: q.used_requests as f64,
                usage_allowed_with_exhausted_quota: q.usage_allowed_with_exhausted_quota,
                overage: q.overage,
                overage_allowed_with_exhausted_quota: q.overage_allowed_with_exhausted_quota,
                remaining_percentage: q.remaining_percentage,
                reset_date_epoch_ms: q
                    .reset_date
                    .as_deref()
                    .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
                    .map(|d| d.timestamp_millis() as f64),
                has_quota: Some(q.remaining_percentage > 0.0 || q.is_unlimited_entitlement),
                ..Default::default()
            };
            (name, snapshot)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_read_as_the_original_s_tiers_and_free_accounts_do_not_bill() {
        assert_eq!(plan_tier(Some("individual_pro")), t::SessionQuotaPlanTier::ProPlus);
        assert_eq!(plan_tier(Some("business")), t::SessionQuotaPlanTier::Business);
        assert_eq!(plan_tier(Some("something new")), t::SessionQuotaPlanTier::Unknown);
        assert_eq!(plan_tier(None), t::SessionQuotaPlanTier::Unknown);
        let free = project(Some("free_limited_copilot"), BTreeMap::new());
        assert!(free.is_free_user && !free.premium_requests_billable);
        let pro = project(Some("individual_pro"), BTreeMap::new());
        assert!(!pro.is_free_user && pro.premium_requests_billable);
    }

    #[test]
    fn the_user_record_s_snapshots_keep_their_figures() {
        let user = serde_json::json!({"quota_snapshots": {"premium_interactions": {
            "entitlement": 300, "remaining": 120, "percent_remaining": 40.0, "unlimited": false,
            "overage_count": 0, "overage_permitted": false
        }}, "quota_reset_date": "2026-12-01T00:00:00Z"});
        let s = snapshots(&user);
        let p = &s["premium_interactions"];
        assert_eq!((p.entitlement_requests, p.used_requests, p.remaining_percentage), (300.0, 180.0, 40.0));
        assert_eq!(p.has_quota, Some(true));
    }
}
