//! `skipper mcp`.

use serde_json::{json, Value};

use super::Scratch;

fn file(s: &Scratch, name: &str) -> Value {
    serde_json::from_str(&s.read(&s.copilot_home().join(name))).unwrap_or(Value::Null)
}

#[test]
fn add_list_get_disable_and_remove_user_servers() {
    let s = Scratch::new();
    let empty = s.run(&["mcp", "list"]).status(0);
    assert!(empty.stdout.starts_with("No MCP servers configured."), "{}", empty.stdout);
    assert_eq!(s.run(&["mcp", "list", "--json"]).status(0).stdout, "{\n  \"mcpServers\": {}\n}\n");

    let added = s.run(&[
        "mcp",
        "add",
        "gh",
        "--env",
        "GITHUB_TOKEN=ghp_x",
        "--tools",
        "a,b",
        "--timeout",
        "5000",
        "--",
        "node",
        "s.js",
        "--x",
    ]);
    assert_eq!(
        added.status(0).stdout,
        "Added server \"gh\"\n\ngh\n  Type: local\n  Command: node s.js --x\n  Environment:\n    GITHUB_TOKEN: ***\n  Tools: a, b\n  Timeout: 5000ms\n  Source: User\n"
    );
    s.run(&[
        "mcp",
        "add",
        "--transport",
        "http",
        "--header",
        "Authorization: Bearer rk",
        "notion",
        "https://mcp.example/mcp",
    ])
    .status(0);
    assert_eq!(
        file(&s, "mcp-config.json"),
        json!({"mcpServers": {
            "gh": {"tools": ["a", "b"], "timeout": 5000, "type": "local", "command": "node", "args": ["s.js", "--x"], "env": {"GITHUB_TOKEN": "ghp_x"}},
            "notion": {"tools": ["*"], "type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer rk"}}
        }})
    );

    assert_eq!(s.run(&["mcp", "disable", "gh"]).status(0).stdout, "Disabled MCP server \"gh\".\n");
    assert_eq!(
        file(&s, "settings.json"),
        json!({"disabledMcpServers": ["gh"]}),
        "where the original keeps the list, as the mcp.config.* methods do"
    );
    assert_eq!(s.run(&["mcp", "list"]).status(0).stdout, "User servers:\n  gh (local, disabled)\n  notion (http)\n\n");
    let got = s.run(&["mcp", "get", "notion", "--show-secrets"]).status(0).stdout;
    assert!(got.contains("  Status: Enabled\n") && got.contains("    Authorization: Bearer rk\n"), "{got}");
    let got: Value = serde_json::from_str(&s.run(&["mcp", "get", "gh", "--json"]).status(0).stdout).unwrap();
    assert_eq!((&got["gh"]["source"], &got["gh"]["enabled"]), (&json!("user"), &json!(false)));
    assert_eq!(s.run(&["mcp", "enable", "gh"]).status(0).stdout, "Enabled MCP server \"gh\".\n");

    assert_eq!(s.run(&["mcp", "remove", "notion"]).status(0).stdout, "Removed server \"notion\"\n");
    assert_eq!(s.run(&["mcp", "remove", "notion"]).status(1).stderr, "Error: Server \"notion\" not found.\n");
    let missing = s.run(&["mcp", "get", "nope"]).status(1).stderr;
    assert_eq!(missing, "Error: Server \"nope\" not found.\n\nAvailable servers:\n  gh\n");
}

#[test]
fn bad_additions_are_refused_and_change_nothing() {
    let s = Scratch::new();
    s.run(&["mcp", "add", "ctx", "--", "npx", "ctx"]).status(0);
    let before = s.read(&s.copilot_home().join("mcp-config.json"));
    let cases: &[(&[&str], &str)] = &[
        (&["mcp", "add", "ctx", "--", "other"], "Error: Server \"ctx\" already exists."),
        (&["mcp", "add", "nocmd"], "Error: Command is required for local servers."),
        (
            &["mcp", "add", "--transport", "http", "h", "ftp://x"],
            "Error: URL is required for remote servers (http/sse).",
        ),
        (&["mcp", "add", "--env", "NOEQ", "e", "--", "x"], "Error: Invalid format: \"NOEQ\". Expected KEY=VALUE"),
        (&["mcp", "add", "--timeout", "0", "t", "--", "x"], "Error: Invalid timeout \"0\"."),
        (&["mcp", "add", "", "--", "x"], "Error: MCP server name cannot be empty"),
        (&["mcp", "add", "--transport", "carrier-pigeon", "p", "x"], "error: invalid value 'carrier-pigeon'"),
        (&["mcp", "bogus"], "error: unrecognized subcommand 'bogus'"),
    ];
    for (args, stderr) in cases {
        let r = s.run(args).status(1);
        assert!(r.stderr.starts_with(stderr), "{args:?}: {}", r.stderr);
    }
    assert_eq!(s.read(&s.copilot_home().join("mcp-config.json")), before);

    let broken = "{\"mcpServers\": [1]}";
    std::fs::write(s.copilot_home().join("mcp-config.json"), broken).unwrap();
    for args in [&["mcp", "list"][..], &["mcp", "add", "z", "--", "x"], &["mcp", "remove", "ctx"]] {
        let r = s.run(args).status(1);
        assert!(
            r.stderr.starts_with("Error: Invalid ") && r.stderr.contains("mcp-config.json"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert_eq!(s.read(&s.copilot_home().join("mcp-config.json")), broken);
}

#[test]
fn a_trusted_work_trees_servers_are_listed_not_edited() {
    let s = Scratch::new();
    std::fs::write(s.work.join(".mcp.json"), r#"{"mcpServers": {"ws": {"command": "node", "args": ["a.js"]}}}"#)
        .unwrap();
    assert!(
        s.run(&["mcp", "list"]).status(0).stdout.starts_with("No MCP servers configured."),
        "untrusted: not listed"
    );
    let trusted = json!({"trustedFolders": [s.work]});
    std::fs::write(s.copilot_home().join("config.json"), trusted.to_string()).unwrap();
    assert_eq!(s.run(&["mcp", "list"]).status(0).stdout, "Workspace servers:\n  ws (local)\n\n");
    let got: Value = serde_json::from_str(&s.run(&["mcp", "list", "--json"]).status(0).stdout).unwrap();
    let path = s.work.join(".mcp.json").display().to_string();
    assert_eq!(got["mcpServers"]["ws"]["sourcePath"], json!(path));
    let r = s.run(&["mcp", "remove", "ws"]).status(1);
    assert!(r.stderr.contains("Cannot remove workspace server \"ws\"") && r.stderr.contains(&path), "{}", r.stderr);
    assert_eq!(s.run(&["mcp", "disable", "ws"]).status(0).stdout, "Disabled MCP server \"ws\".\n");
    assert_eq!(s.run(&["mcp", "list"]).status(0).stdout, "Workspace servers:\n  ws (local, disabled)\n\n");
}
