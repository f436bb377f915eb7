//! The headless runner: `skipper -p "<task>" [--autopilot] [--allow-all-tools]` drives one
//! session in-process — the same engine the JSON-RPC server uses — prints progress, and exits
//! with a status a CI job can act on.

use std::io::Write;
use std::sync::Arc;

use loop_engine::{Engine, EventSubscriber, QueuedMessage};
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
}

/// Exit codes: 0 done (also when autopilot ran out of continuations), 1 the run failed (a
/// model error), 130 interrupted.
pub async fn run(engine: Arc<Engine>, opts: RunOptions) -> anyhow::Result<i32> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let params = SessionConfigParams {
        model: opts.model.clone(),
        working_directory: Some(opts.cwd.clone()),
        client_name: Some("skipper-runner".into()),
        // Nobody can answer a prompt here: without --allow-all-tools, tools that need
        // approval are denied, as in the original's non-interactive mode.
        request_permission: Some(false),
        available_tools: opts.available_tools.clone(),
        excluded_tools: (!opts.excluded_tools.is_empty()).then(|| opts.excluded_tools.clone()),
        reasoning_effort: opts.reasoning_effort.clone(),
        ..Default::default()
    };
    // The catalogue read the first model call waits for goes out while the session is made;
    // the yield lets it start (its connection) before that.
    engine.warm_up_model();
    tokio::task::yield_now().await;
    let session = engine.create(&params, Some(Arc::new(Forward(tx)))).await?;
    session.with_permissions(|p| opts.permissions.apply(p));
    if opts.max_autopilot_continues.is_some() || opts.no_custom_instructions {
        let patch = loop_engine::OptionsPatch {
            autopilot_max_continues: opts.max_autopilot_continues,
            skip_custom_instructions: opts.no_custom_instructions.then_some(true),
            ..Default::default()
        };
        session.update_options(patch).await?;
    }
    let task = QueuedMessage {
        message_id: uuid::Uuid::new_v4().to_string(),
        prompt: opts.prompt.clone(),
        attachments: Vec::new(),
        agent_mode: opts.autopilot.then_some(t::UserMessageAgentMode::Autopilot),
        request_headers: Vec::new(),
        delivery: t::UserMessageDelivery::Idle,
    };
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
            writeln!(out, "{json}")?;
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
    if opts.json {
        // The last line, as the original's: what tools grade a run by.
        writeln!(out, "{}", summary.result(session.id(), code))?;
    } else if !opts.silent {
        eprintln!("{}", summary.line());
    }
    out.flush()?;
    drop(out);
    engine.detach(session.id(), RUNNER_SUBSCRIBER).await;
    engine.flush_index().await;
    eprintln!("session {} (events in {})", session.id(), session.workspace_path().display());
    Ok(code)
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
