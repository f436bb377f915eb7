//! `tenant.getUsage`: what the caller's tenant used and may use (`crate::metering`). Skipper's
//! own method; only a team server answers it.

use protocol::jsonrpc::RpcError;
use protocol::methods::{TenantUsageParams, TenantUsageResult, TenantUsageRow};

use crate::ctx::Ctx;

/// The most days one request reaches back.
const MAX_DAYS: u32 = 366;

pub async fn get(ctx: &Ctx, p: TenantUsageParams) -> Result<TenantUsageResult, RpcError> {
    let days = p.days.unwrap_or(1);
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(RpcError::invalid_params(ctx.method, format!("days: {days} is not between 1 and {MAX_DAYS}")));
    }
    let (Some(principal), Some(meter)) = (ctx.caller.principal(), ctx.server.meter.get()) else {
        return Err(ctx.failed("tenant.getUsage is answered by a team server (skipper serve) only"));
    };
    let tenant = &principal.tenant;
    let from = (chrono::Utc::now() - chrono::Duration::days(i64::from(days) - 1)).format("%Y-%m-%d").to_string();
    let rows = meter.usage(&tenant.name, &from).await.map_err(|e| ctx.failed(e))?;
    let today = crate::metering::today();
    let tokens_today = rows.iter().filter(|(day, _, _)| *day == today).map(|(_, _, u)| u.tokens()).sum();
    // A user sees their own work; the tenant's own token sees everyone's.
    let mine = |user: &str| principal.user_name().is_none_or(|me| me == user);
    let usage = rows
        .into_iter()
        .filter(|(_, user, _)| mine(user))
        .map(|(day, user, usage)| TenantUsageRow { day, user, usage })
        .collect();
    Ok(TenantUsageResult { tenant: tenant.name.clone(), tokens_today, limits: tenant.limits(), usage })
}
