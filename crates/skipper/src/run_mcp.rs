//! `-p`'s MCP options: `--additional-mcp-config` (JSON, or `@FILE`), `--disable-mcp-server`,
//! `--enable-mcp-server`, read into the session's own `mcpServers` and `disabledMcpServers`
//! (what an SDK passes on `session.create`), beside the user's configured servers.

use std::path::Path;

use serde_json::{Map, Value};

/// The built-in GitHub MCP server's name (`--disable-builtin-mcps` turns it off).
pub const GITHUB_SERVER: &str = "github-mcp-server";

/// The servers and names a run hands its session.
#[derive(Debug, Default, PartialEq)]
pub struct RunServers {
    /// `None`: the run adds none (the user's configured servers still start).
    pub servers: Option<Map<String, Value>>,
    pub disabled: Vec<String>,
}

/// `home`: the user's configuration (`mcp-config.json`, `config.json`), for
/// `--enable-mcp-server`. `Err` is the message for stderr; the run exits 1 before it starts.
pub fn read(
    additional: &[String],
    disable: &[String],
    enable: &[String],
    cwd: &Path,
    home: &Path,
) -> Result<RunServers, String> {
    let mut servers = Map::new();
    for value in additional {
        servers.extend(one_config(value, cwd)?);
    }
    if !enable.is_empty() {
        // A server the session configures itself is never disabled by the user's list: the
        // configured entry, handed over as this run's own, starts for this run only.
        let user = agent_config::user_mcp::UserServers::read(home);
        for name in enable {
            match user.servers.get(name) {
                Some(config) => {
                    servers.entry(name.clone()).or_insert_with(|| config.clone());
                }
                None if servers.contains_key(name) => {}
                None => return Err(format!("--enable-mcp-server: no MCP server named '{name}' is configured")),
            }
        }
    }
    Ok(RunServers { servers: (!servers.is_empty()).then_some(servers), disabled: disable.to_vec() })
}

/// One `--additional-mcp-config` value: `{"mcpServers": {…}}` inline, or `@path` to a file
/// holding it (relative to the working directory; `~/` is the home directory).
fn one_config(value: &str, cwd: &Path) -> Result<Map<String, Value>, String> {
    let text = match value.strip_prefix('@') {
        Some(path) => {
            let path = match path.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map_or_else(|| cwd.join(path), |h| Path::new(&h).join(rest)),
                None => cwd.join(path),
            };
            std::fs::read_to_string(&path)
                .map_err(|e| format!("Failed to read MCP config file \"{}\": {e}", path.display()))?
        }
        None => value.to_string(),
    };
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("Invalid --additional-mcp-config JSON: {e}"))?;
    match json.get("mcpServers") {
        Some(Value::Object(servers)) => {
            for (name, config) in servers {
                if !config.is_object() {
                    return Err(format!("--additional-mcp-config: mcpServers.{name} must be an object"));
                }
            }
            Ok(servers.clone())
        }
        Some(_) => Err("--additional-mcp-config: mcpServers must be an object of servers by name".into()),
        None => Err("--additional-mcp-config: mcpServers is required ({\"mcpServers\": {\"NAME\": {…}}})".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_json_and_files_add_servers_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("more.json"), r#"{"mcpServers":{"b":{"command":"y"},"a":{"command":"z"}}}"#)
            .unwrap();
        let additional = vec![r#"{"mcpServers":{"a":{"command":"x"}}}"#.to_string(), "@more.json".to_string()];
        let run = read(&additional, &["github-mcp-server".into()], &[], dir.path(), dir.path()).unwrap();
        let servers = run.servers.unwrap();
        assert_eq!(servers["a"], json!({"command": "z"}), "a later value wins a name");
        assert_eq!(servers["b"], json!({"command": "y"}));
        assert_eq!(run.disabled, ["github-mcp-server"]);
        assert_eq!(read(&[], &[], &[], dir.path(), dir.path()).unwrap(), RunServers::default());
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let err = |v: &str| read(&[v.to_string()], &[], &[], dir.path(), dir.path()).unwrap_err();
        assert!(
            err("{bad").starts_with("Invalid --additional-mcp-config JSON: key must be a string"),
            "{}",
            err("{bad")
        );
        assert!(err("@nosuch.json").starts_with("Failed to read MCP config file \""), "{}", err("@nosuch.json"));
        assert!(err("@nosuch.json").contains("nosuch.json\": No such file"), "{}", err("@nosuch.json"));
        assert!(err(r#"{"foo":1}"#).contains("mcpServers is required"));
        assert!(err(r#"{"mcpServers":[]}"#).contains("must be an object"));
        assert!(err(r#"{"mcpServers":{"a":"cmd"}}"#).contains("mcpServers.a must be an object"));
    }

    #[test]
    fn an_enabled_server_is_the_users_configured_one() {
        let home = tempfile::tempdir().unwrap();
        let store = agent_config::mcp_config::McpConfigStore::new(home.path().to_path_buf());
        store.add("off", json!({"command": "y"})).unwrap();
        store.set_disabled(&["off".to_string()], true).unwrap();
        let run = read(&[], &[], &["off".into()], home.path(), home.path()).unwrap();
        assert_eq!(run.servers.unwrap()["off"], json!({"command": "y"}));
        let e = read(&[], &[], &["nope".into()], home.path(), home.path()).unwrap_err();
        assert_eq!(e, "--enable-mcp-server: no MCP server named 'nope' is configured");
    }
}
