//! A call's system prompt, with its JSON string kept. A conversation sends the same prompt on
//! every call (several KB), and escaping it into each body was a good part of a call's cost.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

#[derive(Debug, Clone, Default)]
pub struct SystemText(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    text: String,
    /// The text as a JSON string literal, quotes included (the same in every wire format),
    /// shared by the bodies that send it.
    json: OnceLock<Bytes>,
}

impl SystemText {
    pub fn new(text: String) -> Self {
        Self(Arc::new(Inner { text, json: OnceLock::new() }))
    }

    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// This prompt when it says exactly `text` (so its JSON stays), else a new one.
    pub fn reuse_for(&self, text: String) -> Self {
        if self.0.text == text {
            self.clone()
        } else {
            Self::new(text)
        }
    }

    /// The JSON string literal of the text, made once.
    pub fn json(&self) -> &Bytes {
        self.0.json.get_or_init(|| {
            // Serializing a string cannot fail.
            Bytes::from(serde_json::to_vec(&self.0.text).unwrap_or_default())
        })
    }
}

impl std::ops::Deref for SystemText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.text
    }
}

impl PartialEq for SystemText {
    fn eq(&self, other: &Self) -> bool {
        self.0.text == other.0.text
    }
}

impl From<String> for SystemText {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for SystemText {
    fn from(text: &str) -> Self {
        Self::new(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_the_escaped_text_and_survives_reuse() {
        let s = SystemText::new("a \"quoted\"\nline".into());
        assert_eq!(&s.json()[..], br#""a \"quoted\"\nline""#);
        let same = s.reuse_for("a \"quoted\"\nline".into());
        assert!(Arc::ptr_eq(&s.0, &same.0), "an equal text keeps the prompt (and its JSON)");
        let other = s.reuse_for("another".into());
        assert_eq!(&other.json()[..], br#""another""#);
        assert_eq!(&*other, "another");
    }
}
