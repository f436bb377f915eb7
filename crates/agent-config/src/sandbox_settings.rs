//! The `sandbox` settings slice as the original CLI resolves it: a user's stored settings with
//! the defaults filled in (`sandbox.settings.applyDefaults`), and a user's settings raised to
//! an administrator's managed floor (`sandbox.resolveFlooredConfig`).
//!
//! The floor only tightens. It may turn the sandbox on, never off; a permission it denies
//! (`allowBypass`, `allowDevToolAccess`, `addCurrentWorkingDirectory`, `auth.*`, outbound or
//! local network, keychain access) is denied whatever the user says, and one it grants does
//! not raise a user's `false`; routing MCP or LSP servers through the sandbox, once the floor
//! asks for it, is on and marked locked. Its lists narrow the user's: writable and read-only
//! paths and allowed hosts are kept only where the floor lists them too (no allowed host left
//! blocks every host), denied paths and blocked hosts add up. Its proxy replaces the user's;
//! credentials are the user's alone. Results have one shape and key order, so two results
//! compare equal exactly when they are the same policy.

use serde_json::{json, Map, Value};

/// Hosts a user's allow-list always keeps when no floor narrows it.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// One side's settings, read from its JSON object; `None` where it says nothing.
#[derive(Debug, Default)]
struct Side {
    enabled: Option<bool>,
    add_cwd: Option<bool>,
    mcp: Option<bool>,
    lsp: Option<bool>,
    allow_bypass: Option<bool>,
    git: Option<bool>,
    gh: Option<bool>,
    dev_tools: Option<bool>,
    readwrite: Option<Vec<String>>,
    readonly: Option<Vec<String>>,
    denied: Option<Vec<String>>,
    outbound: Option<bool>,
    local: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    blocked_hosts: Option<Vec<String>>,
    proxy: Option<String>,
    keychain: Option<bool>,
    credentials: Option<Value>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn boolean(o: &Map<String, Value>, key: &str, at: &str) -> Result<Option<bool>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!("{at}{key}: invalid type: {}, expected a boolean", kind(other))),
    }
}

fn strings(o: &Map<String, Value>, key: &str, at: &str) -> Result<Option<Vec<String>>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| format!("{at}{key}: expected a list of strings")),
        Some(other) => Err(format!("{at}{key}: invalid type: {}, expected a list of strings", kind(other))),
    }
}

fn object<'a>(o: &'a Map<String, Value>, key: &str, at: &str) -> Result<Option<&'a Map<String, Value>>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(format!("{at}{key}: invalid type: {}, expected an object", kind(other))),
    }
}

impl Side {
    /// Reads a settings object (`filesystem`, `network` and `seatbelt` under `userPolicy`).
    fn read(o: &Map<String, Value>) -> Result<Side, String> {
        let policy = object(o, "userPolicy", "")?;
        let part = |name: &str| -> Result<Option<&Map<String, Value>>, String> {
            match policy {
                Some(p) => object(p, name, "userPolicy."),
                None => Ok(None),
            }
        };
        let empty = Map::new();
        let fs = part("filesystem")?.unwrap_or(&empty);
        let net = part("network")?.unwrap_or(&empty);
        let seatbelt = part("seatbelt")?.unwrap_or(&empty);
        let auth = object(o, "auth", "")?.unwrap_or(&empty);
        let proxy = match object(net, "proxy", "userPolicy.network.")? {
            Some(p) => p.get("url").and_then(Value::as_str).map(normalize_url),
            None => None,
        };
        Ok(Side {
            enabled: boolean(o, "enabled", "")?,
            add_cwd: boolean(o, "addCurrentWorkingDirectory", "")?,
            mcp: boolean(o, "sandboxMcpServers", "")?,
            lsp: boolean(o, "sandboxLspServers", "")?,
            allow_bypass: boolean(o, "allowBypass", "")?,
            git: boolean(auth, "git", "auth.")?,
            gh: boolean(auth, "gh", "auth.")?,
            dev_tools: boolean(o, "allowDevToolAccess", "")?,
            readwrite: strings(fs, "readwritePaths", "userPolicy.filesystem.")?,
            readonly: strings(fs, "readonlyPaths", "userPolicy.filesystem.")?,
            denied: strings(fs, "deniedPaths", "userPolicy.filesystem.")?,
            outbound: boolean(net, "allowOutbound", "userPolicy.network.")?,
            local: boolean(net, "allowLocalNetwork", "userPolicy.network.")?,
            allowed_hosts: strings(net, "allowedHosts", "userPolicy.network.")?,
            blocked_hosts: strings(net, "blockedHosts", "userPolicy.network.")?,
            proxy,
            keychain: boolean(seatbelt, "keychainAccess", "userPolicy.seatbelt.")?,
            credentials: o.get("credentials").filter(|c| c.is_object()).cloned(),
        })
    }
}

