//! Session services a host may initialize or query: LSP, telemetry overrides, tool validation,
//! instruction sources, usage metrics, and the context window's make-up (by source and by
//! heaviest message). Gated features answer with the original's errors.

use protocol::event::SessionEvent;
use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};

use crate::ctx::Ctx;

/// Masks the values in every event sent from now on (see [`crate::secret_filter`]).
pub async fn add_secret_filter_values(
    ctx: &Ctx,
    p: t::SecretsAddFilterValuesRequest,
) -> Result<t::SecretsAddFilterValuesResult, RpcError> {
    if ctx.server.tenancy.is_some() || !crate::secret_filter::enabled() {
        return Err(ctx.failed(
            "addFilterValues is only supported in single-tenant environments. Set an environment variable of COPILOT_ENABLE_SECRET_FILTERING=true to enable it.",
        ));
    }
    crate::secret_filter::add(p.values);
    Ok(t::SecretsAddFilterValuesResult { ok: true })
}

/// The agent registry spawns agents only in the CLI's own server mode.
pub async fn agent_registry_spawn(
    _ctx: &Ctx,
    _p: t::AgentRegistrySpawnRequest,
) -> Result<t::AgentRegistrySpawnResult, RpcError> {
    Err(RpcError::new(METHOD_NOT_FOUND, "agentRegistry.spawn is not enabled on this server"))
}

/// Attachments are pushed by extensions over their own connection; an SDK connection is not one.
pub async fn send_attachments(
    ctx: &Ctx,
    p: t::SessionExtensionsSendAttachmentsToMessageParams,
) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    let mut err = RpcError::new(
        INTERNAL_ERROR,
        "session.extensions.sendAttachmentsToMessage may only be called from an extension-owned connection.",
    );
    err.data = Some(serde_json::json!({ "code": "extension_context_requires_extension_caller" }));
    Err(err)
}

/// No language servers are configured for SDK sessions: initializing finds none to start.
pub async fn lsp_initialize(ctx: &Ctx, p: t::SessionLspInitializeParams) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Ok(())
}

/// Feature overrides tag telemetry, which this runtime does not send.
pub async fn telemetry_set_feature_overrides(
    ctx: &Ctx,
    p: t::SessionTelemetrySetFeatureOverridesParams,
) -> Result<(), RpcError> {
    ctx.session(&p.session_id)?;
    Ok(())
}

/// The session's tools are built when it starts; validating them is checking the session is live.
pub async fn tools_initialize_and_validate(
    ctx: &Ctx,
    p: t::SessionToolsInitializeAndValidateParams,
) -> Result<t::ToolsInitializeAndValidateResult, RpcError> {
    ctx.session(&p.session_id)?;
    Ok(t::ToolsInitializeAndValidateResult {})
}

/// The instruction files the session reads (the user's, the repository's, its
/// `.github/instructions`), paths as the original shows them: relative to the working directory
/// when inside it.
pub async fn instructions_get_sources(
    ctx: &Ctx,
    p: t::SessionInstructionsGetSourcesParams,
) -> Result<t::InstructionsGetSourcesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::InstructionsGetSourcesResult { sources: instruction_sources(ctx, &session).await? })
}

/// Reads the instruction files again (with the agents and skills, which share the read), for the
/// next turn; then lists them.
pub async fn instructions_reload(
    ctx: &Ctx,
    p: t::SessionInstructionsReloadParams,
) -> Result<t::InstructionsGetSourcesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    reload_files(ctx, &session).await?;
    Ok(t::InstructionsGetSourcesResult { sources: instruction_sources(ctx, &session).await? })
}

/// What a reload refreshes: instructions, skills and agents are read again; the rest is read
/// when the session starts (or, for MCP servers, restarted one by one), and says so.
pub async fn customizations_reload(
    ctx: &Ctx,
    p: t::SessionCustomizationsReloadParams,
) -> Result<t::CustomizationsReloadResult, RpcError> {
    use t::CustomizationReloadStatus as Status;
    use t::CustomizationReloadSubsystem as Sub;
    let session = ctx.session(&p.session_id)?;
    reload_files(ctx, &session).await?;
    let outcome = |subsystem, status, detail: Option<&str>| t::CustomizationReloadOutcome {
        subsystem,
        status,
        detail: detail.map(str::to_string),
    };
    let at_start = Some("Read when the session starts");
    let outcomes = vec![
        outcome(Sub::RepositoryContext, Status::Skipped, Some("Read when the working directory changes")),
        outcome(Sub::Instructions, Status::Reloaded, None),
        outcome(Sub::Plugins, Status::Skipped, at_start),
        outcome(Sub::Hooks, Status::Skipped, at_start),
        outcome(Sub::Skills, Status::Reloaded, None),
        outcome(Sub::Agents, Status::Reloaded, None),
        outcome(Sub::Mcp, Status::Skipped, Some("MCP servers are restarted with session.mcp.restartServer")),
        outcome(Sub::Extensions, Status::Skipped, Some("Extensions are not configured for this session")),
    ];
    let warnings = session.view().settings.skills.warnings.as_ref().clone();
    Ok(t::CustomizationsReloadResult { warnings, errors: Vec::new(), outcomes })
}

