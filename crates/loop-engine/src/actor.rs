//! The session actor: the one task that owns a session's state. It handles one
//! [`SessionInput`] at a time, runs queued messages one after another (polling the current run
//! beside its inputs, so a run can be aborted or answered while it waits), and emits
//! `session.idle` after every batch of messages, from one place, whatever happened inside.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::autopilot::StopReason;
use crate::handle::{LogLevel, PlanOp, PlanResult, QueuedMessage, SessionHandle, SessionInput, SessionView};
use crate::pending::PendingRequests;
use crate::run::{Conversation, RunCtx};
use crate::Deps;

/// How many inputs may wait for a session's task. Senders wait for room (clients are
/// answered in order; a client cannot flood a session's memory).
pub(crate) const INPUT_CAPACITY: usize = 64;

/// What a finished run hands back to the actor.
struct RunDone {
    conv: Conversation,
    message_id: String,
    /// `Err` carries a panic's message.
    outcome: Result<StopReason, String>,
}

type RunFuture = Pin<Box<dyn Future<Output = RunDone> + Send>>;

/// The messages being processed between two `session.idle`s.
struct Batch {
    cancel: CancellationToken,
    aborted: bool,
}

pub(crate) struct Actor {
    handle: SessionHandle,
    deps: Arc<Deps>,
    view: SessionView,
    view_tx: watch::Sender<Arc<SessionView>>,
    queue: VecDeque<QueuedMessage>,
    steering: Vec<QueuedMessage>,
    batch: Option<Batch>,
    /// `None` while a run owns it.
    conv: Option<Conversation>,
    pending: PendingRequests,
}

enum Step {
    Input(Option<SessionInput>),
    RunDone(RunDone),
    Stop,
}

/// Whether the actor goes on after an input.
enum Flow {
    Continue,
    Exit,
}

impl Actor {
    pub(crate) fn new(
        handle: SessionHandle,
        deps: Arc<Deps>,
        view: SessionView,
        view_tx: watch::Sender<Arc<SessionView>>,
        conv: Conversation,
    ) -> Self {
        Self {
            handle,
            deps,
            view,
            view_tx,
            queue: VecDeque::new(),
            steering: Vec::new(),
            batch: None,
            conv: Some(conv),
            pending: PendingRequests::default(),
        }
    }

    pub(crate) async fn run(mut self, mut inputs: mpsc::Receiver<SessionInput>) {
        let stop = self.handle.stopped().clone();
        let mut running: Option<RunFuture> = None;
        loop {
            let step = tokio::select! {
                biased;
                _ = stop.cancelled() => Step::Stop,
                done = poll_run(&mut running) => Step::RunDone(done),
                input = inputs.recv() => Step::Input(input),
            };
            let flow = match step {
                Step::Stop | Step::Input(None) => Flow::Exit,
                Step::Input(Some(input)) => self.handle_input(input).await,
                Step::RunDone(done) => {
                    running = None;
                    self.finish_run(done).await;
                    Flow::Continue
                }
            };
            if matches!(flow, Flow::Exit) {
                break;
            }
            if running.is_none() {
                running = self.start_next();
            }
        }
        if let Some(batch) = &self.batch {
            batch.cancel.cancel();
        }
        self.pending.fail_all();
        self.handle.shells().kill_all();
    }

    fn emit(&self, kind: &str, data: serde_json::Value, ephemeral: bool) -> protocol::event::Event {
        self.handle.emitter().emit(kind, data, ephemeral)
    }

    /// Publishes the view after a change, for readers and for the run's next turn.
    fn publish(&self) {
        self.view_tx.send_replace(Arc::new(self.view.clone()));
    }

