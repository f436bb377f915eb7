//! TLS for remote servers, set up once for the connection and the OAuth client alike. Not in the
//! crate root: the root re-exports their types, and they would import it back.

use std::sync::{Arc, OnceLock};

/// Remote servers use rustls: pick its `ring` provider once (the rest of Skipper uses it too).
pub(crate) fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The roots remote servers are checked against: the Mozilla set compiled in, as the model
/// client's (reqwest's `rustls-tls`). Not the platform verifier reqwest 0.13 defaults to: it
/// reads every file of `/etc/ssl/certs` for each client (a third of a `-p` run's time), and
/// without any there it fails to build, where rmcp's default client then panics.
fn client_config() -> rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth())
                .unwrap_or_else(|_| unreachable_config());
            // What reqwest itself asks for without its `http2` feature (rmcp's build has none).
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            config
        })
        .clone()
}

/// `ring` supports the default protocol versions; this only keeps the builder's `Result` from
/// needing an `unwrap`.
fn unreachable_config() -> rustls::ClientConfig {
    rustls::ClientConfig::builder()
        .with_root_certificates(rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
        .with_no_client_auth()
}

/// rmcp's HTTP client as rmcp builds its own (no idle pool, no redirects), on [`client_config`].
pub(crate) fn client_builder() -> rmcp_reqwest::ClientBuilder {
    ensure_crypto_provider();
    rmcp_reqwest::Client::builder()
        .tls_backend_preconfigured(client_config())
        .pool_max_idle_per_host(0)
        .redirect(rmcp_reqwest::redirect::Policy::none())
}
