//! One MCP server's configuration, as the SDKs send it in `mcpServers` and as the user-level
//! config file holds it: local (`stdio`) servers are a command line, remote ones a URL.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    /// `http` (streamable HTTP) and `sse` (served over streamable HTTP: rmcp has no legacy SSE
    /// client; most servers answer both on the same URL).
    Remote {
        url: String,
        headers: BTreeMap<String, String>,
        sse: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub transport: Transport,
    /// `tools`: the names the model may use; `*` allows all. `None` (absent) allows all.
    pub tools: Option<Vec<String>>,
    /// `timeout` (milliseconds) for each tool call.
    pub timeout: Option<Duration>,
    /// The original JSON, for `session.mcp.list`'s full config and `mcp.config.list`.
    pub raw: Value,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("MCP server \"{0}\" must be an object")]
    NotObject(String),
    #[error("MCP server \"{0}\" has no command")]
    NoCommand(String),
    #[error("MCP server \"{0}\" has no url")]
    NoUrl(String),
    #[error("MCP server \"{name}\" has an unknown type \"{kind}\"")]
    UnknownType { name: String, kind: String },
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k.clone(), s.clone())),
                    Value::Number(n) => Some((k.clone(), n.to_string())),
                    Value::Bool(b) => Some((k.clone(), b.to_string())),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

impl ServerConfig {
    /// Parses one entry of `mcpServers`.
    pub fn parse(name: &str, v: &Value) -> Result<Self, ConfigError> {
        let o = v.as_object().ok_or_else(|| ConfigError::NotObject(name.to_string()))?;
        let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
        let has_url = o.get("url").and_then(Value::as_str).is_some();
        let transport = match kind {
            "" if has_url && !o.contains_key("command") => remote(name, o, false)?,
            "" | "local" | "stdio" => {
                let command = o
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| ConfigError::NoCommand(name.to_string()))?;
                let cwd = o.get("cwd").or_else(|| o.get("workingDirectory")).and_then(Value::as_str);
                Transport::Stdio {
                    command: command.to_string(),
                    args: strings(o.get("args")),
                    env: string_map(o.get("env")),
                    cwd: cwd.filter(|c| !c.is_empty()).map(str::to_string),
                }
            }
            "http" => remote(name, o, false)?,
            "sse" => remote(name, o, true)?,
            other => return Err(ConfigError::UnknownType { name: name.to_string(), kind: other.to_string() }),
        };
        let tools = o.get("tools").and_then(Value::as_array).map(|_| strings(o.get("tools")));
        let timeout = o.get("timeout").and_then(Value::as_u64).filter(|t| *t > 0).map(Duration::from_millis);
        Ok(Self { transport, tools, timeout, raw: v.clone() })
    }

    /// Whether the model may use the server's tool `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        match &self.tools {
            None => true,
            Some(list) => list.iter().any(|t| t == "*" || t == tool),
        }
    }

    /// `stdio`, `http` or `sse`, as `session.mcp.list` and the events name transports.
    pub fn transport_name(&self) -> &'static str {
        match &self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Remote { sse: false, .. } => "http",
            Transport::Remote { sse: true, .. } => "sse",
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(self.transport, Transport::Remote { .. })
    }
}

fn remote(name: &str, o: &serde_json::Map<String, Value>, sse: bool) -> Result<Transport, ConfigError> {
    let url = o
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| ConfigError::NoUrl(name.to_string()))?;
    Ok(Transport::Remote { url: url.to_string(), headers: string_map(o.get("headers")), sse })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_local_and_remote_servers() {
        let c = ServerConfig::parse(
            "s",
            &json!({"type":"local","command":"node","args":["x.mjs"],"env":{"A":"1","N":2},"cwd":"/tmp","tools":["*"],"timeout":1500}),
        )
        .unwrap();
        assert_eq!(
            c.transport,
            Transport::Stdio {
                command: "node".into(),
                args: vec!["x.mjs".into()],
                env: [("A".to_string(), "1".to_string()), ("N".to_string(), "2".to_string())].into(),
                cwd: Some("/tmp".into()),
            }
        );
        assert!(c.allows("anything"));
        assert_eq!(c.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(c.transport_name(), "stdio");

        let c =
            ServerConfig::parse("r", &json!({"type":"http","url":"http://h/mcp","headers":{"X":"y"},"tools":["a"]}))
                .unwrap();
        assert_eq!(c.transport_name(), "http");
        assert!(c.allows("a"));
        assert!(!c.allows("b"));
        let c = ServerConfig::parse("r", &json!({"command":"git"})).unwrap();
        assert_eq!(c.transport_name(), "stdio");
        assert!(c.allows("x"));
    }

    #[test]
    fn refuses_what_cannot_start() {
        assert_eq!(ServerConfig::parse("a", &json!("x")), Err(ConfigError::NotObject("a".into())));
        assert_eq!(ServerConfig::parse("a", &json!({"type":"local"})), Err(ConfigError::NoCommand("a".into())));
        assert_eq!(ServerConfig::parse("a", &json!({"type":"http"})), Err(ConfigError::NoUrl("a".into())));
        assert!(matches!(ServerConfig::parse("a", &json!({"type":"ftp"})), Err(ConfigError::UnknownType { .. })));
        let none = ServerConfig::parse("a", &json!({"command":"x","tools":[]})).unwrap();
        assert!(!none.allows("x"));
    }
}
