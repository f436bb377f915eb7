//! `skipper plugin`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::Scratch;

/// A plugin directory: a manifest, a skill, an agent and an MCP server.
fn plugin(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("skills/plug-skill")).unwrap();
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::write(dir.join("plugin.json"), format!(r#"{{"name":"{name}","version":"1.2.0","description":"Demo"}}"#))
        .unwrap();
    std::fs::write(dir.join("skills/plug-skill/SKILL.md"), "---\nname: plug-skill\ndescription: d\n---\nbody\n")
        .unwrap();
    std::fs::write(dir.join("agents/helper.agent.md"), "---\nname: helper\ndescription: helps\n---\nYou help.\n")
        .unwrap();
    std::fs::write(dir.join(".mcp.json"), r#"{"mcpServers":{"plugsrv":{"command":"echo","args":["x"]}}}"#).unwrap();
    dir
}

/// A file of the home as JSON (after the original's `//` header lines, if any); `Null` when absent.
fn file(s: &Scratch, name: &str) -> Value {
    let text = s.read(&s.copilot_home().join(name));
    text.find('{').and_then(|i| serde_json::from_str(&text[i..]).ok()).unwrap_or(Value::Null)
}

fn config(s: &Scratch) -> Value {
    file(s, "config.json")
}

#[test]
fn install_list_toggle_and_uninstall_a_plugin_directory() {
    let s = Scratch::new();
    let empty = s.run(&["plugin", "list"]).status(0).stdout;
    assert_eq!(empty, "No plugins installed.\n\nUse 'skipper plugin install <source>' to install a plugin.\n");
    assert_eq!(s.run(&["plugin", "list", "--json"]).status(0).stdout, "[]\n");

    let dir = plugin(s.home.parent().unwrap(), "demo-plug");
    let installed = s.run(&["plugin", "install", dir.to_str().unwrap()]).status(0);
    assert_eq!(installed.stdout, "Plugin \"demo-plug\" installed successfully. Installed 1 skill.\n");
    assert!(installed.stderr.starts_with("\nWarning: "), "{}", installed.stderr);
    let record = &config(&s)["installedPlugins"][0];
    assert_eq!(
        (&record["name"], &record["version"], &record["enabled"]),
        (&json!("demo-plug"), &json!("1.2.0"), &json!(true))
    );
    // The original's record: snake_case keys, the source an object, no stored source id.
    let copy = PathBuf::from(record["cache_path"].as_str().unwrap());
    assert_eq!(copy, s.copilot_home().join("installed-plugins/_direct/demo-plug"));
    assert!(copy.join("agents/helper.agent.md").is_file());
    assert_eq!(record["source"], json!({"source": "local", "path": dir}));
    assert!(record["installed_at"].is_string() && record.get("directSourceId").is_none(), "{record}");

    // What sessions read: the installed plugins through agent-config, and so its MCP server.
    let seen = agent_config::plugins::PluginStore::new(s.copilot_home()).installed().unwrap();
    assert_eq!(seen.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["demo-plug"]);
    let servers = s.run(&["mcp", "list"]).status(0).stdout;
    assert!(servers.contains("plugsrv (local, plugin demo-plug)"), "{servers}");

    assert_eq!(s.run(&["plugin", "disable", "demo-plug"]).status(0).stdout, "Disabled plugin \"demo-plug\".\n");
    assert_eq!(config(&s)["installedPlugins"][0]["enabled"], false);
    assert_eq!(s.run(&["plugin", "list"]).status(0).stdout, "Installed plugins:\n  • demo-plug (v1.2.0) [disabled]\n");
    assert_eq!(
        s.run(&["plugin", "list", "--json"]).status(0).stdout,
        "[\n  {\n    \"name\": \"demo-plug\",\n    \"marketplace\": \"\",\n    \"version\": \"1.2.0\",\n    \"enabled\": false,\n    \"source\": \"installed\"\n  }\n]\n"
    );
    assert_eq!(s.run(&["plugin", "enable", "demo-plug"]).status(0).stdout, "Enabled plugin \"demo-plug\".\n");
    let updated = s.run(&["plugin", "update", "demo-plug"]).status(0).stdout;
    assert_eq!(updated, "Plugin \"demo-plug\" updated successfully (v1.2.0, already at latest). Updated 1 skill.\n");

    assert_eq!(
        s.run(&["plugin", "uninstall", "demo-plug"]).status(0).stdout,
        "Plugin \"demo-plug\" uninstalled successfully.\n"
    );
    assert_eq!(config(&s)["installedPlugins"], json!([]));
    assert!(!copy.exists(), "its copy is gone");
}

#[test]
fn unknown_plugins_bad_directories_and_network_sources_are_refused() {
    let s = Scratch::new();
    let r = s.run(&["plugin", "uninstall", "nosuch"]).status(1);
    assert_eq!(r.stderr, "Failed to uninstall plugin: Plugin \"nosuch\" is not installed\n");
    let r = s.run(&["plugin", "enable", "nosuch"]).status(0);
    assert!(r.stderr.starts_with("Warning: no plugin named \"nosuch\" is currently configured"), "{}", r.stderr);
    let r = s.run(&["plugin", "update", "nosuch"]).status(1);
    assert_eq!(r.stderr, "Failed to update plugin: Plugin \"nosuch\" is not installed\n");
    s.run(&["plugin", "update"]).status(1);

    std::fs::create_dir_all(s.work.join("bare")).unwrap();
    let r = s.run(&["plugin", "install", "./bare"]).status(1);
    assert!(r.stderr.starts_with("Failed to install plugin: No plugin.json found in "), "{}", r.stderr);
    let r = s.run(&["plugin", "install", "./nowhere"]).status(1);
    assert!(r.stderr.starts_with("Failed to install plugin: Local plugin path does not exist: "), "{}", r.stderr);
    for remote in ["owner/repo", "owner/repo:plugins/x", "https://github.com/o/r.git", "git@github.com:o/r.git"] {
        let r = s.run(&["plugin", "install", remote]).status(1);
        assert!(r.stderr.contains("needs network access"), "{remote}: {}", r.stderr);
    }
    let r = s.run(&["plugin", "install", "--from-github", "1@2"]).status(1);
    assert!(r.stderr.contains("needs network access"), "{}", r.stderr);
    let r = s.run(&["plugin", "install", "x@nomp"]).status(1);
    assert_eq!(r.stderr, "Failed to install plugin: Marketplace \"nomp\" not found\n");
    assert!(s.run(&["plugin", "frobnicate"]).status(1).stderr.contains("unrecognized subcommand"));
    let help = s.run(&["plugin", "marketplace"]).status(0).stdout;
    assert!(help.contains("Usage: skipper plugin marketplace <COMMAND>") && !help.contains("  help "), "{help}");
    assert_eq!(config(&s), Value::Null, "nothing was written");
}

#[test]
fn a_local_marketplace_is_added_browsed_installed_from_and_removed() {
    let s = Scratch::new();
    let mp = s.home.parent().unwrap().join("mp");
    plugin(&mp.join("plugins"), "mplug");
    std::fs::create_dir_all(mp.join(".github/plugin")).unwrap();
    std::fs::write(
        mp.join(".github/plugin/marketplace.json"),
        r#"{"name":"local-mp","plugins":[{"name":"mplug","source":"./plugins/mplug","description":"MP plugin","version":"1.2.0"}]}"#,
    )
    .unwrap();
    let listed = s.run(&["plugin", "marketplace", "list"]).status(0).stdout;
    assert!(
        listed.starts_with("Included with GitHub Copilot:\n")
            && listed.contains("  ◆ awesome-copilot (GitHub: github/awesome-copilot)\n"),
        "{listed}"
    );

    let added = s.run(&["plugin", "marketplace", "add", mp.to_str().unwrap()]).status(0).stdout;
    assert_eq!(added, "Marketplace \"local-mp\" added successfully.\n");
    let again = s.run(&["plugin", "marketplace", "add", mp.to_str().unwrap()]).status(1).stderr;
    assert_eq!(again, "Failed to add marketplace: Marketplace \"local-mp\" is already registered\n");
    let listed = s.run(&["plugin", "marketplace", "list"]).status(0).stdout;
    assert!(
        listed.ends_with(&format!("\nRegistered marketplaces:\n  • local-mp (Local: {})\n", mp.display())),
        "{listed}"
    );
    let as_json: Value =
        serde_json::from_str(&s.run(&["plugin", "marketplace", "list", "--json"]).status(0).stdout).unwrap();
    assert_eq!(
        as_json[0],
        json!({"name": "local-mp", "source": format!("Local: {}", mp.display()), "isDefault": false})
    );
    assert_eq!(
        s.run(&["plugin", "marketplace", "browse", "local-mp"]).status(0).stdout,
        "Plugins in \"local-mp\":\n  • mplug - MP plugin\n\nInstall with: skipper plugin install <plugin-name>@local-mp\n"
    );
    assert!(s.run(&["plugin", "marketplace", "browse", "awesome-copilot"]).status(1).stderr.contains("network"));

    // A local marketplace's plugin is live: turned on, never copied.
    let installed = s.run(&["plugin", "install", "mplug@local-mp"]).status(0);
    let live_line = format!(
        "Enabled \"mplug@local-mp\". It is loaded live from {}, so edits take effect on the next session — nothing was copied.\n",
        mp.join("plugins/mplug").display()
    );
    assert_eq!(
        (installed.stdout, installed.stderr.as_str()),
        (format!("Plugin \"mplug\" installed successfully. Installed 1 skill.\n{live_line}"), "")
    );
    assert!(!s.copilot_home().join("installed-plugins").exists() && config(&s) == Value::Null);
    assert_eq!(
        file(&s, "settings.json"),
        json!({"extraKnownMarketplaces": {"local-mp": {"source": {"source": "directory", "path": mp}}},
               "enabledPlugins": {"mplug@local-mp": true}})
    );
    let r = s.run(&["plugin", "install", "nope@local-mp"]).status(1);
    assert_eq!(r.stderr, "Failed to install plugin: Plugin \"nope\" not found in marketplace \"local-mp\"\n");
    assert_eq!(
        s.run(&["plugin", "list"]).status(0).stdout,
        format!(
            "Live Plugins (loaded from a local marketplace directory, never copied):\n  • mplug@local-mp (v1.2.0) (enabled)\n      from {}\n",
            mp.display()
        )
    );
    let servers = s.run(&["mcp", "list"]).status(0).stdout;
    assert!(servers.contains("plugsrv (local, plugin mplug)"), "{servers}");

    let r = s.run(&["plugin", "marketplace", "remove", "awesome-copilot"]).status(1).stderr;
    assert_eq!(r, "Failed to remove marketplace: Marketplace \"awesome-copilot\" is a default marketplace and cannot be removed\n");
    let r = s.run(&["plugin", "marketplace", "add", "owner/market"]).status(1).stderr;
    assert!(r.contains("needs network access"), "{r}");
    let bare = s.work.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let r = s.run(&["plugin", "marketplace", "add", "bare"]).status(1).stderr;
    assert!(r.starts_with("Failed to add marketplace: No marketplace.json found in "), "{r}");

    // Live plugins do not hold their marketplace; their enabledPlugins entries stay, as the original's.
    let removed = s.run(&["plugin", "marketplace", "remove", "local-mp"]).status(0).stdout;
    assert_eq!(removed, "Marketplace \"local-mp\" removed successfully.\n");
    assert_eq!(file(&s, "settings.json")["extraKnownMarketplaces"], json!({}));
    assert_eq!(file(&s, "settings.json")["enabledPlugins"], json!({"mplug@local-mp": true}));
    assert!(s.run(&["plugin", "list"]).status(0).stdout.starts_with("No plugins installed."));
    let r = s.run(&["plugin", "marketplace", "remove", "local-mp"]).status(1).stderr;
    assert_eq!(r, "Failed to remove marketplace: Marketplace \"local-mp\" is not registered\n");
}

/// The original's header above `config.json`'s object.
const HEADER: &str = "// User settings belong in settings.json.\n// This file is managed automatically.\n";

/// A home as the original CLI 1.0.102 left it after `plugin install <dir>`, `plugin marketplace
/// add <mkt>` and `plugin install alpha@mymkt`: its exact files, and the directories they name.
fn original_home(s: &Scratch) -> (PathBuf, PathBuf, PathBuf) {
    let root = s.home.parent().unwrap();
    let direct = root.join("direct");
    std::fs::create_dir_all(direct.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(direct.join("skills/s1")).unwrap();
    std::fs::write(direct.join(".claude-plugin/plugin.json"), r#"{"name":"directp","version":"1.2.0"}"#).unwrap();
    std::fs::write(direct.join("skills/s1/SKILL.md"), "---\nname: s1\ndescription: d\n---\nbody\n").unwrap();
    let mkt = root.join("mkt");
    std::fs::create_dir_all(mkt.join(".claude-plugin")).unwrap();
    std::fs::write(
        mkt.join(".claude-plugin/marketplace.json"),
        r#"{"name":"mymkt","owner":{"name":"me"},"plugins":[{"name":"alpha","source":"./plugins/alpha"}]}"#,
    )
    .unwrap();
    let alpha = plugin(&mkt.join("plugins"), "alpha");
    std::fs::write(alpha.join("plugin.json"), r#"{"name":"alpha","version":"0.1.0"}"#).unwrap();
    let home = s.copilot_home();
    let cache = home.join("installed-plugins/_direct/direct");
    std::fs::create_dir_all(cache.join(".claude-plugin")).unwrap();
    std::fs::copy(direct.join(".claude-plugin/plugin.json"), cache.join(".claude-plugin/plugin.json")).unwrap();
    let (d, c) = (direct.display(), cache.display());
    let config = format!(
        r#"{HEADER}{{
  "installedPlugins": [
    {{
      "name": "directp",
      "marketplace": "",
      "version": "1.2.0",
      "installed_at": "2026-11-30T15:25:44.014036086Z",
      "cache_path": "{c}",
      "enabled": true,
      "source": {{
        "source": "local",
        "path": "{d}"
      }}
    }}
  ]
}}
"#
    );
    std::fs::write(home.join("config.json"), config).unwrap();
    let settings = format!(
        r#"{{
  "enabledPlugins": {{
    "alpha@mymkt": true
  }},
  "extraKnownMarketplaces": {{
    "mymkt": {{
      "source": {{
        "source": "directory",
        "path": "{}"
      }}
    }}
  }}
}}
"#,
        mkt.display()
    );
    std::fs::write(home.join("settings.json"), settings).unwrap();
    (direct, mkt, cache)
}

#[test]
fn a_home_the_original_wrote_is_listed_toggled_and_uninstalled() {
    let s = Scratch::new();
    let (direct, mkt, cache) = original_home(&s);
    let config_before = s.read(&s.copilot_home().join("config.json"));
    let listed = |s: &Scratch, alpha: &str| {
        format!(
            "Installed plugins:\n  • directp (v1.2.0)\n\n\
             Live Plugins (loaded from a local marketplace directory, never copied):\n  • alpha@mymkt (v0.1.0) ({alpha})\n      from {}\n",
            mkt.display()
        ) == s.run(&["plugin", "list"]).status(0).stdout
    };
    assert!(listed(&s, "enabled"), "{}", s.run(&["plugin", "list"]).stdout);
    let as_json: Value = serde_json::from_str(&s.run(&["plugin", "list", "--json"]).status(0).stdout).unwrap();
    assert_eq!(
        as_json[1],
        json!({"name": "alpha", "marketplace": "mymkt", "version": "0.1.0", "enabled": true, "source": "live",
               "installedFrom": mkt})
    );
    let servers = s.run(&["mcp", "list"]).status(0).stdout;
    assert!(servers.contains("plugsrv (local, plugin alpha)"), "{servers}");
    assert_eq!(s.read(&s.copilot_home().join("config.json")), config_before, "reading writes nothing");

    // A live plugin is switched in settings.json, the copied one in its record.
    assert_eq!(s.run(&["plugin", "disable", "alpha"]).status(0).stdout, "Disabled plugin \"alpha\".\n");
    assert_eq!(file(&s, "settings.json")["enabledPlugins"], json!({"alpha@mymkt": false}));
    assert!(listed(&s, "disabled"));
    s.run(&["plugin", "enable", "alpha@mymkt"]).status(0);
    assert_eq!(file(&s, "settings.json")["enabledPlugins"], json!({"alpha@mymkt": true}));
    s.run(&["plugin", "disable", "directp"]).status(0);
    let config_after = s.read(&s.copilot_home().join("config.json"));
    assert_eq!(config_after, config_before.replace("\"enabled\": true", "\"enabled\": false"), "same file, one flag");
    s.run(&["plugin", "enable", "directp"]).status(0);

    let updated = s.run(&["plugin", "update", "alpha@mymkt"]).status(0).stdout;
    assert_eq!(
        updated,
        format!("Plugin \"alpha@mymkt\" is always loaded live from {}; there is nothing to update.\n", mkt.display())
    );

    // Uninstalling the live plugin turns it off; the copied one goes with its copy.
    let r = s.run(&["plugin", "uninstall", "alpha@mymkt"]).status(0).stdout;
    assert_eq!(
        r,
        format!("Plugin \"alpha@mymkt\" disabled. It is still on disk at {} — nothing was removed.\n", mkt.display())
    );
    assert!(mkt.join("plugins/alpha/plugin.json").is_file());
    assert_eq!(file(&s, "settings.json")["enabledPlugins"], json!({"alpha@mymkt": false}));
    let r = s.run(&["plugin", "uninstall", "directp"]).status(0).stdout;
    assert_eq!(r, "Plugin \"directp\" uninstalled successfully.\n");
    assert!(!cache.exists() && direct.is_dir());
    let text = s.read(&s.copilot_home().join("config.json"));
    assert!(text.starts_with(HEADER), "{text}");
    assert_eq!(file(&s, "config.json"), json!({"installedPlugins": []}));

    // Installing it again writes the original's record.
    s.run(&["plugin", "install", direct.to_str().unwrap()]).status(0);
    let record = config(&s)["installedPlugins"][0].clone();
    let keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "marketplace", "version", "installed_at", "cache_path", "enabled", "source"]);
    assert_eq!(record["cache_path"], json!(cache));
}

