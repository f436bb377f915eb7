//! Custom agents: the session's `customAgents` and `*.agent.md` files from the project and the
//! user's directory. A client may select one for the main conversation (its prompt and tool set
//! apply from the next turn); the model may delegate to one through `task` (see `subagent`).

pub mod builtin;
mod files;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::generated::types::{AgentDiscoveryPath, AgentDiscoveryPathScope, AgentInfo, AgentInfoSource};
use protocol::methods::CustomAgentConfig;
use serde_json::{Map, Value};

pub use files::discovery_dirs;

/// One agent a session knows.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub prompt: String,
    /// Tools the agent may use; `None`: all the session offers.
    pub tools: Option<Vec<String>>,
    /// MCP servers the agent brings, as configured (started by the MCP client).
    pub mcp_servers: Option<Map<String, Value>>,
    /// The model may delegate to it by itself.
    pub infer: bool,
    pub model: Option<String>,
    pub skills: Option<Vec<String>>,
    pub source: Option<AgentInfoSource>,
    /// The file it was read from.
    pub path: Option<PathBuf>,
}

impl AgentDef {
    pub fn from_config(c: &CustomAgentConfig) -> Self {
        Self {
            name: c.name.clone(),
            display_name: c.display_name.clone().unwrap_or_else(|| c.name.clone()),
            description: c.description.clone().unwrap_or_default(),
            prompt: c.prompt.clone(),
            tools: c.tools.clone(),
            mcp_servers: c.mcp_servers.clone(),
            infer: c.infer.unwrap_or(true),
            model: c.model.clone(),
            skills: c.skills.clone(),
            source: None,
            path: None,
        }
    }

    /// A name waiting to be looked up (an `agent` named on create, before files are read).
    pub fn placeholder() -> Self {
        Self {
            name: String::new(),
            display_name: String::new(),
            description: String::new(),
            prompt: String::new(),
            tools: None,
            mcp_servers: None,
            infer: true,
            model: None,
            skills: None,
            source: None,
            path: None,
        }
    }

    /// Whether the agent may use a tool. A `*` entry allows everything.
    pub fn allows_tool(&self, tool: &str) -> bool {
        match &self.tools {
            None => true,
            Some(list) => list.iter().any(|t| t == tool || t == "*"),
        }
    }

    /// As `session.agent.*` report it; the prompt only when asked for.
    pub fn info(&self, include_prompt: bool) -> AgentInfo {
        AgentInfo {
            name: self.name.clone(),
            display_name: self.display_name.clone(),
            description: self.description.clone(),
            id: self.name.clone(),
            path: self.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
            source: self.source,
            tools: self.tools.clone(),
            model: self.model.clone(),
            mcp_servers: self.mcp_servers.clone(),
            skills: self.skills.clone(),
            prompt: include_prompt.then(|| self.prompt.clone()),
            ..Default::default()
        }
    }
}

/// Agent files outside any session (`agents.discover`): the user's unless `home` is `None`,
/// then each project's; the first of a name wins.
pub fn discover(projects: &[PathBuf], home: Option<&Path>) -> Vec<AgentDef> {
    let mut dirs: Vec<(PathBuf, AgentInfoSource)> =
        home.map(|h| (h.join("agents"), AgentInfoSource::User)).into_iter().collect();
    for p in projects {
        dirs.extend(files::project_dirs(Some(p)));
    }
    let mut out: Vec<AgentDef> = Vec::new();
    for found in files::read_dirs(dirs) {
        if !out.iter().any(|a| a.name == found.name) {
            out.push(found);
        }
    }
    out
}

