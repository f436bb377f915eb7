//! The marketplaces plugins come from: the built-in ones (on GitHub) and the user's, which the
//! original keeps in `settings.json`'s `extraKnownMarketplaces` (see `user_settings`). Only a
//! local directory can be added, browsed or installed from; the rest need the network.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{manifest, resolve, PluginError, PluginStore, Refreshed};
use crate::user_settings;

/// The marketplaces every user has (on GitHub).
const DEFAULT_MARKETPLACES: &[(&str, &str)] =
    &[("copilot-plugins", "github/copilot-plugins"), ("awesome-copilot", "github/awesome-copilot")];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marketplace {
    pub name: String,
    /// The directory, `owner/repo` or URL it is read from.
    pub source: String,
    pub is_default: bool,
    /// A local marketplace's directory (its plugins are loaded from there, live).
    pub directory: Option<PathBuf>,
}

impl Marketplace {
    /// The user's marketplace as `settings.json` describes it: `{"source": {"source":
    /// "directory"|"github"|"url", "path"|"repo"|"url": …}}`.
    fn from_settings(name: String, v: &Value) -> Self {
        let s = v.get("source");
        let field = |k: &str| s.and_then(|s| s.get(k)).and_then(Value::as_str).map(str::to_string);
        let kind = field("source").unwrap_or_default();
        let directory = matches!(kind.as_str(), "directory" | "local").then(|| field("path")).flatten();
        let source = directory.clone().or_else(|| field("repo")).or_else(|| field("url")).unwrap_or_default();
        Self { name, source, is_default: false, directory: directory.map(PathBuf::from) }
    }
}

impl PluginStore {
    /// The built-in marketplaces, then the user's.
    pub fn marketplaces(&self) -> Result<Vec<Marketplace>, PluginError> {
        let mut out: Vec<Marketplace> = DEFAULT_MARKETPLACES
            .iter()
            .map(|(n, src)| Marketplace {
                name: n.to_string(),
                source: src.to_string(),
                is_default: true,
                directory: None,
            })
            .collect();
        for (name, v) in user_settings::marketplaces(&self.home)? {
            out.push(Marketplace::from_settings(name, &v));
        }
        Ok(out)
    }

    pub(super) fn marketplace_dir(&self, name: &str) -> Result<PathBuf, PluginError> {
        let all = self.marketplaces()?;
        let m =
            all.into_iter().find(|m| m.name == name).ok_or_else(|| PluginError::MarketplaceNotFound(name.into()))?;
        m.directory.ok_or(PluginError::Remote(m.name))
    }

    /// Registers a local marketplace directory; its name is the catalog's.
    pub fn add_marketplace(&self, source: &str, cwd: &Path) -> Result<String, PluginError> {
        let dir = resolve(source, cwd);
        if !dir.is_dir() {
            return Err(PluginError::Io(
                source.into(),
                "not a local directory (remote marketplaces need network access)".into(),
            ));
        }
        let name = manifest::catalog(&dir)?.name;
        if DEFAULT_MARKETPLACES.iter().any(|(n, _)| *n == name) {
            return Err(PluginError::MarketplaceExists(name));
        }
        user_settings::update_marketplaces(&self.home, |all| {
            if all.contains_key(&name) {
                return Err(PluginError::MarketplaceExists(name.clone()));
            }
            all.insert(name.clone(), user_settings::directory_marketplace(&dir.display().to_string()));
            Ok(name.clone())
        })
    }

    /// Removes a marketplace. Its live plugins simply stop being listed (their `enabledPlugins`
    /// entries stay, as the original leaves them). Plugins an older Skipper copied from it keep
    /// it unless `force` (then they go too); the answer names them.
    pub fn remove_marketplace(&self, name: &str, force: bool) -> Result<(bool, Vec<String>), PluginError> {
        if !user_settings::marketplaces(&self.home)?.contains_key(name) {
            return Ok((false, Vec::new()));
        }
        let dependents: Vec<String> =
            self.persisted()?.iter().filter(|p| p.marketplace == name).map(|p| p.spec()).collect();
        if !dependents.is_empty() && !force {
            return Ok((false, dependents));
        }
        user_settings::update_marketplaces(&self.home, |all| {
            all.shift_remove(name);
            Ok::<_, PluginError>(())
        })?;
        let gone = self.update(|s| {
            let (gone, kept) = std::mem::take(s).into_iter().partition(|p| p.marketplace == name);
            *s = kept;
            Ok(gone)
        })?;
        for p in gone {
            self.remove_copy(&p.cache_path);
        }
        Ok((true, dependents))
    }

    pub fn browse(&self, name: &str) -> Result<Vec<manifest::Advertised>, PluginError> {
        Ok(manifest::catalog(&self.marketplace_dir(name)?)?.plugins)
    }

    /// Re-reads the catalogs: one (by name) or every marketplace. One not on this machine
    /// cannot be fetched offline and reports why.
    pub fn refresh(&self, name: Option<&str>) -> Result<Vec<Refreshed>, PluginError> {
        let all = self.marketplaces()?;
        if let Some(n) = name {
            if !all.iter().any(|m| m.name == n) {
                return Err(PluginError::MarketplaceNotFound(n.into()));
            }
        }
        Ok(all
            .into_iter()
            .filter(|m| name.is_none_or(|n| n == m.name))
            .map(|m| {
                let r = match &m.directory {
                    Some(dir) => manifest::catalog(dir).map(|_| ()),
                    None => Err(PluginError::Remote(m.name.clone())),
                };
                (m.name, r)
            })
            .collect())
    }
}
