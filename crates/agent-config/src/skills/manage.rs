//! The user's changes to skills outside any session (`skipper skill add|remove|enable|disable`,
//! `skills.config.*`): skill directories the user registered (`skillDirectories` in
//! `settings.json`, where the original keeps them), skills turned off for every session
//! (`disabledSkills` in `config.json`), and skill files copied into or deleted from the
//! personal or project skill directories.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::json_file::FileError;
use crate::user_settings;

#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("Path does not exist: {0}")]
    Missing(String),
    #[error("Not a valid skill: {0}")]
    Invalid(String),
    #[error("A skill already exists at {0}. Remove it first or rename the skill.")]
    Exists(String),
    #[error("{0}: {1}")]
    Io(String, String),
    #[error(transparent)]
    File(#[from] FileError),
}

/// The skill directories the user registered (`skillDirectories` in `settings.json`).
pub fn user_directories(home: &Path) -> Vec<PathBuf> {
    let settings = user_settings::file(home).read().unwrap_or_default();
    let list = settings.get("skillDirectories").and_then(Value::as_array);
    list.into_iter().flatten().filter_map(Value::as_str).map(PathBuf::from).collect()
}

/// Registers a directory of skills (once).
pub fn add_directory(home: &Path, dir: &Path) -> Result<(), FileError> {
    let dir = dir.to_string_lossy().into_owned();
    user_settings::file(home).update(|s| {
        let list = s.entry("skillDirectories").or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(items) = list {
            if !items.iter().any(|v| v.as_str() == Some(dir.as_str())) {
                items.push(Value::String(dir.clone()));
            }
        }
        Ok(())
    })
}

/// Unregisters a directory of skills; `false` when it was not registered.
pub fn remove_directory(home: &Path, dir: &Path) -> Result<bool, FileError> {
    let dir = dir.to_string_lossy().into_owned();
    user_settings::file(home).update(|s| {
        let Some(Value::Array(items)) = s.get_mut("skillDirectories") else { return Ok(false) };
        let before = items.len();
        items.retain(|v| v.as_str() != Some(dir.as_str()));
        Ok(items.len() != before)
    })
}

/// Turns one skill off or back on for every session (`disabledSkills`, where the original
/// keeps it: see [`user_settings::update_names`]).
pub fn set_user_disabled(home: &Path, name: &str, disabled: bool) -> Result<(), FileError> {
    user_settings::update_names(home, user_settings::DISABLED_SKILLS, |list| {
        user_settings::toggle(list, name, disabled)
    })
}

/// Copies a `SKILL.md` file into `<root>/<name>/SKILL.md`; the skill's name (the header's
/// `name`, else the file's directory) and where it went.
pub fn add_file(file: &Path, root: &Path) -> Result<(String, PathBuf), SkillError> {
    let io = |p: &Path, e: std::io::Error| SkillError::Io(p.display().to_string(), e.to_string());
    let text = crate::read_scope::read_to_string(file)
        .map_err(|e| SkillError::Io(file.display().to_string(), e.to_string()))?;
    // The original takes only a file with a header: a plain Markdown file is no skill.
    if !(text.starts_with("---\n") || text.starts_with("---\r\n")) {
        return Err(SkillError::Invalid("missing or malformed YAML frontmatter".into()));
    }
    let skill = super::files::read(file, protocol::generated::types::SkillSource::Custom)
        .map_err(|e| SkillError::Invalid(format!("missing or malformed YAML frontmatter ({e})")))?;
    let dir = root.join(&skill.name);
    if dir.exists() {
        return Err(SkillError::Exists(dir.display().to_string()));
    }
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    std::fs::write(dir.join("SKILL.md"), text).map_err(|e| io(&dir, e))?;
    Ok((skill.name, dir))
}

/// Deletes the directory of the project or personal skill named `name` (the project's first,
/// as they are found); the directory, or `None` when neither has such a skill.
pub fn remove_named(project: &Path, home: &Path, name: &str) -> Result<Option<PathBuf>, SkillError> {
    let (found, _) = super::files::discover(Some(project), Some(home), &[]);
    let Some(skill) = found.into_iter().find(|s| s.name == name) else { return Ok(None) };
    let dir = skill.dir().to_path_buf();
    std::fs::remove_dir_all(&dir).map_err(|e| SkillError::Io(dir.display().to_string(), e.to_string()))?;
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabling_starts_from_the_list_settings_json_holds() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("settings.json"), r#"{"disabledSkills": ["old"]}"#).unwrap();
        set_user_disabled(home.path(), "new", true).unwrap();
        assert_eq!(super::super::user_disabled(home.path()), ["old", "new"]);
        set_user_disabled(home.path(), "old", false).unwrap();
        assert_eq!(super::super::user_disabled(home.path()), ["new"]);
    }

    #[test]
    fn a_file_is_copied_once_and_a_directory_registered_once() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src/x/SKILL.md");
        std::fs::create_dir_all(src.parent().unwrap()).unwrap();
        std::fs::write(&src, "---\ndescription: d\n---\nbody\n").unwrap();
        let root = dir.path().join("skills");
        let (name, to) = add_file(&src, &root).unwrap();
        assert_eq!((name.as_str(), to.join("SKILL.md").is_file()), ("x", true));
        assert!(matches!(add_file(&src, &root), Err(SkillError::Exists(_))));
        std::fs::write(&src, "no header").unwrap();
        assert!(matches!(add_file(&src, &dir.path().join("other")), Err(SkillError::Invalid(_))));

        let home = dir.path().join("home");
        add_directory(&home, &root).unwrap();
        add_directory(&home, &root).unwrap();
        assert_eq!(user_directories(&home), std::slice::from_ref(&root));
        assert!(remove_directory(&home, &root).unwrap());
        assert!(!remove_directory(&home, &root).unwrap());
    }
}
