//! TLS for remote servers, set up once for the connection and the OAuth client alike. Not in the
//! crate root: the root re-exports their types, and they would import it back.

/// Remote servers use rustls: pick its `ring` provider once (the rest of Skipper uses it too).
pub(crate) fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
