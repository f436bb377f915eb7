use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;

/// The original CLI's header above `config.json`'s object.
const HEADER: &str = "// User settings belong in settings.json.\n// This file is managed automatically.\n";

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap()
}

/// A directory marketplace `mymkt` advertising `alpha` (`./plugins/alpha`, version 0.1.0 in
/// its manifest, one skill) and `beta`, as the brief's example.
fn marketplace(root: &Path) -> PathBuf {
    let mkt = root.join("mkt");
    std::fs::create_dir_all(mkt.join(".claude-plugin")).unwrap();
    std::fs::write(
        mkt.join(".claude-plugin/marketplace.json"),
        r#"{"name":"mymkt","owner":{"name":"me"},"plugins":[{"name":"alpha","source":"./plugins/alpha"},
            {"name":"beta","source":"./plugins/beta","version":"0.3.0"}]}"#,
    )
    .unwrap();
    for (name, version) in [("alpha", "0.1.0"), ("beta", "0.2.0")] {
        let dir = mkt.join("plugins").join(name);
        std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
        std::fs::create_dir_all(dir.join("skills/s")).unwrap();
        std::fs::write(dir.join(".claude-plugin/plugin.json"), format!(r#"{{"name":"{name}","version":"{version}"}}"#))
            .unwrap();
        std::fs::write(dir.join("skills/s/SKILL.md"), "---\nname: s\n---\n").unwrap();
    }
    mkt
}

fn direct(root: &Path) -> PathBuf {
    let dir = root.join("direct");
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::write(dir.join(".claude-plugin/plugin.json"), r#"{"name":"directp","version":"1.2.0"}"#).unwrap();
    dir
}

/// `config.json` and `settings.json` as the original 1.0.102 wrote them after installing
/// `direct` and `alpha@mymkt`.
fn original_home(root: &Path) -> PathBuf {
    let home = root.join("home");
    std::fs::create_dir_all(home.join("installed-plugins/_direct/direct")).unwrap();
    let (dir, mkt) = (direct(root), marketplace(root));
    let cache = home.join("installed-plugins/_direct/direct");
    manifest::copy_dir(&dir, &cache).unwrap();
    let config = json!({"installedPlugins": [{"name": "directp", "marketplace": "", "version": "1.2.0",
        "installed_at": "2026-11-30T15:25:44.014036086Z", "cache_path": cache, "enabled": true,
        "source": {"source": "local", "path": dir}}]});
    std::fs::write(home.join("config.json"), format!("{HEADER}{config:#}\n")).unwrap();
    let settings = json!({"enabledPlugins": {"alpha@mymkt": true},
        "extraKnownMarketplaces": {"mymkt": {"source": {"source": "directory", "path": mkt}}}});
    std::fs::write(home.join("settings.json"), format!("{settings:#}\n")).unwrap();
    home
}

#[test]
fn a_home_the_original_wrote_lists_copied_and_live_plugins() {
    let root = tempfile::tempdir().unwrap();
    let home = original_home(root.path());
    let store = PluginStore::new(home.clone());
    let all = store.installed().unwrap();
    let seen: Vec<(String, Option<&str>, bool, bool)> =
        all.iter().map(|p| (p.spec(), p.version.as_deref(), p.enabled, p.is_live())).collect();
    assert_eq!(
        seen,
        [
            ("directp".into(), Some("1.2.0"), true, false),
            ("alpha@mymkt".into(), Some("0.1.0"), true, true),
            ("beta@mymkt".into(), Some("0.2.0"), false, true),
        ]
    );
    let mkt = root.path().join("mkt");
    assert_eq!(all[1].cache_path, mkt.join("plugins/alpha").display().to_string());
    assert_eq!(all[1].installed_from.as_deref(), Some(mkt.to_str().unwrap()));
    assert_eq!(all[0].direct_source_id(), Some(source_id(root.path().join("direct").to_str().unwrap())));
    let m = store.marketplaces().unwrap().into_iter().find(|m| m.name == "mymkt").unwrap();
    assert_eq!(m.directory.as_deref(), Some(mkt.as_path()));
    let before = std::fs::read_to_string(home.join("config.json")).unwrap();

    // Live plugins are turned on and off in settings.json; the copied one in its record.
    store.set_enabled(&["alpha".into(), "directp".into()], false).unwrap();
    store.set_enabled(&["beta@mymkt".into()], true).unwrap();
    assert_eq!(read(&home.join("settings.json"))["enabledPlugins"], json!({"alpha@mymkt": false, "beta@mymkt": true}));
    let config = std::fs::read_to_string(home.join("config.json")).unwrap();
    assert!(config.starts_with(HEADER), "{config}");
    assert_eq!(config.replace("\"enabled\": false", "\"enabled\": true"), before, "only the flag changed");

    // Uninstalling a live plugin turns it off and removes nothing; a copied one goes with its copy.
    let gone = store.uninstall("beta", None).unwrap();
    assert!(gone.is_live() && mkt.join("plugins/beta").is_dir());
    assert_eq!(read(&home.join("settings.json"))["enabledPlugins"]["beta@mymkt"], false);
    let up = store.update_plugin("alpha@mymkt").unwrap();
    assert!(up.plugin.is_live() && up.previous_version == up.plugin.version);
    let id = all[0].direct_source_id().unwrap();
    store.uninstall("directp", Some(&id)).unwrap();
    assert_eq!(read(&home.join("config.json"))["installedPlugins"], json!([]));
    assert!(!home.join("installed-plugins/_direct/direct").exists());

    // Removing the marketplace stops listing its plugins and leaves enabledPlugins as it is.
    assert_eq!(store.remove_marketplace("mymkt", false).unwrap(), (true, vec![]));
    assert!(store.installed().unwrap().is_empty());
    let settings = read(&home.join("settings.json"));
    assert_eq!(settings["extraKnownMarketplaces"], json!({}));
    assert_eq!(settings["enabledPlugins"]["alpha@mymkt"], false);
}

#[test]
fn skipper_writes_what_the_original_writes() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let store = PluginStore::new(home.clone());
    let dir = direct(root.path());
    let out = store.install(dir.to_str().unwrap(), root.path()).unwrap();
    assert_eq!(out.deprecation, Some(DIRECT_INSTALL_DEPRECATION));
    let record = &read(&home.join("config.json"))["installedPlugins"][0];
    let keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "marketplace", "version", "installed_at", "cache_path", "enabled", "source"]);
    let cache = home.join("installed-plugins/_direct/direct");
    assert_eq!(record["cache_path"], json!(cache));
    assert_eq!(record["source"], json!({"source": "local", "path": dir}));
    assert!(record["installed_at"].as_str().unwrap().ends_with('Z'));
    assert!(cache.join(".claude-plugin/plugin.json").is_file());

    let mkt = marketplace(root.path());
    assert_eq!(store.add_marketplace(mkt.to_str().unwrap(), root.path()).unwrap(), "mymkt");
    assert!(matches!(
        store.add_marketplace(mkt.to_str().unwrap(), root.path()),
        Err(PluginError::MarketplaceExists(_))
    ));
    let out = store.install("alpha@mymkt", root.path()).unwrap();
    assert!(out.plugin.is_live() && out.skills == 1 && out.deprecation.is_none());
    assert_eq!(
        read(&home.join("settings.json")),
        json!({"extraKnownMarketplaces": {"mymkt": {"source": {"source": "directory", "path": mkt}}},
               "enabledPlugins": {"alpha@mymkt": true}})
    );
    assert!(!home.join("installed-plugins/mymkt").exists(), "nothing was copied");
    assert_eq!(read(&home.join("config.json"))["installedPlugins"].as_array().unwrap().len(), 1);

    // Updating the direct plugin copies it afresh and keeps it off.
    store.set_enabled(&["directp".into()], false).unwrap();
    let up = store.update_plugin("directp").unwrap();
    assert_eq!((up.previous_version.as_deref(), up.plugin.enabled, up.deprecation), (Some("1.2.0"), false, None));
    assert!(matches!(store.install("x@nowhere", root.path()), Err(PluginError::MarketplaceNotFound(_))));
    assert!(matches!(store.install("nope@mymkt", root.path()), Err(PluginError::NotAdvertised { .. })));
    assert!(matches!(store.browse("awesome-copilot"), Err(PluginError::Remote(_))));
    assert!(matches!(store.set_enabled(&["nope".into()], true), Err(PluginError::NotInstalled(_))));
}

