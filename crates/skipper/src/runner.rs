//! The headless runner: `skipper -p "<task>" [--autopilot] [--allow-all-tools]` drives one
//! session in-process — the same engine the JSON-RPC server uses — prints progress, and exits
//! with a status a CI job can act on.

use std::io::Write;
use std::sync::Arc;

use loop_engine::{Engine, EventSubscriber, NameOp, QueuedMessage, SessionHandle};
use protocol::event::{Event, SessionEvent};
use protocol::generated::types as t;
use protocol::methods::SessionConfigParams;
use tokio::sync::mpsc;

pub struct RunOptions {
    pub prompt: String,
    pub autopilot: bool,
    pub json: bool,
    /// Only the final answer on stdout; progress on stderr.
    pub silent: bool,
    pub model: Option<String>,
    pub cwd: String,
    /// `--allow-tool`, `--deny-tool`, `--add-dir`, `--allow-url` and the like.
    pub permissions: crate::run_permissions::RunPermissions,
    /// `--available-tools`: only these are offered to the model.
    pub available_tools: Option<Vec<String>>,
    /// `--excluded-tools`: these are not.
    pub excluded_tools: Vec<String>,
    pub max_autopilot_continues: Option<u32>,
    pub reasoning_effort: Option<String>,
    pub no_custom_instructions: bool,
    /// A new session (with the id and name given) or the one `--resume` and the like found.
    pub session: crate::run_session::Chosen,
    /// `--agent`: the custom agent that runs the task.
    pub agent: Option<String>,
    /// `--plan` / `--mode plan`.
    pub plan: bool,
    /// `--additional-mcp-config`, `--disable-mcp-server`, `--enable-mcp-server`.
    pub mcp: crate::run_mcp::RunServers,
    /// `--enable-all-github-mcp-tools`, `--add-github-mcp-toolset`, `--add-github-mcp-tool`.
    pub github_mcp: Option<t::GitHubMcpToolConfig>,
    pub plugin_dirs: Vec<String>,
    pub attachments: Vec<t::Attachment>,
    /// `--stream off`: whole messages only (no deltas in `--output-format json`).
    pub streaming: bool,
    pub max_ai_credits: Option<f64>,
    /// `--share`: where the session's Markdown goes.
    pub share: Option<std::path::PathBuf>,
    pub usage_output_file: Option<std::path::PathBuf>,
}

