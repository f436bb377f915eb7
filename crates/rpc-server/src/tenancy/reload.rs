//! A reload of the tenants' configuration while the server runs (`skipper serve` on SIGHUP or
//! when the file changes): tokens, users and credentials of the tenants it runs change in
//! place. A token still configured for the same tenant and user keeps its connections; one
//! removed or given to someone else is revoked, and its connections close.
//!
//! What a tenant is made of at start (its workspace, configuration home, connection limit, its
//! sandbox) stays as it started: a tenant added or changed there needs a restart, and is
//! reported as such.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Access, Principal, Tenancy, TenancyError, TenantLimits, TenantSpec};

/// What a reload changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Tokens that authenticate now and did not before.
    pub added_tokens: usize,
    /// Tokens that no longer authenticate (their connections close).
    pub revoked_tokens: usize,
    /// Tenants in the configuration that this process does not run: they need a restart.
    pub new_tenants: Vec<String>,
    /// Tenants whose workspace, configuration home or connection limit changed: the change
    /// waits for a restart.
    pub needs_restart: Vec<String>,
}

impl Tenancy {
    /// Applies `specs` (the whole configuration, as at start). Nothing changes when it fails.
    pub fn reload(&self, specs: Vec<TenantSpec>) -> Result<Reloaded, TenancyError> {
        let mut report = Reloaded::default();
        let old: HashMap<[u8; 32], Principal> = self.by_token.read().unwrap_or_else(|e| e.into_inner()).clone();
        let mut next: HashMap<[u8; 32], Principal> = HashMap::new();
        let mut accesses = Vec::new();
        for spec in specs {
            let Some(tenant) = self.tenants.iter().find(|t| t.name == spec.name) else {
                report.new_tenants.push(spec.name);
                continue;
            };
            let same_place = same_dir(&tenant.workspace, &spec.workspace)
                && same_dir(&tenant.config_home, &spec.config_home)
                && tenant.connections_limit == spec.max_connections;
            if !same_place {
                report.needs_restart.push(spec.name.clone());
            }
            for (digest, user) in spec.tokens() {
                let kept = old.get(&digest).filter(|p| Arc::ptr_eq(&p.tenant, tenant) && p.user == user).cloned();
                if kept.is_none() {
                    report.added_tokens += 1;
                }
                let principal =
                    kept.unwrap_or_else(|| Principal { tenant: tenant.clone(), user, revoked: Arc::default() });
                if let Some(other) = next.insert(digest, principal) {
                    return Err(TenancyError::DuplicateToken(other.tenant.name.clone(), tenant.name.clone()));
                }
            }
            accesses.push((tenant.clone(), Access::new(spec.credentials, spec.users, spec.limits)));
        }
        // Every check passed: swap the credentials, then the tokens, then close what lost its.
        let mut reloaded: Vec<String> = Vec::new();
        for (tenant, access) in accesses {
            *tenant.access.write().unwrap_or_else(|e| e.into_inner()) = access;
            reloaded.push(tenant.name.clone());
        }
        // A tenant no longer configured keeps no credentials.
        for tenant in self.tenants.iter().filter(|t| !reloaded.contains(&t.name)) {
            *tenant.access.write().unwrap_or_else(|e| e.into_inner()) =
                Access::new(Default::default(), Vec::new(), TenantLimits { sessions: Some(0), ..Default::default() });
        }
        *self.by_token.write().unwrap_or_else(|e| e.into_inner()) = next.clone();
        for (digest, principal) in old {
            let still = next.get(&digest).is_some_and(|p| Arc::ptr_eq(&p.revoked, &principal.revoked));
            if !still {
                report.revoked_tokens += 1;
                principal.revoked.cancel();
            }
        }
        Ok(report)
    }
}