#[test]
fn an_older_skippers_home_keeps_working_and_moves_to_the_originals_places() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let mkt = marketplace(root.path());
    let dir = direct(root.path());
    let id = source_id(dir.to_str().unwrap());
    let (old_direct, old_copy) =
        (home.join("installed-plugins/_direct").join(&id), home.join("installed-plugins/mymkt/alpha"));
    manifest::copy_dir(&dir, &old_direct).unwrap();
    manifest::copy_dir(&mkt.join("plugins/alpha"), &old_copy).unwrap();
    let config = json!({"model": "kept", "marketplaces": {"mymkt": {"source": mkt}},
        "installedPlugins": [
            {"name": "directp", "marketplace": "", "directSourceId": id, "version": "1.2.0", "enabled": true,
             "source": dir, "cachePath": old_direct},
            {"name": "alpha", "marketplace": "mymkt", "version": "0.0.9", "enabled": false,
             "source": mkt.join("plugins/alpha"), "cachePath": old_copy}]});
    std::fs::write(home.join("config.json"), config.to_string()).unwrap();
    let store = PluginStore::new(home.clone());

    // The copied marketplace plugin stays installed (no live twin); beta is live.
    let all = store.installed().unwrap();
    let seen: Vec<(String, bool)> = all.iter().map(|p| (p.spec(), p.is_live())).collect();
    assert_eq!(seen, [("directp".into(), false), ("alpha@mymkt".into(), false), ("beta@mymkt".into(), true)]);
    assert_eq!(all[0].direct_source_id().as_deref(), Some(id.as_str()), "the id clients kept");
    assert_eq!(all[1].cache_path, old_copy.display().to_string());
    let up = store.update_plugin("alpha@mymkt").unwrap();
    assert_eq!(
        (up.previous_version.as_deref(), up.plugin.version.as_deref(), up.plugin.enabled),
        (Some("0.0.9"), Some("0.1.0"), false)
    );
    assert!(old_copy.join("skills/s/SKILL.md").is_file(), "copied afresh, where it was");

    // The next marketplace change moves the marketplaces to settings.json.
    let other = root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("marketplace.json"), r#"{"name":"other","plugins":[]}"#).unwrap();
    store.add_marketplace(other.to_str().unwrap(), root.path()).unwrap();
    let settings = read(&home.join("settings.json"));
    assert_eq!(
        settings["extraKnownMarketplaces"],
        json!({"mymkt": {"source": {"source": "directory", "path": mkt}},
               "other": {"source": {"source": "directory", "path": other}}})
    );
    let config = read(&home.join("config.json"));
    assert!(config.get("marketplaces").is_none() && config["model"] == "kept");

    // Any write gives the records the original's shape; the direct copy moves to _direct/<name>.
    store.update_plugin("directp").unwrap();
    let config = read(&home.join("config.json"));
    let records = config["installedPlugins"].as_array().unwrap();
    assert!(records.iter().all(|r| r.get("cachePath").is_none() && r.get("directSourceId").is_none()), "{records:?}");
    let alpha = records.iter().find(|r| r["name"] == "alpha").unwrap();
    assert_eq!(alpha["source"], json!({"source": "local", "path": mkt.join("plugins/alpha")}));
    assert!(!old_direct.exists() && home.join("installed-plugins/_direct/direct").is_dir());

    // Installing the copied one again makes it live; the copy goes.
    let out = store.install("alpha@mymkt", root.path()).unwrap();
    assert!(out.plugin.is_live() && out.plugin.enabled && !old_copy.exists());
    assert_eq!(store.remove_marketplace("mymkt", false).unwrap(), (true, vec![]));
}

