//! The schema checker itself: it must accept a well-formed event and name the field of a bad one.

use serde_json::json;

use crate::schema::{checker, validate_event};

const ID: &str = "16297e2a-1159-4959-8b9f-27f4dd53b8da";
const PARENT: &str = "dec8b7d2-48b9-43f3-855a-64ba1b133374";

#[test]
fn schema_loads_and_maps_types() {
    let c = checker();
    assert_eq!(c.definition_for("session.idle"), Some("IdleEvent"));
    assert_eq!(c.definition_for("abort"), Some("AbortEvent"));
    assert!(c.definition_for("assistant.turn_start").is_some());
    assert!(c.definition_for("no.such.event").is_none());
}

#[test]
fn accepts_a_valid_event() {
    let ev = json!({"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"x"},
        "id": ID, "timestamp":"2026-11-22T11:29:03.572Z", "parentId": PARENT});
    let v = validate_event(&ev, "selftest");
    assert!(v.is_empty(), "{v:?}");
    let idle = json!({"type":"session.idle","data":{"mode":"interactive"},"id":ID,
        "timestamp":"2026-11-22T11:29:03.572Z","parentId":PARENT,"ephemeral":true});
    let v = validate_event(&idle, "selftest");
    assert!(v.is_empty(), "{v:?}");
}

#[test]
fn names_the_offending_field() {
    // Unknown data field.
    let ev = json!({"type":"assistant.turn_end","data":{"turnId":"0","bogus":1},
        "id": ID, "timestamp":"2026-11-22T11:29:03.572Z", "parentId": PARENT});
    let v = validate_event(&ev, "selftest");
    assert!(v.iter().any(|x| x.path == "/data" && x.message.contains("bogus")), "{v:?}");
    // Missing required envelope field and always-ephemeral flag.
    let ev = json!({"type":"session.idle","data":{},"id": ID, "timestamp":"2026-11-22T11:29:03.572Z"});
    let v = validate_event(&ev, "selftest");
    assert!(v.iter().any(|x| x.message.contains("parentId")), "{v:?}");
    assert!(v.iter().any(|x| x.message.contains("ephemeral")), "{v:?}");
    // Wrong type.
    let ev = json!({"type":"assistant.turn_end","data":{"turnId":0},
        "id": ID, "timestamp":"2026-11-22T11:29:03.572Z", "parentId": PARENT});
    let v = validate_event(&ev, "selftest");
    assert!(v.iter().any(|x| x.path == "/data/turnId"), "{v:?}");
    // Bad timestamp / id.
    let ev = json!({"type":"assistant.turn_end","data":{"turnId":"0"},
        "id": "nope", "timestamp":"yesterday", "parentId": PARENT});
    let v = validate_event(&ev, "selftest");
    assert!(v.iter().any(|x| x.path == "/timestamp"), "{v:?}");
    assert!(v.iter().any(|x| x.path == "/id"), "{v:?}");
    // Unknown type is flagged as such.
    let ev = json!({"type":"made.up","data":{},"id": ID, "timestamp":"2026-11-22T11:29:03.572Z", "parentId": null});
    let v = validate_event(&ev, "selftest");
    assert!(v.len() == 1 && v[0].unknown_type, "{v:?}");
}
