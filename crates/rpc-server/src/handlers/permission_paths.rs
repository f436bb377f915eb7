//! `session.permissions.*` beyond answering requests: configuration, allowed directories, URL
//! mode, rules, per-location approvals and folder trust (see
//! [`loop_engine::permission_settings`]).

use std::path::{Path, PathBuf};

use loop_engine::permission_settings::{normalize, SessionPermissions};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// Runs `f` on a live session's permission settings.
fn with<R>(ctx: &Ctx, id: &str, f: impl FnOnce(&mut SessionPermissions) -> R) -> Result<R, RpcError> {
    Ok(ctx.session(id)?.with_permissions(f))
}

pub async fn configure(
    ctx: &Ctx,
    p: t::SessionPermissionsConfigureParams,
) -> Result<t::PermissionsConfigureResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    if let Some(all) = p.approve_all_tool_permission_requests {
        session.set_approve_all(all).await.map_err(|e| ctx.engine_error(&e))?;
    }
    session.with_permissions(|state| {
        if let Some(paths) = p.paths {
            let primary = normalize(&paths.workspace_path.map(PathBuf::from).unwrap_or_else(|| state.primary.clone()));
            state.directories = vec![primary.clone()];
            state.primary = primary;
            for dir in paths.additional_directories.unwrap_or_default() {
                state.allow(Path::new(&dir));
            }
            if paths.include_temp_directory.unwrap_or(true) {
                state.allow(&std::env::temp_dir());
            }
            state.unrestricted_paths = paths.unrestricted.unwrap_or(false);
        }
        if let Some(urls) = p.urls {
            state.unrestricted_urls = urls.unrestricted.unwrap_or(false);
            state.allowed_urls = urls.initial_allowed.unwrap_or_default();
        }
        if let Some(rules) = p.rules {
            state.approved = rules.approved;
            state.denied = rules.denied;
        }
        if let Some(reads) = p.approve_all_read_permission_requests {
            state.approve_all_reads = reads;
        }
    });
    Ok(t::PermissionsConfigureResult { success: true })
}

/// Forgets the session's "for the session" approvals (and, when asked, its location rules).
pub async fn reset_session_approvals(
    ctx: &Ctx,
    p: t::SessionPermissionsResetSessionApprovalsParams,
) -> Result<t::PermissionsResetSessionApprovalsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    session.reset_approvals().await.map_err(|e| ctx.engine_error(&e))?;
    with(ctx, &p.session_id, |s| s.approved.clear())?;
    Ok(t::PermissionsResetSessionApprovalsResult { success: true })
}

pub async fn set_required(
    ctx: &Ctx,
    p: t::SessionPermissionsSetRequiredParams,
) -> Result<t::PermissionsSetRequiredResult, RpcError> {
    with(ctx, &p.session_id, |s| s.required = p.required)?;
    Ok(t::PermissionsSetRequiredResult { success: true })
}

/// A host showing its own prompt: nothing to change here, the session must exist.
pub async fn notify_prompt_shown(
    ctx: &Ctx,
    p: t::SessionPermissionsNotifyPromptShownParams,
) -> Result<t::PermissionsNotifyPromptShownResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::PermissionsNotifyPromptShownResult { success: true })
}

pub async fn modify_rules(
    ctx: &Ctx,
    p: t::SessionPermissionsModifyRulesParams,
) -> Result<t::PermissionsModifyRulesResult, RpcError> {
    let add = p.add.unwrap_or_default();
    let remove = p.remove.unwrap_or_default();
    match p.scope {
        t::PermissionsModifyRulesScope::Session => with(ctx, &p.session_id, |s| {
            if p.remove_all == Some(true) {
                s.approved.clear();
            }
            s.approved.retain(|r| !remove.contains(r));
            for rule in add {
                if !s.approved.contains(&rule) {
                    s.approved.push(rule);
                }
            }
        })?,
        t::PermissionsModifyRulesScope::Location => {
            let session = ctx.session(&p.session_id)?;
            let (_, key) = location_of(&session.view().settings.cwd);
            ctx.permissions().add_location_rules(&key, add);
        }
    }
    Ok(t::PermissionsModifyRulesResult { success: true })
}

pub async fn urls_set_unrestricted(
    ctx: &Ctx,
    p: t::SessionPermissionsUrlsSetUnrestrictedModeParams,
) -> Result<t::PermissionsUrlsSetUnrestrictedModeResult, RpcError> {
    with(ctx, &p.session_id, |s| s.unrestricted_urls = p.enabled)?;
    Ok(t::PermissionsUrlsSetUnrestrictedModeResult { success: true })
}

fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub async fn paths_list(
    ctx: &Ctx,
    p: t::SessionPermissionsPathsListParams,
) -> Result<t::PermissionPathsList, RpcError> {
    let (primary, directories) =
        with(ctx, &p.session_id, |s| (text(&s.primary), s.directories.iter().map(|d| text(d)).collect()))?;
    Ok(t::PermissionPathsList { directories, primary })
}

pub async fn paths_add(
    ctx: &Ctx,
    p: t::SessionPermissionsPathsAddParams,
) -> Result<t::PermissionsPathsAddResult, RpcError> {
    with(ctx, &p.session_id, |s| s.allow(Path::new(&p.path)))?;
    Ok(t::PermissionsPathsAddResult { success: true })
}

