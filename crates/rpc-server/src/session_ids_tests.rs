use super::*;
use crate::tenancy::{token_digest, Principal, TenantSpec};
use serde_json::json;

async fn tenancy(root: &std::path::Path) -> (Tenancy, Principal) {
    let spec = |name: &str| TenantSpec {
        name: name.into(),
        token_sha256: Some(token_digest(name)),
        workspace: root.join(name),
        config_home: root.join("homes").join(name),
        max_connections: 4,
        credentials: Default::default(),
        users: Vec::new(),
        limits: Default::default(),
    };
    let t = Tenancy::open(vec![spec("alpha"), spec("beta")], store::SessionIndex::open_in_memory().await.unwrap())
        .await
        .unwrap();
    let alpha = t.authenticate("alpha").unwrap();
    (t, alpha)
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn ids_are_the_tenants_own_inside_and_as_given_outside() {
    let dir = tempfile::tempdir().unwrap();
    let (t, alpha) = tenancy(dir.path()).await;
    let ns = Namespace::new(&t, &alpha.tenant);
    assert_eq!(ns.inner("s1"), "alpha.s1");
    assert_eq!(ns.outer("alpha.s1"), "s1");
    // An id that looks like an inner one is a client's id like any other.
    assert_eq!(ns.inner("alpha.s1"), "alpha.alpha.s1");
    assert_eq!(ns.outer(&ns.inner("alpha.s1")), "alpha.s1");
    assert!(alpha.tenant.new_session_id().starts_with("alpha."));

    // A session alpha owned before ids were namespaced keeps its id; beta's old one does not
    // become alpha's by naming it.
    assert_eq!(t.claim(&alpha.tenant, None, "old").await.unwrap(), crate::tenancy::Claim::Claimed);
    let beta = t.authenticate("beta").unwrap();
    assert_eq!(t.claim(&beta.tenant, None, "betas-old").await.unwrap(), crate::tenancy::Claim::Claimed);
    assert_eq!(ns.inner("old"), "old");
    assert_eq!(ns.outer("old"), "old");
    assert_eq!(ns.inner("betas-old"), "alpha.betas-old");
}

#[tokio::test]
async fn requests_name_the_tenants_sessions_wherever_the_protocol_puts_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (t, alpha) = tenancy(dir.path()).await;
    let ns = Namespace::new(&t, &alpha.tenant);
    let text = r#"{"sessionId":"s1","sessionIds":["a","b"],"options":{"detachedFromSpawningParentSessionId":"p"},
        "tools":[{"parameters":{"properties":{"sessionId":{"type":"string"}}}}],"prompt":"sessionId s1"}"#;
    let (text, renamed) = ns.request_in("session.send", text);
    let v = parse(&text);
    assert_eq!(v["sessionId"], "alpha.s1");
    assert_eq!(v["sessionIds"], json!(["alpha.a", "alpha.b"]));
    assert_eq!(v["options"]["detachedFromSpawningParentSessionId"], "alpha.p");
    assert_eq!(v["tools"][0]["parameters"]["properties"]["sessionId"], json!({"type": "string"}));
    assert_eq!(v["prompt"], "sessionId s1", "text is not an id");

    let err = RpcError::new(-32603, "Session not found: alpha.s1");
    assert_eq!(ns.error_out(err, &renamed).message, "Session not found: s1");

    let (text, _) = ns.request_in("sessions.findByPrefix", r#"{"prefix":"abc1234"}"#);
    assert_eq!(parse(&text)["prefix"], "alpha.abc1234");
    let (text, _) = ns.request_in("session.list", r#"{"prefix":"abc1234"}"#);
    assert_eq!(parse(&text)["prefix"], "abc1234", "only findByPrefix's prefix is an id");

    let (text, _) = ns.request_in("session.send", "{not json");
    assert_eq!(text, "{not json", "left for the method's parser to refuse");
}

#[tokio::test]
async fn answers_and_messages_name_sessions_as_the_client_does() {
    let dir = tempfile::tempdir().unwrap();
    let (t, alpha) = tenancy(dir.path()).await;
    let ns = Namespace::new(&t, &alpha.tenant);

    let listed =
        json!({"sessions": [{"sessionId": "alpha.s1", "context": {"cwd": "/w/alpha.s1"}}, {"sessionId": "old"}]});
    let out = parse(std::str::from_utf8(&ns.result_out("session.list", listed.to_string().into_bytes())).unwrap());
    assert_eq!(out["sessions"][0]["sessionId"], "s1");
    assert_eq!(out["sessions"][0]["context"]["cwd"], "/w/alpha.s1", "paths are not ids");
    assert_eq!(out["sessions"][1]["sessionId"], "old");

    let untouched = br#"{"content":"hello"}"#.to_vec();
    assert_eq!(ns.result_out("session.send", untouched.clone()), untouched);

    let freed = json!({"freedBytes": {"alpha.s1": 10, "alpha.s2": 0}}).to_string().into_bytes();
    let out = parse(std::str::from_utf8(&ns.result_out("sessions.bulkDelete", freed)).unwrap());
    assert_eq!(out["freedBytes"], json!({"s1": 10, "s2": 0}));
    let pruned = json!({"deleted": ["alpha.a"], "candidates": [], "skipped": ["alpha.b"], "freedBytes": 3});
    let out = parse(std::str::from_utf8(&ns.result_out("sessions.pruneOld", pruned.to_string().into_bytes())).unwrap());
    assert_eq!((out["deleted"].clone(), out["skipped"].clone()), (json!(["a"]), json!(["b"])));
    let workspace = json!({"workspace": {"id": "alpha.s1"}, "path": "/x"}).to_string().into_bytes();
    let out = parse(std::str::from_utf8(&ns.result_out("session.workspaces.getWorkspace", workspace)).unwrap());
    assert_eq!(out["workspace"]["id"], "s1");

    let mut request = json!({"sessionId": "alpha.s1", "toolCallId": "alpha.x"});
    ns.value_out(&mut request);
    assert_eq!(request, json!({"sessionId": "s1", "toolCallId": "alpha.x"}));

    let data = json!({"sessionId": "alpha.s1", "version": 1, "producer": "skipper", "copilotVersion": "1",
        "startTime": "2026-01-01T00:00:00Z"});
    let start = Event::from_parts("session.start", data.clone(), false);
    let json = format!(r#"{{"type":"session.start","data":{data}}}"#);
    assert_eq!(parse(&ns.event_out(&start, &json))["data"]["sessionId"], "s1");
    let other = Event::from_parts("assistant.message", json!({"content": "\"alpha.s1"}), false);
    let text = r#"{"type":"assistant.message","data":{"content":"alpha.s1"}}"#;
    assert!(matches!(ns.event_out(&other, text), Cow::Borrowed(_)), "other events are passed as they are");
}
