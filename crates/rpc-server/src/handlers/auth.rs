//! Accounts and per-session GitHub identities: `session.gitHubAuth.*` and `account.getQuota`.

use std::collections::BTreeMap;

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::session_auth::{fetch_copilot_user, identity_of, SessionIdentity};

fn auth_type(name: &str) -> t::AuthInfoType {
    match name {
        "user" => t::AuthInfoType::User,
        "env" => t::AuthInfoType::Env,
        "gh-cli" => t::AuthInfoType::GhCli,
        "api-key" => t::AuthInfoType::ApiKey,
        "hmac" => t::AuthInfoType::Hmac,
        "copilot-api-token" => t::AuthInfoType::CopilotApiToken,
        _ => t::AuthInfoType::Token,
    }
}

/// The session's own identity when it has one, else the server's (which carries no login).
pub async fn get_status(ctx: &Ctx, p: t::SessionGitHubAuthGetStatusParams) -> Result<t::SessionAuthStatus, RpcError> {
    ctx.session(&p.session_id)?;
    if let Some(id) = ctx.server.session_identities.get(&p.session_id) {
        let via = id.login.clone().unwrap_or_else(|| id.auth_type.clone());
        return Ok(t::SessionAuthStatus {
            is_authenticated: true,
            auth_type: Some(auth_type(&id.auth_type)),
            status_message: Some(format!("{} (via {via})", id.host)),
            host: Some(id.host),
            login: id.login,
            copilot_plan: id.copilot_plan,
        });
    }
    let auth = &ctx.server.auth;
    if !auth.token_present {
        return Ok(t::SessionAuthStatus {
            is_authenticated: false,
            auth_type: None,
            host: None,
            login: None,
            status_message: Some("Not authenticated".into()),
            copilot_plan: None,
        });
    }
    // The account the process's token belongs to, as the original looks it up (a lookup that
    // fails leaves the status as it is: authenticated, no login).
    let account = match process_token(ctx) {
        Some(token) => fetch_copilot_user(&token).await.ok().map(|user| identity_of(&user, &auth.host)),
        None => None,
    };
    let (login, copilot_plan) = account.map(|a| (a.login, a.copilot_plan)).unwrap_or_default();
    Ok(t::SessionAuthStatus {
        is_authenticated: true,
        auth_type: Some(auth_type(&auth.auth_type)),
        host: Some(auth.host.clone()),
        login,
        status_message: Some(format!("{} (via {})", auth.host, auth.auth_type)),
        copilot_plan,
    })
}

/// The token the caller's account acts with: on a single-user server the process's (the
/// account signed in at run time, else the one it started with); on a shared server its
/// user's, else its tenant's (`[[tenants]]` credentials) — the server's own identity is not
/// its tenants' to use or learn of.
pub(crate) fn process_token(ctx: &Ctx) -> Option<String> {
    if ctx.server.tenancy.is_some() {
        let principal = ctx.caller.principal()?;
        let user = principal.user().and_then(|u| u.github_token.clone());
        let token = user.or_else(|| principal.tenant.credentials().github_token)?;
        return Some(token.expose().to_string());
    }
    let auth = &ctx.server.auth;
    auth.signed_in.get().or_else(|| auth.token.as_ref().map(|t| t.expose().to_string())).filter(|t| !t.is_empty())
}

/// Gives the session an identity (or, with no credentials, takes its own away). A token whose
/// Copilot user is not supplied is resolved against the GitHub API.
pub async fn set_credentials(
    ctx: &Ctx,
    p: t::SessionGitHubAuthSetCredentialsParams,
) -> Result<t::SessionSetCredentialsResult, RpcError> {
    ctx.session(&p.session_id)?;
    let Some(credentials) = p.credentials else {
        ctx.server.session_identities.clear(&p.session_id);
        return Ok(t::SessionSetCredentialsResult { success: true, copilot_user_resolved: None });
    };
    let kind = credentials.tag();
    let (host, login, user) = match credentials {
        t::SettableAuthInfo::User(u) => {
            (u.host, Some(u.login), u.copilot_user.map(|c| serde_json::to_value(c).unwrap_or_default()))
        }
        t::SettableAuthInfo::Token(tok) => {
            let user = match tok.copilot_user {
                Some(c) => Some(serde_json::to_value(c).unwrap_or_default()),
                None => fetch_copilot_user(tok.token.expose()).await.ok(),
            };
            (tok.host, None, user)
        }
        other => {
            let v = serde_json::to_value(&other).unwrap_or_default();
            let host = v.get("host").and_then(Value::as_str).unwrap_or("https://github.com").to_string();
            let login = v.get("login").and_then(Value::as_str).map(str::to_owned);
            (host, login, None)
        }
    };
    let text = |k: &str| user.as_ref().and_then(|u| u.get(k)).and_then(Value::as_str).map(str::to_owned);
    let identity = SessionIdentity {
        auth_type: kind.to_string(),
        host,
        login: login.or_else(|| text("login")),
        copilot_plan: text("copilot_plan"),
    };
    ctx.server.session_identities.set(&p.session_id, identity);
    Ok(t::SessionSetCredentialsResult { success: true, copilot_user_resolved: Some(user.is_some()) })
}

