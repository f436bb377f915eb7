//! A credential carried in a protocol message (a provider API key, a bearer token).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A string that is sent and received as-is but never shows in `Debug` output, so a params
/// struct can be logged without leaking a key.
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that needs it (a request header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for SecretString {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for SecretString {
    fn from(value: &str) -> Self {
        Self(value.to_string())
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_but_never_prints() {
        let s: SecretString = serde_json::from_str("\"sk-123\"").unwrap_or_default();
        assert_eq!(s.expose(), "sk-123");
        assert_eq!(serde_json::to_string(&s).unwrap_or_default(), "\"sk-123\"");
        assert!(!format!("{s:?}").contains("sk-123"));
    }
}
