//! The generated wire types (`protocol::generated`) on real payloads: tagged unions, type
//! errors that name the field, unknown fields, nullable fields, events and method descriptors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use protocol::event::EphemeralPolicy;
use protocol::generated::methods::{
    RuntimeShutdown, SessionModeSet, SessionPermissionsHandlePendingPermissionRequest, METHOD_NAMES,
};
use protocol::generated::*;
use protocol::rpc::{NoParams, RpcMethod, Scope, SessionScoped};
use serde_json::{json, Value};

type HandlePermissionParams = <SessionPermissionsHandlePendingPermissionRequest as RpcMethod>::Params;

fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| format!("{}: {}", e.path(), e.inner()))
}

#[test]
fn permission_params_carry_a_tagged_decision() {
    let p: HandlePermissionParams =
        parse(json!({"sessionId":"s","requestId":"r","result":{"kind":"approve-for-session"}})).unwrap();
    assert_eq!(p.session_id(), "s");
    assert_eq!(p.request_id, "r");
    match &p.result {
        PermissionDecision::ApproveForSession(d) => {
            assert_eq!(d.approval, None);
            assert_eq!(d.domain, None);
        }
        other => panic!("wrong variant {other:?}"),
    }
    assert_eq!(p.result.tag(), "approve-for-session");
}

#[test]
fn decision_variants_round_trip() {
    let reject: PermissionDecision = parse(json!({"kind":"reject","feedback":"no"})).unwrap();
    assert_eq!(reject, PermissionDecision::Reject(PermissionDecisionReject { feedback: Some("no".into()) }));
    assert_eq!(serde_json::to_value(&reject).unwrap(), json!({"kind":"reject","feedback":"no"}));

    // A variant that is only its discriminator.
    let unit: PermissionDecision = parse(json!({"kind":"user-not-available"})).unwrap();
    assert_eq!(unit, PermissionDecision::UserNotAvailable);
    assert_eq!(serde_json::to_value(&unit).unwrap(), json!({"kind":"user-not-available"}));

    // Nested tagged union inside a variant payload.
    let v = json!({"kind":"approve-for-session","approval":{"kind":"commands","commandIdentifiers":["git"]}});
    let nested: PermissionDecision = parse(v.clone()).unwrap();
    assert!(matches!(
        &nested,
        PermissionDecision::ApproveForSession(PermissionDecisionApproveForSession {
            approval: Some(PermissionDecisionApproveForSessionApproval::Commands(_)),
            ..
        })
    ));
    assert_eq!(serde_json::to_value(&nested).unwrap(), v);

    assert!(parse::<PermissionDecision>(json!({"kind":"no-such-kind"})).is_err());
}

#[test]
fn wrong_type_names_the_field() {
    let err = parse::<HandlePermissionParams>(json!({"sessionId":"s","requestId":"r","result":12345})).unwrap_err();
    assert!(err.starts_with("result"), "{err}");

    let err =
        parse::<HandlePermissionParams>(json!({"sessionId":7,"requestId":"r","result":{"kind":"reject"}})).unwrap_err();
    assert!(err.starts_with("sessionId: invalid type: integer `7`"), "{err}");
}

#[test]
fn unknown_fields_are_ignored() {
    let p: HandlePermissionParams = parse(json!({
        "sessionId":"s","requestId":"r","result":{"kind":"reject","fromNewerSdk":true},"alsoNew":[1]
    }))
    .unwrap();
    assert_eq!(p.result, PermissionDecision::Reject(PermissionDecisionReject { feedback: None }));
}

#[test]
fn required_nullable_fields_serialize_null() {
    let r: PlanReadResult = parse(json!({"exists":false,"content":null,"path":null})).unwrap();
    assert_eq!(r, PlanReadResult { exists: false, content: None, path: None });
    assert_eq!(serde_json::to_value(&r).unwrap(), json!({"exists":false,"content":null,"path":null}));
}

#[test]
fn untagged_union_picks_the_right_branch() {
    let s: ExternalToolResult = parse(json!("done")).unwrap();
    assert_eq!(s, ExternalToolResult::String("done".into()));
    let o: ExternalToolResult = parse(json!({"textResultForLlm":"ok","resultType":"success"})).unwrap();
    match o {
        ExternalToolResult::ExternalToolTextResultForLlm(r) => assert_eq!(r.text_result_for_llm, "ok"),
        other => panic!("wrong variant {other:?}"),
    }
}

#[test]
fn string_enums() {
    assert_eq!(SessionMode::Autopilot.as_str(), "autopilot");
    assert_eq!(SessionMode::Plan.to_string(), "plan");
    assert_eq!(SessionMode::ALL.len(), 3);
    assert_eq!(parse::<SessionMode>(json!("interactive")).unwrap(), SessionMode::Interactive);
    assert!(parse::<SessionMode>(json!("sideways")).is_err());
    assert_eq!(serde_json::to_value(AbortReason::UserInitiated).unwrap(), json!("user_initiated"));
}