/// Where agent files may be created so they are found (`agents.getDiscoveryPaths`), existing
/// or not: each project's `.github/agents`, then the user's directory.
pub fn creation_paths(projects: &[PathBuf], home: Option<&Path>) -> Vec<AgentDiscoveryPath> {
    let mut out = Vec::new();
    for p in projects {
        let mut entry = AgentDiscoveryPath::new(
            p.join(".github").join("agents").to_string_lossy().into_owned(),
            AgentDiscoveryPathScope::Project,
            true,
        );
        entry.project_path = Some(p.to_string_lossy().into_owned());
        out.push(entry);
    }
    if let Some(h) = home {
        out.push(AgentDiscoveryPath::new(
            h.join("agents").to_string_lossy().into_owned(),
            AgentDiscoveryPathScope::User,
            true,
        ));
    }
    out
}

/// The custom agents of a session, in listing order: the client's first, then files (the
/// user's directory before the project's); the first of a name wins.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    configs: Arc<Vec<CustomAgentConfig>>,
    agents: Arc<Vec<AgentDef>>,
}

impl Catalog {
    /// The client's agents only (files are read by [`Catalog::reload`]).
    pub fn from_configs(configs: Vec<CustomAgentConfig>) -> Self {
        let agents = configs.iter().map(AgentDef::from_config).collect();
        Self { configs: Arc::new(configs), agents: Arc::new(agents) }
    }

    /// Reads the agent files now: the user's (`home` is `$COPILOT_HOME`) and, given the
    /// session's directory, the project's.
    pub fn load(configs: Vec<CustomAgentConfig>, project: Option<&Path>, home: &Path) -> Self {
        let mut agents: Vec<AgentDef> = configs.iter().map(AgentDef::from_config).collect();
        for found in files::discover(project, home) {
            if !agents.iter().any(|a| a.name == found.name) {
                agents.push(found);
            }
        }
        Self { configs: Arc::new(configs), agents: Arc::new(agents) }
    }

    /// The same client agents, files read again.
    pub fn reload(&self, project: Option<&Path>, home: &Path) -> Self {
        Self::load(self.configs.as_ref().clone(), project, home)
    }

    pub fn all(&self) -> &[AgentDef] {
        &self.agents
    }

    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// The text that carries a selected agent's instructions in each user message.
pub fn instructions_block(agent: &AgentDef) -> Option<String> {
    let prompt = agent.prompt.trim();
    (!prompt.is_empty()).then(|| format!("<agent_instructions>\n{prompt}\n</agent_instructions>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str) -> CustomAgentConfig {
        CustomAgentConfig { name: name.into(), prompt: format!("You are {name}."), ..Default::default() }
    }

    #[test]
    fn client_agents_come_first_and_shadow_files_of_the_same_name() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let dir = repo.path().join(".github/agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("alpha.agent.md"), "---\ndescription: from file\n---\nFile alpha.").unwrap();
        std::fs::write(dir.join("beta.agent.md"), "---\nname: Beta Bot\ndescription: b\ntools: [view]\n---\nBe beta.")
            .unwrap();
        let without = Catalog::load(vec![config("alpha")], None, home.path());
        assert_eq!(without.all().len(), 1, "project files only with config discovery");
        let cat = Catalog::load(vec![config("alpha")], Some(repo.path()), home.path());
        let names: Vec<&str> = cat.all().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta"]);
        assert_eq!(cat.get("alpha").unwrap().prompt, "You are alpha.");
        let beta = cat.get("beta").unwrap();
        assert_eq!((beta.display_name.as_str(), beta.prompt.as_str()), ("Beta Bot", "Be beta."));
        assert_eq!(beta.source, Some(AgentInfoSource::Project));
        assert!(beta.allows_tool("view") && !beta.allows_tool("bash"));
        assert!(beta.info(false).prompt.is_none() && beta.info(true).prompt.is_some());

        std::fs::remove_file(dir.join("beta.agent.md")).unwrap();
        let names: Vec<String> =
            cat.reload(Some(repo.path()), home.path()).all().iter().map(|a| a.name.clone()).collect();
        assert_eq!(names, ["alpha"], "reload reads the files again and keeps the client's agents");
    }
}
