//! Deserializing internally tagged unions (`{"kind": "create", ...}`) so that a bad field inside
//! the chosen variant is named in the error. serde's derived `#[serde(tag = ...)]` buffers the
//! object and loses the path: `sessions.open` with `{"kind":"create","model":5}` failed with a
//! bare "invalid type". The generated unions call these helpers instead.

use serde::de::{DeserializeOwned, Error};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// Reads the object and its tag. A missing tag, a tag that is not a string, or a value that is
/// not an object is an error.
pub fn split<'de, D: Deserializer<'de>>(d: D, tag: &'static str) -> Result<(String, Value), D::Error> {
    let mut object = Map::<String, Value>::deserialize(d)?;
    match object.remove(tag) {
        Some(Value::String(kind)) => Ok((kind, Value::Object(object))),
        Some(other) => Err(D::Error::custom(format!("{tag}: invalid type: {}, expected a string", kind_of(&other)))),
        None => Err(D::Error::missing_field(tag)),
    }
}

/// Deserializes the variant's payload from the rest of the object, naming the bad field.
pub fn variant<T: DeserializeOwned, E: Error>(rest: Value) -> Result<T, E> {
    serde_path_to_error::deserialize::<_, T>(rest).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            E::custom(inner)
        } else {
            E::custom(format!("{path}: {inner}"))
        }
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "sequence",
        Value::Object(_) => "map",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Create {
        model: Option<String>,
    }

    #[derive(Debug, PartialEq)]
    enum Open {
        Create(Create),
        Last,
    }

    impl<'de> Deserialize<'de> for Open {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let (kind, rest) = super::split(d, "kind")?;
            match kind.as_str() {
                "create" => super::variant(rest).map(Open::Create),
                "last" => Ok(Open::Last),
                other => Err(serde::de::Error::unknown_variant(other, &["create", "last"])),
            }
        }
    }

    fn parse(text: &str) -> Result<Open, String> {
        crate::methods::parse_params_text::<Open>(text)
    }

    #[test]
    fn a_bad_field_inside_the_variant_is_named() {
        let err = parse(r#"{"kind":"create","model":5}"#).unwrap_err();
        assert!(err.starts_with("model: invalid type: integer `5`"), "{err}");
    }

    #[test]
    fn variants_parse_and_unknown_tags_are_refused() {
        assert_eq!(parse(r#"{"model":"m","kind":"create"}"#), Ok(Open::Create(Create { model: Some("m".into()) })));
        assert_eq!(parse(r#"{"kind":"last","extra":1}"#), Ok(Open::Last));
        let err = parse(r#"{"kind":"other"}"#).unwrap_err();
        assert!(err.contains("unknown variant `other`"), "{err}");
        assert_eq!(parse(r#"{"model":"m"}"#).unwrap_err(), "missing field `kind`");
        assert!(parse(r#"{"kind":3}"#).unwrap_err().starts_with("kind: invalid type: number"));
        assert!(parse("[]").is_err());
    }

    #[test]
    fn the_path_of_a_nested_union_is_kept() {
        #[derive(Debug, Deserialize)]
        struct Outer {
            #[allow(dead_code)]
            open: Open,
        }
        let err = crate::methods::parse_params_text::<Outer>(r#"{"open":{"kind":"create","model":[]}}"#).unwrap_err();
        assert!(err.starts_with("open: model: invalid type: sequence"), "{err}");
    }
}
