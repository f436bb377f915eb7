//! What the model reads of a `tools/call` result: the text blocks (embedded text resources
//! included) joined by newlines, images as images, structured content when no text came.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    pub text: String,
    /// `data:<mime>;base64,<data>` URLs of image blocks.
    pub images: Vec<String>,
    /// The server set `isError`.
    pub is_error: bool,
}

/// Renders a `CallToolResult` (as JSON).
pub fn render(result: &Value) -> Rendered {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(str_of(block, "text")),
            Some("image") => {
                let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("image/png");
                images.push(format!("data:{mime};base64,{}", str_of(block, "data")));
            }
            Some("audio") => parts.push(format!("[Audio: {}]", str_of(block, "mimeType"))),
            Some("resource") => {
                let r = block.get("resource").cloned().unwrap_or_default();
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_string()),
                    None => parts.push(format!("[Resource: {}]", str_of(&r, "uri"))),
                }
            }
            Some("resource_link") => {
                parts.push(format!("[Resource link: {} ({})]", str_of(block, "name"), str_of(block, "uri")))
            }
            _ => {}
        }
    }
    let mut text = parts.join("\n");
    if text.is_empty() {
        if let Some(s) = result.get("structuredContent").filter(|s| !s.is_null()) {
            text = s.to_string();
        }
    }
    Rendered { text, images, is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false) }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_blocks() {
        let r = render(
            &json!({"content":[{"type":"text","text":"a"},{"type":"image","data":"QQ==","mimeType":"image/png"},
            {"type":"resource","resource":{"uri":"x://y","text":"body"}},{"type":"resource","resource":{"uri":"x://b","blob":"AA=="}}]}),
        );
        assert_eq!(r.text, "a\nbody\n[Resource: x://b]");
        assert_eq!(r.images, vec!["data:image/png;base64,QQ==".to_string()]);
        assert!(!r.is_error);
        let r = render(&json!({"content":[],"structuredContent":{"sum":3}}));
        assert_eq!(r.text, "{\"sum\":3}");
        let r = render(&json!({"content":[{"type":"text","text":"boom"}],"isError":true}));
        assert!(r.is_error);
        assert_eq!(r.text, "boom");
    }
}