#[test]
fn idle_event_is_always_ephemeral() {
    let e = SessionEvent::SessionIdle(IdleData { aborted: Some(false), mode: None });
    assert_eq!(e.kind(), "session.idle");
    assert_eq!(e.ephemeral_policy(), EphemeralPolicy::Always);
    let e = SessionEvent::from(UserMessageData { content: "hi".into(), ..Default::default() });
    assert_eq!(e.kind(), "user.message");
    assert_eq!(e.ephemeral_policy(), EphemeralPolicy::Optional);
    assert!(EVENT_TYPES.contains(&("session.autopilot_stopped", EphemeralPolicy::Always)));
    assert!(EVENT_TYPES.contains(&("session.idle", EphemeralPolicy::Always)));
    assert!(EVENT_TYPES.contains(&("assistant.message", EphemeralPolicy::Optional)));
}

#[test]
fn from_parts_is_typed_when_possible() {
    let data = json!({"content":"hello","attachments":[{"type":"file","path":"/a.rs","displayName":"a.rs"}]});
    let e = SessionEvent::from_parts("user.message".into(), data.clone());
    match &e {
        SessionEvent::UserMessage(m) => {
            assert_eq!(m.content, "hello");
            assert!(matches!(m.attachments.as_deref(), Some([Attachment::File(_)])));
        }
        other => panic!("not typed: {other:?}"),
    }
    assert_eq!(e.serialize_data(serde_json::value::Serializer).unwrap(), data);

    let unknown = SessionEvent::from_parts("made.up".into(), json!({"x":1}));
    assert_eq!(unknown, SessionEvent::Other { kind: "made.up".into(), data: json!({"x":1}) });
    assert_eq!(unknown.kind(), "made.up");
    assert_eq!(unknown.ephemeral_policy(), EphemeralPolicy::Optional);

    // A known type whose payload does not fit is kept as is, with its type's policy.
    let bad = SessionEvent::from_parts("session.idle".into(), json!({"aborted":"yes"}));
    assert!(matches!(&bad, SessionEvent::Other { kind, .. } if kind == "session.idle"));
    assert_eq!(bad.ephemeral_policy(), EphemeralPolicy::Always);
}

#[test]
fn start_data_round_trips() {
    let start = StartData {
        session_id: "s1".into(),
        version: 1,
        producer: "skipper".into(),
        copilot_version: "1.0.0".into(),
        start_time: "2025-01-01T00:00:00.000Z".into(),
        selected_model: Some("gpt-5".into()),
        reasoning_effort: None,
        reasoning_summary: None,
        verbosity: None,
        context_tier: None,
        auto_tier: None,
        session_limits: None,
        context: Some(WorkingDirectoryContext { cwd: "/w".into(), ..Default::default() }),
        github_mcp_tool_config: None,
        already_in_use: Some(false),
        remote_steerable: None,
        detached_from_spawning_parent_session_id: None,
    };
    let v = serde_json::to_value(&start).unwrap();
    assert_eq!(v["sessionId"], "s1");
    assert_eq!(v["context"]["cwd"], "/w");
    assert!(v.get("reasoningEffort").is_none(), "absent optionals are omitted: {v}");
    let back: StartData = parse(v.clone()).unwrap();
    assert_eq!(back, start);
    let e = SessionEvent::from_parts("session.start".into(), v);
    assert_eq!(e, SessionEvent::SessionStart(start));
}

#[test]
fn method_descriptors() {
    assert_eq!(SessionModeSet::NAME, "session.mode.set");
    assert_eq!(SessionModeSet::SCOPE, Scope::Session);
    let p: <SessionModeSet as RpcMethod>::Params = parse(json!({"sessionId":"s","mode":"plan"})).unwrap();
    assert_eq!(p.mode, SessionMode::Plan);
    assert_eq!(p.session_id(), "s");

    assert_eq!(RuntimeShutdown::SCOPE, Scope::Server);
    let _: NoParams = parse::<<RuntimeShutdown as RpcMethod>::Params>(json!({})).unwrap();
    let (): <RuntimeShutdown as RpcMethod>::Result = parse(Value::Null).unwrap();

    assert_eq!(protocol::generated::methods::HooksInvoke::SCOPE, Scope::Client);
    // One descriptor per allowlisted method, nothing else.
    let allowlist = include_str!("../../protocol-codegen/allowlist.toml");
    let methods = allowlist.split("[methods]").nth(1).and_then(|s| s.split("\n[").next()).unwrap();
    let listed = methods.split('"').skip(1).step_by(2).count();
    assert_eq!(METHOD_NAMES.len(), listed);
    assert!(METHOD_NAMES.contains(&"session.permissions.handlePendingPermissionRequest"));
}
