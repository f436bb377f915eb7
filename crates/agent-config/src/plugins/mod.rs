//! Plugins the user installed and the marketplaces they come from (`plugins.*`), kept where
//! and how the original CLI keeps them, so one `$COPILOT_HOME` serves both:
//!
//! - a plugin installed from a directory is copied under `installed-plugins/_direct/` and
//!   recorded in `config.json`'s `installedPlugins` (see [`crate::installed_plugin`]);
//! - the user's marketplaces are `settings.json`'s `extraKnownMarketplaces` ([`marketplaces`]);
//! - a plugin of a directory marketplace is live ([`live`]): loaded from where it is, turned
//!   on and off in `settings.json`'s `enabledPlugins`, never copied.
//!
//! The built-in marketplaces are on GitHub: listed, but browsing or installing from them needs
//! the network and is refused with the reason.

mod live;
pub mod manifest;
mod marketplaces;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use self::marketplaces::Marketplace;
use crate::installed_plugin::{local_source, source_id};
use crate::json_file::FileError;
use crate::user_config::{self, InstalledPlugin, UserConfig};
use crate::user_settings;

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
    #[error("Plugin \"{0}\" was installed from a repository or URL; fetching it needs network access this runtime does not have")]
    RemoteSource(String),
    #[error("Plugin \"{plugin}\" not found in marketplace \"{marketplace}\"")]
    NotAdvertised { plugin: String, marketplace: String },
    #[error("Plugin \"{0}\" is not installed")]
    NotInstalled(String),
    #[error("Plugin \"{0}\" is already installed")]
    AlreadyInstalled(String),
    #[error(transparent)]
    File(#[from] FileError),
}

/// Installing straight from a directory still works, but marketplaces are the way now (the
/// original's words).
pub const DIRECT_INSTALL_DEPRECATION: &str = "Direct plugin installs (repos, URLs, local paths) are deprecated. \
Only plugin@marketplace installs will be supported in a future release.";

/// What installing or updating did. A live plugin (`plugin.is_live()`) was not copied: its
/// install only turned it on, and its update has nothing to do.
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

/// The plugin records of one `$COPILOT_HOME`. Every change of `config.json` is one `update`
/// (see `user_config`), leaving its other settings as they are; `settings.json` is changed
/// through `user_settings`.
pub struct PluginStore {
    home: PathBuf,
}

impl PluginStore {
    pub fn new(home: PathBuf) -> Self {
        Self { home }
    }

    /// Runs `f` on the persisted records and writes them back if it succeeded (an absent list
    /// that stays empty stays absent: a live install writes no `config.json`).
    fn update<T>(&self, f: impl FnOnce(&mut Vec<InstalledPlugin>) -> Result<T, PluginError>) -> Result<T, PluginError> {
        user_config::file(&self.home).update(|c: &mut UserConfig| {
            let had = c.installed_plugins.is_some();
            let out = f(c.installed_plugins.get_or_insert_default())?;
            if !had && c.installed_plugins.as_ref().is_some_and(Vec::is_empty) {
                c.installed_plugins = None;
            }
            Ok(out)
        })
    }

    /// The records `config.json` keeps (copied plugins).
    fn persisted(&self) -> Result<Vec<InstalledPlugin>, PluginError> {
        Ok(user_config::file(&self.home).read()?.installed_plugins.unwrap_or_default())
    }

    /// Every installed plugin: the copied ones `config.json` records, then the live plugins of
    /// the user's directory marketplaces.
    pub fn installed(&self) -> Result<Vec<InstalledPlugin>, PluginError> {
        let persisted = self.persisted()?;
        let settings = user_settings::file(&self.home).read()?;
        let live = live::records(&self.marketplaces()?, &settings, &persisted);
        Ok(persisted.into_iter().chain(live).collect())
    }

    /// Deletes a plugin's copy once no record names it, and only ever under
    /// `installed-plugins/`: a record written by hand or by another program must not make an
    /// uninstall delete someone's own directory, and the original gives two directories of the
    /// same name one copy, which must outlive the first one's uninstall.
    fn remove_copy(&self, cache_path: &str) {
        let root = self.home.join("installed-plugins");
        let path = Path::new(cache_path);
        let shared = self.persisted().map_or(true, |all| all.iter().any(|p| p.cache_path == cache_path));
        if path.starts_with(&root) && path != root && !cache_path.contains("..") && !shared {
            let _ = std::fs::remove_dir_all(path);
        }
    }

    /// Installs `name@marketplace` or a plugin directory.
    pub fn install(&self, source: &str, cwd: &Path) -> Result<InstallOutcome, PluginError> {
        if let Some((plugin, marketplace)) = split_spec(source) {
            return self.install_live(plugin, marketplace);
        }
        let mut out = self.install_directory(&resolve(source, cwd), source, None)?;
        out.deprecation = Some(DIRECT_INSTALL_DEPRECATION);
        Ok(out)
    }

