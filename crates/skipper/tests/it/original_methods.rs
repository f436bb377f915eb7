//! The original 1.0.102's own schema (`cli-1.0.102/api.schema.json`): every public method it
//! serves is answered by Skipper — not `-32601` — but for the ones listed in [`NOT_YET`], which
//! issue 34 still has to build. The list is checked both ways, so it only ever shrinks.
//! Then what the methods of features Skipper lacks answer, as the original answers them
//! (probed against it in headless mode on the fake model).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::harness::{with_timeout, TestEnv};

/// Public methods of 1.0.102 not answered yet (106 of the 428 when this list was last changed).
#[rustfmt::skip]
const NOT_YET: &[&str] = &[
    "azureMl.acquireFamily", "azureMl.cancel", "azureMl.catalog", "azureMl.discard", "azureMl.download",
    "azureMl.latest", "azureMl.releaseFamily", "azureMl.resolve", "azureMl.status",
    "catalog.getGeneratedFeed", "catalog.getSavedFeed", "catalog.planInstallFromReference", "catalog.search",
    "catalog.select", "contentExclusion.validatePolicies", "environments.delete", "environments.get",
    "environments.list", "extensions.disable", "extensions.discover", "extensions.enable", "hooks.discover",
    "host.start", "managedSettings.compose", "managedSettings.permissions.evaluate", "managedSettings.schema",
    "managedSettings.validate", "mcp.applyInstall", "mcp.applyUninstall", "mcp.installations.cancel",
    "mcp.installations.list", "mcp.installations.recover", "mcp.installations.status", "mcp.planInstall",
    "mcp.planUninstall", "mcp.prepareInstall", "models.getBuiltInCatalog", "plugins.applyInstall",
    "plugins.builtin.set", "plugins.planInstall", "session.accounts.enumerate", "session.accounts.get",
    "session.accounts.login.advance", "session.accounts.login.begin", "session.accounts.login.cancel",
    "session.accounts.set", "session.agent.setPrompt", "session.connectors.connect",
    "session.connectors.continueConnection", "session.connectors.disconnect", "session.connectors.getAccount",
    "session.connectors.getCapabilities", "session.connectors.getStatus", "session.connectors.list",
    "session.connectors.reconcile", "session.connectors.reconnect", "session.connectors.refresh",
    "session.debug.collectLogs", "session.diagnostics.configure", "session.diagnostics.read",
    "session.extensions.reconcile", "session.limitPrediction.predict", "session.mcp.moveLoadingToBackground",
    "session.mcp.oauth.authenticationStateChanged", "session.mcp.oauth.cancelLogin",
    "session.mcp.oauth.complete", "session.mcp.oauth.prepareLogin", "session.mcp.oauth.probe",
    "session.mcp.oauth.respond", "session.model.getReasoningSummaries", "session.model.setAllowedModels",
    "session.model.switchAutoTier", "session.plugins.disable", "session.plugins.enable",
    "session.plugins.install", "session.plugins.marketplaces.add", "session.plugins.marketplaces.browse",
    "session.plugins.marketplaces.list", "session.plugins.marketplaces.refresh",
    "session.plugins.marketplaces.remove", "session.plugins.retryManaged", "session.plugins.uninstall",
    "session.plugins.update", "session.provider.sync", "session.provider.withdraw",
    "session.providers.discover", "session.providers.getCatalog", "session.providers.getStatus",
    "session.providers.models.list", "session.providers.models.prepareConfiguration",
    "session.tasks.readOutput", "session.tasks.register", "session.tasks.update", "session.tools.execute",
    "session.tools.getBuiltinDescriptors", "session.tools.taskCompleteEventData",
    "session.workspaces.updateMetadata", "skills.applyInstall", "skills.applyUninstall",
    "skills.installations.cancel", "skills.installations.list", "skills.installations.recover",
    "skills.installations.setEnabled", "skills.installations.status", "skills.planInstall",
    "skills.planUninstall",
];

