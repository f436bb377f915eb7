//! Markdown files with a YAML header (`---` lines around it): agent and skill definitions.

use serde::de::DeserializeOwned;

/// The header parsed as `T` and the body after it. A file without a header has a default
/// header and is all body; a header that is not valid YAML for `T` is an error.
pub fn split<T: DeserializeOwned + Default>(text: &str) -> Result<(T, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return Ok((T::default(), text.trim().to_string()));
    };
    let mut header_len = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            header_len = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, body_start)) = header_len else {
        return Err("the YAML header has no closing `---` line".into());
    };
    let header = &rest[..end];
    let parsed = if header.trim().is_empty() {
        T::default()
    } else {
        serde_yaml::from_str(header).map_err(|e| e.to_string())?
    };
    Ok((parsed, rest[body_start..].trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize, PartialEq)]
    struct H {
        name: Option<String>,
        tools: Option<Vec<String>>,
    }

    #[test]
    fn header_and_body_are_separated() {
        let (h, body) = split::<H>("---\nname: x\ntools: [view, grep]\n---\n\nDo things.\n").unwrap();
        assert_eq!(h, H { name: Some("x".into()), tools: Some(vec!["view".into(), "grep".into()]) });
        assert_eq!(body, "Do things.");
    }

    #[test]
    fn no_header_is_all_body_and_a_bad_header_is_an_error() {
        let (h, body) = split::<H>("Just text").unwrap();
        assert_eq!((h, body.as_str()), (H::default(), "Just text"));
        assert!(split::<H>("---\nname: [unclosed\n---\nx").is_err());
        assert!(split::<H>("---\nname: x\nno end").is_err());
    }
}
