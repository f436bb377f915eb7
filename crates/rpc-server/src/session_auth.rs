//! GitHub identities: the Copilot user a token belongs to (`GET /copilot_internal/user` on the
//! GitHub API, `COPILOT_DEBUG_GITHUB_API_URL` overriding where that is), and the identity each
//! session was given (`gitHubToken` at create, `session.gitHubAuth.setCredentials`).
//! Tokens are used for the request only: never stored, logged or echoed.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// Who a session acts as, when it was given its own identity.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionIdentity {
    /// `user` or `token`, as `AuthInfoType` spells them.
    pub auth_type: String,
    pub host: String,
    pub login: Option<String>,
    pub copilot_plan: Option<String>,
}

#[derive(Default)]
pub struct SessionIdentities {
    by_session: Mutex<HashMap<String, SessionIdentity>>,
}

impl SessionIdentities {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionIdentity>> {
        self.by_session.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    pub fn set(&self, session: &str, identity: SessionIdentity) {
        self.lock().insert(session.to_string(), identity);
    }
    pub fn clear(&self, session: &str) {
        self.lock().remove(session);
    }
    pub fn get(&self, session: &str) -> Option<SessionIdentity> {
        self.lock().get(session).cloned()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UserLookupError {
    #[error("GitHub rejected the token: {status} {reason} ({message})")]
    Rejected { status: u16, reason: String, message: String },
    #[error("could not reach the GitHub API: {0}")]
    Network(String),
    #[error("the GitHub API answered something other than a Copilot user: {0}")]
    Malformed(String),
}

/// The GitHub API base: `COPILOT_DEBUG_GITHUB_API_URL` (tests, proxies), else api.github.com.
pub fn github_api_url() -> String {
    std::env::var("COPILOT_DEBUG_GITHUB_API_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "https://api.github.com".to_string())
}

/// The Copilot user record for `token`, as the API returns it.
pub async fn fetch_copilot_user(token: &str) -> Result<Value, UserLookupError> {
    let url = format!("{}/copilot_internal/user", github_api_url().trim_end_matches('/'));
    let client = llm_providers::transport::ReqwestTransport::default_client()
        .map_err(|e| UserLookupError::Network(e.to_string()))?;
    let resp = client
        .get(&url)
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/json")
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| UserLookupError::Network(e.without_url().to_string()))?;
    let status = resp.status();
    let body = resp.text().await.map_err(|e| UserLookupError::Network(e.without_url().to_string()))?;
    if !status.is_success() {
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        return Err(UserLookupError::Rejected {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
            message,
        });
    }
    let user: Value = serde_json::from_str(&body).map_err(|e| UserLookupError::Malformed(e.to_string()))?;
    if !user.is_object() {
        return Err(UserLookupError::Malformed("not a JSON object".into()));
    }
    Ok(user)
}

/// The identity a token resolves to.
pub fn identity_of(user: &Value, host: &str) -> SessionIdentity {
    let text = |k: &str| user.get(k).and_then(Value::as_str).map(str::to_owned);
    SessionIdentity {
        auth_type: "token".into(),
        host: host.to_string(),
        login: text("login"),
        copilot_plan: text("copilot_plan"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_login_and_plan() {
        let user = serde_json::json!({"login": "alice", "copilot_plan": "business", "extra": 1});
        let id = identity_of(&user, "https://github.com");
        assert_eq!(id.login.as_deref(), Some("alice"));
        assert_eq!(id.copilot_plan.as_deref(), Some("business"));
        assert_eq!(id.auth_type, "token");
    }
}