    /// Copies a plugin directory under `installed-plugins/_direct/<its name>` and records it,
    /// replacing the record of the same source (`was`: updating it, whose state is kept).
    fn install_directory(
        &self,
        dir: &Path,
        given: &str,
        was: Option<&InstalledPlugin>,
    ) -> Result<InstallOutcome, PluginError> {
        if !dir.is_dir() {
            return Err(PluginError::Io(given.into(), "not a plugin directory or name@marketplace".into()));
        }
        let manifest =
            manifest::plugin_manifest(dir)?.ok_or_else(|| PluginError::NoPluginManifest(dir.display().to_string()))?;
        let name = string_field(&manifest, "name")
            .ok_or_else(|| PluginError::Invalid(dir.display().to_string(), "plugin.json has no name".into()))?;
        let path = dir.display().to_string();
        let id = source_id(&path);
        let cache = self.direct_cache(dir, &id)?;
        let _ = std::fs::remove_dir_all(&cache);
        manifest::copy_dir(dir, &cache)?;
        let mut plugin =
            InstalledPlugin::new(name, String::new(), string_field(&manifest, "version"), cache.display().to_string());
        plugin.installed_at = Some(now());
        plugin.source = Some(local_source(&path));
        if let Some(was) = was {
            plugin.enabled = was.enabled;
            plugin.extra = was.extra.clone();
        }
        let old = self.update(|s| {
            let old = s.iter().position(|p| p.direct_source_id().as_deref() == Some(&id)).map(|i| s.remove(i));
            s.push(plugin.clone());
            Ok(old)
        })?;
        // An older Skipper kept the copy under `_direct/<id>`.
        if let Some(o) = old.as_ref().filter(|o| o.cache_path != plugin.cache_path) {
            self.remove_copy(&o.cache_path);
        }
        Ok(InstallOutcome {
            skills: manifest::skill_count(&cache),
            plugin,
            previous_version: old.and_then(|o| o.version),
            deprecation: None,
        })
    }