/// Exit codes: 0 done (also when autopilot ran out of continuations), 1 the run failed (a
/// model error), 130 interrupted.
pub async fn run(engine: Arc<Engine>, opts: RunOptions) -> anyhow::Result<i32> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The catalogue read the first model call waits for goes out while the session is made;
    // the yield lets it start (its connection) before that.
    engine.warm_up_model();
    tokio::task::yield_now().await;
    let session = match open_checked(&engine, &opts, Arc::new(Forward(tx))).await {
        Ok(session) => session,
        Err(refused) => {
            eprintln!("{refused}");
            return Ok(1);
        }
    };
    // The first turn starts the session's MCP servers and waits for them; started now, their
    // connections overlap the rest of the run's setup (the task is sent at once anyway).
    session.mcp().start_deferred();
    session.with_permissions(|p| opts.permissions.apply(p));
    if opts.max_autopilot_continues.is_some() || opts.no_custom_instructions {
        let patch = loop_engine::OptionsPatch {
            autopilot_max_continues: opts.max_autopilot_continues,
            skip_custom_instructions: opts.no_custom_instructions.then_some(true),
            ..Default::default()
        };
        session.update_options(patch).await?;
    }
    let mode = match (opts.plan, opts.autopilot) {
        (_, true) => t::UserMessageAgentMode::Autopilot,
        (true, false) => t::UserMessageAgentMode::Plan,
        (false, false) => t::UserMessageAgentMode::Interactive,
    };
    let prompt = match opts.plan {
        true => format!("{}{}", plan_notice(&session, opts.autopilot), opts.prompt),
        false => opts.prompt.clone(),
    };
    let task =
        QueuedMessage { prompt, attachments: opts.attachments.clone(), agent_mode: Some(mode), ..Default::default() };
    session.send(task, false).await?;
    let mut failed = false;
    let mut interrupted = false;
    let mut out = std::io::stdout().lock();
    let mut answer: Option<String> = None;
    let mut summary = crate::run_summary::RunSummary::start();
    loop {
        let (event, json) = tokio::select! {
            e = rx.recv() => match e { Some(e) => e, None => break },
            _ = tokio::signal::ctrl_c() => {
                interrupted = true;
                let _ = session.abort(t::AbortReason::UserAbort).await;
                continue;
            }
        };
        summary.count(&event.payload);
        if let SessionEvent::SessionError(d) = &event.payload {
            // Stdout stays the answer; the failure is the original's line on stderr.
            eprintln!("Execution failed: {}", d.message);
        }
        if opts.json {
            if in_json_stream(event.payload.kind()) {
                writeln!(out, "{json}")?;
            }
        } else if opts.silent {
            match &event.payload {
                SessionEvent::AssistantMessage(d) if !d.content.trim().is_empty() => {
                    answer = Some(d.content.trim_end().to_string());
                }
                _ => print_readable(&mut std::io::stderr().lock(), &event)?,
            }
        } else {
            print_readable(&mut out, &event)?;
        }
        match &event.payload {
            SessionEvent::SessionError(_) => failed = true,
            // Out of continuations is not a failure: the original exits 0.
            SessionEvent::SessionAutopilotStopped(d) => {
                failed |= !matches!(d.reason.as_str(), "task_complete" | "max_continues")
            }
            SessionEvent::SessionIdle(_) => break,
            _ => {}
        }
    }
    if let Some(answer) = answer {
        writeln!(out, "{answer}")?;
    }
    let code = if interrupted {
        130
    } else if failed {
        1
    } else {
        0
    };
    // Read from the log once, for the result line and the usage file alike.
    let usage = match opts.json || opts.usage_output_file.is_some() {
        true => Some(engine.usage_metrics(&session).await),
        false => None,
    };
    if let (true, Some(usage)) = (opts.json, &usage) {
        // The last line, as the original's: what tools grade a run by.
        writeln!(out, "{}", summary.result(session.id(), code, &usage.code_changes))?;
    } else if !opts.silent {
        eprintln!("{}", summary.line());
    }
    out.flush()?;
    drop(out);
    let code = match write_reports(&engine, &session, &opts, usage.as_ref()).await {
        Ok(()) => code,
        Err(e) => {
            eprintln!("{e:#}");
            code.max(1)
        }
    };
    engine.detach(session.id(), RUNNER_SUBSCRIBER).await;
    engine.flush_index().await;
    if !opts.silent {
        eprintln!("Resume: skipper --resume={} (events in {})", session.id(), session.workspace_path().display());
    }
    Ok(code)
}

/// The session's base options: what a new session is created with, and what a resumed one is
/// given again (its model, tools and servers are the run's).
fn session_params(opts: &RunOptions) -> SessionConfigParams {
    SessionConfigParams {
        model: opts.model.clone(),
        working_directory: Some(opts.cwd.clone()),
        client_name: Some("skipper-runner".into()),
        // The working directory's agents, skills and instruction files count, as in the
        // original's prompt mode.
        enable_config_discovery: Some(true),
        // Nobody can answer a prompt here: without --allow-all-tools, tools that need
        // approval are denied, as in the original's non-interactive mode.
        request_permission: Some(false),
        available_tools: opts.available_tools.clone(),
        excluded_tools: (!opts.excluded_tools.is_empty()).then(|| opts.excluded_tools.clone()),
        reasoning_effort: opts.reasoning_effort.clone(),
        streaming: Some(opts.streaming),
        mcp_servers: opts.mcp.servers.clone(),
        disabled_mcp_servers: (!opts.mcp.disabled.is_empty()).then(|| opts.mcp.disabled.clone()),
        plugin_directories: (!opts.plugin_dirs.is_empty()).then(|| opts.plugin_dirs.clone()),
        github_mcp_tool_config: opts.github_mcp.clone(),
        session_limits: opts.max_ai_credits.map(|max| t::SessionLimitsConfig { max_ai_credits: Some(max) }),
        ..Default::default()
    }
}