/// The public methods a client calls on the runtime (the schema's `server` and `session`
/// groups; `clientSession` and `clientGlobal` are the runtime's calls to a client).
fn public_methods() -> BTreeSet<String> {
    let path = crate::schema::shared_dir().join("schemas/cli-1.0.102/api.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let root: Value = serde_json::from_str(&text).expect("the schema is JSON");
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(name) = m.get("rpcMethod").and_then(Value::as_str) {
                    if m.get("visibility").and_then(Value::as_str) != Some("internal") {
                        out.insert(name.to_string());
                    }
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(&root["server"], &mut out);
    walk(&root["session"], &mut out);
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn every_public_method_of_the_originals_schema_is_answered_but_the_listed_few() {
    with_timeout(120, async {
        let env = TestEnv::start().await;
        let methods = public_methods();
        assert!(methods.len() > 400, "the schema's public methods were not found: {}", methods.len());
        let mut unanswered = BTreeSet::new();
        for m in &methods {
            // Params that are not an object: a served method refuses them with -32602 before its
            // handler runs (so no call changes the connection's state); one not served is -32601.
            match env.client.call(m, json!([1])).await {
                Err(e) if e.code == -32601 => {
                    unanswered.insert(m.clone());
                }
                Err(e) => assert_eq!(e.code, -32602, "{m}: {e}"),
                Ok(v) => panic!("{m} accepted params that are not an object: {v}"),
            }
        }
        let listed: BTreeSet<String> = NOT_YET.iter().map(|s| s.to_string()).collect();
        let missing: Vec<_> = unanswered.difference(&listed).collect();
        assert!(missing.is_empty(), "public methods answered -32601: {missing:?}");
        let built: Vec<_> = listed.difference(&unanswered).collect();
        assert!(built.is_empty(), "answered now, take them off NOT_YET: {built:?}");
        env.client.ok("ping", json!({})).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn features_skipper_lacks_answer_as_the_original_does_without_them() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;

        let accounts = c.ok("connectors.getAccounts", json!({})).await;
        assert_eq!(accounts, json!({"availability": "disabled", "accounts": []}));
        let caps = c.ok("connectors.getCapabilities", json!({})).await;
        assert_eq!(
            caps,
            json!({"apiVersion": 1, "availability": "disabled", "opaqueAccountSelection": true, "conditionalCache": true})
        );
        for m in ["connectors.list", "connectors.refresh"] {
            let e = c.call(m, json!({"accountId": "acc1"})).await.unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (-32602, "Connector discovery is disabled for this client"), "{m}");
            let e = c.call(m, json!({})).await.unwrap_err();
            assert!(e.code == -32602 && e.message.contains("accountId"), "{m}: {e}");
        }

        assert_eq!(c.ok("managedSettings.read", json!({})).await, json!({}));
        let resolved = c.ok("managedSettings.resolve", json!({})).await;
        assert_eq!(resolved["resolved"]["source"], "none", "{resolved}");
        assert_eq!(resolved["resolved"]["managedKeys"], json!([]), "{resolved}");
        for flag in ["serverManaged", "deviceManaged", "failClosed", "bypassPermissionsDisabled"] {
            assert_eq!(resolved["resolved"][flag], json!(false), "{flag}: {resolved}");
        }
        assert_eq!(resolved["permissionsContext"], json!({"failClosed": false}));
        assert_eq!(resolved["layers"], json!([{"source": "device"}, {"source": "server"}]));
        assert_eq!(resolved["diagnostics"], json!([]));
        assert_eq!(c.ok("managedSettings.clearCache", json!({})).await, Value::Null);

        assert_eq!(c.ok("host.listSessions", json!({})).await, json!({"sessions": []}));
        assert_eq!(c.ok("host.dispose", json!({"hostId": "h1"})).await, json!({}));
        let host = json!({"hostId": "h1", "sessionId": "s1"});
        for (m, params) in [
            ("host.listSessions", json!({"hostId": "h1"})),
            ("host.publishSession", host.clone()),
            ("host.unpublishSession", host.clone()),
        ] {
            let e = c.call(m, params).await.unwrap_err();
            assert_eq!(e.code, -32603, "{m}: {e}");
            assert_eq!(e.message, format!("Request {m} failed with message: host is unavailable"));
        }
        assert_eq!(c.ok("registerExtensionLaunchProvider", json!({})).await, Value::Null);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_list_offers_the_built_ins_a_first_message_may_use() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let listed = env.client.ok("commands.list", json!({})).await;
        let names: Vec<&str> =
            listed["commands"].as_array().expect("commands").iter().filter_map(|c| c["name"].as_str()).collect();
        // The original's list holds these of the commands Skipper has; /compact and /context
        // need a conversation and are left out, as there.
        assert_eq!(names, ["allow-all", "permissions", "autopilot", "cwd", "model", "plan", "rename", "review"]);
        let allow_all = &listed["commands"][0];
        assert_eq!(allow_all["aliases"], json!(["yolo"]));
        assert_eq!(allow_all["kind"], "builtin");
        assert_eq!(allow_all["allowDuringAgentExecution"], json!(true));
        // The session's own listing still has all of them.
        let session = env.client.ok("session.create", json!({})).await;
        let sid = session["sessionId"].as_str().expect("sessionId");
        let in_session = env.client.ok("session.commands.list", json!({"sessionId": sid})).await;
        let n = in_session["commands"].as_array().map_or(0, Vec::len);
        assert_eq!(n, 10, "{in_session}");
    })
    .await;
}
