//! Custom instructions: the files users write to steer the agent, rendered into the system
//! prompt's `custom_instructions` section as the original CLI renders them.
//!
//! Sources, in prompt order: the user's `$COPILOT_HOME/copilot-instructions.md`; the
//! repository's `.github/copilot-instructions.md`, `AGENTS.md`, `CLAUDE.md`, `GEMINI.md` (each
//! in a `<custom_instruction>` block); then `*.instructions.md` files under the repository's
//! `.github/instructions` and each of the session's `instructionDirectories`. Such a file
//! without an `applyTo` (or one matching everything) is included whole; one scoped to a
//! pattern is listed in a table the model reads the file from when it touches matching code.

use std::path::{Path, PathBuf};

use protocol::generated::types::{
    InstructionDiscoveryPath, InstructionDiscoveryPathKind, InstructionDiscoveryPathLocation, InstructionSource,
    InstructionSourceLocation, InstructionSourceType,
};

/// Repository files that each become a `<custom_instruction>` block, in order.
const REPO_FILES: &[&str] = &[".github/copilot-instructions.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md"];

/// A file larger than this is left out: it would crowd out the conversation.
const MAX_FILE_BYTES: u64 = 512 * 1024;

/// How deep `.github/instructions` is searched.
const MAX_DEPTH: usize = 8;

const SCOPED_HEADER: &str = "Here is a list of instruction files that contain rules for modifying or creating new code.
These files are important for ensuring that the code is modified or created correctly.
Please make sure to follow the rules specified in these files when working with the codebase.
If you have not already read the file, use the `view` tool to acquire it.
Make sure to acquire the instructions before making any changes to the code.
| Pattern | File Path | Description |
| ------- | --------- | ----------- |";

#[derive(Debug, Default, serde::Deserialize)]
struct Header {
    #[serde(rename = "applyTo")]
    apply_to: Option<serde_yaml::Value>,
    description: Option<String>,
}

/// The rendered section for a session in `cwd` (empty when there are no instructions).
pub fn load(cwd: &Path, home: &Path, extra_dirs: &[PathBuf]) -> String {
    let mut blocks: Vec<String> = Vec::new();
    let mut wrapped = |path: &Path| {
        if let Some(text) = read(path) {
            blocks.push(format!("<custom_instruction>\n{text}\n</custom_instruction>"));
        }
    };
    wrapped(&home.join("copilot-instructions.md"));
    let root = crate::repo_settings::root(cwd);
    for name in REPO_FILES {
        wrapped(&root.join(name));
    }
    let mut scoped_rows: Vec<String> = Vec::new();
    let bases = std::iter::once(root.clone()).chain(extra_dirs.iter().cloned());
    let mut seen: Vec<PathBuf> = Vec::new();
    for base in bases {
        for file in instruction_files(&base) {
            let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
            if seen.contains(&canonical) {
                continue;
            }
            seen.push(canonical);
            let Some(text) = read(&file) else { continue };
            match scope(&text) {
                None => blocks.push(text),
                Some((pattern, description)) => {
                    let shown = file.strip_prefix(&base).unwrap_or(&file).to_string_lossy().into_owned();
                    scoped_rows.push(format!("| {pattern} | '{shown}' | {description} |"));
                }
            }
        }
    }
    if !scoped_rows.is_empty() {
        blocks.push(format!("{SCOPED_HEADER}\n{}", scoped_rows.join("\n")));
    }
    blocks.join("\n\n")
}

/// Instruction files outside any session (`instructions.discover`, `skipper instruction list`):
/// the user's unless `home` is `None`, then each project's repository files and
/// `.github/instructions` files. Ids, labels, types and locations are the original's (its
/// `instruction list --json`): `home-copilot`, `repo-copilot`, `model-agents-md`,
/// `vscode-instructions/<path>`; a project's `.github/instructions` files are the working
/// directory's when the project is the repository root, else the repository's.
pub fn discover(projects: &[PathBuf], home: Option<&Path>) -> Vec<InstructionSource> {
    use InstructionSourceLocation as L;
    use InstructionSourceType as T;
    let mut out = Vec::new();
    let mut add = |path: PathBuf, id: String, label: String, kind: T, location: L, project: Option<&Path>| {
        let Some(text) = read(&path) else { return };
        let source_path = path.to_string_lossy().into_owned();
        if out.iter().any(|s: &InstructionSource| s.source_path == source_path) {
            return;
        }
        let mut source = InstructionSource::new(id, label, source_path, text.clone(), kind, location);
        if let Some((pattern, description)) = scope(&text) {
            source.apply_to = Some(pattern.split(',').map(str::to_string).collect());
            source.description = (!description.is_empty()).then_some(description);
        } else if let Some(description) = description(&text) {
            source.description = Some(description);
        }
        source.project_path = project.map(|p| p.to_string_lossy().into_owned());
        out.push(source);
    };
    if let Some(h) = home {
        let path = h.join("copilot-instructions.md");
        add(path, "home-copilot".into(), "Home copilot-instructions.md".into(), T::Home, L::User, None);
    }
    for p in projects {
        let root = crate::repo_settings::root(p);
        for name in REPO_FILES {
            let (id, kind) = match *name {
                ".github/copilot-instructions.md" => ("repo-copilot".to_string(), T::Repo),
                model => (format!("model-{}", model.to_lowercase().replace('.', "-")), T::Model),
            };
            add(root.join(name), id, name.to_string(), kind, L::Repository, Some(&root));
        }
        let location = if root == *p { L::WorkingDirectory } else { L::Repository };
        for file in instruction_files(&root) {
            let relative = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().into_owned();
            let label = file.file_name().map_or_else(|| relative.clone(), |n| n.to_string_lossy().into_owned());
            add(file, format!("vscode-instructions/{relative}"), label, T::Vscode, location, Some(&root));
        }
    }
    out
}