/// Creates or resumes the run's session, named and with its agent selected. `Err` is the
/// message for stderr; a session made here for a run that cannot start is removed again.
async fn open_session(
    engine: &Engine,
    opts: &RunOptions,
    subscriber: Arc<dyn EventSubscriber>,
) -> Result<SessionHandle, String> {
    let mut params = session_params(opts);
    let (session, name, created) = match &opts.session {
        crate::run_session::Chosen::New { id, name } => {
            params.session_id = id.clone();
            let session = engine.create(&params, Some(subscriber)).await.map_err(|e| format!("Error: {e}"))?;
            (session, name.clone(), true)
        }
        crate::run_session::Chosen::Existing(id) => {
            params.session_id = Some(id.clone());
            let session = engine.resume(&params, Some(subscriber)).await.map_err(|e| format!("Error: {e}"))?;
            (session, None, false)
        }
    };
    let prepared = async {
        if let Some(name) = name {
            session.name(NameOp::Set(name)).await.map_err(|e| format!("Error: {e}"))?;
        }
        if let Some(agent) = &opts.agent {
            let select = loop_engine::agent_control::AgentOp::Select(agent.clone());
            if session.agents(select).await.is_err() {
                let view = session.view();
                let names: Vec<&str> = view.settings.agents.all().iter().map(|a| a.name.as_str()).collect();
                return Err(format!("No such agent: {agent}, available: {}", names.join(", ")));
            }
        }
        Ok(())
    };
    match prepared.await {
        Ok(()) => Ok(session),
        Err(refused) => {
            if created {
                let _ = engine.delete(session.id()).await;
            }
            Err(refused)
        }
    }
}

/// The run's session, once `--model` has passed the catalogue. A new session is made while the
/// catalogue is read, and removed again when the model is refused; an existing one is resumed
/// only after the check (resuming writes to its log).
async fn open_checked(
    engine: &Engine,
    opts: &RunOptions,
    subscriber: Arc<dyn EventSubscriber>,
) -> Result<SessionHandle, String> {
    if !matches!(opts.session, crate::run_session::Chosen::New { .. }) {
        check_model(engine, opts).await?;
        return open_session(engine, opts, subscriber).await;
    }
    let (checked, opened) = tokio::join!(check_model(engine, opts), open_session(engine, opts, subscriber));
    let session = opened?;
    if let Err(refused) = checked {
        let _ = engine.delete(session.id()).await;
        return Err(refused);
    }
    Ok(session)
}

/// `--model` and `--reasoning-effort` against the catalogue, before any model call. A
/// catalogue that cannot be read leaves the question to the first model call.
async fn check_model(engine: &Engine, opts: &RunOptions) -> Result<(), String> {
    let Some(model) = &opts.model else { return Ok(()) };
    if model == "auto" {
        return Ok(());
    }
    let Ok(models) = engine.list_models().await else { return Ok(()) };
    if models.is_empty() {
        return Ok(());
    }
    let Some(info) = models.iter().find(|m| &m.id == model) else {
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        return Err(format!("Error: Model \"{model}\" is not available. Available models: {}", ids.join(", ")));
    };
    let Some(effort) = &opts.reasoning_effort else { return Ok(()) };
    // A model that declares its efforts is held to them; one that declares none (a provider's
    // models) is sent the effort as asked.
    let declared = info
        .supported_reasoning_efforts
        .as_ref()
        .or_else(|| info.capabilities.pointer("/supports/reasoning_effort"))
        .and_then(|v| v.as_array());
    match declared {
        Some(efforts) if !efforts.iter().any(|e| e.as_str() == Some(effort.as_str())) => {
            let names: Vec<&str> = efforts.iter().filter_map(|e| e.as_str()).collect();
            Err(format!(
                "Error: Model \"{model}\" does not support reasoning effort \"{effort}\" (it supports: {}).",
                names.join(", ")
            ))
        }
        _ => Ok(()),
    }
}

