//! The tools offered on a call, with their wire text kept. A session offers the same tools call
//! after call (a few dozen KB of descriptions and schemas), so the set is shared between calls
//! and each texts it needs is made once per set instead of once per call.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire_format::WireFormat;

/// A function tool offered to the model. The schema is shared: tools offer the same one on
/// every call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: std::sync::Arc<Value>,
}

#[derive(Debug, Clone, Default)]
pub struct ToolSet(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    specs: Vec<ToolSpec>,
    /// The tools array in the first format it was sent in (as a history message's wire form),
    /// shared by the bodies that send it.
    wire: OnceLock<(WireFormat, Bytes)>,
    /// Bytes of the names, descriptions and schemas.
    text_bytes: OnceLock<usize>,
}

impl ToolSet {
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        Self(Arc::new(Inner { specs, wire: OnceLock::new(), text_bytes: OnceLock::new() }))
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.0.specs
    }

    /// This set when it offers exactly `specs` (so its cached texts stay), else a new set.
    pub fn reuse_for(&self, specs: Vec<ToolSpec>) -> Self {
        if self.0.specs == specs {
            self.clone()
        } else {
            Self::new(specs)
        }
    }

    /// Whether `other` is this very set (what `reuse_for` kept), not merely an equal one.
    pub fn is_same(&self, other: &ToolSet) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Bytes of the tools' names, descriptions and JSON schemas: what the context estimate
    /// counts for the tool definitions.
    pub fn text_bytes(&self) -> usize {
        *self.0.text_bytes.get_or_init(|| {
            self.0.specs.iter().map(|t| t.name.len() + t.description.len() + json_len(&t.parameters)).sum()
        })
    }

    /// The tools' wire JSON in `format`, made by `encode` the first time.
    pub(crate) fn wire(&self, format: WireFormat, encode: impl Fn(&[ToolSpec]) -> String) -> Bytes {
        let (cached, text) = self.0.wire.get_or_init(|| (format, Bytes::from(encode(&self.0.specs))));
        if *cached == format {
            text.clone()
        } else {
            Bytes::from(encode(&self.0.specs))
        }
    }
}

impl std::ops::Deref for ToolSet {
    type Target = [ToolSpec];

    fn deref(&self) -> &[ToolSpec] {
        &self.0.specs
    }
}

impl PartialEq for ToolSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.specs == other.0.specs
    }
}

impl From<Vec<ToolSpec>> for ToolSet {
    fn from(specs: Vec<ToolSpec>) -> Self {
        Self::new(specs)
    }
}

/// The length of a value's compact JSON text, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("does {name} \"quoted\""),
            parameters: Arc::new(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        }
    }

    #[test]
    fn text_bytes_count_names_descriptions_and_compact_schemas() {
        let set = ToolSet::new(vec![spec("a"), spec("bb")]);
        let expected: usize =
            set.iter().map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len()).sum();
        assert_eq!(set.text_bytes(), expected);
    }

    #[test]
    fn the_same_tools_keep_the_set_and_its_wire_text() {
        let set = ToolSet::new(vec![spec("a")]);
        let encoded = set.wire(WireFormat::ChatCompletions, |s| format!("{}", s.len()));
        let again = set.reuse_for(vec![spec("a")]);
        assert!(Arc::ptr_eq(&set.0, &again.0));
        // The cached text is served; the encoder is not asked again.
        assert_eq!(again.wire(WireFormat::ChatCompletions, |_| unreachable!()), encoded);
        let other = set.reuse_for(vec![spec("a"), spec("b")]);
        assert!(!Arc::ptr_eq(&set.0, &other.0));
        assert_eq!(other.wire(WireFormat::ChatCompletions, |s| format!("{}", s.len())), "2");
    }

    #[test]
    fn another_format_is_encoded_afresh() {
        let set = ToolSet::new(vec![spec("a")]);
        assert_eq!(set.wire(WireFormat::ChatCompletions, |_| "chat".into()), "chat");
        assert_eq!(set.wire(WireFormat::Anthropic, |_| "anthropic".into()), "anthropic");
        assert_eq!(set.wire(WireFormat::ChatCompletions, |_| unreachable!()), "chat");
    }
}
