//! `*.agent.md` files: `$COPILOT_HOME/agents/` (the user's) and, with `enableConfigDiscovery`,
//! `.github/agents/` in the working directory and its parents up to the repository root (the
//! project's).

use std::path::{Path, PathBuf};

use protocol::generated::types::AgentInfoSource;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::AgentDef;

const SUFFIX: &str = ".agent.md";

/// The header of an agent file.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Header {
    /// Shown to people; the file name is the agent's name.
    name: Option<String>,
    #[serde(alias = "display-name")]
    display_name: Option<String>,
    description: Option<String>,
    tools: Option<Tools>,
    model: Option<String>,
    infer: Option<bool>,
    #[serde(alias = "mcp-servers")]
    mcp_servers: Option<Map<String, Value>>,
    skills: Option<Vec<String>>,
}

/// `tools: [a, b]` or `tools: "a, b"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tools {
    List(Vec<String>),
    Text(String),
}

impl Tools {
    fn names(self) -> Vec<String> {
        match self {
            Tools::List(l) => l,
            Tools::Text(t) => t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        }
    }
}

/// Where agent files are looked for, in priority order, with their source.
pub fn discovery_dirs(project: Option<&Path>, home: &Path) -> Vec<(PathBuf, AgentInfoSource)> {
    let mut dirs = vec![(home.join("agents"), AgentInfoSource::User)];
    dirs.extend(project_dirs(project));
    dirs
}

/// The project's agent directories: `.github/agents` in `project` and its parents up to the
/// repository root.
pub(super) fn project_dirs(project: Option<&Path>) -> Vec<(PathBuf, AgentInfoSource)> {
    let mut dirs = Vec::new();
    for dir in project.into_iter().flat_map(Path::ancestors) {
        dirs.push((dir.join(".github").join("agents"), AgentInfoSource::Project));
        if dir.join(".git").exists() {
            break;
        }
    }
    dirs
}

/// Every readable agent file; one that cannot be read or parsed is skipped with a warning.
pub(super) fn discover(project: Option<&Path>, home: &Path) -> Vec<AgentDef> {
    read_dirs(discovery_dirs(project, home))
}

pub(super) fn read_dirs(dirs: Vec<(PathBuf, AgentInfoSource)>) -> Vec<AgentDef> {
    let mut out = Vec::new();
    for (dir, source) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else { continue };
            let Some(stem) = file.strip_suffix(SUFFIX) else { continue };
            match read(&path, stem, source) {
                Ok(agent) => out.push(agent),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "agent file skipped"),
            }
        }
    }
    out
}

fn read(path: &Path, stem: &str, source: AgentInfoSource) -> Result<AgentDef, String> {
    let text = crate::read_scope::read_to_string(path).map_err(|e| e.to_string())?;
    let (h, body) = crate::frontmatter::split::<Header>(&text)?;
    Ok(AgentDef {
        name: stem.to_string(),
        display_name: h.display_name.or(h.name).unwrap_or_else(|| stem.to_string()),
        description: h.description.unwrap_or_default(),
        prompt: body,
        tools: h.tools.map(Tools::names),
        mcp_servers: h.mcp_servers,
        infer: h.infer.unwrap_or(true),
        model: h.model,
        skills: h.skills,
        source: Some(source),
        path: Some(path.to_path_buf()),
    })
}
