//! Credentials as this crate holds them. A leaf of its own (re-exported as
//! `provider::Secret`): the request types carry one (`ChatRequest::github_token`) and the
//! provider settings, which use the request types, carry others; in either file it made the
//! two an import circle.

use std::fmt;

/// A credential. Never printed, never put in an error.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for building a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
