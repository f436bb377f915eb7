//! Cases as the original CLI 1.0.102 answers them (probed against its binary).

use super::*;

fn floored(user: Value, floor: Value) -> Value {
    resolve_floored(Some(&user), Some(&floor)).unwrap()
}

#[test]
fn defaults_fill_every_field_and_drop_unknown_ones() {
    let out = apply_defaults(&json!({"enabled": true, "bogus": 1})).unwrap();
    let expected = json!({"enabled":true,"addCurrentWorkingDirectory":true,"sandboxMcpServers":true,
        "sandboxLspServers":true,"allowBypass":true,"auth":{"git":true,"gh":true},"allowDevToolAccess":true,
        "filesystem":{"readwritePaths":[],"readonlyPaths":[],"deniedPaths":[]},
        "network":{"allowOutbound":true,"allowLocalNetwork":true,"allowedHosts":[],"blockedHosts":[]},
        "seatbelt":{"keychainAccess":false}});
    assert_eq!(Value::Object(out.clone()), expected);
    let keys: Vec<&str> = out.keys().map(String::as_str).collect();
    assert_eq!(keys[..3], ["enabled", "addCurrentWorkingDirectory", "sandboxMcpServers"], "a fixed order");

    let hosts = apply_defaults(&json!({"userPolicy": {"network": {"allowedHosts": ["a.com"]}}})).unwrap();
    assert_eq!(hosts["enabled"], json!(false));
    assert_eq!(hosts["network"]["allowedHosts"], json!(["a.com"]));
    assert!(apply_defaults(&json!({"enabled": "yes"})).unwrap_err().contains("expected a boolean"));
    assert!(apply_defaults(&json!("x")).unwrap_err().contains("expected struct SandboxConfig"));
}

#[test]
fn off_unless_either_side_turns_it_on_and_the_floor_never_turns_it_off() {
    assert_eq!(resolve_floored(None, None).unwrap(), json!({"enabled": false}));
    let lists = json!({"enabled": false, "userPolicy": {"filesystem": {"readwritePaths": ["/x"]}}});
    assert_eq!(floored(lists, Value::Null), json!({"enabled": false}));
    assert_eq!(floored(json!({"enabled": false}), json!({"enabled": true}))["enabled"], json!(true));
    assert_eq!(floored(json!({"enabled": true}), json!({"enabled": false}))["enabled"], json!(true));
    let locked = json!({"enabled": true, "managedMcpRoutingLocked": true, "managedLspRoutingLocked": true});
    let plain = floored(json!({"enabled": true}), Value::Null);
    assert_eq!(floored(locked, Value::Null), plain, "a caller cannot claim a lock");
    assert_eq!(
        plain,
        json!({"enabled":true,"userPolicy":{"filesystem":{"readwritePaths":[],"readonlyPaths":[],"deniedPaths":[]},
            "network":{"allowOutbound":true,"allowLocalNetwork":true},"seatbelt":{"keychainAccess":false}},
            "addCurrentWorkingDirectory":true,"sandboxMcpServers":true,"sandboxLspServers":true,"allowBypass":true,
            "auth":{"git":true,"gh":true},"allowDevToolAccess":true})
    );
    assert_eq!(resolve_floored(Some(&json!("x")), None).unwrap_err(), "sandbox configuration must be an object");
    assert_eq!(resolve_floored(None, Some(&json!(5))).unwrap_err(), "managed sandbox floor must be an object");
}

#[test]
fn the_floor_narrows_lists_and_denies_what_it_denies() {
    let user = json!({"enabled":false,"userPolicy":{"filesystem":{"readwritePaths":["/u/rw"],"readonlyPaths":["/u/ro"],
        "deniedPaths":["/u/deny"]},"network":{"allowedHosts":["user.com","both.com"],"blockedHosts":["ublock.com"],
        "allowOutbound":true,"allowLocalNetwork":true}},"allowBypass":true,"sandboxMcpServers":false});
    let floor = json!({"enabled":true,"userPolicy":{"filesystem":{"readwritePaths":["/m/rw"],"readonlyPaths":["/m/ro"],
        "deniedPaths":["/m/deny"]},"network":{"allowedHosts":["managed.com","both.com"],"blockedHosts":["mblock.com"],
        "allowOutbound":false,"allowLocalNetwork":false}},"allowBypass":false,"sandboxMcpServers":true});
    let expected = json!({"enabled":true,"userPolicy":{"filesystem":{"readwritePaths":[],"readonlyPaths":[],
        "deniedPaths":["/m/deny","/u/deny"]},"network":{"allowOutbound":false,"allowLocalNetwork":false,
        "allowedHosts":["both.com"],"blockedHosts":["ublock.com","mblock.com"]},"seatbelt":{"keychainAccess":false}},
        "addCurrentWorkingDirectory":true,"sandboxMcpServers":true,"sandboxLspServers":true,"managedMcpRoutingLocked":true,
        "allowBypass":false,"auth":{"git":true,"gh":true},"allowDevToolAccess":true});
    let out = floored(user, floor);
    assert_eq!(out, expected);
    assert_eq!(out.to_string(), expected.to_string(), "in the original's key order");
}

#[test]
fn allowed_hosts_keep_loopback_and_an_empty_intersection_blocks_everything() {
    let user = |hosts: Value| json!({"enabled": true, "userPolicy": {"network": {"allowedHosts": hosts}}});
    let floor = |hosts: Value| json!({"userPolicy": {"network": {"allowedHosts": hosts}}});
    let net = |v: Value| v["userPolicy"]["network"].clone();
    assert_eq!(
        net(floored(user(json!(["a.com"])), floor(json!(["b.com"])))),
        json!({"allowOutbound":true,"allowLocalNetwork":true,"allowedHosts":[],"blockedHosts":["*"]})
    );
    assert_eq!(
        net(floored(user(json!(["a.com"])), json!({"enabled": true})))["allowedHosts"],
        json!(["a.com", "localhost", "127.0.0.1", "::1"])
    );
    assert_eq!(net(floored(json!({"enabled": true}), floor(json!(["b.com"]))))["allowedHosts"], json!(["b.com"]));
}

#[test]
fn a_floors_grant_does_not_raise_a_users_refusal() {
    let user = json!({"enabled":true,"allowBypass":false,"allowDevToolAccess":false,"auth":{"git":false}});
    let floor = json!({"allowBypass":true,"allowDevToolAccess":true,"auth":{"git":true}});
    let out = floored(user, floor);
    assert_eq!((out["allowBypass"].clone(), out["allowDevToolAccess"].clone()), (json!(false), json!(false)));
    assert_eq!(out["auth"], json!({"git": false, "gh": true}));
    let out =
        floored(json!({"enabled":true,"sandboxLspServers":false}), json!({"enabled":true,"sandboxLspServers":true}));
    assert_eq!((out["sandboxLspServers"].clone(), out["managedLspRoutingLocked"].clone()), (json!(true), json!(true)));
    let proxies = floored(
        json!({"enabled":true,"userPolicy":{"network":{"proxy":{"url":"http://u:1"}}},"credentials":{"envVars":{"A":{"injectHosts":["a.com"]}}}}),
        json!({"userPolicy":{"network":{"proxy":{"url":"http://m:2"}}},"credentials":{"envVars":{"B":{"injectHosts":["b.com"]}}}}),
    );
    assert_eq!(proxies["userPolicy"]["network"]["proxy"], json!({"url": "http://m:2/"}));
    assert_eq!(proxies["credentials"], json!({"envVars":{"A":{"injectHosts":["a.com"]}}}), "the floor's are ignored");
}
