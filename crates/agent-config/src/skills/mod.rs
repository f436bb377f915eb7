//! Skills: `<dir>/<name>/SKILL.md` files the model loads on demand through the `skill` tool
//! (loop-engine's `skill_tool`). They come from the session's `skillDirectories`, the user
//! (`$COPILOT_HOME/skills`) and, with `enableConfigDiscovery`, the project (`.github/skills`,
//! `.claude/skills`, `.agents/skills` in the working directory and its parents up to the
//! repository root); `disabledSkills` (the session's and the user's, see [`user_disabled`]) and
//! `session.skills.disable` turn some off.

mod files;
pub mod manage;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::generated::types::{Skill, SkillDiscoveryPath, SkillDiscoveryScope, SkillSource};
use protocol::methods::SessionConfigParams;

/// One skill file.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillDef {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// The body after the header: what the model is given when it loads the skill.
    pub body: String,
    pub source: SkillSource,
    /// Tools the skill may use without asking (`allowed-tools`).
    pub allowed_tools: Option<Vec<String>>,
    pub user_invocable: bool,
}

impl SkillDef {
    /// The directory the skill lives in (its resources are relative to it).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    pub fn info(&self, enabled: bool) -> Skill {
        let mut s = Skill::new(self.name.clone(), self.description.clone(), self.source, self.user_invocable, enabled);
        s.path = Some(self.path.to_string_lossy().into_owned());
        s
    }
}

/// The skills of a session and which are off.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    directories: Arc<Vec<PathBuf>>,
    disabled: Arc<Vec<String>>,
    skills: Arc<Vec<SkillDef>>,
    /// What went wrong reading skill files, for `session.skills.reload`.
    pub warnings: Arc<Vec<String>>,
}

impl SkillSet {
    /// The configuration only; files are read by [`SkillSet::reload`].
    pub fn from_params(p: &SessionConfigParams) -> Self {
        Self {
            directories: Arc::new(p.skill_directories.iter().flatten().map(PathBuf::from).collect()),
            disabled: Arc::new(p.disabled_skills.clone().unwrap_or_default()),
            ..Default::default()
        }
    }

    /// The same configuration, files read again; the user's `disabledSkills` join the
    /// session's (as the original, which merges the two sets when a session starts).
    /// `project`: the session's directory when project files are read.
    pub fn reload(&self, project: Option<&Path>, home: &Path) -> Self {
        // The directories the user registered (`skipper skill add <dir>`) come after the
        // session's own, as the original reads them.
        let mut directories = self.directories.as_ref().clone();
        directories.extend(manage::user_directories(home).into_iter().filter(|d| !self.directories.contains(d)));
        let (skills, warnings) = files::discover(project, Some(home), &directories);
        let mut disabled = self.disabled.as_ref().clone();
        for name in user_disabled(home) {
            if !disabled.contains(&name) {
                disabled.push(name);
            }
        }
        Self {
            directories: self.directories.clone(),
            disabled: Arc::new(disabled),
            skills: Arc::new(skills),
            warnings: Arc::new(warnings),
        }
    }

    pub fn all(&self) -> &[SkillDef] {
        &self.skills
    }

    pub fn is_enabled(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
    }

    /// An enabled skill by name.
    pub fn enabled(&self, name: &str) -> Option<&SkillDef> {
        self.skills.iter().find(|s| s.name == name && self.is_enabled(name))
    }

    /// Turns a skill on or off; `false` when no skill has that name.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> bool {
        if !self.skills.iter().any(|s| s.name == name) {
            return false;
        }
        let mut disabled: Vec<String> = self.disabled.iter().filter(|d| *d != name).cloned().collect();
        if !enabled {
            disabled.push(name.to_string());
        }
        self.disabled = Arc::new(disabled);
        true
    }

    pub fn list(&self) -> Vec<Skill> {
        self.skills.iter().map(|s| s.info(self.is_enabled(&s.name))).collect()
    }
}

/// The user's `disabledSkills` setting (see [`crate::user_settings::names`]). An unreadable file
/// counts as no setting.
pub fn user_disabled(home: &Path) -> Vec<String> {
    crate::user_settings::names(home, crate::user_settings::DISABLED_SKILLS).unwrap_or_default()
}

