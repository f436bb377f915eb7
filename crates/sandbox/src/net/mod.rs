//! Network for sandboxed processes that is neither the host's nor none: the original's
//! `userPolicy.network` host rules (`allowedHosts`, `blockedHosts`, `allowLocalNetwork`, an
//! upstream `proxy`), and a team server's per-tenant outbound access. The process keeps a
//! network namespace of its own; a [`bridge`] inside it relays to a [`Proxy`] in the server
//! that checks every connection against the [`HostRules`].

pub mod bridge;
mod proxy;
mod rules;

pub use proxy::{Proxy, Upstream};
pub use rules::HostRules;