/// Whether `configured` names the directory `current` (canonical) is.
fn same_dir(current: &std::path::Path, configured: &std::path::Path) -> bool {
    configured.canonicalize().map_or(current == configured, |c| c == current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::{token_digest, Credentials, UserSpec};
    use protocol::secret::SecretString;
    use std::path::Path;

    fn spec(root: &Path, name: &str, own: Option<&str>, users: &[(&str, &str, &str)]) -> TenantSpec {
        TenantSpec {
            name: name.into(),
            token_sha256: own.map(token_digest),
            workspace: root.join(name),
            config_home: root.join("homes").join(name),
            max_connections: 4,
            credentials: Credentials::default(),
            users: users
                .iter()
                .map(|(user, token, gh)| UserSpec {
                    name: (*user).into(),
                    token_sha256: token_digest(token),
                    github_token: Some(SecretString::new(*gh)),
                })
                .collect(),
            limits: Default::default(),
        }
    }

    #[tokio::test]
    async fn unchanged_tokens_keep_their_connections_and_removed_ones_are_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let start = vec![
            spec(root, "alpha", Some("alpha"), &[("alice", "alice-1", "gho-a"), ("bob", "bob", "gho-b")]),
            spec(root, "beta", Some("beta"), &[]),
        ];
        let t = Tenancy::open(start, store::SessionIndex::open_in_memory().await.unwrap()).await.unwrap();
        let (alice, bob, alpha, beta) =
            ["alice-1", "bob", "alpha", "beta"].map(|token| t.authenticate(token).unwrap()).into();

        // Alice's token rotated (and her GitHub token changed), bob removed, carol added, beta
        // removed, gamma new.
        let next = vec![
            spec(root, "alpha", Some("alpha"), &[("alice", "alice-2", "gho-a2"), ("carol", "carol", "gho-c")]),
            spec(root, "gamma", Some("gamma"), &[]),
        ];
        let report = t.reload(next).unwrap();
        assert_eq!(report.added_tokens, 2, "alice's new token and carol's");
        assert_eq!(report.revoked_tokens, 3, "alice's old token, bob's and beta's");
        assert_eq!(report.new_tenants, ["gamma"]);
        assert!(report.needs_restart.is_empty());

        let revoked = |p: &Principal| p.revoked.is_cancelled();
        assert!(revoked(&alice) && revoked(&bob) && revoked(&beta));
        assert!(!revoked(&alpha), "the tenant's own token did not change: its connections stay");
        assert!(t.authenticate("alice-1").is_none() && t.authenticate("bob").is_none());
        assert!(t.authenticate("beta").is_none() && t.authenticate("gamma").is_none());
        let carol = t.authenticate("carol").unwrap();
        assert_eq!(carol.user().unwrap().github_token.as_ref().unwrap().expose(), "gho-c");
        let alice = t.authenticate("alice-2").unwrap();
        assert_eq!(
            alice.user().unwrap().github_token.as_ref().unwrap().expose(),
            "gho-a2",
            "credentials change in place"
        );
        assert!(bob.user().is_none(), "a removed user has no credentials any more");
        let still = t.authenticate("alpha").unwrap();
        assert!(Arc::ptr_eq(&still.revoked, &alpha.revoked), "the unchanged token is the same principal");
    }

    #[tokio::test]
    async fn a_reload_that_fails_changes_nothing_and_a_moved_workspace_waits_for_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let t = Tenancy::open(
            vec![spec(root, "alpha", Some("alpha"), &[]), spec(root, "beta", Some("beta"), &[])],
            store::SessionIndex::open_in_memory().await.unwrap(),
        )
        .await
        .unwrap();
        let twice = vec![spec(root, "alpha", Some("same"), &[]), spec(root, "beta", Some("same"), &[])];
        assert!(matches!(t.reload(twice), Err(TenancyError::DuplicateToken(..))));
        assert!(t.authenticate("alpha").is_some() && t.authenticate("beta").is_some());

        let mut moved = spec(root, "alpha", Some("alpha"), &[]);
        moved.workspace = root.join("elsewhere");
        let report = t.reload(vec![moved, spec(root, "beta", Some("beta"), &[])]).unwrap();
        assert_eq!(report.needs_restart, ["alpha"]);
        assert_eq!((report.added_tokens, report.revoked_tokens), (0, 0));
    }
}
