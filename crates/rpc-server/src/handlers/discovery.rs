//! `skills.*`, `agents.*` and `instructions.*` discovery outside any session: what a client
//! would find for given project directories, and where it may create files so they are found.
//! `exclude_host_*` leaves the user's own (`$COPILOT_HOME`) out. File work runs on the blocking
//! pool.

use std::path::{Path, PathBuf};

use agent_config::{agents, instructions, skills, user_settings};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// The request's directories, relative ones against the server's directory; on a shared
/// server against the caller's tenant's workspace, and only inside it.
fn absolute(ctx: &Ctx, what: &str, paths: Option<Vec<String>>) -> Result<Vec<PathBuf>, RpcError> {
    let paths = paths.unwrap_or_default().into_iter().filter(|p| !p.trim().is_empty());
    paths.map(|p| ctx.request_path(what, &p)).collect()
}

/// `$COPILOT_HOME` unless the request leaves the host's files out.
fn home(ctx: &Ctx, exclude: Option<bool>) -> Option<PathBuf> {
    (!exclude.unwrap_or(false)).then(|| ctx.config_home())
}

fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub async fn skills_discover(ctx: &Ctx, p: t::SkillsDiscoverRequest) -> Result<t::ServerSkillList, RpcError> {
    let projects = absolute(ctx, "projectPaths", p.project_paths)?;
    let dirs = absolute(ctx, "skillDirectories", p.skill_directories)?;
    let home = home(ctx, p.exclude_host_skills);
    let config_home = ctx.config_home();
    let (found, errors, disabled) = ctx
        .blocking(move || {
            let (found, errors) = skills::discover(&projects, &dirs, home.as_deref());
            (found, errors, user_settings::names(&config_home, user_settings::DISABLED_SKILLS))
        })
        .await?;
    let disabled = disabled.map_err(|e| ctx.failed(e))?;
    let skills = found
        .into_iter()
        .map(|(s, project)| {
            let enabled = !disabled.contains(&s.name);
            let mut out = t::ServerSkill::new(s.name, s.description, s.source, s.user_invocable, enabled);
            out.path = Some(text(&s.path));
            out.project_path = project.as_deref().map(text);
            out
        })
        .collect();
    Ok(t::ServerSkillList { skills, errors: (!errors.is_empty()).then_some(errors) })
}

pub async fn skills_get_discovery_paths(
    ctx: &Ctx,
    p: t::SkillsGetDiscoveryPathsRequest,
) -> Result<t::SkillDiscoveryPathList, RpcError> {
    let paths = skills::creation_paths(
        &absolute(ctx, "projectPaths", p.project_paths)?,
        home(ctx, p.exclude_host_skills).as_deref(),
    );
    Ok(t::SkillDiscoveryPathList { paths })
}

pub async fn agents_discover(ctx: &Ctx, p: t::AgentsDiscoverRequest) -> Result<t::ServerAgentList, RpcError> {
    let projects = absolute(ctx, "projectPaths", p.project_paths)?;
    let home = home(ctx, p.exclude_host_agents);
    let found = ctx.blocking(move || agents::discover(&projects, home.as_deref())).await?;
    Ok(t::ServerAgentList { agents: found.iter().map(|a| a.info(false)).collect() })
}

pub async fn agents_get_discovery_paths(
    ctx: &Ctx,
    p: t::AgentsGetDiscoveryPathsRequest,
) -> Result<t::AgentDiscoveryPathList, RpcError> {
    let paths = agents::creation_paths(
        &absolute(ctx, "projectPaths", p.project_paths)?,
        home(ctx, p.exclude_host_agents).as_deref(),
    );
    Ok(t::AgentDiscoveryPathList { paths })
}

pub async fn instructions_discover(
    ctx: &Ctx,
    p: t::InstructionsDiscoverRequest,
) -> Result<t::ServerInstructionSourceList, RpcError> {
    let projects = absolute(ctx, "projectPaths", p.project_paths)?;
    let home = home(ctx, p.exclude_host_instructions);
    let sources = ctx.blocking(move || instructions::discover(&projects, home.as_deref())).await?;
    Ok(t::ServerInstructionSourceList { sources })
}

pub async fn instructions_get_discovery_paths(
    ctx: &Ctx,
    p: t::InstructionsGetDiscoveryPathsRequest,
) -> Result<t::InstructionDiscoveryPathList, RpcError> {
    let paths = instructions::creation_paths(
        &absolute(ctx, "projectPaths", p.project_paths)?,
        home(ctx, p.exclude_host_instructions).as_deref(),
    );
    Ok(t::InstructionDiscoveryPathList { paths })
}

/// `skills.config.setDisabledSkills`: the skills every session leaves off (`disabledSkills`
/// in `settings.json`, as the original keeps it), without duplicates.
pub async fn set_disabled_skills(ctx: &Ctx, p: t::SkillsConfigSetDisabledSkillsRequest) -> Result<(), RpcError> {
    let home = ctx.config_home();
    let changed = ctx
        .blocking(move || {
            user_settings::update_names(&home, user_settings::DISABLED_SKILLS, |list| {
                list.clear();
                for name in &p.disabled_skills {
                    user_settings::toggle(list, name, true);
                }
            })
        })
        .await?;
    changed.map_err(|e| ctx.failed(e))
}

/// `skills.config.setSkillDisabled`: one skill on or off in that list, in one update of the
/// file (two such requests at once both land).
pub async fn set_skill_disabled(ctx: &Ctx, p: t::SkillsConfigSetSkillDisabledRequest) -> Result<(), RpcError> {
    let home = ctx.config_home();
    let changed = ctx.blocking(move || skills::manage::set_user_disabled(&home, &p.name, p.disabled)).await?;
    changed.map_err(|e| ctx.failed(e))
}