/// `--plan`: the model is asked for a plan in the session's `plan.md` rather than changes
/// (with `--autopilot`: a plan first, then the work).
fn plan_notice(session: &SessionHandle, then_implement: bool) -> String {
    let plan = session.workspace_path().join("plan.md");
    let after = if then_implement {
        "Then carry the plan out, step by step, and call task_complete when it is done."
    } else {
        "Do not change any other file: this request asks for a plan only. End with a short summary of the plan."
    };
    format!(
        "<reminder>\nPlan mode. Study what the request needs, then write a plan to {} (the problem, the \
         approach, the steps in order, open questions) with the create or edit tool. {after}\n</reminder>\n\n",
        plan.display()
    )
}

/// `--share` and `--usage-output-file`, once the run is over; `usage`: the session's usage
/// metrics, read when a usage file is asked for.
async fn write_reports(
    engine: &Engine,
    session: &SessionHandle,
    opts: &RunOptions,
    usage: Option<&t::UsageGetMetricsResult>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    if let Some(path) = &opts.share {
        let events = engine.messages(session.id()).await.unwrap_or_default();
        let path = match path.as_os_str().is_empty() {
            true => std::path::Path::new(&opts.cwd).join(crate::run_share::default_file_name(session.id())),
            false => std::path::Path::new(&opts.cwd).join(path),
        };
        std::fs::write(&path, crate::run_share::render(session.id(), &events))
            .with_context(|| format!("writing the session to {}", path.display()))?;
        eprintln!("Session exported to: {}", path.display());
    }
    if let (Some(path), Some(usage)) = (&opts.usage_output_file, usage) {
        let path = std::path::Path::new(&opts.cwd).join(path);
        let json = serde_json::to_string_pretty(usage)?;
        std::fs::write(&path, json + "\n").with_context(|| format!("writing the usage to {}", path.display()))?;
    }
    Ok(())
}

const RUNNER_SUBSCRIBER: u64 = 0;

struct Forward(mpsc::UnboundedSender<(Event, String)>);

impl EventSubscriber for Forward {
    fn subscriber_id(&self) -> u64 {
        RUNNER_SUBSCRIBER
    }
    fn deliver(&self, _session_id: &str, event: &Event, json: &str) -> bool {
        self.0.send((event.clone(), json.to_string())).is_ok()
    }
}

/// Events `--output-format json` leaves out, as the original 1.0.102 does (seen against the fake
/// model): the session's bookkeeping and the model's raw accounting. The run's figures are the
/// `result` line; the end of the work is `assistant.idle`.
const NOT_STREAMED: &[&str] = &[
    "session.start",
    "session.resume",
    "system.message",
    "pending_messages.modified",
    "session.title_changed",
    "session.usage_info",
    "assistant.usage",
    "assistant.streaming_delta",
    "session.idle",
];

fn in_json_stream(kind: &str) -> bool {
    !NOT_STREAMED.contains(&kind)
}

fn print_readable(out: &mut impl Write, e: &Event) -> std::io::Result<()> {
    match &e.payload {
        SessionEvent::AssistantMessage(d) if !d.content.is_empty() => writeln!(out, "{}\n", d.content.trim_end()),
        SessionEvent::ToolExecutionStart(d) => {
            let args = d.arguments.as_ref().map(|a| a.to_string()).unwrap_or_default();
            let short: String = args.chars().take(120).collect();
            writeln!(out, "● {} {}", d.tool_name, short)
        }
        SessionEvent::ToolExecutionComplete(d) if !d.success => {
            let msg = d.error.as_ref().map_or("failed", |e| e.message.as_str());
            writeln!(out, "  ✗ {}", msg.lines().next().unwrap_or(""))
        }
        SessionEvent::SessionTaskComplete(d) => {
            writeln!(out, "✓ Task complete: {}", d.summary.as_deref().unwrap_or(""))
        }
        SessionEvent::Abort(_) => writeln!(out, "aborted"),
        _ => Ok(()),
    }
}
