//! `secrets.addFilterValues`: values a host declares secret are masked in every `session.event`
//! this process sends. The original allows it only in a single-tenant process, with
//! `COPILOT_ENABLE_SECRET_FILTERING=true`; the list is process-wide for that reason.

use std::sync::RwLock;

static VALUES: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// What replaces a secret value.
pub const MASK: &str = "******";

/// Values shorter than this are too likely to occur by chance to be masked.
const MIN_LEN: usize = 4;

pub fn enabled() -> bool {
    std::env::var("COPILOT_ENABLE_SECRET_FILTERING").is_ok_and(|v| v == "true" || v == "1")
}

pub fn add(values: impl IntoIterator<Item = String>) {
    let mut list = VALUES.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    for v in values {
        if v.chars().count() >= MIN_LEN && !list.contains(&v) {
            list.push(v);
        }
    }
    // Longest first, so a value containing another is masked whole.
    list.sort_by_key(|v| std::cmp::Reverse(v.len()));
}

/// `json` (a serialized event) with every secret value masked, as it appears inside JSON strings.
pub fn redact(json: &str) -> std::borrow::Cow<'_, str> {
    let list = VALUES.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    if list.is_empty() {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = std::borrow::Cow::Borrowed(json);
    for v in list.iter() {
        let quoted = protocol::jsonrpc::json_string(v);
        let escaped = &quoted[1..quoted.len() - 1];
        if out.contains(escaped) {
            out = std::borrow::Cow::Owned(out.replace(escaped, MASK));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_added_values_inside_json() {
        add(["rpc-secret-\"quoted\"-value".to_string(), "abc".to_string()]);
        let event = serde_json::json!({"content": "the key is rpc-secret-\"quoted\"-value, abc"}).to_string();
        let red = redact(&event);
        assert!(!red.contains("rpc-secret"), "{red}");
        assert!(red.contains(MASK));
        assert!(red.contains("abc"), "short values stay");
        let parsed: serde_json::Value = serde_json::from_str(&red).unwrap();
        assert_eq!(parsed["content"], "the key is ******, abc");
    }
}
