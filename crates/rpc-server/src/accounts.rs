//! Accounts signed in while the server runs (`account.login` / `logout`). The newest is the
//! current one: its token is what the Copilot model client sends from then on. Tokens stay in
//! memory (`storedInVault: false`, nothing written to disk) and are never logged.

use std::sync::{Mutex, MutexGuard, PoisonError};

use llm_providers::copilot::SignedInToken;
use llm_providers::provider::Secret;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Account {
    pub host: String,
    pub login: String,
    pub token: Secret,
    /// The Copilot user record the token resolved to.
    pub copilot_user: Value,
}

impl Account {
    /// The opaque id `account.getAllUsers` hands out and `logout` / `getQuota` accept.
    pub fn selection_id(&self) -> String {
        format!("user:{}:{}", self.host, self.login)
    }

    pub fn same_user(&self, host: &str, login: &str) -> bool {
        self.host == host && self.login.eq_ignore_ascii_case(login)
    }
}

#[derive(Debug, Default)]
pub struct Accounts {
    /// Oldest first; the last one is current.
    signed_in: Mutex<Vec<Account>>,
}

impl Accounts {
    fn lock(&self) -> MutexGuard<'_, Vec<Account>> {
        self.signed_in.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn current(&self) -> Option<Account> {
        self.lock().last().cloned()
    }

    pub fn all(&self) -> Vec<Account> {
        self.lock().clone()
    }

    /// Adds (or refreshes) the account and makes it current; `token` then drives the model client.
    pub fn sign_in(&self, account: Account, token: &SignedInToken) {
        let mut list = self.lock();
        list.retain(|a| !a.same_user(&account.host, &account.login));
        token.set(Some(account.token.expose().to_string()));
        list.push(account);
    }

    /// Removes the matching account; `None` when none matches. Returns whether others remain.
    pub fn sign_out(&self, matches: impl Fn(&Account) -> bool, token: &SignedInToken) -> Option<bool> {
        let mut list = self.lock();
        let at = list.iter().position(matches)?;
        list.remove(at);
        token.set(list.last().map(|a| a.token.expose().to_string()));
        Some(!list.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(login: &str, token: &str) -> Account {
        Account {
            host: "https://github.com".into(),
            login: login.into(),
            token: Secret::new(token),
            copilot_user: Value::Null,
        }
    }

    #[test]
    fn the_newest_account_is_current_and_its_token_is_used() {
        let accounts = Accounts::default();
        let token = SignedInToken::default();
        accounts.sign_in(account("ann", "t1"), &token);
        accounts.sign_in(account("bob", "t2"), &token);
        assert_eq!(accounts.current().map(|a| a.login), Some("bob".into()));
        assert_eq!(token.get().as_deref(), Some("t2"));

        // Signing out the current one falls back to the previous; the last leaves none.
        assert_eq!(accounts.sign_out(|a| a.login == "bob", &token), Some(true));
        assert_eq!(token.get().as_deref(), Some("t1"));
        assert_eq!(accounts.sign_out(|a| a.login == "nobody", &token), None);
        assert_eq!(accounts.sign_out(|a| a.selection_id() == "user:https://github.com:ann", &token), Some(false));
        assert_eq!(token.get(), None);
        assert!(accounts.current().is_none());
    }

    #[test]
    fn signing_in_again_replaces_the_entry() {
        let accounts = Accounts::default();
        let token = SignedInToken::default();
        accounts.sign_in(account("ann", "old"), &token);
        accounts.sign_in(account("ANN", "new"), &token);
        assert_eq!(accounts.all().len(), 1);
        assert_eq!(token.get().as_deref(), Some("new"));
        assert!(format!("{:?}", accounts.all()).find("new").is_none(), "tokens are not printed");
    }
}
