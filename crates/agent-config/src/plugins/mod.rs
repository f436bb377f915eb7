//! Plugins the user installed and the marketplaces they come from (`plugins.*`). Local
//! marketplaces (a directory with a `marketplace.json`) and plugins installed from them or from
//! a directory; a plugin's files are copied under `$COPILOT_HOME/installed-plugins/`, the
//! records live in `$COPILOT_HOME/config.json` (`marketplaces`, `installedPlugins`). The
//! built-in marketplaces are on GitHub: listed, but browsing or installing from them needs the
//! network and is refused with the reason.

pub mod manifest;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json_file::FileError;
use crate::user_config::{self, InstalledPlugin, UserConfig};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PluginError {
    #[error("Failed to read {0}: {1}")]
    Io(String, String),
    #[error("Invalid {0}: {1}")]
    Invalid(String, String),
    #[error("No marketplace.json found in {0}")]
    NoMarketplaceManifest(String),
    #[error("No plugin.json found in {0}")]
    NoPluginManifest(String),
    #[error("Marketplace \"{0}\" not found")]
    MarketplaceNotFound(String),
    #[error("Marketplace \"{0}\" is already registered")]
    MarketplaceExists(String),
    #[error("Marketplace \"{0}\" is hosted on GitHub; fetching it needs network access this runtime does not have")]
    Remote(String),
    #[error("Plugin \"{plugin}\" not found in marketplace \"{marketplace}\"")]
    NotAdvertised { plugin: String, marketplace: String },
    #[error("Plugin \"{0}\" is not installed")]
    NotInstalled(String),
    #[error("Plugin \"{0}\" is already installed")]
    AlreadyInstalled(String),
    #[error(transparent)]
    File(#[from] FileError),
}

/// The marketplaces every user has (on GitHub).
const DEFAULT_MARKETPLACES: &[(&str, &str)] =
    &[("copilot-plugins", "github/copilot-plugins"), ("awesome-copilot", "github/awesome-copilot")];

/// Installing straight from a directory still works, but marketplaces are the way now.
pub const DIRECT_INSTALL_DEPRECATION: &str = "Installing a plugin directly from a local path is deprecated; \
add its directory as a marketplace (plugins.marketplaces.add) and install it from there.";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marketplace {
    pub name: String,
    pub source: String,
    pub is_default: bool,
}

/// What installing or updating did.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallOutcome {
    pub plugin: InstalledPlugin,
    pub skills: usize,
    pub previous_version: Option<String>,
    pub deprecation: Option<&'static str>,
}

/// One marketplace's refresh: its name and how it went.
pub type Refreshed = (String, Result<(), PluginError>);

/// One plugin's update in `update_all`: the plugin as it was and how it went.
pub type Updated = (InstalledPlugin, Result<InstallOutcome, PluginError>);

/// The plugin records of `config.json`, as a change sees them.
struct State<'a> {
    marketplaces: &'a mut Map<String, Value>,
    installed_plugins: &'a mut Vec<InstalledPlugin>,
}

/// The plugin records of one `$COPILOT_HOME`. Every change is one `update` of `config.json`
/// (see `user_config`), leaving its other settings as they are.
pub struct PluginStore {
    home: PathBuf,
}

impl PluginStore {
    pub fn new(home: PathBuf) -> Self {
        Self { home }
    }

    /// Runs `f` on the records and writes them back if it succeeded.
    fn update<T>(&self, f: impl FnOnce(&mut State) -> Result<T, PluginError>) -> Result<T, PluginError> {
        user_config::file(&self.home).update(|c: &mut UserConfig| {
            f(&mut State {
                marketplaces: c.marketplaces.get_or_insert_default(),
                installed_plugins: c.installed_plugins.get_or_insert_default(),
            })
        })
    }

    fn read(&self) -> Result<UserConfig, PluginError> {
        Ok(user_config::file(&self.home).read()?)
    }

    /// The built-in marketplaces, then the user's.
    pub fn marketplaces(&self) -> Result<Vec<Marketplace>, PluginError> {
        let config = self.read()?;
        let mut out: Vec<Marketplace> = DEFAULT_MARKETPLACES
            .iter()
            .map(|(n, src)| Marketplace { name: n.to_string(), source: src.to_string(), is_default: true })
            .collect();
        for (name, v) in config.marketplaces.iter().flatten() {
            let source = v.get("source").and_then(Value::as_str).unwrap_or_default().to_string();
            out.push(Marketplace { name: name.clone(), source, is_default: false });
        }
        Ok(out)
    }