/// Skills outside any session (`skills.discover`): each project directory's (with the project it
/// came from), the given directories', then the user's unless `home` is `None`; the first of a
/// name wins.
pub fn discover(
    projects: &[PathBuf],
    directories: &[PathBuf],
    home: Option<&Path>,
) -> (Vec<(SkillDef, Option<PathBuf>)>, Vec<String>) {
    let mut out: Vec<(SkillDef, Option<PathBuf>)> = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |found: (Vec<SkillDef>, Vec<String>), project: Option<&Path>| {
        for skill in found.0 {
            if !out.iter().any(|(s, _)| s.name == skill.name) {
                out.push((skill, project.map(Path::to_path_buf)));
            }
        }
        warnings.extend(found.1);
    };
    for p in projects {
        add(files::discover(Some(p), None, &[]), Some(p));
    }
    add(files::discover(None, None, directories), None);
    if let Some(h) = home {
        add(files::discover(None, Some(h), &[]), None);
    }
    (out, warnings)
}

/// Where skills may be created so they are found (`skills.getDiscoveryPaths`), existing or not:
/// each project's directories (`.github/skills` preferred), then the user's.
pub fn creation_paths(projects: &[PathBuf], home: Option<&Path>) -> Vec<SkillDiscoveryPath> {
    let mut out = Vec::new();
    for p in projects {
        for (i, dir) in files::PROJECT_DIRS.iter().enumerate() {
            let mut entry = SkillDiscoveryPath::new(
                p.join(dir).to_string_lossy().into_owned(),
                SkillDiscoveryScope::Project,
                i == 0,
            );
            entry.project_path = Some(p.to_string_lossy().into_owned());
            out.push(entry);
        }
    }
    if let Some(h) = home {
        out.push(SkillDiscoveryPath::new(
            h.join("skills").to_string_lossy().into_owned(),
            SkillDiscoveryScope::PersonalCopilot,
            true,
        ));
    }
    out
}

/// What the model reads after loading a skill (a user message after the tool result).
pub fn context_message(skill: &SkillDef) -> String {
    format!(
        "<skill-context name=\"{}\">\nBase directory for this skill: {}\n\n{}\n\n</skill-context>",
        skill.name,
        skill.dir().display(),
        skill.body.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, name: &str, description: &str) {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n\n# Steps\n\nDo {name}.\n"),
        )
        .unwrap();
    }

    #[test]
    fn skills_come_from_configured_and_project_directories_and_can_be_turned_off() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        write_skill(&repo.path().join(".github/skills"), "lint", "Lints");
        let extra = tempfile::tempdir().unwrap();
        write_skill(extra.path(), "deploy", "Deploys");
        let params = SessionConfigParams {
            skill_directories: Some(vec![extra.path().to_string_lossy().into()]),
            disabled_skills: Some(vec!["lint".into()]),
            ..Default::default()
        };
        let only_configured = SkillSet::from_params(&params).reload(None, home.path());
        assert_eq!(only_configured.list().len(), 1, "project skills only with config discovery");
        let mut set = SkillSet::from_params(&params).reload(Some(repo.path()), home.path());
        let mut names: Vec<(String, bool)> = set.list().into_iter().map(|s| (s.name, s.enabled)).collect();
        names.sort();
        assert_eq!(names, [("deploy".to_string(), true), ("lint".to_string(), false)]);
        assert!(set.enabled("lint").is_none());
        assert!(set.set_enabled("lint", true) && set.enabled("lint").is_some());
        assert!(!set.set_enabled("nope", true));

        std::fs::write(home.path().join("settings.json"), r#"{"disabledSkills": ["deploy"]}"#).unwrap();
        let user_off = SkillSet::from_params(&params).reload(Some(repo.path()), home.path());
        assert!(user_off.enabled("deploy").is_none(), "the user's disabledSkills apply to the session");
        assert!(user_off.enabled("lint").is_none(), "the session's own still apply");
        std::fs::write(home.path().join("config.json"), r#"{"disabledSkills": []}"#).unwrap();
        let legacy_wins = SkillSet::from_params(&params).reload(Some(repo.path()), home.path());
        assert!(legacy_wins.enabled("deploy").is_some(), "config.json's setting wins over settings.json's");

        let deploy = set.enabled("deploy").unwrap();
        assert_eq!(deploy.source, SkillSource::Custom);
        let text = context_message(deploy);
        let expected = format!(
            "<skill-context name=\"deploy\">\nBase directory for this skill: {}\n\n# Steps\n\nDo deploy.\n\n</skill-context>",
            extra.path().join("deploy").display()
        );
        assert_eq!(text, expected);
    }
}
