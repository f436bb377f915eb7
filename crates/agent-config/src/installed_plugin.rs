//! One installed plugin, as `config.json`'s `installedPlugins` keeps it: the original CLI's
//! record (`installed_at`, `cache_path`, `source` an object such as
//! `{"source": "local", "path": …}`), which Skipper writes too. An older Skipper wrote
//! `cachePath`, a string `source` and a `directSourceId`; that form is still read, and the next
//! write of the file gives it the original's shape.
//!
//! A live record (a plugin of a directory marketplace, loaded from its own directory) is made
//! at read time by `plugins::live` and is never written: `installed_from` marks it.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstalledPlugin {
    pub name: String,
    /// Empty for a plugin installed straight from a directory (or repository, or URL).
    pub marketplace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_at: Option<String>,
    /// Its copy under `installed-plugins/`; a live plugin's own directory.
    #[serde(default, alias = "cachePath", skip_serializing_if = "String::is_empty")]
    pub cache_path: String,
    pub enabled: bool,
    /// Where a direct install came from, as the original describes it (`{"source": "local",
    /// "path": …}`, or a GitHub or URL source kept as it is). An older Skipper's string (a
    /// directory) reads as a local source.
    #[serde(default, deserialize_with = "source_compat", skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
    /// The marketplace directory a live record was made from; never written.
    #[serde(skip)]
    pub installed_from: Option<String>,
    /// An older Skipper stored the id; it is computed now ([`InstalledPlugin::direct_source_id`]),
    /// so it is read and dropped.
    #[serde(default, rename = "directSourceId", skip_serializing)]
    legacy_direct_source_id: Option<String>,
    /// What another program recorded about the plugin (`source_sha`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A string source (an older Skipper's directory) as the original's local source.
fn source_compat<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(path)) => Some(local_source(&path)),
        other => other,
    })
}

/// The original's source of a plugin installed from a directory.
pub fn local_source(path: &str) -> Value {
    json!({"source": "local", "path": path})
}

impl InstalledPlugin {
    /// A record with what every install knows; the rest is left unset.
    pub fn new(name: String, marketplace: String, version: Option<String>, cache_path: String) -> Self {
        Self {
            name,
            marketplace,
            version,
            installed_at: None,
            cache_path,
            enabled: true,
            source: None,
            installed_from: None,
            legacy_direct_source_id: None,
            extra: Map::new(),
        }
    }

    /// `name@marketplace`, or the bare name of a directly installed plugin.
    pub fn spec(&self) -> String {
        if self.marketplace.is_empty() {
            self.name.clone()
        } else {
            format!("{}@{}", self.name, self.marketplace)
        }
    }

    pub fn matches(&self, spec: &str) -> bool {
        spec == self.spec() || spec == self.name
    }

    /// Loaded from a directory marketplace in place (never copied, never persisted).
    pub fn is_live(&self) -> bool {
        self.installed_from.is_some()
    }

    /// The directory of a plugin installed from a local path.
    pub fn local_path(&self) -> Option<&str> {
        let s = self.source.as_ref()?;
        (s.get("source")?.as_str()? == "local").then_some(())?;
        s.get("path")?.as_str()
    }

    /// The API's `directSourceId`: an opaque id that is the same for the same source, for a
    /// direct install only. A local source hashes its path, as an older Skipper's stored id
    /// did, so ids clients kept still name the plugin.
    pub fn direct_source_id(&self) -> Option<String> {
        if !self.marketplace.is_empty() {
            return None;
        }
        let key = match (self.local_path(), &self.source) {
            (Some(path), _) => path.to_string(),
            (None, Some(other)) => other.to_string(),
            (None, None) => self.cache_path.clone(),
        };
        Some(source_id(&key))
    }
}

/// The first 8 bytes of the key's SHA-256, in hex.
pub fn source_id(key: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(key.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the original CLI 1.0.102 wrote for `copilot plugin install /tmp/plg/direct`.
    const ORIGINAL: &str = r#"{"name": "directp", "marketplace": "", "version": "1.2.0",
        "installed_at": "2026-11-30T15:25:44.014036086Z",
        "cache_path": "/tmp/plg/home/.copilot/installed-plugins/_direct/direct",
        "enabled": true,
        "source": {"source": "local", "path": "/tmp/plg/direct"}}"#;

    #[test]
    fn the_originals_record_reads_and_writes_back_unchanged() {
        let p: InstalledPlugin = serde_json::from_str(ORIGINAL).unwrap();
        assert_eq!(p.cache_path, "/tmp/plg/home/.copilot/installed-plugins/_direct/direct");
        assert_eq!(p.local_path(), Some("/tmp/plg/direct"));
        assert!(!p.is_live());
        let back = serde_json::to_value(&p).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(ORIGINAL).unwrap());
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "marketplace", "version", "installed_at", "cache_path", "enabled", "source"]);
    }

    #[test]
    fn an_older_skippers_record_reads_and_is_written_in_the_originals_shape() {
        let old = r#"{"name": "d", "marketplace": "", "directSourceId": "0123", "enabled": false,
                      "source": "/src/d", "cachePath": "/h/installed-plugins/_direct/0123", "extra": 1}"#;
        let p: InstalledPlugin = serde_json::from_str(old).unwrap();
        assert_eq!((p.cache_path.as_str(), p.local_path()), ("/h/installed-plugins/_direct/0123", Some("/src/d")));
        assert_eq!(p.direct_source_id(), Some(source_id("/src/d")), "the id an older Skipper stored for it");
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"name": "d", "marketplace": "", "cache_path": "/h/installed-plugins/_direct/0123",
                   "enabled": false, "source": {"source": "local", "path": "/src/d"}, "extra": 1})
        );
    }

    #[test]
    fn only_a_direct_install_has_a_source_id_and_other_sources_are_kept_as_they_are() {
        let gh = json!({"source": "github", "repo": "o/r", "path": "p"});
        let mut p = InstalledPlugin::new("x".into(), String::new(), None, "/c".into());
        p.source = Some(gh.clone());
        let id = p.direct_source_id().unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap()["source"], gh);
        p.source = Some(json!({"source": "github", "repo": "o/other", "path": "p"}));
        assert_ne!(p.direct_source_id().unwrap(), id);
        p.marketplace = "m".into();
        assert_eq!(p.direct_source_id(), None);
    }
}
