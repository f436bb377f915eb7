//! The tools' argument schemas, as offered to the model: JSON files in `crates/tools/schemas/`,
//! compiled in and parsed once per process (every model call offers them again).

/// The parsed schema `schemas/<name>.json`, shared.
macro_rules! parameters {
    ($name:literal) => {{
        static SCHEMA: std::sync::OnceLock<std::sync::Arc<serde_json::Value>> = std::sync::OnceLock::new();
        SCHEMA
            .get_or_init(|| {
                std::sync::Arc::new(crate::schema::parse(
                    $name,
                    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/", $name, ".json")),
                ))
            })
            .clone()
    }};
}

pub(crate) use parameters;

/// A schema file that does not parse is a build mistake the tests catch; at run time the tool
/// still gets an object schema rather than taking the process down.
pub(crate) fn parse(name: &str, text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| {
        tracing::error!(tool = name, error = %e, "tool schema does not parse");
        serde_json::json!({"type": "object"})
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_schema_parses_to_an_object_schema() {
        for tool in crate::Registry::builtins().tools() {
            let p = tool.parameters();
            assert_eq!(p["type"], "object", "{}", tool.name());
            assert!(p.get("properties").is_some_and(|v| v.is_object()), "{}", tool.name());
        }
    }
}
