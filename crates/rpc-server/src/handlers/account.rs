//! `account.*`: who the server acts as. `login` checks the token against the GitHub API (the
//! Copilot user it belongs to) and makes that account current; the model client then sends its
//! token. A shared server (`skipper serve`) refuses to switch accounts: one tenant must not
//! change whose credentials every other tenant's sessions use. Nor does it show its account:
//! the server's identity is not its tenants', and its token must reach none of them.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use serde_json::Value;

use crate::accounts::Account;
use crate::ctx::Ctx;
use crate::session_auth::fetch_copilot_user;

fn copilot_user(user: &Value) -> Option<t::CopilotUserResponse> {
    serde_json::from_value(user.clone()).ok()
}

fn user_info(a: &Account) -> t::AuthInfo {
    t::AuthInfo::User(t::UserAuthInfo {
        host: a.host.clone(),
        login: a.login.clone(),
        copilot_user: copilot_user(&a.copilot_user),
    })
}

/// The token the server was started with, in the variant its source calls for.
fn startup_info(ctx: &Ctx) -> Option<t::AuthInfo> {
    let auth = &ctx.server.auth;
    let token = auth.token.as_ref()?.expose().to_string();
    Some(match auth.auth_type.as_str() {
        "env" => t::AuthInfo::Env(t::EnvAuthInfo {
            host: auth.host.clone(),
            login: None,
            token,
            env_var: auth.token_env_var.clone().unwrap_or_else(|| "GH_TOKEN".into()),
            copilot_user: None,
        }),
        _ => t::AuthInfo::Token(t::TokenAuthInfo {
            host: auth.host.clone(),
            token,
            registration_id: None,
            copilot_user: None,
        }),
    })
}

pub async fn get_current_auth(
    ctx: &Ctx,
    _p: protocol::rpc::NoParams,
) -> Result<t::AccountGetCurrentAuthResult, RpcError> {
    if ctx.server.tenancy.is_some() {
        return Ok(t::AccountGetCurrentAuthResult { auth_info: None, auth_errors: None });
    }
    let auth_info = match ctx.server.accounts.current() {
        Some(a) => Some(user_info(&a)),
        None => startup_info(ctx),
    };
    Ok(t::AccountGetCurrentAuthResult { auth_info, auth_errors: None })
}

pub async fn get_all_users(ctx: &Ctx, _p: protocol::rpc::NoParams) -> Result<Vec<t::AccountAllUsers>, RpcError> {
    if ctx.server.tenancy.is_some() {
        return Ok(Vec::new());
    }
    let mut users: Vec<t::AccountAllUsers> = ctx
        .server
        .accounts
        .all()
        .iter()
        .map(|a| t::AccountAllUsers {
            auth_info: user_info(a),
            selection_id: Some(a.selection_id()),
            token: Some(a.token.expose().to_string()),
        })
        .collect();
    if let Some(info) = startup_info(ctx) {
        let token = ctx.server.auth.token.as_ref().map(|s| s.expose().to_string());
        users.push(t::AccountAllUsers { auth_info: info, selection_id: Some("startup".into()), token });
    }
    Ok(users)
}

fn refuse_on_shared_server(ctx: &Ctx) -> Result<(), RpcError> {
    if ctx.server.tenancy.is_some() {
        return Err(
            ctx.failed("accounts cannot be switched on a shared server; its operator configures the GitHub token")
        );
    }
    Ok(())
}

pub async fn login(ctx: &Ctx, p: t::AccountLoginRequest) -> Result<t::AccountLoginResult, RpcError> {
    refuse_on_shared_server(ctx)?;
    if p.token.trim().is_empty() {
        return Err(RpcError::invalid_params(ctx.method, "token: must not be empty"));
    }
    let user = fetch_copilot_user(&p.token).await.map_err(|e| ctx.failed(e))?;
    let login = match (p.login, user.get("login").and_then(Value::as_str)) {
        (Some(given), Some(actual)) if !given.eq_ignore_ascii_case(actual) => {
            return Err(ctx.failed(format!("the token belongs to {actual}, not {given}")));
        }
        (Some(given), _) => given,
        (None, Some(actual)) => actual.to_string(),
        (None, None) => return Err(ctx.failed("the GitHub API did not say which user the token belongs to")),
    };
    let account = Account {
        host: p.host.trim_end_matches('/').to_string(),
        login,
        token: llm_providers::provider::Secret::new(p.token),
        copilot_user: user,
    };
    ctx.server.accounts.sign_in(account, &ctx.server.auth.signed_in);
    Ok(t::AccountLoginResult { stored_in_vault: false })
}

/// `{selectionId}` or `{authInfo}` (a `user` entry as `getCurrentAuth` / `getAllUsers` gave it).
pub async fn logout(ctx: &Ctx, p: t::AccountLogoutRequest) -> Result<t::AccountLogoutResult, RpcError> {
    refuse_on_shared_server(ctx)?;
    let bad = |detail: &str| RpcError::invalid_params(ctx.method, detail);
    let selection = p.get("selectionId").map(|v| v.as_str().ok_or_else(|| bad("selectionId: expected a string")));
    let user = match p.get("authInfo") {
        Some(v) => {
            let info: t::AuthInfo = protocol::methods::parse_params(v)
                .map_err(|e| RpcError::invalid_params(ctx.method, format!("authInfo: {e}")))?;
            match info {
                t::AuthInfo::User(u) => Some((u.host, u.login)),
                _ => return Err(bad("authInfo: only signed-in user accounts can be logged out")),
            }
        }
        None => None,
    };
    let remaining = match (selection, user) {
        (Some(id), _) => {
            let id = id?;
            ctx.server.accounts.sign_out(|a| a.selection_id() == id, &ctx.server.auth.signed_in)
        }
        (None, Some((host, login))) => ctx
            .server
            .accounts
            .sign_out(|a| a.same_user(host.trim_end_matches('/'), &login), &ctx.server.auth.signed_in),
        (None, None) => return Err(bad("expected selectionId or authInfo")),
    };
    match remaining {
        Some(has_more_users) => Ok(t::AccountLogoutResult { has_more_users }),
        None => Err(ctx.failed("no signed-in account matches")),
    }
}
