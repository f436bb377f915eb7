//! Where requests the server makes on a session's behalf may go: a tenant's own model
//! provider (`baseUrl`), its HTTP MCP servers, `web_fetch`. The server itself runs inside a
//! network (its database, other services, a cloud's metadata endpoint) that a tenant must not
//! reach through it: addresses on loopback, private, link-local and other internal ranges are
//! refused unless the deployment allows them. Names are checked as they are resolved for the
//! connection itself (each HTTP client's resolver calls [`resolve`]), so a name that resolves
//! elsewhere the second time cannot slip past; a URL naming an address is checked by
//! [`check_host`].

use std::net::{IpAddr, SocketAddr};

/// Loopback, private, link-local, unique-local, carrier-grade NAT, unspecified, broadcast,
/// documentation, benchmarking and multicast addresses; IPv4-mapped IPv6 addresses are judged
/// as IPv4.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Why a request was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} is on an internal network, which this server does not reach for its sessions")]
pub struct Refused {
    pub host: String,
}

/// A URL's host, as given: an address must not be internal (a name is checked as it resolves).
pub fn check_host(host: &str) -> Result<(), Refused> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) if is_internal(ip) => Err(Refused { host: host.to_string() }),
        _ if bare.eq_ignore_ascii_case("localhost") || bare.to_ascii_lowercase().ends_with(".localhost") => {
            Err(Refused { host: host.to_string() })
        }
        _ => Ok(()),
    }
}

/// The addresses `host` resolves to that a session may reach: an error when it resolves only
/// to internal ones (or not at all).
pub async fn resolve(host: &str) -> std::io::Result<Vec<SocketAddr>> {
    let all: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
    let outside: Vec<SocketAddr> = all.iter().copied().filter(|a| !is_internal(a.ip())).collect();
    if outside.is_empty() {
        return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, Refused { host: host.to_string() }));
    }
    Ok(outside)
}

/// A resolver for reqwest clients that make requests on a session's behalf: names resolve
/// only to addresses outside internal networks ([`resolve`]). Addresses written in a URL are
/// not resolved, so a client using it checks those with [`check_host`] (every redirect too).
#[derive(Debug, Clone, Copy, Default)]
pub struct Resolver;

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = resolve(&host).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A redirect policy for such clients: at most `max` hops, none to an internal address.
pub fn redirects(max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= max {
            return attempt.error(format!("too many redirects (more than {max})"));
        }
        match check_host(attempt.url().host_str().unwrap_or_default()) {
            Ok(()) => attempt.follow(),
            Err(refused) => attempt.error(refused),
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn internal_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["140.82.112.3", "8.8.8.8", "2606:4700::1111"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn hosts_that_are_addresses_or_localhost_are_checked_as_given() {
        assert!(check_host("127.0.0.1").is_err());
        assert!(check_host("[::1]").is_err());
        assert!(check_host("LOCALHOST").is_err() && check_host("db.localhost").is_err());
        assert!(check_host("api.example.com").is_ok() && check_host("140.82.112.3").is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_only_inside_is_refused() {
        let err = resolve("localhost").await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("internal network"), "{err}");
    }
}