/// The identity a session's own `gitHubToken` stands for; a token GitHub refuses fails the
/// request (the original's `401 Unauthorized`).
pub async fn identity_for(
    ctx: &Ctx,
    token: Option<protocol::secret::SecretString>,
) -> Result<Option<SessionIdentity>, RpcError> {
    let Some(token) = token.filter(|t| !t.expose().is_empty()) else { return Ok(None) };
    let user = fetch_copilot_user(token.expose()).await.map_err(|e| ctx.failed(e))?;
    Ok(Some(identity_of(&user, &ctx.server.auth.host)))
}

/// The account's quotas, from its Copilot user record: the `gitHubToken`'s, else the
/// process's account's. Without a token to ask with there are none.
pub async fn get_quota(ctx: &Ctx, p: t::AccountGetQuotaRequest) -> Result<t::AccountGetQuotaResult, RpcError> {
    let given = p.git_hub_token.as_ref().map(|s| s.expose().to_string()).filter(|s| !s.is_empty());
    let Some(token) = given.or_else(|| process_token(ctx)) else {
        return Ok(t::AccountGetQuotaResult { quota_snapshots: BTreeMap::new() });
    };
    let user = fetch_copilot_user(&token).await.map_err(|e| ctx.failed(e))?;
    Ok(t::AccountGetQuotaResult { quota_snapshots: quota_snapshots(&user) })
}

/// `quota_snapshots` of a Copilot user record in the wire shape: used requests are what the
/// remaining percentage leaves of the entitlement.
pub fn quota_snapshots(user: &Value) -> BTreeMap<String, t::AccountQuotaSnapshot> {
    let Some(snapshots) = user.get("quota_snapshots").and_then(Value::as_object) else { return BTreeMap::new() };
    let reset = user.get("quota_reset_date_utc").or_else(|| user.get("quota_reset_date")).and_then(Value::as_str);
    snapshots
        .iter()
        .filter_map(|(name, s)| {
            let s = s.as_object()?;
            let num = |k: &str| s.get(k).and_then(Value::as_f64);
            let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
            let entitlement = num("entitlement").unwrap_or(0.0);
            let remaining = num("percent_remaining").unwrap_or(100.0);
            let unlimited = flag("unlimited");
            let used = (entitlement * (100.0 - remaining) / 100.0).round().max(0.0);
            let overage_permitted = flag("overage_permitted");
            let reset_date = s.get("timestamp_utc").and_then(Value::as_str).or(reset).map(str::to_owned);
            Some((
                name.clone(),
                t::AccountQuotaSnapshot {
                    is_unlimited_entitlement: unlimited,
                    entitlement_requests: entitlement as i64,
                    used_requests: used as u64,
                    usage_allowed_with_exhausted_quota: unlimited || overage_permitted,
                    remaining_percentage: remaining,
                    overage: num("overage_count").unwrap_or(0.0),
                    overage_allowed_with_exhausted_quota: overage_permitted,
                    reset_date,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_snapshot_derives_used_requests() {
        let user = serde_json::json!({"quota_snapshots": {"chat": {
            "entitlement": 100, "overage_count": 2, "overage_permitted": true,
            "percent_remaining": 75, "timestamp_utc": "2026-04-30T00:00:00Z"}}});
        let q = quota_snapshots(&user);
        let chat = &q["chat"];
        assert_eq!(chat.entitlement_requests, 100);
        assert_eq!(chat.used_requests, 25);
        assert_eq!(chat.remaining_percentage, 75.0);
        assert_eq!(chat.overage, 2.0);
        assert!(chat.usage_allowed_with_exhausted_quota && chat.overage_allowed_with_exhausted_quota);
        assert_eq!(chat.reset_date.as_deref(), Some("2026-04-30T00:00:00Z"));
    }
}
