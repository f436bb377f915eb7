//! `allowlist.toml`: which methods, definitions and events get generated.
//!
//! Only the names listed here (and what they reach) are generated, so the protocol crate grows
//! with the features that use it instead of carrying all 1300+ schema definitions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowlist {
    #[serde(default)]
    pub methods: NameList,
    #[serde(default)]
    pub types: NameList,
    #[serde(default)]
    pub events: EventList,
    #[serde(default)]
    pub relax: Relax,
    #[serde(default)]
    pub newer: Newer,
}

/// What the original CLI's newer schema adds to definitions both schemas have.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Newer {
    /// `Type.property`s taken over from the newer schema, as optional fields.
    #[serde(default)]
    pub properties: Vec<String>,
}

/// Departures from the schemas the SDKs need, each with its reason in the allowlist.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relax {
    /// `Type.field`s the schemas require but the SDKs omit: generated as optional.
    #[serde(default)]
    pub optional: Vec<String>,
    /// `Type.field`s holding credentials: generated as `crate::secret::SecretString`, whose
    /// `Debug` never shows the value, so logging a params struct cannot leak a key.
    #[serde(default)]
    pub secret: Vec<String>,
    /// Required `Type.field`s the original CLI sends as `null` (the schema does not say so):
    /// generated as a required `Option` that serializes `null`.
    #[serde(default)]
    pub nullable: Vec<String>,
    /// Optional `Type.field`s where a value the schema does not list (a newer client's) is
    /// read as absent instead of refusing the request.
    #[serde(default)]
    pub lenient: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameList {
    #[serde(default)]
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventList {
    #[serde(default)]
    pub names: Vec<String>,
    /// Event types the schema lacks, keyed by `type` string. Sorted (BTreeMap) so the output
    /// does not depend on how the TOML file orders its tables.
    #[serde(default)]
    pub extensions: BTreeMap<String, ExtensionEvent>,
}

/// An event type Skipper emits that the schema does not define; its payload is hand-written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionEvent {
    /// Rust path of the payload type, e.g. `crate::extensions::UsageRecordData`.
    pub data: String,
    pub ephemeral: Ephemeral,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ephemeral {
    Always,
    Optional,
}

impl Allowlist {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading allowlist {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self> {
        let list: Allowlist = toml::from_str(text).context("parsing allowlist TOML")?;
        list.check_duplicates()?;
        Ok(list)
    }

    /// A name listed twice is almost certainly a merge mistake; say so rather than ignore it.
    fn check_duplicates(&self) -> Result<()> {
        for (section, names) in
            [("methods", &self.methods.names), ("types", &self.types.names), ("events", &self.events.names)]
        {
            let mut seen = BTreeSet::new();
            for name in names {
                if !seen.insert(name) {
                    bail!("allowlist [{section}] names `{name}` twice");
                }
            }
        }
        for kind in self.events.extensions.keys() {
            if self.events.names.contains(kind) {
                bail!("allowlist names event `{kind}` both in [events] names and in [events.extensions]");
            }
        }
        Ok(())
    }
}