#[test]
fn plugin_dir_options_are_listed_in_their_own_section() {
    let s = Scratch::new();
    let root = s.home.parent().unwrap().to_path_buf();
    let ext = plugin(&root, "ext-plug");
    let installed = plugin(&root.join("other"), "inst-plug");
    s.run(&["plugin", "install", installed.to_str().unwrap()]).status(0);
    std::fs::create_dir_all(s.work.join("empty")).unwrap();
    let args = ["--plugin-dir", ext.to_str().unwrap(), "--plugin-dir", "empty", "--plugin-dir"];
    let line: Vec<&str> = args.into_iter().chain([installed.to_str().unwrap(), "plugin", "list"]).collect();
    assert_eq!(
        s.run(&line).status(0).stdout,
        "Installed plugins:\n  • inst-plug (v1.2.0)\n\nExternal Plugins (via --plugin-dir):\n  • ext-plug (v1.2.0)\n"
    );
    let with_json: Vec<&str> = line.iter().copied().chain(["--json"]).collect();
    let as_json: Value = serde_json::from_str(&s.run(&with_json).status(0).stdout).unwrap();
    assert_eq!(
        as_json[1],
        json!({"name": "ext-plug", "marketplace": "", "version": "1.2.0", "enabled": true, "source": "external"})
    );
}
