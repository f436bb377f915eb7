//! `skipper config`.

use serde_json::{json, Value};

use super::Scratch;

fn settings(s: &Scratch) -> Value {
    serde_json::from_str(&s.read(&s.copilot_home().join("settings.json"))).unwrap_or(Value::Null)
}

#[test]
fn set_read_list_and_remove_in_the_users_settings() {
    let s = Scratch::new();
    let r = s.run(&["config", "beep"]).status(1);
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""), "an unset key prints nothing");
    assert_eq!(s.run(&["config", "beep", "on"]).status(0).stdout, "Set beep to true in settings.json.\n");
    assert_eq!(s.run(&["config", "theme", "DIM"]).status(0).stdout, "Set theme to \"dim\" in settings.json.\n");
    s.run(&["config", "footer.showQuota", "off"]).status(0);
    s.run(&["config", "commandHistoryMaxSize", "1e3"]).status(0);
    assert_eq!(
        s.run(&["config", "allowedUrls", "github.com"]).status(0).stdout,
        "Added \"github.com\" to allowedUrls in settings.json.\n"
    );
    let again = s.run(&["config", "allowedUrls", "github.com"]).status(0);
    assert_eq!(again.stderr, "allowedUrls already contains \"github.com\".\n");
    s.run(&["config", "powershellFlags", "--", "-NoLogo"]).status(0);
    assert_eq!(
        settings(&s),
        json!({"beep": true, "theme": "dim", "footer": {"showQuota": false}, "commandHistoryMaxSize": 1000,
               "allowedUrls": ["github.com"], "powershellFlags": ["-NoLogo"]})
    );

    assert_eq!(s.run(&["config", "beep"]).status(0).stdout, "true\n");
    assert_eq!(s.run(&["config", "theme"]).status(0).stdout, "dim\n");
    assert_eq!(s.run(&["config", "footer"]).status(0).stdout, "{\n  \"showQuota\": false\n}\n");
    assert_eq!(s.run(&["config", "allowedUrls"]).status(0).stdout, "github.com\n");
    assert_eq!(
        s.run(&["config", "--list"]).status(0).stdout,
        "beep=true\ntheme=dim\nfooter.showQuota=false\ncommandHistoryMaxSize=1000\nallowedUrls=github.com\npowershellFlags=-NoLogo\n"
    );
    let listed: Value = serde_json::from_str(&s.run(&["config", "--list", "--json"]).status(0).stdout).unwrap();
    assert_eq!(listed, settings(&s));

    assert_eq!(
        s.run(&["config", "--rm", "allowedUrls", "github.com"]).status(0).stdout,
        "Removed \"github.com\" from allowedUrls in settings.json.\n"
    );
    assert_eq!(s.run(&["config", "--rm", "theme"]).status(0).stdout, "Removed theme from settings.json.\n");
    assert_eq!(s.run(&["config", "--rm", "theme"]).status(0).stderr, "theme is not set in settings.json.\n");
    assert!(settings(&s).get("theme").is_none());
}

#[test]
fn bad_keys_and_values_are_refused_and_change_nothing() {
    let s = Scratch::new();
    let path = s.copilot_home().join("settings.json");
    std::fs::write(&path, "{\"mouse\": false, \"someone-elses\": 1}").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["config", "nosuch", "1"], "Error: Unknown settings key segment \"nosuch\" at \"<root>\".\n"),
        (&["config", "footer.nosuch", "1"], "Error: Unknown settings key segment \"nosuch\" at \"footer\".\n"),
        (
            &["config", "beep", "maybe"],
            "Error: Invalid value for \"beep\": Expected a boolean (on/off, true/false, yes/no), got \"maybe\".\n",
        ),
        (
            &["config", "commandHistoryMaxSize", "lots"],
            "Error: Invalid value for \"commandHistoryMaxSize\": Expected a number, got \"lots\".\n",
        ),
        (
            &["config", "banner", "sometimes"],
            "Error: Invalid value for \"banner\": Expected one of: always, once, never.\n",
        ),
        (&["config", "footer", "on"], "Error: Setting \"footer\" is a group; pick one of its keys.\n"),
        (
            &["config", "--rm", "mouse", "x"],
            "Error: Setting \"mouse\" is not a list. Remove it whole with `--rm mouse`.\n",
        ),
    ];
    for (args, stderr) in cases {
        let r = s.run(args).status(1);
        assert_eq!(r.stderr, *stderr, "{args:?}");
    }
    let r = s.run(&["config", "telemetry.enabled", "on"]).status(1);
    assert!(r.stderr.contains("Skipper does not know the setting \"telemetry.enabled\""), "{}", r.stderr);
    let r = s.run(&["config", "logLevel", "all"]).status(1);
    assert!(r.stderr.contains("cannot be changed from the command line"), "{}", r.stderr);
    assert_eq!(s.read(&path), "{\"mouse\": false, \"someone-elses\": 1}", "left as it was");

    // Usage errors: status 1, as the original's.
    assert!(s.run(&["config", "a", "b", "c"]).status(1).stderr.contains("unexpected argument 'c'"));
    assert!(s.run(&["config", "--json"]).status(1).stderr.contains("--list"));
    assert!(s.run(&["config", "--global", "--repo", "beep"]).status(1).stderr.contains("cannot be used with"));
    assert!(s.run(&["config", "--help"]).status(0).stdout.contains("--local"));
}

