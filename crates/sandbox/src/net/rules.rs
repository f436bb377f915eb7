//! Which hosts a sandboxed process may reach through its proxy: the original's
//! `userPolicy.network` host rules. Deny rules win over allow rules; a non-empty allow list
//! denies every host it does not name.

use std::net::IpAddr;

/// One rule, as written in `allowedHosts` or `blockedHosts`, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `*`: every host.
    Any,
    /// `*.example.com`: strict subdomains of `example.com`.
    Subdomains(String),
    /// `example.com` or an address.
    Exact(String),
}

impl Pattern {
    fn parse(raw: &str) -> Result<Pattern, String> {
        let p = normalise(raw);
        if p == "*" && raw.trim() == "*" {
            return Ok(Pattern::Any);
        }
        let (wild, name) = match p.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, p),
        };
        let valid = !name.is_empty()
            && (name.parse::<IpAddr>().is_ok()
                || name
                    .split('.')
                    .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')));
        if !valid || (wild && name.parse::<IpAddr>().is_ok()) {
            return Err(format!("\"{raw}\" is not a host name, an address, *.domain or *"));
        }
        Ok(if wild { Pattern::Subdomains(name) } else { Pattern::Exact(name) })
    }

    /// Whether `host` (normalised) matches; a blocked domain also covers its subdomains.
    fn matches(&self, host: &str, with_subdomains: bool) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Subdomains(d) => is_subdomain(host, d),
            Pattern::Exact(d) => {
                host == d || (with_subdomains && d.parse::<IpAddr>().is_err() && is_subdomain(host, d))
            }
        }
    }
}

fn is_subdomain(host: &str, domain: &str) -> bool {
    host.len() > domain.len() + 1 && host.ends_with(domain) && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
}

/// Lower case, no trailing dot, no brackets around an IPv6 address.
fn normalise(host: &str) -> String {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    match h.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(inner) => inner.to_string(),
        None => h,
    }
}

/// A sandbox's host rules, checked by its proxy on every connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRules {
    allowed: Vec<Pattern>,
    blocked: Vec<Pattern>,
    /// Whether loopback, private and other internal addresses may be reached
    /// ([`crate::egress::is_internal`]).
    pub local_network: bool,
}

impl HostRules {
    /// Rules from the config's lists; an entry that is not a host pattern is an error (a
    /// rule is never dropped).
    pub fn new(allowed: &[String], blocked: &[String], local_network: bool) -> Result<HostRules, String> {
        let parse = |l: &[String]| l.iter().map(|h| Pattern::parse(h)).collect::<Result<Vec<_>, _>>();
        Ok(HostRules { allowed: parse(allowed)?, blocked: parse(blocked)?, local_network })
    }

    /// Every host allowed (local addresses as `local_network` says).
    pub fn open(local_network: bool) -> HostRules {
        HostRules { allowed: Vec::new(), blocked: Vec::new(), local_network }
    }

    /// Whether `host` (a name or an address, as a client wrote it) may be reached; the
    /// reason when not. Addresses it resolves to are judged by [`HostRules::address`].
    pub fn host(&self, host: &str) -> Result<(), String> {
        let h = normalise(host);
        if self.blocked.iter().any(|p| p.matches(&h, true)) {
            return Err(format!("{h} is blocked by the sandbox's network policy (blockedHosts)"));
        }
        if !self.allowed.is_empty() && !self.allowed.iter().any(|p| p.matches(&h, false)) {
            return Err(format!("{h} is not in the sandbox's allowed hosts (allowedHosts)"));
        }
        if !self.local_network && (h == "localhost" || h.ends_with(".localhost")) {
            return Err(format!("{h} is on the local network, which the sandbox's policy does not allow"));
        }
        Ok(())
    }

    /// Whether an address a host resolved to may be reached.
    pub fn address(&self, ip: IpAddr) -> bool {
        self.local_network || !crate::egress::is_internal(ip)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rules(allowed: &[&str], blocked: &[&str]) -> HostRules {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        HostRules::new(&v(allowed), &v(blocked), true).unwrap()
    }

    #[test]
    fn an_allow_list_admits_exact_names_addresses_and_strict_subdomains_only() {
        let r = rules(&["github.com", "*.npmjs.org", "10.0.0.7", "[::1]"], &[]);
        for ok in ["github.com", "GitHub.com.", "registry.npmjs.org", "a.b.npmjs.org", "10.0.0.7", "::1", "[::1]"] {
            assert_eq!(r.host(ok), Ok(()), "{ok}");
        }
        for no in ["api.github.com", "npmjs.org", "evilnpmjs.org", "10.0.0.8", "github.com.evil.io"] {
            assert!(r.host(no).unwrap_err().contains("allowedHosts"), "{no}");
        }
        assert_eq!(rules(&[], &[]).host("anything.example"), Ok(()), "no allow list: everything not blocked");
    }

    #[test]
    fn a_block_wins_over_an_allow_and_covers_subdomains() {
        let r = rules(&["*.example.com", "example.com"], &["secret.example.com", "10.0.0.1", "*.deep.example.com"]);
        assert_eq!(r.host("www.example.com"), Ok(()));
        for no in ["secret.example.com", "a.secret.example.com", "x.deep.example.com", "10.0.0.1"] {
            assert!(r.host(no).unwrap_err().contains("blockedHosts"), "{no}");
        }
        assert_eq!(r.host("deep.example.com"), Ok(()), "*.domain is strict");
        assert!(rules(&[], &["*"]).host("github.com").is_err(), "* denies every host");
    }

    #[test]
    fn local_addresses_follow_the_toggle_and_bad_patterns_are_errors() {
        let closed = HostRules::new(&[], &[], false).unwrap();
        assert!(closed.host("localhost").is_err() && closed.host("db.localhost").is_err());
        assert!(!closed.address("127.0.0.1".parse().unwrap()) && !closed.address("192.168.1.2".parse().unwrap()));
        assert!(closed.address("140.82.112.3".parse().unwrap()));
        assert!(HostRules::open(true).address("127.0.0.1".parse().unwrap()));
        for bad in ["", "*.", "a b.com", "http://x.com", "*.10.0.0.1", "x.com:443"] {
            assert!(HostRules::new(&[bad.to_string()], &[], true).is_err(), "{bad:?}");
        }
    }
}
