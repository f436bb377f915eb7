//! Fields the schema requires but allows to be `null`: present as `null` is `None`, absent is
//! an error (serde alone would quietly read a missing `Option` field as `None`). And optional
//! fields that read a value they do not know as absent.

use serde::{Deserialize, Deserializer};

/// `#[serde(deserialize_with = "crate::nullable::required")]` on an `Option<T>` field.
pub fn required<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// `#[serde(deserialize_with = "crate::nullable::lenient")]` on an optional field: a string
/// that is not one of `T`'s values (an enum value from a newer client) is `None`, as the
/// original takes it, instead of failing the whole request. A value of the wrong JSON type is
/// still an error.
pub fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    match serde_json::from_value(value.clone()) {
        Ok(v) => Ok(Some(v)),
        Err(_) if value.is_string() => Ok(None),
        Err(e) => Err(serde::de::Error::custom(e)),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, Debug)]
    struct S {
        #[serde(deserialize_with = "super::required")]
        v: Option<u32>,
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    enum Mode {
        #[serde(rename = "a")]
        A,
    }

    #[derive(serde::Deserialize, Debug)]
    struct L {
        #[serde(default, deserialize_with = "super::lenient")]
        m: Option<Mode>,
    }

    #[test]
    fn a_lenient_field_reads_what_it_does_not_know_as_absent() {
        assert_eq!(serde_json::from_str::<L>(r#"{"m":"a"}"#).unwrap().m, Some(Mode::A));
        assert_eq!(serde_json::from_str::<L>(r#"{"m":"plan"}"#).unwrap().m, None);
        assert_eq!(serde_json::from_str::<L>("{}").unwrap().m, None);
        assert!(serde_json::from_str::<L>(r#"{"m":5}"#).is_err(), "a wrong type is still an error");
    }

    #[test]
    fn null_is_none_and_absence_is_an_error() {
        assert_eq!(serde_json::from_str::<S>(r#"{"v":null}"#).unwrap().v, None);
        assert_eq!(serde_json::from_str::<S>(r#"{"v":3}"#).unwrap().v, Some(3));
        let e = serde_json::from_str::<S>("{}").unwrap_err().to_string();
        assert!(e.contains("missing field `v`"), "{e}");
    }
}