/// The `description` of a file's header, when it has one.
fn description(text: &str) -> Option<String> {
    let (header, _) = crate::frontmatter::split::<Header>(text).ok()?;
    header.description.filter(|d| !d.is_empty())
}

/// Where instruction files may be created so they are found (`instructions.getDiscoveryPaths`),
/// existing or not.
pub fn creation_paths(projects: &[PathBuf], home: Option<&Path>) -> Vec<InstructionDiscoveryPath> {
    use InstructionDiscoveryPathKind as K;
    use InstructionDiscoveryPathLocation as L;
    let mut out = Vec::new();
    for p in projects {
        let root = crate::repo_settings::root(p);
        let mut entries = vec![InstructionDiscoveryPath::new(
            root.join(".github").join("copilot-instructions.md").to_string_lossy().into_owned(),
            L::Repository,
            K::File,
            true,
        )];
        entries.extend(REPO_FILES[1..].iter().map(|name| {
            InstructionDiscoveryPath::new(root.join(name).to_string_lossy().into_owned(), L::Repository, K::File, false)
        }));
        entries.push(InstructionDiscoveryPath::new(
            root.join(".github").join("instructions").to_string_lossy().into_owned(),
            L::Repository,
            K::Directory,
            false,
        ));
        for mut e in entries {
            e.project_path = Some(p.to_string_lossy().into_owned());
            out.push(e);
        }
    }
    if let Some(h) = home {
        out.push(InstructionDiscoveryPath::new(
            h.join("copilot-instructions.md").to_string_lossy().into_owned(),
            L::User,
            K::File,
            true,
        ));
    }
    out
}

/// A file's text, when it exists, is small enough and says something.
fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let text = crate::read_scope::read_to_string(path).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

/// `*.instructions.md` under `base/.github/instructions`, sorted by path.
fn instruction_files(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(&base.join(".github").join("instructions"), 0, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect(&path, depth + 1, out);
        } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".instructions.md")) {
            out.push(path);
        }
    }
}

/// `Some((pattern, description))` when the file applies only to some paths; `None` when it
/// applies everywhere (no `applyTo`, `**`, `**/*`, or a header that does not parse).
fn scope(text: &str) -> Option<(String, String)> {
    let (header, _) = crate::frontmatter::split::<Header>(text).ok()?;
    let pattern = match header.apply_to? {
        serde_yaml::Value::String(s) => s,
        serde_yaml::Value::Sequence(items) => items.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(","),
        _ => return None,
    };
    let pattern = pattern.trim().to_string();
    if pattern.is_empty() || matches!(pattern.as_str(), "**" | "**/*" | "*") {
        return None;
    }
    Some((pattern, header.description.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn nothing_to_read_gives_an_empty_section() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), &dir.path().join("home"), &[]), "");
    }

    #[test]
    fn sources_render_in_the_original_s_order_and_shape() {
        let dir = tempfile::tempdir().unwrap();
        let (home, repo, extra) = (dir.path().join("home"), dir.path().join("repo"), dir.path().join("extra"));
        write(&home.join("copilot-instructions.md"), "USER\n");
        write(&repo.join(".github/copilot-instructions.md"), "REPO\n");
        write(&repo.join("AGENTS.md"), "AGENTS\n");
        write(&repo.join(".github/instructions/a.instructions.md"), "ALWAYS\n");
        write(&repo.join(".github/instructions/ts.instructions.md"), "---\napplyTo: \"**/*.ts\"\n---\nTS\n");
        write(&extra.join(".github/instructions/x.instructions.md"), "EXTRA.");
        let text = load(&repo, &home, std::slice::from_ref(&extra));
        let expected = format!(
            "<custom_instruction>\nUSER\n\n</custom_instruction>\n\n<custom_instruction>\nREPO\n\n</custom_instruction>\n\n\
             <custom_instruction>\nAGENTS\n\n</custom_instruction>\n\nALWAYS\n\n\nEXTRA.\n\n{SCOPED_HEADER}\n\
             | **/*.ts | '.github/instructions/ts.instructions.md' |  |"
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn a_file_applying_everywhere_is_included_whole_with_its_header() {
        let text = "---\napplyTo: \"**\"\ndescription: d\n---\nBODY\n";
        assert_eq!(scope(text), None);
        assert_eq!(
            scope("---\napplyTo: [\"src/**\", \"lib/**\"]\n---\nx"),
            Some(("src/**,lib/**".into(), String::new()))
        );
        assert_eq!(scope("---\napplyTo: '*.rs'\ndescription: Rust\n---\nx"), Some(("*.rs".into(), "Rust".into())));
    }

    #[test]
    fn the_git_root_is_the_repository_and_nested_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&repo.join("AGENTS.md"), "ROOT\n");
        write(&repo.join("sub/AGENTS.md"), "NESTED\n");
        let text = load(&repo.join("sub"), &dir.path().join("home"), &[]);
        assert!(text.contains("ROOT") && !text.contains("NESTED"), "{text}");
    }

    #[test]
    fn an_instruction_directory_equal_to_the_repo_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        write(&repo.join(".github/instructions/a.instructions.md"), "ONCE\n");
        let text = load(&repo, &dir.path().join("home"), std::slice::from_ref(&repo));
        assert_eq!(text.matches("ONCE").count(), 1);
    }
}