    fn marketplace_dir(&self, name: &str) -> Result<PathBuf, PluginError> {
        let all = self.marketplaces()?;
        let m =
            all.into_iter().find(|m| m.name == name).ok_or_else(|| PluginError::MarketplaceNotFound(name.into()))?;
        if m.is_default {
            return Err(PluginError::Remote(name.into()));
        }
        Ok(PathBuf::from(m.source))
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
        let catalog = manifest::catalog(&dir)?;
        let name = catalog.name.clone();
        if DEFAULT_MARKETPLACES.iter().any(|(n, _)| *n == name) {
            return Err(PluginError::MarketplaceExists(name));
        }
        self.update(|s| {
            if s.marketplaces.contains_key(&name) {
                return Err(PluginError::MarketplaceExists(name.clone()));
            }
            s.marketplaces.insert(name.clone(), serde_json::json!({"source": dir.display().to_string()}));
            Ok(name.clone())
        })
    }

    /// Removes a marketplace. Plugins installed from it keep it unless `force` (then they go
    /// too); the answer names them.
    pub fn remove_marketplace(&self, name: &str, force: bool) -> Result<(bool, Vec<String>), PluginError> {
        let removed_dirs = self.update(|s| {
            if !s.marketplaces.contains_key(name) {
                return Ok((false, Vec::new(), Vec::new()));
            }
            let dependents: Vec<String> =
                s.installed_plugins.iter().filter(|p| p.marketplace == name).map(InstalledPlugin::spec).collect();
            if !dependents.is_empty() && !force {
                return Ok((false, dependents, Vec::new()));
            }
            s.marketplaces.remove(name);
            let (gone, kept): (Vec<InstalledPlugin>, Vec<InstalledPlugin>) =
                std::mem::take(s.installed_plugins).into_iter().partition(|p| p.marketplace == name);
            *s.installed_plugins = kept;
            Ok((true, dependents, gone.into_iter().map(|p| p.cache_path).collect()))
        })?;
        let (removed, dependents, dirs) = removed_dirs;
        for d in dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        Ok((removed, dependents))
    }

    pub fn browse(&self, name: &str) -> Result<Vec<manifest::Advertised>, PluginError> {
        Ok(manifest::catalog(&self.marketplace_dir(name)?)?.plugins)
    }

