//! A Copilot thread is one Skipper session. The session's id is derived from the tenant, the
//! agent and the thread id, so the mapping needs no table of its own and survives a restart
//! with the session's log: a thread is known exactly when its session exists.

use sha2::{Digest, Sha256};

/// The session id of `thread` for `agent` of `tenant` (a UUID-shaped name-based id).
pub fn session_id(tenant: &str, agent: &str, thread: &str) -> String {
    let mut hash = Sha256::new();
    for part in ["copilot-extensions", tenant, agent, thread] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_one_stable_session() {
        let a = session_id("alpha", "helper", "t1");
        assert_eq!(a, session_id("alpha", "helper", "t1"));
        assert_eq!(a.len(), 36);
        assert_ne!(a, session_id("alpha", "helper", "t2"));
        assert_ne!(a, session_id("beta", "helper", "t1"));
        assert_ne!(session_id("a", "bc", "t"), session_id("ab", "c", "t"), "parts are delimited");
    }
}