/// `http://host:1` and `http://host:1/` are one proxy: said with its path, as a URL parser does.
fn normalize_url(url: &str) -> String {
    match url.split_once("://") {
        Some((_, rest)) if !rest.contains('/') => format!("{url}/"),
        _ => url.to_string(),
    }
}

/// A user's stored settings with every default filled in, flat as the settings file holds
/// them (`sandbox.settings.applyDefaults`). Keys it does not know are dropped.
pub fn apply_defaults(stored: &Value) -> Result<Map<String, Value>, String> {
    let Value::Object(o) = stored else {
        return Err(format!("invalid type: {}, expected struct SandboxConfig", kind(stored)));
    };
    let s = Side::read(o)?;
    let mut out = Map::new();
    out.insert("enabled".into(), json!(s.enabled.unwrap_or(false)));
    out.insert("addCurrentWorkingDirectory".into(), json!(s.add_cwd.unwrap_or(true)));
    out.insert("sandboxMcpServers".into(), json!(s.mcp.unwrap_or(true)));
    out.insert("sandboxLspServers".into(), json!(s.lsp.unwrap_or(true)));
    out.insert("allowBypass".into(), json!(s.allow_bypass.unwrap_or(true)));
    out.insert("auth".into(), json!({"git": s.git.unwrap_or(true), "gh": s.gh.unwrap_or(true)}));
    out.insert("allowDevToolAccess".into(), json!(s.dev_tools.unwrap_or(true)));
    out.insert(
        "filesystem".into(),
        json!({
            "readwritePaths": s.readwrite.unwrap_or_default(),
            "readonlyPaths": s.readonly.unwrap_or_default(),
            "deniedPaths": s.denied.unwrap_or_default(),
        }),
    );
    let mut network = Map::new();
    network.insert("allowOutbound".into(), json!(s.outbound.unwrap_or(true)));
    network.insert("allowLocalNetwork".into(), json!(s.local.unwrap_or(true)));
    network.insert("allowedHosts".into(), json!(s.allowed_hosts.unwrap_or_default()));
    network.insert("blockedHosts".into(), json!(s.blocked_hosts.unwrap_or_default()));
    if let Some(url) = s.proxy {
        network.insert("proxy".into(), json!({ "url": url }));
    }
    out.insert("network".into(), Value::Object(network));
    out.insert("seatbelt".into(), json!({"keychainAccess": s.keychain.unwrap_or(false)}));
    if let Some(c) = s.credentials {
        out.insert("credentials".into(), c);
    }
    Ok(out)
}

/// What the user allows, unless the floor denies it.
fn unless_denied(user: Option<bool>, floor: Option<bool>, default: bool) -> bool {
    floor != Some(false) && user.unwrap_or(default)
}

/// `items` in both lists, in `items`' order.
fn both(items: &[String], floor: &[String]) -> Vec<String> {
    items.iter().filter(|i| floor.contains(i)).cloned().collect()
}