async fn reload_files(ctx: &Ctx, session: &loop_engine::SessionHandle) -> Result<(), RpcError> {
    session.agents(loop_engine::agent_control::AgentOp::Reload).await.map_err(|e| ctx.engine_error(&e))?;
    Ok(())
}

async fn instruction_sources(
    ctx: &Ctx,
    session: &loop_engine::SessionHandle,
) -> Result<Vec<t::InstructionSource>, RpcError> {
    let view = session.view();
    if view.settings.skip_custom_instructions {
        return Ok(Vec::new());
    }
    let (cwd, home) = (view.settings.cwd.clone(), view.settings.config.home.clone());
    let found = ctx
        .blocking(move || {
            let mut found = agent_config::instructions::discover(std::slice::from_ref(&cwd), Some(&home));
            for s in &mut found {
                s.project_path = None;
                if let Ok(rel) = std::path::Path::new(&s.source_path).strip_prefix(&cwd) {
                    s.source_path = rel.to_string_lossy().into_owned();
                }
            }
            found
        })
        .await?;
    Ok(found)
}

/// Totals over the session's persisted log.
pub async fn usage_get_metrics(
    ctx: &Ctx,
    p: t::SessionUsageGetMetricsParams,
) -> Result<t::UsageGetMetricsResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(ctx.server.engine.usage_metrics(&session).await)
}

// Context window --------------------------------------------------------------------------------

/// One message in the model's context, as the log holds it.
struct ContextMessage {
    id: String,
    role: &'static str,
    label: String,
    tokens: u64,
}

/// A rough token count (four characters a token), the same measure for every entry.
fn tokens_of(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

async fn context_messages(ctx: &Ctx, id: &str) -> Vec<ContextMessage> {
    let events = ctx.server.engine.messages(id).await.unwrap_or_default();
    let mut out = Vec::new();
    for e in events {
        let (role, label, text) = match &e.payload {
            SessionEvent::UserMessage(d) => ("user", "user message".to_string(), d.content.clone()),
            SessionEvent::AssistantMessage(d) => {
                let calls = serde_json::to_string(&d.tool_requests).unwrap_or_default();
                ("assistant", "assistant message".to_string(), format!("{}{calls}", d.content))
            }
            SessionEvent::ToolExecutionComplete(d) => {
                let result = serde_json::to_string(&d.result).unwrap_or_default();
                ("tool", format!("tool: {}", d.tool_call_id), result)
            }
            SessionEvent::SystemMessage(d) => ("system", "system prompt".to_string(), d.content.clone()),
            // A compaction replaces what came before with its summary.
            SessionEvent::SessionCompactionComplete(_) => {
                out.clear();
                continue;
            }
            _ => continue,
        };
        out.push(ContextMessage { id: e.id, role, label, tokens: tokens_of(&text) });
    }
    out
}

/// Tokens of the system prompt, and of the conversation after it.
fn split_system(messages: &[ContextMessage]) -> (u64, u64) {
    messages.iter().fold((0, 0), |(s, c), m| if m.role == "system" { (s + m.tokens, c) } else { (s, c + m.tokens) })
}

/// Tokens of the tool definitions the model is offered.
fn tool_tokens(ctx: &Ctx, session: &loop_engine::SessionHandle) -> u64 {
    ctx.server
        .engine
        .session_tools(session)
        .iter()
        .map(|t| tokens_of(&serde_json::to_string(t).unwrap_or_default()))
        .sum()
}

struct Window {
    model: String,
    limit: u64,
}

async fn window(ctx: &Ctx, session: &loop_engine::SessionHandle) -> Window {
    let model = session.view().settings.model.clone();
    let models = ctx.server.engine.session_models(session).await.unwrap_or_default();
    let limit = models.iter().find(|m| m.id == model).and_then(|m| m.context_window()).unwrap_or(128_000);
    Window { model, limit }
}

pub async fn context_info(
    ctx: &Ctx,
    p: t::SessionMetadataContextInfoParams,
) -> Result<t::MetadataContextInfoResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let messages = context_messages(ctx, &p.session_id).await;
    if messages.is_empty() {
        return Ok(t::MetadataContextInfoResult { context_info: None });
    }
    let w = window(ctx, &session).await;
    let (system, conversation) = split_system(&messages);
    let tools = tool_tokens(ctx, &session);
    // The host says what its prompt may hold; the window is at least that.
    let prompt = p.prompt_token_limit;
    let limit = w.limit.max(prompt);
    Ok(t::MetadataContextInfoResult {
        context_info: Some(t::SessionContextInfo {
            model_name: p.selected_model.unwrap_or(w.model),
            system_tokens: system,
            conversation_tokens: conversation,
            tool_definitions_tokens: tools,
            mcp_tools_tokens: 0,
            total_tokens: system + conversation + tools,
            prompt_token_limit: prompt,
            compaction_threshold: prompt * 4 / 5,
            limit,
            buffer_tokens: prompt / 5,
        }),
    })
}