pub async fn paths_update_primary(
    ctx: &Ctx,
    p: t::SessionPermissionsPathsUpdatePrimaryParams,
) -> Result<t::PermissionsPathsUpdatePrimaryResult, RpcError> {
    with(ctx, &p.session_id, |s| s.set_primary(Path::new(&p.path)))?;
    Ok(t::PermissionsPathsUpdatePrimaryResult { success: true })
}

pub async fn paths_within_allowed(
    ctx: &Ctx,
    p: t::SessionPermissionsPathsIsPathWithinAllowedDirectoriesParams,
) -> Result<t::PermissionPathsAllowedCheckResult, RpcError> {
    let allowed = with(ctx, &p.session_id, |s| s.within_allowed(Path::new(&p.path)))?;
    Ok(t::PermissionPathsAllowedCheckResult { allowed })
}

pub async fn paths_within_workspace(
    ctx: &Ctx,
    p: t::SessionPermissionsPathsIsPathWithinWorkspaceParams,
) -> Result<t::PermissionPathsWorkspaceCheckResult, RpcError> {
    let allowed = with(ctx, &p.session_id, |s| s.within_workspace(Path::new(&p.path)))?;
    Ok(t::PermissionPathsWorkspaceCheckResult { allowed })
}

// Locations and trust ----------------------------------------------------------------------------

/// Approvals are remembered per repository (its root) or, outside one, per directory.
fn location_of(dir: &Path) -> (t::PermissionLocationType, String) {
    let dir = normalize(dir);
    match dir.ancestors().find(|a| a.join(".git").exists()) {
        Some(root) => (t::PermissionLocationType::Repo, text(root)),
        None => (t::PermissionLocationType::Dir, text(&dir)),
    }
}

pub async fn locations_resolve(
    ctx: &Ctx,
    p: t::SessionPermissionsLocationsResolveParams,
) -> Result<t::PermissionLocationResolveResult, RpcError> {
    ctx.session(&p.session_id)?;
    let dir = ctx.request_path("workingDirectory", &p.working_directory)?;
    let (location_type, location_key) = location_of(&dir);
    Ok(t::PermissionLocationResolveResult { location_key, location_type })
}

/// The rules an approval stands for, in the shape `permissions.locations.apply` reports.
fn rules_of(approval: t::PermissionsLocationsAddToolApprovalDetails) -> Vec<t::PermissionRule> {
    use t::PermissionsLocationsAddToolApprovalDetails as A;
    let rule = |kind: &str, argument: Option<String>| t::PermissionRule { kind: kind.into(), argument };
    match approval {
        A::Commands(c) => c.command_identifiers.into_iter().map(|id| rule("shell", Some(id))).collect(),
        A::Read => vec![rule("read", None)],
        A::Write => vec![rule("write", None)],
        A::Memory => vec![rule("memory", None)],
        A::Mcp(m) => vec![rule(
            "mcp",
            Some(match m.tool_name {
                Some(tool) => format!("{}({tool})", m.server_name),
                None => m.server_name,
            }),
        )],
        A::McpSampling(m) => vec![rule("mcp-sampling", Some(m.server_name))],
        A::CustomTool(c) => vec![rule("custom-tool", Some(c.tool_name))],
        other => vec![rule(other_kind(&other), None)],
    }
}

fn other_kind(a: &t::PermissionsLocationsAddToolApprovalDetails) -> &'static str {
    match serde_json::to_value(a)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
        .as_deref()
    {
        Some("extension-management") => "extension-management",
        Some("factory") => "factory",
        _ => "other",
    }
}

pub async fn locations_add_tool_approval(
    ctx: &Ctx,
    p: t::SessionPermissionsLocationsAddToolApprovalParams,
) -> Result<t::PermissionsLocationsAddToolApprovalResult, RpcError> {
    ctx.session(&p.session_id)?;
    ctx.permissions().add_location_rules(&p.location_key, rules_of(p.approval));
    Ok(t::PermissionsLocationsAddToolApprovalResult { success: true })
}

/// Applies a location's stored approvals to the session (its approved rules).
pub async fn locations_apply(
    ctx: &Ctx,
    p: t::SessionPermissionsLocationsApplyParams,
) -> Result<t::PermissionLocationApplyResult, RpcError> {
    let dir = ctx.request_path("workingDirectory", &p.working_directory)?;
    let (location_type, location_key) = location_of(&dir);
    let rules = ctx.permissions().location_rules(&location_key);
    let changed = with(ctx, &p.session_id, |s| {
        let before = s.approved.len();
        for rule in &rules {
            if !s.approved.contains(rule) {
                s.approved.push(rule.clone());
            }
        }
        s.approved.len() != before
    })?;
    Ok(t::PermissionLocationApplyResult {
        location_key,
        location_type,
        changed,
        applied_rule_count: rules.len() as u64,
        applied_directory_count: 0,
        applied_rules: rules,
    })
}

pub async fn folder_trust_is_trusted(
    ctx: &Ctx,
    p: t::SessionPermissionsFolderTrustIsTrustedParams,
) -> Result<t::FolderTrustCheckResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::FolderTrustCheckResult { trusted: ctx.permissions().is_trusted(Path::new(&p.path)) })
}

pub async fn folder_trust_add(
    ctx: &Ctx,
    p: t::SessionPermissionsFolderTrustAddTrustedParams,
) -> Result<t::PermissionsFolderTrustAddTrustedResult, RpcError> {
    ctx.session(&p.session_id)?;
    ctx.permissions().trust(Path::new(&p.path));
    Ok(t::PermissionsFolderTrustAddTrustedResult { success: true })
}
