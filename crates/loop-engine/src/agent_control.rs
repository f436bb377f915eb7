//! Changes to a session's agents and skills, applied by its actor (`session.agent.select` /
//! `deselect` / `reload`, `session.skills.enable` / `disable` / `reload`).

use protocol::generated::types::{self as t, AgentInfo};

use crate::settings::SessionSettings;
use crate::subagent::scope::ScopedEmitter;

/// A change a client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOp {
    Select(String),
    Deselect,
    /// Read agent and skill files again.
    Reload,
    EnableSkill(String),
    DisableSkill(String),
}

/// What a change gives back: the selected agent, or the agents after a reload.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentOpResult {
    Selected(Box<AgentInfo>),
    Done,
    Agents(Vec<AgentInfo>),
}

/// Applies `op`; the caller publishes the settings afterwards. Errors are the messages the
/// client sees.
pub(crate) fn apply(
    settings: &mut SessionSettings,
    op: AgentOp,
    emitter: ScopedEmitter<'_>,
) -> Result<AgentOpResult, String> {
    match op {
        AgentOp::Select(name) => {
            let agent =
                settings.agents.get(&name).cloned().ok_or_else(|| format!("Custom agent '{name}' not found"))?;
            emitter.emit(t::SubagentSelectedData {
                agent_name: agent.name.clone(),
                agent_display_name: agent.display_name.clone(),
                tools: agent.tools.clone(),
            });
            let info = agent.info(false);
            settings.selected_agent = Some(agent);
            Ok(AgentOpResult::Selected(Box::new(info)))
        }
        AgentOp::Deselect => {
            if settings.selected_agent.take().is_some() {
                emitter.emit(t::SubagentDeselectedData {});
            }
            Ok(AgentOpResult::Done)
        }
        AgentOp::Reload => {
            settings.load_files();
            Ok(AgentOpResult::Agents(settings.agents.all().iter().map(|a| a.info(false)).collect()))
        }
        AgentOp::EnableSkill(name) => toggle(settings, &name, true),
        AgentOp::DisableSkill(name) => toggle(settings, &name, false),
    }
}

fn toggle(settings: &mut SessionSettings, name: &str, enabled: bool) -> Result<AgentOpResult, String> {
    if settings.skills.set_enabled(name, enabled) {
        Ok(AgentOpResult::Done)
    } else {
        Err(format!("Skill '{name}' not found"))
    }
}