#[test]
fn a_copied_dependent_keeps_its_marketplace_unless_forced() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let mkt = marketplace(root.path());
    let copy = home.join("installed-plugins/mymkt/alpha");
    manifest::copy_dir(&mkt.join("plugins/alpha"), &copy).unwrap();
    let settings = json!({"extraKnownMarketplaces": {"mymkt": {"source": {"source": "directory", "path": mkt}}}});
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    let config =
        json!({"installedPlugins": [{"name": "alpha", "marketplace": "mymkt", "enabled": true, "cache_path": copy}]});
    std::fs::write(home.join("config.json"), config.to_string()).unwrap();
    let store = PluginStore::new(home.clone());
    assert_eq!(store.remove_marketplace("mymkt", false).unwrap(), (false, vec!["alpha@mymkt".to_string()]));
    assert_eq!(store.remove_marketplace("mymkt", true).unwrap(), (true, vec!["alpha@mymkt".to_string()]));
    assert!(store.installed().unwrap().is_empty() && !copy.exists());
    assert_eq!(store.remove_marketplace("mymkt", true).unwrap(), (false, vec![]));
}

#[test]
fn an_uninstall_never_deletes_outside_installed_plugins() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let mine = root.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let config = json!({"installedPlugins": [{"name": "p", "marketplace": "", "enabled": true, "cache_path": mine}]});
    std::fs::write(home.join("config.json"), config.to_string()).unwrap();
    PluginStore::new(home).uninstall("p", None).unwrap();
    assert!(mine.is_dir());
}
