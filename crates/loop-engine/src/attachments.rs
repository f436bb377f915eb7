//! How `session.send` attachments reach the model, in the forms the recorded conversations
//! show: selections before the prompt, `<tagged_files>` and `<github_references>` after it,
//! blobs as image parts (documents as file parts).

use std::path::Path;

use llm_providers::{ContentPart, FilePart, ImageUrl};
use protocol::generated::types::{Attachment, AttachmentFileLineRange, AttachmentSelection};

/// Blocks are separated from the prompt by three blank lines, as the original renders them.
const GAP: &str = "\n\n\n\n";

#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    /// The prompt with its attachment blocks (without the datetime prefix).
    pub text: String,
    /// Extra parts after the text (blob display names and images).
    pub extra_parts: Vec<ContentPart>,
}

/// `citations`: documents ask the model to cite them (the session's `enableCitations`).
/// `files`: where the session reaches files (beneath its tenant's workspace on a team server),
/// which is where attached files and directories are counted.
pub fn render(prompt: &str, attachments: &[Attachment], cwd: &Path, citations: bool, files: &tools::Files) -> Rendered {
    let mut before: Vec<String> = Vec::new();
    let mut tagged: Vec<String> = Vec::new();
    let mut refs: Vec<String> = Vec::new();
    let mut extra_parts = Vec::new();
    for a in attachments {
        match a {
            Attachment::File(f) => tagged.push(file_line(&resolve(cwd, &f.path), f.line_range.as_ref(), files)),
            Attachment::Directory(d) => {
                let p = resolve(cwd, &d.path);
                let n = files.open_dir(&p).and_then(|d| d.entries()).map(|d| d.count()).unwrap_or(0);
                tagged.push(format!("* {} ({n} items)", p.display()));
            }
            Attachment::Selection(sel) => before.push(selection_block(sel)),
            Attachment::Blob(b) => {
                if let Some(data) = &b.data {
                    if let Some(name) = &b.display_name {
                        extra_parts.push(ContentPart::Text { text: name.clone() });
                    }
                    let url = format!("data:{};base64,{data}", b.mime_type);
                    if b.mime_type.starts_with("image/") {
                        extra_parts.push(ContentPart::ImageUrl { image_url: ImageUrl { url } });
                    } else {
                        let filename = b.display_name.clone();
                        extra_parts.push(ContentPart::File { file: FilePart { filename, file_data: url, citations } });
                    }
                }
            }
            Attachment::GithubReference(r) => refs.push(format!(
                "#{} - {} [{}] [{}] ({})",
                r.number,
                r.title,
                r.reference_type.as_str(),
                r.state,
                r.url
            )),
            // Other GitHub pointers carry at least a URL; the model gets that.
            other if other.tag().starts_with("github") => {
                let value = serde_json::to_value(other).unwrap_or_default();
                if let Some(url) = value.get("url").and_then(|u| u.as_str()) {
                    refs.push(format!("{} ({url})", other.tag()));
                }
            }
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

fn resolve(cwd: &Path, p: &str) -> std::path::PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn file_line(path: &Path, range: Option<&AttachmentFileLineRange>, files: &tools::Files) -> String {
    let total = files.read(path).map(|s| String::from_utf8_lossy(&s).lines().count().max(1)).unwrap_or(0);
    // Without a range the original gives the file's length only (the recordings show both).
    let Some(r) = range else { return format!("* {} ({total} lines)", path.display()) };
    let (start, end) = (r.start, r.end);
    if start == end {
        format!("* {} (line {start} of {total} lines)", path.display())
    } else {
        format!("* {} (lines {start}-{end} of {total} lines)", path.display())
    }
}

fn selection_block(a: &AttachmentSelection) -> String {
    let file = if a.display_name.is_empty() { &a.file_path } else { &a.display_name };
    let (start, end) = (a.selection.start.line + 1, a.selection.end.line + 1);
    let lines = if start != end { format!("lines {start}-{end}") } else { format!("line {start}") };
    format!(
        "<ide_selection>\nThe user has the following text selected in their IDE. This may or may not be related to their request.\nFile: {file} ({lines})\n```\n{}\n```\n</ide_selection>",
        a.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn typed(v: Value) -> Attachment {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn file_attachment_is_tagged_after_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("attached-file.txt");
        std::fs::write(&f, "hello\n").unwrap();
        let with_range = json!({"type":"file","path": f, "displayName":"attached-file.txt",
                                 "lineRange": {"start": 1, "end": 1}});
        let r = render("Read it.", &[typed(with_range)], dir.path(), false, &tools::Files::default());
        assert_eq!(
            r.text,
            format!("Read it.\n\n\n\n<tagged_files>\n* {} (line 1 of 1 lines)\n</tagged_files>", f.display())
        );
        // No range, no display name (the Node SDK sends neither): the file's length only.
        let r =
            render("Read it.", &[typed(json!({"type":"file","path": f}))], dir.path(), false, &tools::Files::default());
        assert_eq!(r.text, format!("Read it.\n\n\n\n<tagged_files>\n* {} (1 lines)\n</tagged_files>", f.display()));
    }

    #[test]
    fn selection_goes_first_and_reference_last() {
        let sel = json!({"type":"selection","filePath":"/x/selected-file.cs","displayName":"selected-file.cs",
            "text":"string Value = \"S\";","selection":{"start":{"line":1,"character":0},"end":{"line":1,"character":5}}});
        let r = render("Summarize.", &[typed(sel)], Path::new("/"), false, &tools::Files::default());
        assert!(r.text.starts_with("<ide_selection>\nThe user has"));
        assert!(r.text.contains(
            "File: selected-file.cs (line 2)\n```\nstring Value = \"S\";\n```\n</ide_selection>\n\n\n\nSummarize."
        ));
        let gh = json!({"type":"github_reference","number":1234,"title":"T","referenceType":"issue","state":"open","url":"https://u"});
        let r = render("P", &[typed(gh)], Path::new("/"), false, &tools::Files::default());
        assert_eq!(r.text, "P\n\n\n\n<github_references>\n#1234 - T [issue] [open] (https://u)\n</github_references>");
    }

    #[test]
    fn blob_becomes_name_and_image_parts() {
        let r = render(
            "Describe",
            &[typed(json!({"type":"blob","data":"AAAA","mimeType":"image/png","displayName":"p.png"}))],
            Path::new("/"),
            true,
            &tools::Files::default(),
        );
        assert_eq!(r.text, "Describe");
        assert_eq!(r.extra_parts.len(), 2);
        assert!(
            matches!(&r.extra_parts[1], ContentPart::ImageUrl { image_url } if image_url.url == "data:image/png;base64,AAAA")
        );
    }

    #[test]
    fn a_document_blob_becomes_a_file_part_asking_for_citations_when_enabled() {
        let pdf = json!({"type":"blob","data":"JVBE","mimeType":"application/pdf","displayName":"s.pdf"});
        for citations in [false, true] {
            let r = render("Summarize", &[typed(pdf.clone())], Path::new("/"), citations, &tools::Files::default());
            let expected = FilePart {
                filename: Some("s.pdf".into()),
                file_data: "data:application/pdf;base64,JVBE".into(),
                citations,
            };
            assert_eq!(r.extra_parts.last(), Some(&ContentPart::File { file: expected }));
        }
    }
}
