//! Whose credentials a tenant's session carries on its model calls. What the session brings
//! itself wins (`gitHubToken`, `provider`: the SDKs' multi-user set-up); then the tenant's
//! provider; then the GitHub token of the user who created the session, else the tenant's;
//! the server's own identity only where the configuration allows it as a fallback.
//!
//! The creator's, not the caller's: a session resumed by another user of the tenant goes on
//! billing whoever it belongs to, and a user removed from the configuration leaves their
//! sessions on the tenant's credentials.

use protocol::methods::SessionConfigParams;

use crate::tenancy::Tenant;

/// Fills in what `p` does not bring itself. `Err`: the session would fall back to the
/// server's identity and the tenant may not.
pub fn apply(tenant: &Tenant, creator: Option<&str>, p: &mut SessionConfigParams) -> Result<(), String> {
    let credentials = tenant.credentials();
    if p.provider.is_none() && p.providers.is_none() {
        p.provider.clone_from(&credentials.provider);
    }
    if p.git_hub_token.as_ref().is_none_or(|t| t.expose().is_empty()) {
        let user = creator.and_then(|name| tenant.user(name)).and_then(|u| u.github_token.clone());
        p.git_hub_token = user.or_else(|| credentials.github_token.clone());
    }
    if p.git_hub_token.is_none() && p.provider.is_none() && !credentials.server_fallback {
        return Err(format!(
            "no model credentials for this session: tenant {} has no GitHub token or provider for {}, and may not \
             use the server's (pass gitHubToken or provider, or ask the operator to configure them)",
            tenant.name,
            creator.map_or_else(|| "its own token".to_string(), |u| format!("user {u}")),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::{token_digest, Credentials, Tenancy, TenantSpec, UserSpec};
    use protocol::secret::SecretString;

    async fn alpha(credentials: Credentials) -> (tempfile::TempDir, std::sync::Arc<Tenant>) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        let spec = TenantSpec {
            name: "alpha".into(),
            token_sha256: Some(token_digest("alpha")),
            workspace: dir.join("w"),
            config_home: dir.join("h"),
            max_connections: 1,
            credentials,
            users: vec![UserSpec {
                name: "alice".into(),
                token_sha256: token_digest("alice"),
                github_token: Some(SecretString::new("gho-alice")),
            }],
            limits: Default::default(),
        };
        let tenancy = Tenancy::open(vec![spec], store::SessionIndex::open_in_memory().await.unwrap()).await.unwrap();
        (root, tenancy.authenticate("alpha").unwrap().tenant)
    }

    fn token(p: &SessionConfigParams) -> Option<&str> {
        p.git_hub_token.as_ref().map(|t| t.expose())
    }

    #[tokio::test]
    async fn the_sessions_own_then_the_creators_then_the_tenants() {
        let (_dir, tenant) = alpha(Credentials {
            github_token: Some(SecretString::new("gho-tenant")),
            provider: None,
            server_fallback: false,
        })
        .await;
        let mut p = SessionConfigParams::default();
        apply(&tenant, Some("alice"), &mut p).unwrap();
        assert_eq!(token(&p), Some("gho-alice"));
        let mut p = SessionConfigParams::default();
        apply(&tenant, Some("removed-user"), &mut p).unwrap();
        assert_eq!(token(&p), Some("gho-tenant"), "a user no longer configured: the tenant's");
        let mut p = SessionConfigParams { git_hub_token: Some(SecretString::new("gho-own")), ..Default::default() };
        apply(&tenant, Some("alice"), &mut p).unwrap();
        assert_eq!(token(&p), Some("gho-own"));
    }

    #[tokio::test]
    async fn the_tenants_provider_unless_the_session_has_one_and_no_silent_server_fallback() {
        let provider: protocol::generated::types::ProviderConfig =
            serde_json::from_value(serde_json::json!({"baseUrl": "https://tenant.example"})).unwrap();
        let (_dir, tenant) =
            alpha(Credentials { github_token: None, provider: Some(provider), server_fallback: false }).await;
        let mut p = SessionConfigParams::default();
        apply(&tenant, None, &mut p).unwrap();
        assert_eq!(p.provider.as_ref().unwrap().base_url, "https://tenant.example");
        assert!(p.git_hub_token.is_none());

        let (_bare_dir, bare) = alpha(Credentials::default()).await;
        let err = apply(&bare, None, &mut SessionConfigParams::default()).unwrap_err();
        assert!(err.contains("no model credentials") && err.contains("its own token"), "{err}");
        let (_allowed_dir, allowed) = alpha(Credentials { server_fallback: true, ..Default::default() }).await;
        let mut p = SessionConfigParams::default();
        apply(&allowed, None, &mut p).unwrap();
        assert!(p.git_hub_token.is_none() && p.provider.is_none(), "the server's own identity, as configured");
    }
}
