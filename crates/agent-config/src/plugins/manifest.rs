//! What a plugin or marketplace directory holds: its manifest (`plugin.json`,
//! `marketplace.json`, at the root or under `.github/plugin/` or `.claude-plugin/`), its MCP
//! servers (`.mcp.json` or the manifest's `mcpServers`) and its skills (`SKILL.md` files).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::PluginError;

const MANIFEST_DIRS: &[&str] = &["", ".github/plugin", ".claude-plugin"];

fn find(dir: &Path, file: &str) -> Option<PathBuf> {
    MANIFEST_DIRS.iter().map(|d| dir.join(d).join(file)).find(|p| p.is_file())
}

fn read_json(path: &Path) -> Result<Value, PluginError> {
    let text = crate::read_scope::read_to_string(path)
        .map_err(|e| PluginError::Io(path.display().to_string(), e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| PluginError::Invalid(path.display().to_string(), e.to_string()))
}

/// A plugin's `plugin.json` (`None`: the directory has none).
pub fn plugin_manifest(dir: &Path) -> Result<Option<Value>, PluginError> {
    find(dir, "plugin.json").map(|p| read_json(&p)).transpose()
}

/// One plugin a marketplace advertises.
#[derive(Debug, Clone, PartialEq)]
pub struct Advertised {
    pub name: String,
    pub description: Option<String>,
    pub version: Option<String>,
    /// Where its files are: a directory relative to the marketplace (`None`: not a local path).
    pub source: Option<String>,
}

/// A marketplace's catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub name: String,
    pub plugins: Vec<Advertised>,
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Reads the `marketplace.json` of a local marketplace directory.
pub fn catalog(dir: &Path) -> Result<Catalog, PluginError> {
    let path =
        find(dir, "marketplace.json").ok_or_else(|| PluginError::NoMarketplaceManifest(dir.display().to_string()))?;
    let v = read_json(&path)?;
    let name = string(&v, "name").ok_or_else(|| PluginError::Invalid(path.display().to_string(), "no name".into()))?;
    let plugins = v
        .get("plugins")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    Some(Advertised {
                        name: string(p, "name")?,
                        description: string(p, "description"),
                        version: string(p, "version"),
                        source: p.get("source").and_then(|s| match s {
                            Value::String(s) => Some(s.clone()),
                            Value::Object(o) => o.get("path").and_then(Value::as_str).map(str::to_string),
                            _ => None,
                        }),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Catalog { name, plugins })
}

/// The `SKILL.md` files a plugin brings (its root, `skills/<name>/`, or the directories its
/// manifest names), at most a few levels down.
pub fn skill_count(dir: &Path) -> usize {
    fn walk(dir: &Path, depth: usize, n: &mut usize) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_file() && e.file_name() == "SKILL.md" {
                *n += 1;
            } else if kind.is_dir() && depth > 0 && !e.file_name().to_string_lossy().starts_with('.') {
                walk(&e.path(), depth - 1, n);
            }
        }
    }
    let mut n = 0;
    walk(dir, 3, &mut n);
    n
}

/// The MCP servers a plugin declares: `.mcp.json`'s `mcpServers` (or the file as the map),
/// then the manifest's `mcpServers` (a map or the path of such a file).
pub fn mcp_servers(dir: &Path) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let from_file = |path: &Path| -> serde_json::Map<String, Value> {
        match read_json(path) {
            Ok(v) => v
                .get("mcpServers")
                .and_then(Value::as_object)
                .cloned()
                .or_else(|| v.as_object().cloned())
                .unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "plugin MCP config unreadable");
                Default::default()
            }
        }
    };
    let dot = dir.join(".mcp.json");
    if dot.is_file() {
        out.extend(from_file(&dot));
    }
    if let Ok(Some(manifest)) = plugin_manifest(dir) {
        match manifest.get("mcpServers") {
            Some(Value::Object(m)) => out.extend(m.clone()),
            Some(Value::String(p)) => out.extend(from_file(&dir.join(p))),
            _ => {}
        }
    }
    out
}

/// Copies a plugin's files (symbolic links are not followed; `.git` stays behind).
pub fn copy_dir(from: &Path, to: &Path) -> Result<(), PluginError> {
    let io = |p: &Path, e: std::io::Error| PluginError::Io(p.display().to_string(), e.to_string());
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    for e in std::fs::read_dir(from).map_err(|e| io(from, e))?.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        let target = to.join(e.file_name());
        if kind.is_dir() {
            if e.file_name() != ".git" {
                copy_dir(&e.path(), &target)?;
            }
        } else if kind.is_file() {
            std::fs::copy(e.path(), &target).map_err(|err| io(&e.path(), err))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_marketplace_and_its_plugins_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("marketplace.json"),
            r#"{"name":"mp","plugins":[{"name":"p","source":"./p","description":"d","version":"1.0.0"},{"nameless":1}]}"#,
        )
        .unwrap();
        let p = dir.path().join("p");
        std::fs::create_dir_all(p.join("skills/two")).unwrap();
        std::fs::write(p.join("SKILL.md"), "x").unwrap();
        std::fs::write(p.join("skills/two/SKILL.md"), "x").unwrap();
        std::fs::write(p.join(".mcp.json"), r#"{"mcpServers":{"a":{"command":"x"}}}"#).unwrap();
        let c = catalog(dir.path()).unwrap();
        assert_eq!(c.name, "mp");
        assert_eq!(c.plugins.len(), 1);
        assert_eq!(c.plugins[0].source.as_deref(), Some("./p"));
        assert_eq!(skill_count(&p), 2);
        assert!(mcp_servers(&p).contains_key("a"));
        let copy = dir.path().join("copy");
        copy_dir(&p, &copy).unwrap();
        assert_eq!(skill_count(&copy), 2);
    }

    #[test]
    fn a_directory_without_a_catalog_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(catalog(dir.path()), Err(PluginError::NoMarketplaceManifest(_))));
    }
}
