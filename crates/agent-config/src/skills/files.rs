//! Finding `SKILL.md` files.

use std::path::{Path, PathBuf};

use protocol::generated::types::SkillSource;
use serde::Deserialize;

use super::SkillDef;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Header {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools", alias = "allowedTools")]
    allowed_tools: Option<Tools>,
    #[serde(rename = "user-invocable", alias = "userInvocable")]
    user_invocable: Option<bool>,
}

/// `allowed-tools: [a, b]` or `allowed-tools: "a b"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tools {
    List(Vec<String>),
    Text(String),
}

pub(super) const PROJECT_DIRS: &[&str] = &[".github/skills", ".claude/skills", ".agents/skills"];

/// The directories skills are read from, in priority order.
fn roots(project: Option<&Path>, home: Option<&Path>, configured: &[PathBuf]) -> Vec<(PathBuf, SkillSource)> {
    let mut out = Vec::new();
    for (i, dir) in project.into_iter().flat_map(Path::ancestors).enumerate() {
        let source = if i == 0 { SkillSource::Project } else { SkillSource::Inherited };
        out.extend(PROJECT_DIRS.iter().map(|d| (dir.join(d), source)));
        if dir.join(".git").exists() {
            break;
        }
    }
    out.extend(configured.iter().map(|d| (d.clone(), SkillSource::Custom)));
    out.extend(home.map(|h| (h.join("skills"), SkillSource::PersonalCopilot)));
    out
}

/// Every skill (the first of a name wins) and a warning for each file that could not be read.
/// `home`: `None` leaves the user's skills out.
pub(super) fn discover(
    project: Option<&Path>,
    home: Option<&Path>,
    configured: &[PathBuf],
) -> (Vec<SkillDef>, Vec<String>) {
    let mut skills: Vec<SkillDef> = Vec::new();
    let mut warnings = Vec::new();
    for (root, source) in roots(project, home, configured) {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join("SKILL.md");
            if !path.is_file() {
                continue;
            }
            match read(&path, source) {
                Ok(skill) if skills.iter().any(|s| s.name == skill.name) => {}
                Ok(skill) => skills.push(skill),
                Err(e) => warnings.push(format!("{}: {e}", path.display())),
            }
        }
    }
    (skills, warnings)
}

pub(super) fn read(path: &Path, source: SkillSource) -> Result<SkillDef, String> {
    let text = crate::read_scope::read_to_string(path).map_err(|e| e.to_string())?;
    let (h, body) = crate::frontmatter::split::<Header>(&text)?;
    let dir_name = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    let name = h.name.or(dir_name).ok_or("the skill has no name")?;
    let allowed_tools = h.allowed_tools.map(|t| match t {
        Tools::List(l) => l,
        Tools::Text(t) => t.split([',', ' ']).filter(|s| !s.is_empty()).map(str::to_string).collect(),
    });
    Ok(SkillDef {
        name,
        description: h.description.unwrap_or_default(),
        path: path.to_path_buf(),
        body,
        source,
        allowed_tools,
        user_invocable: h.user_invocable.unwrap_or(true),
    })
}
