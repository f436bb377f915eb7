//! The committed `crates/protocol/src/generated/` must be what the generator produces from
//! the schemas and allowlist, and the allowlist must only name things the schemas have.

#![allow(clippy::unwrap_used)]

use protocol_codegen::{check, generate, generate_from, Allowlist, Paths, Schemas};

fn schemas() -> Schemas {
    Schemas::load(&Paths::workspace().schema_dir).unwrap()
}

fn error_for(allowlist: &str) -> String {
    let allow = Allowlist::parse(allowlist).unwrap();
    match generate_from(&schemas(), &allow) {
        Ok(_) => panic!("allowlist {allowlist:?} was accepted"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn generated_files_are_up_to_date() {
    let paths = Paths::workspace();
    let output = generate(&paths).unwrap();
    let problems = check(&paths, &output).unwrap();
    assert!(
        problems.is_empty(),
        "{}\nrun `just codegen` (cargo run -p protocol-codegen) and commit the result",
        problems.join("\n")
    );
}

#[test]
fn generation_is_deterministic() {
    let paths = Paths::workspace();
    let a = generate(&paths).unwrap();
    let b = generate(&paths).unwrap();
    assert_eq!(a.files, b.files);
}

#[test]
fn unknown_method_is_an_error() {
    assert_eq!(
        error_for("[methods]\nnames = [\"ping\", \"session.noSuchThing\"]"),
        "allowlist names method `session.noSuchThing` which is not in api.schema.json"
    );
}

#[test]
fn unknown_event_is_an_error() {
    assert_eq!(
        error_for("[events]\nnames = [\"session.idle\", \"session.no_such_event\"]"),
        "allowlist names event `session.no_such_event` which is not in session-events.schema.json"
    );
}

#[test]
fn unknown_type_is_an_error() {
    assert_eq!(
        error_for("[types]\nnames = [\"NoSuchDefinition\"]"),
        "allowlist names type `NoSuchDefinition` which is not a definition in api.schema.json or session-events.schema.json"
    );
}

#[test]
fn extension_the_schema_defines_is_an_error() {
    let err = error_for("[events.extensions.\"session.idle\"]\ndata = \"crate::X\"\nephemeral = \"always\"");
    assert!(err.contains("now defines it"), "{err}");
}

#[test]
fn duplicate_names_are_an_error() {
    let err = Allowlist::parse("[methods]\nnames = [\"ping\", \"ping\"]").unwrap_err();
    assert!(err.to_string().contains("`ping` twice"), "{err:#}");
}

#[test]
fn the_committed_allowlist_is_valid() {
    let allow = Allowlist::load(&Paths::workspace().allowlist).unwrap();
    generate_from(&schemas(), &allow).unwrap();
}