    /// Re-reads the catalogs: one (by name) or every marketplace. A built-in one cannot be
    /// fetched offline and reports why.
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
                let r = if m.is_default {
                    Err(PluginError::Remote(m.name.clone()))
                } else {
                    manifest::catalog(Path::new(&m.source)).map(|_| ())
                };
                (m.name, r)
            })
            .collect())
    }

    pub fn installed(&self) -> Result<Vec<InstalledPlugin>, PluginError> {
        Ok(self.read()?.installed_plugins.unwrap_or_default())
    }

    /// Installs `name@marketplace` or a plugin directory.
    pub fn install(&self, source: &str, cwd: &Path) -> Result<InstallOutcome, PluginError> {
        if let Some((plugin, marketplace)) = split_spec(source) {
            return self.install_from_marketplace(plugin, marketplace, false);
        }
        let dir = resolve(source, cwd);
        if !dir.is_dir() {
            return Err(PluginError::Io(source.into(), "not a plugin directory or name@marketplace".into()));
        }
        let manifest =
            manifest::plugin_manifest(&dir)?.ok_or_else(|| PluginError::NoPluginManifest(dir.display().to_string()))?;
        let name = manifest
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| PluginError::Invalid(dir.display().to_string(), "plugin.json has no name".into()))?
            .to_string();
        let id = direct_source_id(&dir);
        let cache = self.home.join("installed-plugins").join("_direct").join(&id);
        let _ = std::fs::remove_dir_all(&cache);
        manifest::copy_dir(&dir, &cache)?;
        let plugin = InstalledPlugin {
            name,
            marketplace: String::new(),
            direct_source_id: Some(id.clone()),
            version: manifest.get("version").and_then(Value::as_str).map(str::to_string),
            enabled: true,
            source: dir.display().to_string(),
            cache_path: cache.display().to_string(),
            extra: Map::new(),
        };
        let previous = self.update(|s| {
            let previous = s.installed_plugins.iter().position(|p| p.direct_source_id.as_deref() == Some(&id));
            let old = previous.map(|i| s.installed_plugins.remove(i));
            s.installed_plugins.push(plugin.clone());
            Ok(old.and_then(|o| o.version))
        })?;
        Ok(InstallOutcome {
            skills: manifest::skill_count(&cache),
            plugin,
            previous_version: previous,
            deprecation: Some(DIRECT_INSTALL_DEPRECATION),
        })
    }

    fn install_from_marketplace(
        &self,
        plugin: &str,
        marketplace: &str,
        update: bool,
    ) -> Result<InstallOutcome, PluginError> {
        let dir = self.marketplace_dir(marketplace)?;
        let catalog = manifest::catalog(&dir)?;
        let not_advertised = || PluginError::NotAdvertised { plugin: plugin.into(), marketplace: marketplace.into() };
        let entry = catalog.plugins.iter().find(|p| p.name == plugin).ok_or_else(not_advertised)?;
        let from = dir.join(entry.source.as_deref().ok_or_else(not_advertised)?);
        let version = entry
            .version
            .clone()
            .or_else(|| manifest::plugin_manifest(&from).ok().flatten().and_then(|m| string_field(&m, "version")));
        let cache = self.home.join("installed-plugins").join(marketplace).join(plugin);
        let existing = self.installed()?.into_iter().find(|p| p.name == plugin && p.marketplace == marketplace);
        if update && existing.is_none() {
            return Err(PluginError::NotInstalled(format!("{plugin}@{marketplace}")));
        }
        let _ = std::fs::remove_dir_all(&cache);
        manifest::copy_dir(&from, &cache)?;
        let record = InstalledPlugin {
            name: plugin.into(),
            marketplace: marketplace.into(),
            direct_source_id: None,
            version,
            enabled: existing.as_ref().is_none_or(|p| p.enabled),
            source: from.display().to_string(),
            cache_path: cache.display().to_string(),
            extra: existing.as_ref().map(|p| p.extra.clone()).unwrap_or_default(),
        };
        self.update(|s| {
            s.installed_plugins.retain(|p| !(p.name == plugin && p.marketplace == marketplace));
            s.installed_plugins.push(record.clone());
            Ok(())
        })?;
        Ok(InstallOutcome {
            skills: manifest::skill_count(&cache),
            plugin: record,
            previous_version: existing.and_then(|p| p.version),
            deprecation: None,
        })
    }

    /// Removes an installed plugin (a directly installed one may be named by its source id).
    pub fn uninstall(&self, name: &str, direct_source_id: Option<&str>) -> Result<(), PluginError> {
        let cache = self.update(|s| {
            let i = s
                .installed_plugins
                .iter()
                .position(|p| match direct_source_id {
                    Some(id) => p.direct_source_id.as_deref() == Some(id),
                    None => p.matches(name),
                })
                .ok_or_else(|| PluginError::NotInstalled(name.into()))?;
            Ok(s.installed_plugins.remove(i).cache_path)
        })?;
        let _ = std::fs::remove_dir_all(cache);
        Ok(())
    }

    /// Copies a plugin afresh from where it came from.
    pub fn update_plugin(&self, spec: &str) -> Result<InstallOutcome, PluginError> {
        let installed = self.installed()?;
        let p = installed.iter().find(|p| p.matches(spec)).ok_or_else(|| PluginError::NotInstalled(spec.into()))?;
        if p.marketplace.is_empty() {
            let mut out = self.install(&p.source, Path::new("/"))?;
            out.deprecation = None;
            return Ok(out);
        }
        self.install_from_marketplace(&p.name, &p.marketplace, true)
    }

    pub fn update_all(&self) -> Result<Vec<Updated>, PluginError> {
        Ok(self.installed()?.into_iter().map(|p| (p.clone(), self.update_plugin(&p.spec()))).collect())
    }

    pub fn set_enabled(&self, specs: &[String], enabled: bool) -> Result<(), PluginError> {
        self.update(|s| {
            for spec in specs {
                let p = s
                    .installed_plugins
                    .iter_mut()
                    .find(|p| p.matches(spec))
                    .ok_or_else(|| PluginError::NotInstalled(spec.clone()))?;
                p.enabled = enabled;
            }
            Ok(())
        })
    }
}

