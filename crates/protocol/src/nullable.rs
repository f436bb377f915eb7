//! Fields the schema requires but allows to be `null`: present as `null` is `None`, absent is
//! an error (serde alone would quietly read a missing `Option` field as `None`).

use serde::{Deserialize, Deserializer};

/// `#[serde(deserialize_with = "crate::nullable::required")]` on an `Option<T>` field.
pub fn required<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, Debug)]
    struct S {
        #[serde(deserialize_with = "super::required")]
        v: Option<u32>,
    }

    #[test]
    fn null_is_none_and_absence_is_an_error() {
        assert_eq!(serde_json::from_str::<S>(r#"{"v":null}"#).unwrap().v, None);
        assert_eq!(serde_json::from_str::<S>(r#"{"v":3}"#).unwrap().v, Some(3));
        let e = serde_json::from_str::<S>("{}").unwrap_err().to_string();
        assert!(e.contains("missing field `v`"), "{e}");
    }
}
