//! The JSON Schema -> Rust mapping on small synthetic schemas, one construct at a time.

#![allow(clippy::unwrap_used)]

use protocol_codegen::{generate_from, Allowlist, Schemas};
use serde_json::{json, Value};

/// Generates from `definitions` (shared by both files) plus one method `m.run` with the given
/// params/result and one event `thing.happened` with data `EventData`.
fn generate(definitions: Value, params: Value, result: Value, allow_types: &[&str]) -> (String, String) {
    let mut defs = definitions.as_object().unwrap().clone();
    defs.entry("EventData").or_insert(json!({"type": "object", "properties": {}}));
    let api = json!({
        "server": {"m": {"run": {"rpcMethod": "m.run", "params": params, "result": result}}},
        "session": {"s": {"get": {"rpcMethod": "session.s.get", "params": {
            "type": "object", "properties": {"sessionId": {"type": "string"}}, "required": ["sessionId"]
        }, "result": {"type": "null"}}}},
        "definitions": defs,
    });
    let events = json!({
        "$ref": "#/definitions/SessionEvent",
        "definitions": {
            "SessionEvent": {"anyOf": [{"$ref": "#/definitions/HappenedEvent"}]},
            "HappenedEvent": {"type": "object", "properties": {
                "type": {"type": "string", "const": "thing.happened"},
                "ephemeral": {"type": "boolean", "const": true},
                "data": {"$ref": "#/definitions/EventData"}
            }, "required": ["type", "ephemeral", "data"]},
            "EventData": defs["EventData"].clone(),
        }
    });
    let schemas = Schemas::from_values(&api, &events).unwrap();
    let types: Vec<String> = allow_types.iter().map(|t| format!("{t:?}")).collect();
    let allow = Allowlist::parse(&format!(
        "[methods]\nnames = [\"m.run\", \"session.s.get\"]\n[types]\nnames = [{}]\n[events]\nnames = [\"thing.happened\"]",
        types.join(", ")
    ))
    .unwrap();
    let out = generate_from(&schemas, &allow).unwrap();
    let file = |n: &str| out.files.iter().find(|(f, _)| f == n).unwrap().1.clone();
    (file("types.rs"), format!("{}{}", file("methods.rs"), file("events.rs")))
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

#[test]
fn fields_presence_and_numbers() {
    let (types, _) = generate(
        json!({"Thing": obj(json!({
            "sessionId": {"type": "string"},
            "count": {"type": "integer", "minimum": 0},
            "delta": {"type": "integer"},
            "ratio": {"type": "number"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "alsoMaybe": {"type": ["integer", "null"], "minimum": 1},
            "type": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
            "open": {"type": "object", "additionalProperties": {}},
            "anything": {"description": "any JSON"}
        }), &["sessionId", "count", "delta", "maybe", "alsoMaybe"])}),
        json!({"$ref": "#/definitions/Thing"}),
        json!({"type": "null"}),
        &[],
    );
    for expected in [
        "    #[serde(rename = \"sessionId\")]\n    pub session_id: String,\n",
        "    pub count: u64,\n",
        "    pub delta: i64,\n",
        "    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub ratio: Option<f64>,\n",
        "    pub maybe: Option<String>,\n",
        "    #[serde(rename = \"alsoMaybe\", deserialize_with = \"crate::nullable::required\")]\n    pub also_maybe: Option<u64>,\n",
        "    #[serde(deserialize_with = \"crate::nullable::required\")]\n    pub maybe: Option<String>,\n",
        "    #[serde(rename = \"type\", default, skip_serializing_if = \"Option::is_none\")]\n    pub r#type: Option<String>,\n",
        "    pub tags: Option<Vec<String>>,\n",
        "    pub extra: Option<std::collections::BTreeMap<String, i64>>,\n",
        "    pub open: Option<serde_json::Map<String, serde_json::Value>>,\n",
        "    pub anything: Option<serde_json::Value>,\n",
        "// - Thing.anything: no type in the schema (any JSON)\n",
    ] {
        assert!(types.contains(expected), "missing {expected:?} in\n{types}");
    }
    // `maybe` is required-nullable: always serialized.
    assert!(!types.contains("skip_serializing_if = \"Option::is_none\")]\n    pub maybe"));
}

#[test]
fn tagged_union_and_a_branch_used_directly() {
    let (types, _) = generate(
        json!({
            "Decision": {"anyOf": [
                {"$ref": "#/definitions/DecisionYes"},
                {"$ref": "#/definitions/DecisionNo"},
                {"$ref": "#/definitions/DecisionMaybe"}
            ]},
            "DecisionYes": obj(json!({"kind": {"type": "string", "const": "yes"}}), &["kind"]),
            "DecisionNo": obj(json!({"kind": {"type": "string", "const": "no-way"}, "why": {"type": "string"}}), &["kind"]),
            "DecisionMaybe": obj(json!({"kind": {"type": "string", "const": "maybe"}, "p": {"type": "number"}}), &["kind", "p"]),
            "Holder": obj(json!({"d": {"$ref": "#/definitions/Decision"}, "m": {"$ref": "#/definitions/DecisionMaybe"}}), &["d"]),
        }),
        json!({"$ref": "#/definitions/Holder"}),
        json!({"type": "null"}),
        &[],
    );
    for expected in [
        "#[serde(tag = \"kind\")]\npub enum Decision {\n",
        "    #[serde(rename = \"yes\")]\n    Yes,\n",
        "    #[serde(rename = \"no-way\")]\n    NoWay(DecisionNo),\n",
        "    Maybe(DecisionMaybePayload),\n",
        // DecisionNo is only a variant payload: no discriminator field.
        "pub struct DecisionNo {\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub why: Option<String>,\n}\n",
        // DecisionMaybe is also used directly: generated whole, with its discriminator.
        "pub struct DecisionMaybe {\n    pub kind: String,\n    pub p: f64,\n}\n",
        "pub struct DecisionMaybePayload {\n    pub p: f64,\n}\n",
    ] {
        assert!(types.contains(expected), "missing {expected:?} in\n{types}");
    }
    assert!(!types.contains("pub struct DecisionYes"), "{types}");
}

#[test]
fn untagged_union_and_value_fallback() {
    let (types, _) = generate(
        json!({
            "Result": {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/Rich"}]},
            "Rich": obj(json!({"text": {"type": "string"}}), &["text"]),
            "Muddle": {"anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}},
                {"type": "object", "properties": {"b": {"type": "string"}}}
            ]},
            "Holder": obj(json!({"r": {"$ref": "#/definitions/Result"}, "m": {"$ref": "#/definitions/Muddle"}}), &["r", "m"]),
        }),
        json!({"$ref": "#/definitions/Holder"}),
        json!({"type": "null"}),
        &[],
    );
    for expected in [
        "#[serde(untagged)]\npub enum Result {\n    String(String),\n    Rich(Rich),\n}\n",
        "pub type Muddle = serde_json::Value;\n",
        "// - Muddle: anyOf whose branches serde cannot tell apart\n",
    ] {
        assert!(types.contains(expected), "missing {expected:?} in\n{types}");
    }
}

#[test]
fn recursion_is_boxed_and_inline_types_are_named() {
    let (types, methods) = generate(
        json!({
            "Node": obj(json!({
                "parent": {"$ref": "#/definitions/Node"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
                "color": {"type": "string", "enum": ["red", "dark-blue", "1st"]}
            }), &[]),
            "Taken": obj(json!({}), &[]),
        }),
        json!({"type": "object", "title": "Taken", "properties": {"root": {"$ref": "#/definitions/Node"}}, "required": ["root"]}),
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        &["Taken"],
    );
    for expected in [
        "    pub parent: Option<Box<Node>>,\n",
        "    pub children: Option<Vec<Node>>,\n",
        "    pub color: Option<NodeColor>,\n",
        "    #[serde(rename = \"dark-blue\")]\n    DarkBlue,\n",
        "    #[serde(rename = \"1st\")]\n    V1st,\n",
        // The title collides with a definition: the method's name is used instead.
        "pub struct MRunParams {\n    pub root: Node,\n}\n",
        "#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]\npub struct MRunResult {\n",
    ] {
        assert!(types.contains(expected), "missing {expected:?} in\n{types}");
    }
    for expected in [
        "    type Params = t::MRunParams;\n    type Result = t::MRunResult;\n",
        "    type Params = t::SessionSGetParams;\n    type Result = ();\n",
        "impl crate::rpc::SessionScoped for t::SessionSGetParams {",
        "        \"thing.happened\" => EphemeralPolicy::Always,",
        "    ThingHappened(t::EventData),",
    ] {
        assert!(methods.contains(expected), "missing {expected:?} in\n{methods}");
    }
}
