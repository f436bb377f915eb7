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

fn config(s: &Scratch) -> Value {
    serde_json::from_str(&s.read(&s.copilot_home().join("config.json"))).unwrap_or(Value::Null)
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
    let copy = PathBuf::from(record["cachePath"].as_str().unwrap());
    assert!(
        copy.starts_with(s.copilot_home().join("installed-plugins")) && copy.join("agents/helper.agent.md").is_file()
    );

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

    let installed = s.run(&["plugin", "install", "mplug@local-mp"]).status(0);
    assert_eq!(
        (installed.stdout.as_str(), installed.stderr.as_str()),
        ("Plugin \"mplug\" installed successfully. Installed 1 skill.\n", "")
    );
    let r = s.run(&["plugin", "install", "nope@local-mp"]).status(1);
    assert_eq!(r.stderr, "Failed to install plugin: Plugin \"nope\" not found in marketplace \"local-mp\"\n");
    assert_eq!(s.run(&["plugin", "list"]).status(0).stdout, "Installed plugins:\n  • mplug@local-mp (v1.2.0)\n");

    let refused = s.run(&["plugin", "marketplace", "remove", "local-mp"]).status(1).stderr;
    assert_eq!(
        refused,
        "Cannot remove marketplace \"local-mp\".\nInstalled plugins from this marketplace: mplug@local-mp\n\
         Use --force to remove the marketplace and uninstall all its plugins.\n"
    );
    let r = s.run(&["plugin", "marketplace", "remove", "awesome-copilot"]).status(1).stderr;
    assert_eq!(r, "Failed to remove marketplace: Marketplace \"awesome-copilot\" is a default marketplace and cannot be removed\n");
    let r = s.run(&["plugin", "marketplace", "add", "owner/market"]).status(1).stderr;
    assert!(r.contains("needs network access"), "{r}");
    let bare = s.work.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let r = s.run(&["plugin", "marketplace", "add", "bare"]).status(1).stderr;
    assert!(r.starts_with("Failed to add marketplace: No marketplace.json found in "), "{r}");

    let removed = s.run(&["plugin", "marketplace", "remove", "local-mp", "--force"]).status(0).stdout;
    assert_eq!(removed, "Marketplace \"local-mp\" removed successfully.\n");
    assert_eq!(config(&s)["installedPlugins"], json!([]));
    assert_eq!(config(&s)["marketplaces"], json!({}));
    let r = s.run(&["plugin", "marketplace", "remove", "local-mp"]).status(1).stderr;
    assert_eq!(r, "Failed to remove marketplace: Marketplace \"local-mp\" is not registered\n");
}
