//! Smaller questions a host asks about a sandbox config, answered as the original answers
//! them: the sandbox a feature that may opt out (MCP or LSP servers) starts under
//! (`sandbox.resolveForOptional`), which slash commands stay usable while enforcement blocks
//! the session (`sandbox.checkEnforcementCommand`), and whether the config would need the
//! credential proxy's certificate authority (`sandbox.proxyCa.checkRelevance`).

use serde_json::{json, Value};

/// Keys that say how the sandbox is routed and used, not what it allows: left out of the
/// sandbox a feature starts under.
const ROUTING_KEYS: &[&str] = &["sandboxMcpServers", "sandboxLspServers", "allowBypass", "auth"];

/// The sandbox the feature named by `routing_flag` starts under: none where the config is not
/// an enabled sandbox or sets that flag to false; otherwise the config as given, without its
/// routing keys.
pub fn resolve_for_optional(sandbox: Option<&Value>, routing_flag: &str) -> Value {
    let Some(config) = sandbox.and_then(Value::as_object) else { return json!({"enabled": false}) };
    if config.get("enabled") != Some(&Value::Bool(true)) || config.get(routing_flag) == Some(&Value::Bool(false)) {
        return json!({"enabled": false});
    }
    let mut effective = config.clone();
    for key in ROUTING_KEYS {
        effective.remove(*key);
    }
    Value::Object(effective)
}

/// Whether a slash command stays usable while sandbox enforcement blocks the session: only
/// those that read state or leave (`/sandbox status`, `/help`, `/exit`, `/usage`, `/version`).
pub fn command_allowed_while_blocked(command: &str, args: &[String]) -> bool {
    let name = command.strip_prefix('/').unwrap_or(command);
    match name {
        "sandbox" => args.len() == 1 && args[0] == "status",
        "help" | "exit" | "usage" | "version" => args.is_empty(),
        _ => false,
    }
}

/// Whether an enabled sandbox `config` hands credentials to its commands through the proxy
/// (named variables to inject, or git / GitHub CLI sign-in), which needs its certificate
/// authority.
pub fn uses_credential_proxy(config: Option<&Value>) -> bool {
    let Some(config) = config.and_then(Value::as_object) else { return false };
    if config.get("enabled") != Some(&Value::Bool(true)) {
        return false;
    }
    let injects = config
        .get("credentials")
        .and_then(|c| c.get("envVars"))
        .and_then(Value::as_object)
        .is_some_and(|vars| !vars.is_empty());
    let signs_in = ["git", "gh"].iter().any(|k| config.get("auth").and_then(|a| a.get(k)) == Some(&Value::Bool(true)));
    injects || signs_in
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feature_starts_under_the_config_without_its_routing_keys_unless_it_opts_out() {
        let flag = "sandboxMcpServers";
        assert_eq!(resolve_for_optional(None, flag), json!({"enabled": false}));
        assert_eq!(resolve_for_optional(Some(&json!("x")), flag), json!({"enabled": false}));
        assert_eq!(resolve_for_optional(Some(&json!({"enabled": true})), flag), json!({"enabled": true}));
        assert_eq!(resolve_for_optional(Some(&json!({"enabled": true})), "bogus"), json!({"enabled": true}));
        let off = json!({"enabled": true, "sandboxMcpServers": false});
        assert_eq!(resolve_for_optional(Some(&off), flag), json!({"enabled": false}));
        let disabled = json!({"enabled": false, "sandboxMcpServers": true});
        assert_eq!(resolve_for_optional(Some(&disabled), flag), json!({"enabled": false}));
        let full = json!({"enabled": true, "userPolicy": {"filesystem": {"clearPolicyOnExit": true}},
            "sandboxMcpServers": true, "sandboxLspServers": false, "allowBypass": true, "auth": {"git": true},
            "allowDevToolAccess": true});
        assert_eq!(
            resolve_for_optional(Some(&full), flag),
            json!({"enabled": true, "userPolicy": {"filesystem": {"clearPolicyOnExit": true}}, "allowDevToolAccess": true})
        );
    }

    #[test]
    fn only_reading_and_leaving_stay_usable_while_blocked() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (name, a) in [
            ("sandbox", &["status"][..]),
            ("/sandbox", &["status"]),
            ("help", &[]),
            ("exit", &[]),
            ("usage", &[]),
            ("version", &[]),
        ] {
            assert!(command_allowed_while_blocked(name, &args(a)), "{name} {a:?}");
        }
        for (name, a) in [
            ("sandbox", &[][..]),
            ("sandbox", &["disable"]),
            ("sandbox", &["status", "x"]),
            ("quit", &[]),
            ("model", &[]),
            ("login", &[]),
            ("clear", &[]),
        ] {
            assert!(!command_allowed_while_blocked(name, &args(a)), "{name} {a:?}");
        }
    }

    #[test]
    fn the_proxy_is_used_for_injected_credentials_and_sign_in() {
        assert!(!uses_credential_proxy(None));
        assert!(!uses_credential_proxy(Some(&json!({"enabled": true}))));
        assert!(!uses_credential_proxy(Some(&json!({"enabled": true, "credentials": {"envVars": {}}}))));
        assert!(uses_credential_proxy(Some(
            &json!({"enabled": true, "credentials": {"envVars": {"A": {"injectHosts": []}}}})
        )));
        assert!(!uses_credential_proxy(Some(&json!({"enabled": false, "credentials": {"envVars": {"A": {}}}}))));
        assert!(uses_credential_proxy(Some(&json!({"enabled": true, "auth": {"git": true}}))));
        assert!(!uses_credential_proxy(Some(
            &json!({"enabled": true, "userPolicy": {"network": {"allowedHosts": ["a.com"]}}})
        )));
    }
}
