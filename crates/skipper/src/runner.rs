//! The headless runner: `skipper -p "<task>" [--autopilot] [--allow-all-tools]` drives one
//! session in-process — the same engine the JSON-RPC server uses — prints progress, and exits
//! with a status a CI job can act on.

use std::io::Write;
use std::sync::Arc;

use loop_engine::{Engine, EventSubscriber, QueuedMessage};
use protocol::event::Event;
use protocol::methods::SessionConfigParams;
use serde_json::Value;
use tokio::sync::mpsc;

pub struct RunOptions {
    pub prompt: String,
    pub autopilot: bool,
    pub json: bool,
    pub model: Option<String>,
    pub cwd: String,
}

/// Exit codes: 0 done, 1 the run failed (model error, or autopilot gave up), 130 interrupted.
pub async fn run(engine: Arc<Engine>, opts: RunOptions) -> anyhow::Result<i32> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let params = SessionConfigParams {
        model: opts.model.clone(),
        working_directory: Some(opts.cwd.clone()),
        client_name: Some("skipper-runner".into()),
        // Nobody can answer a prompt here: without --allow-all-tools, tools that need
        // approval are denied, as in the original's non-interactive mode.
        request_permission: Some(false),
        ..Default::default()
    };
    let session = engine.create(&params, Some(Arc::new(Forward(tx)))).await?;
    let task = QueuedMessage {
        message_id: uuid::Uuid::new_v4().to_string(),
        prompt: opts.prompt.clone(),
        attachments: Vec::new(),
        agent_mode: opts.autopilot.then(|| "autopilot".to_string()),
        request_headers: Vec::new(),
        delivery: "idle",
    };
    session.send(task, false).await?;
    let mut failed = false;
    let mut interrupted = false;
    let mut out = std::io::stdout().lock();
    loop {
        let event = tokio::select! {
            e = rx.recv() => match e { Some(e) => e, None => break },
            _ = tokio::signal::ctrl_c() => {
                interrupted = true;
                let _ = session.abort("user_abort").await;
                continue;
            }
        };
        if opts.json {
            writeln!(out, "{}", serde_json::to_string(&event)?)?;
        } else {
            print_readable(&mut out, &event)?;
        }
        match event.kind.as_str() {
            "session.error" => failed = true,
            "session.autopilot_stopped" => {
                failed |= event.data.get("reason").and_then(Value::as_str) != Some("task_complete");
            }
            "session.idle" => break,
            _ => {}
        }
    }
    out.flush()?;
    drop(out);
    engine.detach(session.id(), RUNNER_SUBSCRIBER).await;
    eprintln!("session {} (events in {})", session.id(), session.workspace_path().display());
    Ok(if interrupted {
        130
    } else if failed {
        1
    } else {
        0
    })
}

const RUNNER_SUBSCRIBER: u64 = 0;

struct Forward(mpsc::UnboundedSender<Event>);

impl EventSubscriber for Forward {
    fn subscriber_id(&self) -> u64 {
        RUNNER_SUBSCRIBER
    }
    fn deliver(&self, _session_id: &str, event: &Event) -> bool {
        self.0.send(event.clone()).is_ok()
    }
}

fn print_readable(out: &mut impl Write, e: &Event) -> std::io::Result<()> {
    let d = &e.data;
    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
    match e.kind.as_str() {
        "assistant.message" if !s("content").is_empty() => writeln!(out, "{}\n", s("content").trim_end()),
        "tool.execution_start" => {
            let args = d.get("arguments").map(|a| a.to_string()).unwrap_or_default();
            let short: String = args.chars().take(120).collect();
            writeln!(out, "● {} {}", s("toolName"), short)
        }
        "tool.execution_complete" if d.get("success") == Some(&Value::Bool(false)) => {
            let msg = d.get("error").and_then(|x| x.get("message")).and_then(Value::as_str).unwrap_or("failed");
            writeln!(out, "  ✗ {}", msg.lines().next().unwrap_or(""))
        }
        "session.task_complete" => writeln!(out, "✓ Task complete: {}", s("summary")),
        "session.error" => writeln!(out, "error: {}", s("message")),
        "abort" => writeln!(out, "aborted"),
        _ => Ok(()),
    }
}