#[test]
fn a_malformed_file_is_an_error_and_is_left_alone() {
    let s = Scratch::new();
    let path = s.copilot_home().join("settings.json");
    for text in ["{\"beep\": tru", "[1, 2]", "{\"footer\": true}"] {
        std::fs::write(&path, text).unwrap();
        let failing: &[&[&str]] = if text.contains("footer") {
            &[&["config", "footer.showQuota", "on"]]
        } else {
            &[&["config", "beep", "on"], &["config", "beep"], &["config", "--list"], &["config", "--rm", "beep"]]
        };
        for args in failing {
            let r = s.run(args).status(1);
            assert!(r.stderr.starts_with("Error: ") && r.stderr.contains("settings.json"), "{args:?}: {}", r.stderr);
            assert_eq!(s.read(&path), text, "{args:?} left the file as it was");
        }
    }
}

#[test]
fn repository_files_take_only_what_a_repository_may_override() {
    let s = Scratch::new();
    let deeper = s.work.join("src/deeper");
    std::fs::create_dir_all(&deeper).unwrap();
    let r = s.run(&["config", "--repo", "beep", "on"]).status(1);
    assert!(
        r.stderr.starts_with("Error: Setting \"beep\" cannot be set in .github/copilot/settings.json.\n"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Settings a repository can override: agentDirectories, autoTier"), "{}", r.stderr);
    assert_eq!(
        s.run(&["config", "--repo", "model", "gpt-x"]).status(0).stdout,
        "Set model to \"gpt-x\" in .github/copilot/settings.json.\n"
    );
    // From beneath the root, -C names the directory: the file is the work tree's.
    let deeper_arg = deeper.to_string_lossy().into_owned();
    s.run(&["-C", &deeper_arg, "config", "--local", "disabledSkills", "lint"]).status(0);
    let shared: Value = serde_json::from_str(&s.read(&s.work.join(".github/copilot/settings.json"))).unwrap();
    let local: Value = serde_json::from_str(&s.read(&s.work.join(".github/copilot/settings.local.json"))).unwrap();
    assert_eq!((shared, local), (json!({"model": "gpt-x"}), json!({"disabledSkills": ["lint"]})));
    assert_eq!(s.run(&["config", "--repo", "--list"]).status(0).stdout, "model=gpt-x\n");
    assert!(!s.copilot_home().join("settings.json").exists(), "the user's file is untouched");
}

#[test]
fn secrets_are_redacted_from_output() {
    let s = Scratch::new();
    std::fs::write(
        s.copilot_home().join("settings.json"),
        r#"{"extensions": {"search": {"apiKey": "sk-live-123", "name": "web"}}, "model": "m"}"#,
    )
    .unwrap();
    let out = s.run(&["config", "--list"]).status(0).stdout;
    assert_eq!(out, "extensions.search.apiKey=<redacted>\nextensions.search.name=web\nmodel=m\n");
    let json = s.run(&["config", "--list", "--json"]).status(0).stdout;
    assert!(!json.contains("sk-live-123") && json.contains("<redacted>"), "{json}");
}