    /// `_direct/<directory name>`, as the original names the copy; `<name>-<id>` when another
    /// source's copy already has that name (the original would share it, and one uninstall
    /// would then delete the other's files).
    fn direct_cache(&self, dir: &Path, id: &str) -> Result<PathBuf, PluginError> {
        let base = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| id.to_string());
        let root = self.home.join("installed-plugins").join("_direct");
        let plain = root.join(&base);
        let taken = self.persisted()?.iter().any(|p| {
            Path::new(&p.cache_path) == plain && p.direct_source_id().as_deref() != Some(id) && p.marketplace.is_empty()
        });
        Ok(if taken { root.join(format!("{base}-{id}")) } else { plain })
    }

    /// "Installs" a plugin of a directory marketplace: turns it on; nothing is copied. A copy
    /// an older Skipper made of it gives way to the live plugin.
    fn install_live(&self, plugin: &str, marketplace: &str) -> Result<InstallOutcome, PluginError> {
        let (from, _) = self.advertised(plugin, marketplace)?;
        let spec = format!("{plugin}@{marketplace}");
        let old = self.update(|s| Ok(s.iter().position(|p| p.spec() == spec).map(|i| s.remove(i))))?;
        if let Some(o) = &old {
            self.remove_copy(&o.cache_path);
        }
        user_settings::set_plugin_enabled(&self.home, &spec, true)?;
        let not_advertised = || PluginError::NotAdvertised { plugin: plugin.into(), marketplace: marketplace.into() };
        let record =
            self.installed()?.into_iter().find(|p| p.is_live() && p.spec() == spec).ok_or_else(not_advertised)?;
        Ok(InstallOutcome {
            skills: manifest::skill_count(&from),
            plugin: record,
            previous_version: old.and_then(|o| o.version),
            deprecation: None,
        })
    }

    /// Where a marketplace's plugin is, and the version its catalog gives.
    fn advertised(&self, plugin: &str, marketplace: &str) -> Result<(PathBuf, Option<String>), PluginError> {
        let dir = self.marketplace_dir(marketplace)?;
        let catalog = manifest::catalog(&dir)?;
        let not_advertised = || PluginError::NotAdvertised { plugin: plugin.into(), marketplace: marketplace.into() };
        let entry = catalog.plugins.into_iter().find(|p| p.name == plugin).ok_or_else(not_advertised)?;
        let from = live::plugin_dir(&dir, entry.source.as_deref().ok_or_else(not_advertised)?);
        if !from.is_dir() {
            return Err(PluginError::Io(from.display().to_string(), "not a directory".into()));
        }
        Ok((from, entry.version))
    }

    /// Copies afresh a marketplace plugin an older Skipper copied (it stays a copy).
    fn recopy(&self, was: &InstalledPlugin) -> Result<InstallOutcome, PluginError> {
        let (from, listed) = self.advertised(&was.name, &was.marketplace)?;
        let version = listed
            .or_else(|| manifest::plugin_manifest(&from).ok().flatten().and_then(|m| string_field(&m, "version")));
        let default = self.home.join("installed-plugins").join(&was.marketplace).join(&was.name);
        let cache = if Path::new(&was.cache_path).starts_with(self.home.join("installed-plugins")) {
            PathBuf::from(&was.cache_path)
        } else {
            default
        };
        let _ = std::fs::remove_dir_all(&cache);
        manifest::copy_dir(&from, &cache)?;
        let mut record = was.clone();
        record.version = version;
        record.cache_path = cache.display().to_string();
        record.installed_at = Some(now());
        self.update(|s| {
            match s.iter_mut().find(|p| p.spec() == was.spec()) {
                Some(p) => *p = record.clone(),
                None => s.push(record.clone()),
            }
            Ok(())
        })?;
        Ok(InstallOutcome {
            skills: manifest::skill_count(&cache),
            plugin: record,
            previous_version: was.version.clone(),
            deprecation: None,
        })
    }

    /// Removes an installed plugin (a directly installed one may be named by its source id).
    /// A live plugin is only turned off: its files are the marketplace's. The answer is the
    /// plugin as it was.
    pub fn uninstall(&self, name: &str, direct_source_id: Option<&str>) -> Result<InstalledPlugin, PluginError> {
        let p = self
            .installed()?
            .into_iter()
            .find(|p| match direct_source_id {
                Some(id) => p.direct_source_id().as_deref() == Some(id),
                None => p.matches(name),
            })
            .ok_or_else(|| PluginError::NotInstalled(name.into()))?;
        if p.is_live() {
            user_settings::set_plugin_enabled(&self.home, &p.spec(), false)?;
            return Ok(p);
        }
        self.update(|s| {
            let i = s.iter().position(|q| q == &p).ok_or_else(|| PluginError::NotInstalled(name.into()))?;
            s.remove(i);
            Ok(())
        })?;
        self.remove_copy(&p.cache_path);
        Ok(p)
    }

    /// Copies a plugin afresh from where it came from; a live plugin has nothing to update.
    pub fn update_plugin(&self, spec: &str) -> Result<InstallOutcome, PluginError> {
        let installed = self.installed()?;
        let p = installed.iter().find(|p| p.matches(spec)).ok_or_else(|| PluginError::NotInstalled(spec.into()))?;
        if p.is_live() {
            return Ok(InstallOutcome {
                skills: manifest::skill_count(Path::new(&p.cache_path)),
                plugin: p.clone(),
                previous_version: p.version.clone(),
                deprecation: None,
            });
        }
        if !p.marketplace.is_empty() {
            return self.recopy(p);
        }
        let path = p.local_path().ok_or_else(|| PluginError::RemoteSource(p.name.clone()))?;
        self.install_directory(Path::new(path), path, Some(p))
    }

    pub fn update_all(&self) -> Result<Vec<Updated>, PluginError> {
        Ok(self.installed()?.into_iter().map(|p| (p.clone(), self.update_plugin(&p.spec()))).collect())
    }

    /// Turns plugins on or off: a copied one in its record, a live one in `enabledPlugins`.
    /// Every name must be an installed plugin's, else nothing changes.
    pub fn set_enabled(&self, specs: &[String], enabled: bool) -> Result<(), PluginError> {
        let installed = self.installed()?;
        let mut found = Vec::new();
        for spec in specs {
            found.push(
                installed.iter().find(|p| p.matches(spec)).ok_or_else(|| PluginError::NotInstalled(spec.clone()))?,
            );
        }
        let (live, copied): (Vec<&InstalledPlugin>, Vec<&InstalledPlugin>) =
            found.into_iter().partition(|p| p.is_live());
        for p in live {
            user_settings::set_plugin_enabled(&self.home, &p.spec(), enabled)?;
        }
        if copied.is_empty() {
            return Ok(());
        }
        self.update(|s| {
            for p in s.iter_mut().filter(|p| copied.iter().any(|c| **c == **p)) {
                p.enabled = enabled;
            }
            Ok(())
        })
    }
}

fn string_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// When a plugin was installed, as the original writes it (`2026-11-30T15:25:44.014036086Z`).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// Whether `source` names a plugin in a marketplace (`name@marketplace`) rather than a directory.
pub fn is_marketplace_spec(source: &str) -> bool {
    split_spec(source).is_some()
}

/// `plugin@marketplace` (a spec has no `/` at all; a path may hold an `@`).
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
