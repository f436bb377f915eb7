//! How `session.send` attachments reach the model, in the forms the recorded conversations
//! show: selections before the prompt, `<tagged_files>` and `<github_references>` after it,
//! blobs as image parts.

use std::path::Path;

use llm_providers::{ContentPart, ImageUrl};
use serde_json::Value;

/// Blocks are separated from the prompt by three blank lines, as the original renders them.
const GAP: &str = "\n\n\n\n";

#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    /// The prompt with its attachment blocks (without the datetime prefix).
    pub text: String,
    /// Extra parts after the text (blob display names and images).
    pub extra_parts: Vec<ContentPart>,
}

pub fn render(prompt: &str, attachments: &[Value], cwd: &Path) -> Rendered {
    let mut before: Vec<String> = Vec::new();
    let mut tagged: Vec<String> = Vec::new();
    let mut refs: Vec<String> = Vec::new();
    let mut extra_parts = Vec::new();
    for a in attachments {
        let kind = a.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "file" => {
                if let Some(path) = str_of(a, "path") {
                    tagged.push(file_line(&resolve(cwd, path), a.get("lineRange")));
                }
            }
            "directory" => {
                if let Some(path) = str_of(a, "path") {
                    let p = resolve(cwd, path);
                    let n = std::fs::read_dir(&p).map(|d| d.count()).unwrap_or(0);
                    tagged.push(format!("* {} ({n} items)", p.display()));
                }
            }
            "selection" => before.push(selection_block(a)),
            "blob" => {
                if let (Some(data), Some(mime)) = (str_of(a, "data"), str_of(a, "mimeType")) {
                    if let Some(name) = str_of(a, "displayName") {
                        extra_parts.push(ContentPart::Text { text: name.to_string() });
                    }
                    extra_parts.push(ContentPart::ImageUrl {
                        image_url: ImageUrl { url: format!("data:{mime};base64,{data}") },
                    });
                }
            }
            _ if a.get("number").is_some() || kind.starts_with("github") => refs.push(reference_line(a)),
            _ => {}
        }
    }
    let mut text = String::new();
    for b in &before {
        text.push_str(b);
        text.push_str(GAP);
    }
    text.push_str(prompt);
    if !tagged.is_empty() {
        text.push_str(GAP);
        text.push_str(&format!("<tagged_files>\n{}\n</tagged_files>", tagged.join("\n")));
    }
    if !refs.is_empty() {
        text.push_str(GAP);
        text.push_str(&format!("<github_references>\n{}\n</github_references>", refs.join("\n")));
    }
    Rendered { text, extra_parts }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn resolve(cwd: &Path, p: &str) -> std::path::PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn file_line(path: &Path, range: Option<&Value>) -> String {
    let total = std::fs::read_to_string(path).map(|s| s.lines().count().max(1)).unwrap_or(0);
    let start = range.and_then(|r| r.get("start")).and_then(Value::as_u64).unwrap_or(1);
    let end = range.and_then(|r| r.get("end")).and_then(Value::as_u64).unwrap_or(total as u64);
    if start == end {
        format!("* {} (line {start} of {total} lines)", path.display())
    } else {
        format!("* {} (lines {start}-{end} of {total} lines)", path.display())
    }
}

fn selection_block(a: &Value) -> String {
    let file = str_of(a, "displayName").or_else(|| str_of(a, "filePath")).unwrap_or("");
    let sel = a.get("selection");
    let line = |k: &str| sel.and_then(|s| s.get(k)).and_then(|p| p.get("line")).and_then(Value::as_u64).map(|l| l + 1);
    let lines = match (line("start"), line("end")) {
        (Some(s), Some(e)) if s != e => format!("lines {s}-{e}"),
        (Some(s), _) => format!("line {s}"),
        _ => "selection".to_string(),
    };
    let text = str_of(a, "text").unwrap_or("");
    format!(
        "<ide_selection>\nThe user has the following text selected in their IDE. This may or may not be related to their request.\nFile: {file} ({lines})\n```\n{text}\n```\n</ide_selection>"
    )
}

fn reference_line(a: &Value) -> String {
    let number = a.get("number").map(|n| n.to_string().trim_matches('"').to_string()).unwrap_or_default();
    let title = str_of(a, "title").unwrap_or("");
    let kind = str_of(a, "referenceType").unwrap_or("issue");
    let state = str_of(a, "state").unwrap_or("");
    let url = str_of(a, "url").unwrap_or("");
    format!("#{number} - {title} [{kind}] [{state}] ({url})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_attachment_is_tagged_after_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("attached-file.txt");
        std::fs::write(&f, "hello\n").unwrap();
        let r = render("Read it.", &[json!({"type":"file","path": f, "displayName":"attached-file.txt"})], dir.path());
        assert_eq!(
            r.text,
            format!("Read it.\n\n\n\n<tagged_files>\n* {} (line 1 of 1 lines)\n</tagged_files>", f.display())
        );
    }

    #[test]
    fn selection_goes_first_and_reference_last() {
        let sel = json!({"type":"selection","filePath":"/x/selected-file.cs","displayName":"selected-file.cs",
            "text":"string Value = \"S\";","selection":{"start":{"line":1,"character":0},"end":{"line":1,"character":5}}});
        let r = render("Summarize.", &[sel], Path::new("/"));
        assert!(r.text.starts_with("<ide_selection>\nThe user has"));
        assert!(r.text.contains(
            "File: selected-file.cs (line 2)\n```\nstring Value = \"S\";\n```\n</ide_selection>\n\n\n\nSummarize."
        ));
        let gh = json!({"type":"github_reference","number":1234,"title":"T","referenceType":"issue","state":"open","url":"https://u"});
        let r = render("P", &[gh], Path::new("/"));
        assert_eq!(r.text, "P\n\n\n\n<github_references>\n#1234 - T [issue] [open] (https://u)\n</github_references>");
    }

    #[test]
    fn blob_becomes_name_and_image_parts() {
        let r = render(
            "Describe",
            &[json!({"type":"blob","data":"AAAA","mimeType":"image/png","displayName":"p.png"})],
            Path::new("/"),
        );
        assert_eq!(r.text, "Describe");
        assert_eq!(r.extra_parts.len(), 2);
    }
}
