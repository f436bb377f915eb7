//! Request signatures of the Copilot platform: ECDSA P-256 / SHA-256 over the raw body, the
//! DER signature base64-encoded in `Github-Public-Key-Signature`, the key named by
//! `Github-Public-Key-Identifier` among the PEM keys of a `/meta/public_keys/copilot_api`
//! document.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::Deserialize;

#[derive(Deserialize)]
struct KeysDocument {
    public_keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
struct KeyEntry {
    key_identifier: String,
    key: String,
    // `is_current` is part of the document; a key that is no longer current still verifies
    // requests signed before the rotation, so it is not consulted.
}

/// The platform's public keys by identifier.
#[derive(Default)]
pub struct PublicKeys {
    keys: HashMap<String, VerifyingKey>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing Github-Public-Key-Identifier or Github-Public-Key-Signature header")]
    Missing,
    #[error("unknown public key identifier")]
    UnknownKey,
    #[error("the signature is not valid base64 DER")]
    Malformed,
    #[error("the signature does not match the request body")]
    Mismatch,
}

impl PublicKeys {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let doc: KeysDocument = serde_json::from_str(text).context("expected {\"public_keys\": [...]}")?;
        let mut keys = HashMap::new();
        for entry in doc.public_keys {
            let key = VerifyingKey::from_public_key_pem(&entry.key)
                .map_err(|e| anyhow::anyhow!("key {}: not a P-256 public key in PEM: {e}", entry.key_identifier))?;
            keys.insert(entry.key_identifier, key);
        }
        Ok(Self { keys })
    }

    /// Verifies `body` against the named key. Header values are taken as sent.
    pub fn verify(&self, key_id: Option<&str>, signature: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
        let (Some(key_id), Some(signature)) = (key_id, signature) else { return Err(SignatureError::Missing) };
        let key = self.keys.get(key_id.trim()).ok_or(SignatureError::UnknownKey)?;
        let der = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .map_err(|_| SignatureError::Malformed)?;
        let signature = Signature::from_der(&der).map_err(|_| SignatureError::Malformed)?;
        key.verify(body, &signature).map_err(|_| SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::SigningKey;
    use p256::pkcs8::{EncodePublicKey, LineEnding};

    fn keys_with(id: &str, signing: &SigningKey) -> PublicKeys {
        let pem = signing.verifying_key().to_public_key_pem(LineEnding::LF).unwrap();
        let doc = serde_json::json!({"public_keys": [{"key_identifier": id, "key": pem, "is_current": true}]});
        PublicKeys::parse(&doc.to_string()).unwrap()
    }

    fn sign(signing: &SigningKey, body: &[u8]) -> String {
        let sig: Signature = signing.sign(body);
        base64::engine::general_purpose::STANDARD.encode(sig.to_der().as_bytes())
    }

    #[test]
    fn a_signed_body_verifies_and_nothing_else_does() {
        let signing = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let keys = keys_with("k1", &signing);
        let body = br#"{"messages":[]}"#;
        let sig = sign(&signing, body);
        assert_eq!(keys.verify(Some("k1"), Some(&sig), body), Ok(()));
        assert_eq!(keys.verify(Some("k1"), Some(&sig), br#"{"messages":[1]}"#), Err(SignatureError::Mismatch));
        assert_eq!(keys.verify(Some("k2"), Some(&sig), body), Err(SignatureError::UnknownKey));
        assert_eq!(keys.verify(None, Some(&sig), body), Err(SignatureError::Missing));
        assert_eq!(keys.verify(Some("k1"), None, body), Err(SignatureError::Missing));
        assert_eq!(keys.verify(Some("k1"), Some("!!"), body), Err(SignatureError::Malformed));
        let other = SigningKey::from_slice(&[9u8; 32]).unwrap();
        assert_eq!(keys.verify(Some("k1"), Some(&sign(&other, body)), body), Err(SignatureError::Mismatch));
    }

    #[test]
    fn a_bad_document_is_refused() {
        assert!(PublicKeys::parse("{}").is_err());
        assert!(PublicKeys::parse(r#"{"public_keys":[{"key_identifier":"k","key":"nope"}]}"#).is_err());
    }
}