/// `first` then what `then` adds, each once.
fn joined(first: &[String], then: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in first.iter().chain(then) {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    out
}

/// A user's settings raised to an administrator's floor: the policy a session runs under
/// (`sandbox.resolveFlooredConfig`). Either side may be absent (`null`).
pub fn resolve_floored(user: Option<&Value>, floor: Option<&Value>) -> Result<Value, String> {
    let side = |v: Option<&Value>, what: &str| -> Result<Side, String> {
        match v {
            None | Some(Value::Null) => Ok(Side::default()),
            Some(Value::Object(o)) => Side::read(o),
            Some(_) => Err(format!("{what} must be an object")),
        }
    };
    let u = side(user, "sandbox configuration")?;
    let f = side(floor, "managed sandbox floor")?;
    if !(u.enabled == Some(true) || f.enabled == Some(true)) {
        return Ok(json!({"enabled": false}));
    }
    let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
    let narrowed = |user: &Option<Vec<String>>, floor: &Option<Vec<String>>| match floor {
        Some(floor) => both(&list(user), floor),
        None => list(user),
    };
    let filesystem = json!({
        "readwritePaths": narrowed(&u.readwrite, &f.readwrite),
        "readonlyPaths": narrowed(&u.readonly, &f.readonly),
        "deniedPaths": joined(&list(&f.denied), &list(&u.denied)),
    });
    let mut network = Map::new();
    network.insert("allowOutbound".into(), json!(unless_denied(u.outbound, f.outbound, true)));
    network.insert("allowLocalNetwork".into(), json!(unless_denied(u.local, f.local, true)));
    let any_hosts =
        [&u.allowed_hosts, &u.blocked_hosts, &f.allowed_hosts, &f.blocked_hosts].iter().any(|l| l.is_some());
    if any_hosts {
        let mut blocked = joined(&list(&u.blocked_hosts), &list(&f.blocked_hosts));
        let allowed = match (&u.allowed_hosts, &f.allowed_hosts) {
            (Some(user), Some(floor)) => {
                let kept = both(user, floor);
                if kept.is_empty() {
                    blocked = joined(&blocked, &["*".to_string()]);
                }
                kept
            }
            (None, Some(floor)) => floor.clone(),
            (Some(user), None) => joined(user, &LOOPBACK.iter().map(|h| h.to_string()).collect::<Vec<_>>()),
            (None, None) => Vec::new(),
        };
        network.insert("allowedHosts".into(), json!(allowed));
        network.insert("blockedHosts".into(), json!(blocked));
    }
    if let Some(url) = f.proxy.or(u.proxy) {
        network.insert("proxy".into(), json!({ "url": url }));
    }
    let mut out = Map::new();
    out.insert("enabled".into(), json!(true));
    out.insert(
        "userPolicy".into(),
        json!({
            "filesystem": filesystem,
            "network": network,
            "seatbelt": {"keychainAccess": unless_denied(u.keychain, f.keychain, false)},
        }),
    );
    out.insert("addCurrentWorkingDirectory".into(), json!(unless_denied(u.add_cwd, f.add_cwd, true)));
    // Routing servers through the sandbox: the floor can only ask for it, and then it holds.
    out.insert("sandboxMcpServers".into(), json!(f.mcp == Some(true) || u.mcp.unwrap_or(true)));
    out.insert("sandboxLspServers".into(), json!(f.lsp == Some(true) || u.lsp.unwrap_or(true)));
    if f.mcp == Some(true) {
        out.insert("managedMcpRoutingLocked".into(), json!(true));
    }
    if f.lsp == Some(true) {
        out.insert("managedLspRoutingLocked".into(), json!(true));
    }
    out.insert("allowBypass".into(), json!(unless_denied(u.allow_bypass, f.allow_bypass, true)));
    out.insert("auth".into(), json!({"git": unless_denied(u.git, f.git, true), "gh": unless_denied(u.gh, f.gh, true)}));
    if let Some(c) = u.credentials {
        out.insert("credentials".into(), c);
    }
    out.insert("allowDevToolAccess".into(), json!(unless_denied(u.dev_tools, f.dev_tools, true)));
    Ok(Value::Object(out))
}

#[cfg(test)]
#[path = "sandbox_settings_tests.rs"]
mod tests;