    async fn handle_input(&mut self, input: SessionInput) -> Flow {
        match input {
            SessionInput::Send { msg, immediate, reply } => {
                self.enqueue(msg, immediate);
                let _ = reply.send(());
            }
            SessionInput::Abort { reason, reply } => {
                let _ = reply.send(self.abort(&reason));
            }
            SessionInput::SetMode { mode, reply } => {
                let _ = reply.send(self.set_mode(mode));
            }
            SessionInput::SwitchModel { model, reasoning_effort, reply } => {
                let previous = std::mem::replace(&mut self.view.settings.model, model.clone());
                if reasoning_effort.is_some() {
                    self.view.settings.reasoning_effort = reasoning_effort.clone();
                }
                self.publish();
                let mut data = json!({"previousModel": previous, "newModel": model, "source": "sdk"});
                if let Some(e) = &reasoning_effort {
                    data["reasoningEffort"] = json!(e);
                }
                self.emit("session.model_change", data, false);
                let _ = reply.send(previous);
            }
            SessionInput::SetApproveAll { enabled, reply } => {
                self.view.settings.approve_all = enabled;
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::SetTools { tools, reply } => {
                self.view.settings.external_tools = tools;
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::Answer { request_id, answer, reply } => {
                let _ = reply.send(self.pending.resolve(&request_id, answer));
            }
            SessionInput::PendingPermissions { reply } => {
                let _ = reply.send(self.pending.permission_prompts());
            }
            SessionInput::FailAllPending => {
                // A client may have come back since the timer started.
                if self.handle.subscriber_count() == 0 {
                    self.pending.fail_all();
                }
            }
            SessionInput::Log { level, kind, message, ephemeral, reply } => {
                let (event, data) = match level {
                    LogLevel::Info => ("session.info", json!({"infoType": kind, "message": message})),
                    LogLevel::Warning => ("session.warning", json!({"warningType": kind, "message": message})),
                    LogLevel::Error => ("session.error", json!({"errorType": kind, "message": message})),
                };
                let _ = reply.send(self.emit(event, data, ephemeral).id);
            }
            SessionInput::Plan { op, reply } => {
                let _ = reply.send(self.plan(op).await);
            }
            SessionInput::Resume { params, subscriber, reply } => {
                self.view.settings.apply_resume(&params);
                self.publish();
                if let Some(sub) = subscriber {
                    self.handle.subscribe(sub);
                }
                if !params.disable_resume.unwrap_or(false) {
                    let s = &self.view.settings;
                    let data = json!({
                        "resumeTime": crate::now(),
                        "eventCount": self.handle.emitter().persisted_count(),
                        "selectedModel": s.model,
                        "context": {"cwd": s.cwd.to_string_lossy()},
                        "sessionWasActive": self.view.running,
                        "alreadyInUse": false,
                        "continuePendingWork": params.continue_pending_work.unwrap_or(false),
                    });
                    self.emit("session.resume", data, false);
                }
                let _ = reply.send(());
            }
            SessionInput::Detach { subscriber_id, reply } => {
                if self.handle.emitter().unsubscribe(subscriber_id) > 0 {
                    let _ = reply.send(false);
                    return Flow::Continue;
                }
                self.emit_shutdown();
                let _ = reply.send(true);
                return Flow::Exit;
            }
            SessionInput::RunRegisterPending { request_id, kind, tx } => {
                self.pending.register(request_id, kind, tx);
            }
            SessionInput::RunForgetPending { request_id } => self.pending.forget(&request_id),
            SessionInput::RunApproveForSession { keys } => {
                for k in keys {
                    if !self.view.approvals.contains(&k) {
                        self.view.approvals.push(k);
                    }
                }
                self.publish();
            }
            SessionInput::RunTakeSteering { reply } => {
                let _ = reply.send(std::mem::take(&mut self.steering));
            }
        }
        Flow::Continue
    }

    fn enqueue(&mut self, mut msg: QueuedMessage, immediate: bool) {
        if self.batch.is_some() {
            if immediate {
                msg.delivery = "steering";
                self.steering.push(msg);
            } else {
                msg.delivery = "queued";
                self.queue.push_back(msg);
            }
        } else {
            msg.delivery = "idle";
            self.queue.push_back(msg);
            self.batch = Some(Batch { cancel: CancellationToken::new(), aborted: false });
            self.view.running = true;
            self.publish();
        }
        self.emit("pending_messages.modified", json!({}), true);
    }

    fn abort(&mut self, reason: &str) -> bool {
        let Some(batch) = &mut self.batch else { return false };
        batch.aborted = true;
        batch.cancel.cancel();
        let dropped = self.queue.len() + self.steering.len();
        self.queue.clear();
        self.steering.clear();
        self.emit("abort", json!({"reason": reason}), false);
        if dropped > 0 {
            self.emit("pending_messages.modified", json!({}), true);
        }
        true
    }

    fn set_mode(&mut self, mode: String) -> Option<String> {
        if self.view.settings.mode == mode {
            return None;
        }
        let previous = std::mem::replace(&mut self.view.settings.mode, mode.clone());
        self.publish();
        self.emit("session.mode_changed", json!({"previousMode": previous, "newMode": mode}), false);
        Some(previous)
    }

    async fn plan(&mut self, op: PlanOp) -> Result<PlanResult, store::StoreError> {
        let layout = &self.deps.layout;
        let id = self.handle.id();
        match op {
            PlanOp::Read => Ok(PlanResult::Read { content: layout.read_plan(id).await?, path: layout.plan_path(id) }),
            PlanOp::Update(content) => {
                let existed = layout.write_plan(id, &content).await?;
                let operation = if existed { "update" } else { "create" };
                self.emit("session.plan_changed", json!({"operation": operation}), false);
                Ok(PlanResult::Changed)
            }
            PlanOp::Delete => {
                if layout.delete_plan(id).await? {
                    self.emit("session.plan_changed", json!({"operation": "delete"}), false);
                }
                Ok(PlanResult::Changed)
            }
        }
    }

    fn emit_shutdown(&self) {
        let start = chrono::DateTime::parse_from_rfc3339(self.handle.start_time()).map(|t| t.timestamp_millis());
        self.emit(
            "session.shutdown",
            json!({
                "shutdownType": "routine",
                "totalPremiumRequests": 0,
                "totalApiDurationMs": 0,
                "sessionStartTime": start.unwrap_or(0),
                "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []},
                "modelMetrics": {},
                "currentModel": self.view.settings.model,
            }),
            false,
        );
    }

    /// Starts the next queued message of the current batch, if any.
    fn start_next(&mut self) -> Option<RunFuture> {
        let batch = self.batch.as_ref()?;
        if batch.cancel.is_cancelled() {
            return None;
        }
        let msg = self.queue.pop_front()?;
        let mut conv = self.conv.take()?;
        let ctx = RunCtx::new(self.handle.clone(), self.deps.clone(), batch.cancel.clone());
        Some(Box::pin(async move {
            let message_id = msg.message_id.clone();
            let run = crate::run::run_message(&ctx, &mut conv, msg);
            let outcome = AssertUnwindSafe(run).catch_unwind().await.map_err(|panic| {
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into())
            });
            RunDone { conv, message_id, outcome }
        }))
    }

    /// One message is done. The batch goes on with the next queued message, or ends with
    /// `session.idle`.
    async fn finish_run(&mut self, done: RunDone) {
        let RunDone { mut conv, message_id, outcome } = done;
        if self.view.settings.mode == "autopilot" {
            let reason = match &outcome {
                Ok(r) => *r,
                Err(_) => StopReason::Error,
            };
            // Python's send_and_wait completes on this in autopilot; it must precede idle.
            self.emit("session.autopilot_stopped", json!({"reason": reason.as_str(), "requestId": message_id}), true);
        }
        if let Err(what) = &outcome {
            tracing::error!(session = %self.handle.id(), panic = %what, "run panicked");
            crate::run::repair(&mut conv.messages);
            self.emit(
                "session.error",
                json!({"errorType": "internal", "message": format!("Internal error: {what}")}),
                false,
            );
        }
        self.conv = Some(conv);
        let Some(batch) = &self.batch else { return };
        let aborted = batch.aborted;
        if !batch.cancel.is_cancelled() {
            // Steering that arrived after the last model call runs next, as a queued message.
            for mut msg in std::mem::take(&mut self.steering).into_iter().rev() {
                msg.delivery = "queued";
                self.queue.push_front(msg);
            }
            if !self.queue.is_empty() {
                return;
            }
        }
        self.batch = None;
        self.view.running = false;
        self.publish();
        let mut data = json!({"mode": self.view.settings.mode});
        if aborted {
            data["aborted"] = json!(true);
        }
        // IdleData forbids extra fields (the schema wins over a `backgroundTasks` list), so
        // running background shells are signalled with `session.background_tasks_changed`.
        if !self.handle.shells().running_shells().is_empty() {
            self.emit("session.background_tasks_changed", json!({}), true);
        }
        if let Err(e) = self.deps.index.touch(self.handle.id(), &crate::now()).await {
            tracing::warn!(session = %self.handle.id(), error = %e, "index touch failed");
        }
        self.emit("session.idle", data, true);
    }
}

/// The current run's completion, or never when nothing runs.
async fn poll_run(running: &mut Option<RunFuture>) -> RunDone {
    match running {
        Some(fut) => fut.await,
        None => std::future::pending().await,
    }
}