/// Counts the context again from the log: the system prompt, and the messages after it (the
/// tool definitions are not part of this count, as in the original).
pub async fn recompute_context_tokens(
    ctx: &Ctx,
    p: t::SessionMetadataRecomputeContextTokensParams,
) -> Result<t::MetadataRecomputeContextTokensResult, RpcError> {
    ctx.session(&p.session_id)?;
    let messages = context_messages(ctx, &p.session_id).await;
    let (system, conversation) = split_system(&messages);
    Ok(t::MetadataRecomputeContextTokensResult {
        total_tokens: system + conversation,
        messages_token_count: conversation,
        system_token_count: system,
    })
}

pub async fn context_attribution(
    ctx: &Ctx,
    p: t::SessionMetadataGetContextAttributionParams,
) -> Result<t::MetadataContextAttributionResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let messages = context_messages(ctx, &p.session_id).await;
    if messages.is_empty() {
        return Ok(t::MetadataContextAttributionResult { context_attribution: None });
    }
    let w = window(ctx, &session).await;
    let (system, conversation) = split_system(&messages);
    let tools = tool_tokens(ctx, &session);
    let total = system + conversation + tools;
    let entries = messages
        .into_iter()
        .map(|m| t::SessionContextAttributionEntries {
            kind: if m.role == "system" { "system_prompt".into() } else { "message".into() },
            id: m.id,
            label: m.label,
            tokens: m.tokens,
            parent_id: None,
            // The SDKs' tests iterate `attributes` as a list while the schema makes it a map:
            // left out, as nothing here needs it.
            attributes: None,
        })
        .collect();
    let buffer = w.limit / 5;
    Ok(t::MetadataContextAttributionResult {
        context_attribution: Some(t::SessionContextAttribution {
            total_tokens: total,
            model_id: w.model,
            model_source: "session".into(),
            prompt_token_limit: w.limit,
            limit: w.limit,
            buffer_tokens: buffer,
            compaction_threshold: w.limit - buffer,
            categories: t::SessionContextAttributionCategories {
                system_prompt: system,
                custom_instructions: 0,
                system_tools: tools,
                mcp_tools: 0,
                messages: conversation,
                free_space: w.limit.saturating_sub(total + buffer),
                buffer,
            },
            entries,
            compactions: t::SessionContextAttributionCompactions { count: 0 },
        }),
    })
}

pub async fn context_heaviest_messages(
    ctx: &Ctx,
    p: t::SessionMetadataGetContextHeaviestMessagesParams,
) -> Result<t::MetadataContextHeaviestMessagesResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let mut messages = context_messages(ctx, &p.session_id).await;
    // The whole window, as `getContextAttribution` measures it.
    let total_tokens = match messages.is_empty() {
        true => 0,
        false => messages.iter().map(|m| m.tokens).sum::<u64>() + tool_tokens(ctx, &session),
    };
    messages.sort_by_key(|m| std::cmp::Reverse(m.tokens));
    let limit = usize::try_from(p.limit.unwrap_or(10)).unwrap_or(usize::MAX);
    let messages = messages
        .into_iter()
        .take(limit)
        .map(|m| t::ContextHeaviestMessage { id: m.id, label: m.label, role: m.role.to_string(), tokens: m.tokens })
        .collect();
    Ok(t::MetadataContextHeaviestMessagesResult { total_tokens, messages })
}