fn string_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Whether `source` names a plugin in a marketplace (`name@marketplace`) rather than a directory.
pub fn is_marketplace_spec(source: &str) -> bool {
    split_spec(source).is_some()
}

/// `plugin@marketplace` (a path never holds an `@` before its last `/`... unless it does: a
/// spec has no `/` at all).
fn split_spec(source: &str) -> Option<(&str, &str)> {
    if source.contains('/') || source.contains('\\') {
        return None;
    }
    let (p, m) = source.rsplit_once('@')?;
    (!p.is_empty() && !m.is_empty()).then_some((p, m))
}

fn resolve(source: &str, cwd: &Path) -> PathBuf {
    let p = Path::new(source);
    let p = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    std::fs::canonicalize(&p).unwrap_or(p)
}

/// A stable id for a plugin directory (its canonical path, hashed).
fn direct_source_id(dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(dir.display().to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marketplace(root: &Path) -> PathBuf {
        let mp = root.join("mp");
        std::fs::create_dir_all(mp.join("demo")).unwrap();
        std::fs::write(
            mp.join("marketplace.json"),
            r#"{"name":"local-mp","plugins":[{"name":"demo","source":"./demo","description":"Demo.","version":"1.0.0"}]}"#,
        )
        .unwrap();
        std::fs::write(mp.join("demo/SKILL.md"), "---\nname: s\n---\n").unwrap();
        mp
    }

    #[test]
    fn a_local_marketplace_installs_updates_toggles_and_goes() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.json"), r#"{"model":"kept"}"#).unwrap();
        let store = PluginStore::new(home.clone());
        let mp = marketplace(root.path());
        assert_eq!(store.add_marketplace(mp.to_str().unwrap(), root.path()).unwrap(), "local-mp");
        assert!(matches!(
            store.add_marketplace(mp.to_str().unwrap(), root.path()),
            Err(PluginError::MarketplaceExists(_))
        ));
        let all = store.marketplaces().unwrap();
        assert!(all.iter().any(|m| m.is_default));
        assert!(all.iter().any(|m| m.name == "local-mp" && !m.is_default));
        assert_eq!(store.browse("local-mp").unwrap()[0].description.as_deref(), Some("Demo."));

        let out = store.install("demo@local-mp", root.path()).unwrap();
        assert_eq!(out.skills, 1);
        assert!(out.deprecation.is_none());
        assert!(Path::new(&out.plugin.cache_path).join("SKILL.md").is_file());
        store.set_enabled(&["demo@local-mp".into()], false).unwrap();
        assert!(!store.installed().unwrap()[0].enabled);
        let up = store.update_plugin("demo@local-mp").unwrap();
        assert_eq!(up.previous_version.as_deref(), Some("1.0.0"));
        assert!(!up.plugin.enabled, "an update keeps the plugin disabled");

        let config: Value = serde_json::from_str(&std::fs::read_to_string(home.join("config.json")).unwrap()).unwrap();
        assert_eq!(config["model"], "kept");

        assert_eq!(store.remove_marketplace("local-mp", false).unwrap(), (false, vec!["demo@local-mp".to_string()]));
        assert!(store.remove_marketplace("local-mp", true).unwrap().0);
        assert!(store.installed().unwrap().is_empty());
        assert!(!Path::new(&out.plugin.cache_path).exists());
    }

    #[test]
    fn a_directory_installs_directly_with_a_warning() {
        let root = tempfile::tempdir().unwrap();
        let store = PluginStore::new(root.path().join("home"));
        let dir = root.path().join("direct");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.json"), r#"{"name":"direct","version":"2.0.0"}"#).unwrap();
        let out = store.install(dir.to_str().unwrap(), root.path()).unwrap();
        assert_eq!(out.plugin.marketplace, "");
        assert!(out.deprecation.unwrap().contains("deprecated"));
        let id = out.plugin.direct_source_id.clone().unwrap();
        assert_eq!(store.installed().unwrap().len(), 1);
        assert!(matches!(store.uninstall("direct", Some("nope")), Err(PluginError::NotInstalled(_))));
        store.uninstall("direct", Some(&id)).unwrap();
        assert!(store.installed().unwrap().is_empty());
        assert!(matches!(store.install("x@nowhere", root.path()), Err(PluginError::MarketplaceNotFound(_))));
        assert!(matches!(store.browse("awesome-copilot"), Err(PluginError::Remote(_))));
    }
}
