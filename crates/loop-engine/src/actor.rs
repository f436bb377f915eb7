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
use protocol::generated::types::{self as t, SessionMode, UserMessageDelivery};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::autopilot::StopReason;
use crate::compaction;
use crate::conversation::Conversation;
use crate::deps::Deps;
use crate::handle::{
    Activity, LogLevel, PlanOp, PlanResult, QueueOp, QueueState, QueuedMessage, SessionHandle, SessionInput,
    SessionView,
};
use crate::pending::PendingRequests;
use crate::queue_edit;
use crate::run_ctx::RunCtx;

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
    /// Shared with `view_tx`'s receivers: one copy while nothing changes (changes copy it
    /// once, and the next publish lets the old one go).
    view: Arc<SessionView>,
    view_tx: watch::Sender<Arc<SessionView>>,
    queue: VecDeque<QueuedMessage>,
    steering: Vec<QueuedMessage>,
    batch: Option<Batch>,
    /// `None` while a run owns it.
    conv: Option<Conversation>,
    pending: PendingRequests,
    /// Files the session's tools created or changed (`session.shutdown` reports them).
    files_modified: Vec<String>,
    /// A compaction a client asked for, waiting for the conversation to come home.
    deferred_compaction: Option<compaction::Request>,
    /// The history as a run took it: what a handoff summary covers while the run holds it.
    last_history: llm_providers::History,
    /// When the session last did or was asked anything (the idle unloader's clock).
    last_active: std::time::Instant,
    /// The conversation's history is not in memory (`parking`): read it back before use.
    parked: bool,
    /// A batch ended while background agents ran: `session.idle` waits for them.
    idle_withheld: bool,
    /// The selected agent's own MCP servers, while it stays selected.
    agent_servers: Option<SelectedAgentServers>,
    /// A client holds the queue (`session.queue.setDrainPaused`): nothing queued starts.
    drain_paused: bool,
    /// The running turn's message being withdrawn: answered once the run has unwound.
    withdrawing: Option<(crate::turn_control::TurnMark, tokio::sync::oneshot::Sender<crate::handle::Withdrawn>)>,
}

enum Step {
    Input(Option<Box<SessionInput>>),
    // Boxed: the conversation it carries home is the largest thing a step holds.
    RunDone(Box<RunDone>),
    Compacted(Result<compaction::Summary, compaction::Failure>),
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
        view: Arc<SessionView>,
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
            files_modified: Vec::new(),
            deferred_compaction: None,
            last_history: Default::default(),
            last_active: std::time::Instant::now(),
            parked: false,
            idle_withheld: false,
            agent_servers: None,
            drain_paused: false,
            withdrawing: None,
        }
    }

    pub(crate) async fn run(mut self, mut inputs: mpsc::Receiver<Box<SessionInput>>) {
        let stop = self.handle.stopped().clone();
        let mut running: Option<RunFuture> = None;
        loop {
            let step = tokio::select! {
                biased;
                _ = stop.cancelled() => Step::Stop,
                done = poll_run(&mut running) => Step::RunDone(Box::new(done)),
                result = compaction::finished(&mut self.conv) => Step::Compacted(result),
                input = inputs.recv() => Step::Input(input),
            };
            if !matches!(&step, Step::Input(Some(input)) if matches!(**input, SessionInput::Unload { .. })) {
                self.last_active = std::time::Instant::now();
            }
            let flow = match step {
                Step::Stop | Step::Input(None) => Flow::Exit,
                // Boxed: an idle session's task then holds only this loop's small state, not
                // the largest of its handlers' futures (a few KiB per session otherwise).
                Step::Input(Some(input)) => Box::pin(self.handle_input(*input)).await,
                Step::RunDone(done) => {
                    running = None;
                    self.finish_run(*done);
                    Flow::Continue
                }
                Step::Compacted(result) => {
                    if let Some(conv) = self.conv.as_mut() {
                        if let Some(f) = conv.compaction.take() {
                            compaction::apply(compaction::Owner::session(&self.handle), conv, f, result);
                        }
                    }
                    Flow::Continue
                }
            };
            if matches!(flow, Flow::Exit) {
                break;
            }
            if self.parked
                && (self.deferred_compaction.is_some()
                    || (running.is_none() && self.batch.is_some() && !self.queue.is_empty()))
            {
                self.unpark().await;
            }
            self.start_deferred_compaction();
            if running.is_none() {
                running = self.start_next();
            }
        }
        if let Some(batch) = &self.batch {
            batch.cancel.cancel();
        }
        if let Some(f) = self.conv.as_mut().and_then(|c| c.compaction.take()) {
            f.abandon();
        }
        self.pending.fail_all();
        self.handle.shells().kill_all();
        self.handle.mcp().shutdown();
    }

    /// Nothing running, queued, pending or compacting, no background shell, quiet for
    /// `idle_for`: the session is idle (with no client either, it could be unloaded without
    /// anyone noticing).
    fn quiet_for(&self, idle_for: std::time::Duration) -> bool {
        !self.view.running
            && self.batch.is_none()
            && self.queue.is_empty()
            && self.steering.is_empty()
            && self.pending.is_empty()
            && self.deferred_compaction.is_none()
            && self.conv.as_ref().is_some_and(|c| c.compaction.is_none())
            && self.handle.shells().running_shells().is_empty()
            && self.last_active.elapsed() >= idle_for
    }

    fn emit(&self, payload: impl Into<protocol::event::SessionEvent>) -> String {
        self.handle.emitter().emit(payload)
    }

    fn emit_ephemeral(&self, payload: impl Into<protocol::event::SessionEvent>) -> String {
        self.handle.emitter().emit_ephemeral(payload)
    }

    /// Publishes the view after a change, for readers and for the run's next turn.
    fn publish(&self) {
        self.view_tx.send_replace(self.view.clone());
    }

    async fn handle_input(&mut self, input: SessionInput) -> Flow {
        match input {
            SessionInput::Send { msg, immediate, reply } => {
                self.enqueue(msg, immediate);
                let _ = reply.send(());
            }
            SessionInput::Abort { reason, reply } => {
                let _ = reply.send(self.abort(reason));
            }
            SessionInput::Interrupt { flush, reply } => {
                let _ = reply.send(self.interrupt(flush));
            }
            SessionInput::Withdraw { message_id, expected, reply } => self.withdraw(&message_id, &expected, reply),
            SessionInput::SetMode { mode, reply } => {
                let _ = reply.send(self.set_mode(mode));
            }
            SessionInput::SwitchModel { model, reasoning_effort, vision, cause, reply } => {
                let previous = std::mem::replace(&mut Arc::make_mut(&mut self.view).settings.model, model.clone());
                // An override belongs to the model it was given for.
                if vision.is_some() || previous != model {
                    Arc::make_mut(&mut self.view).settings.vision = vision;
                }
                if reasoning_effort.is_some() {
                    Arc::make_mut(&mut self.view).settings.reasoning_effort = reasoning_effort.clone();
                }
                self.publish();
                self.emit(t::ModelChangeData {
                    previous_model: Some(previous.clone()),
                    new_model: model,
                    reasoning_effort,
                    source: Some(match cause {
                        Some(_) => t::ModelChangeSource::Automatic,
                        None => t::ModelChangeSource::Sdk,
                    }),
                    cause: cause.map(String::from),
                    ..Default::default()
                });
                let _ = reply.send(previous);
            }
            SessionInput::SetApproveAll { enabled, reply } => {
                Arc::make_mut(&mut self.view).settings.approve_all = enabled;
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::ResetApprovals { reply } => {
                Arc::make_mut(&mut self.view).approvals.clear();
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::SetTools { tools, reply } => {
                Arc::make_mut(&mut self.view).settings.external_tools = tools;
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::AddProviders { providers, models, reply } => {
                let added = Arc::make_mut(&mut self.view).settings.providers.add(providers, models);
                if added.is_ok() {
                    self.publish();
                }
                let _ = reply.send(added);
            }
            SessionInput::Answer { request_id, answer, reply } => {
                let _ = reply.send(self.pending.resolve(&request_id, answer));
            }
            SessionInput::TakeSandboxOffer { request_id, take, reply } => {
                let _ =
                    reply.send(crate::sandbox_bypass::take_offer(&self.handle, &mut self.pending, &request_id, take));
            }
            SessionInput::Waiting { reply } => {
                let _ = reply.send(self.pending.waiting());
            }
            SessionInput::FailAllPending => {
                // A client may have come back since the timer started.
                if self.handle.subscriber_count() == 0 {
                    self.pending.fail_all();
                }
            }
            SessionInput::Agents { op, reply } => {
                let emitter = crate::subagent::scope::ScopedEmitter { emitter: self.handle.emitter(), scope: None };
                let result = crate::agent_control::apply(&mut Arc::make_mut(&mut self.view).settings, op, emitter);
                self.publish();
                let _ = reply.send(result);
            }
            SessionInput::Log { level, kind, message, ephemeral, reply } => {
                let payload: protocol::event::SessionEvent = match level {
                    LogLevel::Info => t::InfoData { info_type: kind, message, ..Default::default() }.into(),
                    LogLevel::Warning => t::WarningData { warning_type: kind, message, ..Default::default() }.into(),
                    LogLevel::Error => t::ErrorData { error_type: kind, message, ..Default::default() }.into(),
                };
                let emitter = self.handle.emitter();
                let id = if ephemeral { emitter.emit_ephemeral(payload) } else { emitter.emit(payload) };
                let _ = reply.send(id);
            }
            SessionInput::Plan { op, reply } => {
                let _ = reply.send(self.plan(op).await);
            }
            SessionInput::WriteWorkspaceFile { path, content, reply } => {
                let _ = reply.send(self.write_workspace_file(&path, content).await);
            }
            SessionInput::Resume { params, subscriber, reply } => {
                Arc::make_mut(&mut self.view).settings.apply_resume(&params);
                Arc::make_mut(&mut self.view).settings.load_files();
                self.select_requested_agent(params.agent.as_deref());
                self.publish();
                // A run whose clients all left is orphaned (a cold resume) unless this resume
                // carries its pending work on; otherwise it is still active.
                let continue_pending = params.continue_pending_work.unwrap_or(false);
                let orphaned = self.view.running && self.handle.subscriber_count() == 0 && !continue_pending;
                let active = self.view.running && !orphaned;
                if let Some(sub) = subscriber {
                    self.handle.subscribe(sub);
                }
                if !params.disable_resume.unwrap_or(false) {
                    let data = crate::resume::resume_data(
                        &self.view.settings,
                        self.handle.emitter().persisted_count(),
                        None,
                        active,
                        continue_pending,
                    );
                    self.emit(data);
                }
                if orphaned {
                    self.interrupt_orphaned_run();
                }
                let _ = reply.send(());
            }
            SessionInput::Queue { op, reply } => {
                let result = self.edit_queue(op);
                if result.as_ref().is_ok_and(|e| e.changed) {
                    self.emit(t::PendingMessagesModifiedData {});
                }
                let _ = reply.send(result.map(|e| QueueState {
                    items: self.queue.iter().cloned().collect(),
                    steering: self.steering.iter().map(|m| m.shown().to_string()).collect(),
                    changed: e.changed,
                    id: e.id,
                }));
            }
            SessionInput::Activity { reply } => {
                let has_active_work = self.view.running
                    || !self.queue.is_empty()
                    || !self.pending.is_empty()
                    || !self.handle.shells().running_shells().is_empty();
                let _ = reply.send(Activity { has_active_work, abortable: self.batch.is_some() });
            }
            SessionInput::SetSubagentSettings { settings, reply } => {
                Arc::make_mut(&mut self.view).settings.subagent_settings = settings;
                self.publish();
                let _ = reply.send(());
            }
            SessionInput::Unload { idle_for, reply } => {
                if self.quiet_for(idle_for) {
                    if self.handle.subscriber_count() == 0 {
                        // Nothing is emitted: a client that resumes later must not tell the
                        // difference (the log is complete, the resume replays it).
                        self.handle.stopped().cancel();
                        let _ = reply.send(true);
                        return Flow::Exit;
                    }
                    // A client is attached: the session stays, its history goes to the log.
                    if !self.parked {
                        self.parked = self.conv.as_mut().is_some_and(crate::parking::park);
                    }
                }
                let _ = reply.send(false);
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
            SessionInput::Compact { custom_instructions, trigger, reply } => {
                if self.deferred_compaction.is_some() {
                    let _ = reply.send(Err("A compaction is already in progress.".into()));
                } else {
                    self.deferred_compaction =
                        Some(compaction::Request { trigger, custom_instructions, manual: Some(reply) });
                }
            }
            SessionInput::Handoff { reply } => {
                self.unpark().await;
                self.handoff(reply)
            }
            SessionInput::SamplingRoute { model, reply } => {
                let model = model.unwrap_or_else(|| self.view.settings.model.clone());
                let _ = reply.send((self.route_for(&model), model));
            }
            SessionInput::EphemeralQuery { question, reply } => {
                self.unpark().await;
                self.ephemeral_query(question, reply)
            }
            SessionInput::Shutdown { shutdown_type, reply } => {
                self.abort(t::AbortReason::UserInitiated);
                self.pending.fail_all();
                self.emit_shutdown_of(shutdown_type);
                let _ = reply.send(());
                return Flow::Exit;
            }
            SessionInput::Suspend { reply } => {
                self.abort(t::AbortReason::UserInitiated);
                self.pending.fail_all();
                let _ = reply.send(());
            }
            SessionInput::Name { op, reply } => {
                let _ = reply.send(self.name(op).await);
            }
            SessionInput::UpdateOptions { patch, reply } => {
                self.update_options(patch);
                let _ = reply.send(());
            }
            SessionInput::Truncate { event_id, reply } => {
                let _ = reply.send(self.truncate(&event_id));
            }
            SessionInput::RunRegisterPending { request_id, kind, tx } => {
                self.pending.register(request_id, kind, tx);
            }
            SessionInput::RunForgetPending { request_id } => self.pending.forget(&request_id),
            SessionInput::BackgroundSettled => self.background_settled(),
            SessionInput::RunApproveForSession { keys } => {
                for k in keys {
                    if !self.view.approvals.contains(&k) {
                        Arc::make_mut(&mut self.view).approvals.push(k);
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

    /// One `session.queue.*` operation; whether it changed the queue (and what it added).
    fn edit_queue(&mut self, op: QueueOp) -> Result<queue_edit::Edited, queue_edit::QueueError> {
        let changed = |changed: bool| queue_edit::Edited { changed, id: None };
        match op {
            QueueOp::Snapshot => Ok(changed(false)),
            QueueOp::RemoveMostRecent => Ok(changed(self.queue.pop_back().is_some())),
            QueueOp::Clear => {
                let any = !self.queue.is_empty();
                self.queue.clear();
                Ok(changed(any))
            }
            QueueOp::Move { id, to } => queue_edit::move_item(&mut self.queue, &id, to),
            QueueOp::Remove { id } => queue_edit::remove(&mut self.queue, &id),
            QueueOp::UpdateText { id, prompt, display_prompt } => {
                queue_edit::update_text(&mut self.queue, &id, prompt, display_prompt)
            }
            QueueOp::Duplicate { id } => queue_edit::duplicate(&mut self.queue, &id),
            QueueOp::Insert { at, mut msg } => {
                msg.delivery = UserMessageDelivery::Queued;
                let edited = queue_edit::insert(&mut self.queue, at, msg);
                // Into an idle session's queue: it starts, as a sent message would.
                if self.batch.is_none() {
                    self.start_batch();
                }
                Ok(edited)
            }
            QueueOp::SendNow { id } => {
                let at = queue_edit::position(&self.queue, &id)?;
                // A turn is live while its run holds the conversation.
                if self.batch.is_none() || self.conv.is_some() {
                    return Ok(changed(false));
                }
                let Some(mut msg) = self.queue.remove(at) else { return Ok(changed(false)) };
                msg.delivery = UserMessageDelivery::Steering;
                self.steering.push(msg);
                Ok(changed(true))
            }
            QueueOp::AppendSteering(add) => {
                Ok(changed(queue_edit::append_steering(&mut self.steering, add, self.view.settings.mode)))
            }
            QueueOp::SetDrainPaused(paused) => {
                if paused && self.drain_paused {
                    return Err(queue_edit::QueueError::AlreadyPaused);
                }
                // Released with messages waiting and nothing running: they start now.
                self.drain_paused = paused;
                if !paused && self.batch.is_none() && !self.queue.is_empty() {
                    self.start_batch();
                }
                Ok(changed(false))
            }
        }
    }

    /// A batch begins: the session is running until the queue is done.
    fn start_batch(&mut self) {
        self.recover_from_persist_failure();
        self.batch = Some(Batch { cancel: CancellationToken::new(), aborted: false });
        Arc::make_mut(&mut self.view).running = true;
        self.publish();
    }

    fn enqueue(&mut self, mut msg: QueuedMessage, immediate: bool) {
        if self.batch.is_some() {
            if immediate {
                msg.delivery = UserMessageDelivery::Steering;
                self.steering.push(msg);
            } else {
                msg.delivery = UserMessageDelivery::Queued;
                self.queue.push_back(msg);
            }
        } else {
            msg.delivery = UserMessageDelivery::Idle;
            self.queue.push_back(msg);
            self.start_batch();
        }
        self.emit(t::PendingMessagesModifiedData {});
    }

    /// A cold resume that does not continue pending work: the run's pending calls end as
    /// interrupted (no one will answer them) and the run stops without another model call, as
    /// the original does; no `abort` is announced, as no one asked for one.
    fn interrupt_orphaned_run(&mut self) {
        let Some(batch) = &mut self.batch else { return };
        batch.cancel.cancel();
        let dropped = self.queue.len() + self.steering.len();
        self.queue.clear();
        self.steering.clear();
        if dropped > 0 {
            self.emit(t::PendingMessagesModifiedData {});
        }
    }

    /// `session.interruptMainTurn`: a plain interrupt is an abort; a flushing one stops only the
    /// running turn, and what was queued or steering runs next in the same batch.
    fn interrupt(&mut self, flush: bool) -> bool {
        // A turn is live while its run holds the conversation.
        if self.conv.is_some() {
            return false;
        }
        if !flush {
            return self.abort(t::AbortReason::UserAbort);
        }
        let Some(batch) = &mut self.batch else { return false };
        self.handle.mcp_sampling().abort_waiting();
        // The run watches the old token; the batch goes on under a new one.
        std::mem::replace(&mut batch.cancel, CancellationToken::new()).cancel();
        self.emit(t::AbortData { reason: t::AbortReason::UserAbort });
        true
    }

    /// `session.queue.withdrawMessage`: from the queue or the steering lane while it still reads
    /// `expected`; from the running turn it started while the model has not answered it and
    /// nothing sent after it waits (the turn is aborted, and its events leave the log once it
    /// has unwound: `finish_withdrawal`).
    fn withdraw(&mut self, id: &str, expected: &str, reply: tokio::sync::oneshot::Sender<crate::handle::Withdrawn>) {
        let out = |removed| crate::handle::Withdrawn { removed, interrupted: false };
        if let Some(at) = self.queue.iter().position(|m| m.message_id == id) {
            let removed = self.queue[at].prompt == expected && self.queue.remove(at).is_some();
            if removed {
                self.emit(t::PendingMessagesModifiedData {});
            }
            let _ = reply.send(out(removed));
            return;
        }
        if let Some(at) = self.steering.iter().position(|m| m.message_id == id) {
            let removed = self.steering[at].prompt == expected;
            if removed {
                self.steering.remove(at);
                self.emit(t::PendingMessagesModifiedData {});
            }
            let _ = reply.send(out(removed));
            return;
        }
        let mark = self.handle.turn_mark().filter(|m| {
            m.message_id == id
                && m.prompt == expected
                && !m.answered
                && self.queue.is_empty()
                && self.steering.is_empty()
        });
        match mark {
            Some(mark) if self.withdrawing.is_none() && self.abort(t::AbortReason::UserAbort) => {
                self.withdrawing = Some((mark, reply));
            }
            _ => drop(reply.send(out(false))),
        }
    }

    /// The withdrawn message's turn has unwound: its events leave the log and the conversation,
    /// unless the model answered it meanwhile.
    fn finish_withdrawal(&mut self, answered: bool) {
        let Some((mark, reply)) = self.withdrawing.take() else { return };
        let removed = !answered && self.truncate(&mark.event_id).is_ok();
        let _ = reply.send(crate::handle::Withdrawn { removed, interrupted: true });
    }

    fn abort(&mut self, reason: t::AbortReason) -> bool {
        let Some(batch) = &mut self.batch else { return false };
        // A server's sampling request waiting on a client belongs to the aborted turn's tool call.
        self.handle.mcp_sampling().abort_waiting();
        batch.aborted = true;
        batch.cancel.cancel();
        let dropped = self.queue.len() + self.steering.len();
        self.queue.clear();
        self.steering.clear();
        self.emit(t::AbortData { reason });
        if dropped > 0 {
            self.emit(t::PendingMessagesModifiedData {});
        }
        true
    }

    /// The `agent` a client named on create or resume, selected (an unknown name is logged).
    fn select_requested_agent(&mut self, name: Option<&str>) {
        let Some(name) = name else { return };
        let op = crate::agent_control::AgentOp::Select(name.to_string());
        let emitter = crate::subagent::scope::ScopedEmitter { emitter: self.handle.emitter(), scope: None };
        if let Err(e) = crate::agent_control::apply(&mut Arc::make_mut(&mut self.view).settings, op, emitter) {
            tracing::warn!(session = %self.handle.id(), error = %e, "requested agent not selected");
        }
    }

    fn set_mode(&mut self, mode: SessionMode) -> Option<SessionMode> {
        if self.view.settings.mode == mode {
            return None;
        }
        let previous = std::mem::replace(&mut Arc::make_mut(&mut self.view).settings.mode, mode);
        self.publish();
        self.emit(t::ModeChangedData { previous_mode: previous, new_mode: mode });
        Some(previous)
    }

    async fn plan(&mut self, op: PlanOp) -> Result<PlanResult, store::StoreError> {
        let layout = &self.deps.layout;
        let id = self.handle.id();
        if let Some(remote) = self.handle.remote_state().cloned() {
            return crate::session_fs::plan(remote, op, |d| self.emit(d)).await;
        }
        match op {
            PlanOp::Read => Ok(PlanResult::Read { content: layout.read_plan(id).await?, path: layout.plan_path(id) }),
            PlanOp::Update(content) => {
                let existed = layout.write_plan(id, &content).await?;
                let operation = if existed { t::PlanChangedOperation::Update } else { t::PlanChangedOperation::Create };
                self.emit(t::PlanChangedData { operation });
                Ok(PlanResult::Changed)
            }
            PlanOp::Delete => {
                if layout.delete_plan(id).await? {
                    self.emit(t::PlanChangedData { operation: t::PlanChangedOperation::Delete });
                }
                Ok(PlanResult::Changed)
            }
        }
    }

    async fn write_workspace_file(&mut self, path: &str, content: String) -> Result<(), store::StoreError> {
        let (path, existed) = self.deps.layout.write_workspace_file(self.handle.id(), path, content).await?;
        let operation =
            if existed { t::WorkspaceFileChangedOperation::Update } else { t::WorkspaceFileChangedOperation::Create };
        self.emit(t::WorkspaceFileChangedData { path, operation });
        Ok(())
    }

    fn emit_shutdown(&self) {
        self.emit_shutdown_of(t::ShutdownType::Routine);
    }

    fn emit_shutdown_of(&self, shutdown_type: t::ShutdownType) {
        let start = chrono::DateTime::parse_from_rfc3339(self.handle.start_time()).map(|t| t.timestamp_millis());
        let files_modified = self.files_modified.clone();
        let code_changes = t::ShutdownCodeChanges { lines_added: 0, lines_removed: 0, files_modified };
        let start = start.ok().and_then(|ms| u64::try_from(ms).ok()).unwrap_or(0);
        let mut data = t::ShutdownData::new(shutdown_type, 0, start, code_changes, Default::default());
        data.total_premium_requests = Some(0.0);
        data.current_model = Some(self.view.settings.model.clone());
        self.emit(data);
    }

    /// After an event could not be written (a full disk, the database gone), the conversation
    /// may hold what the log does not: it is parked, so the next run reads back what is stored
    /// (what clients saw), and writing is tried again.
    fn recover_from_persist_failure(&mut self) {
        if !self.handle.emitter().clear_persist_failure() {
            return;
        }
        if let Some(conv) = self.conv.as_mut() {
            self.parked = crate::parking::park(conv) || self.parked;
        }
    }

    /// Reads a parked history back from the log (boxed, as the run loop's other awaits).
    async fn unpark(&mut self) {
        if !self.parked {
            return;
        }
        if let Some(conv) = self.conv.as_mut() {
            Box::pin(crate::parking::restore(&self.handle, &self.deps, conv)).await;
        }
        self.parked = false;
    }

    /// Starts the next queued message of the current batch, if any.
    fn start_next(&mut self) -> Option<RunFuture> {
        let batch = self.batch.as_ref()?;
        if batch.cancel.is_cancelled() || self.drain_paused {
            return None;
        }
        let msg = self.queue.pop_front()?;
        let mut conv = self.conv.take()?;
        // Between two runs the conversation is the actor's alone: the one moment sent chunks
        // can drop their messages' duplicate wire forms.
        conv.history.shed_sent_copies();
        self.last_history = conv.history.clone();
        let ctx = RunCtx::new(self.handle.clone(), self.deps.clone(), batch.cancel.clone());
        let ctx = match self.selected_agent_servers(&ctx) {
            Some(host) => ctx.with_agent_mcp(host),
            None => ctx,
        };
        Some(Box::pin(async move {
            let message_id = msg.message_id.clone();
            // Held while the message runs: the deployment's turns at once (it waits here, as
            // queued, until it has a place; an abort stops the wait).
            let _place = match ctx.deps.meter.get() {
                Some(meter) => tokio::select! {
                    place = meter.admit_turn(ctx.handle.id()) => Some(place),
                    _ = ctx.cancel.cancelled() => {
                        return RunDone { conv, message_id, outcome: Ok(StopReason::Aborted) };
                    }
                },
                None => None,
            };
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
    fn finish_run(&mut self, done: RunDone) {
        let RunDone { mut conv, message_id, outcome } = done;
        // The conversation is home: the run's snapshot would only keep old messages alive.
        self.last_history = Default::default();
        for path in conv.files_modified.drain(..) {
            if !self.files_modified.contains(&path) {
                self.files_modified.push(path);
            }
        }
        if self.view.settings.mode == SessionMode::Autopilot {
            let reason = match &outcome {
                Ok(r) => *r,
                Err(_) => StopReason::Error,
            };
            // Python's send_and_wait completes on this in autopilot; it must precede idle.
            self.emit(t::AutopilotStoppedData { reason: reason.as_str().into(), request_id: Some(message_id) });
        }
        if let Err(what) = &outcome {
            tracing::error!(session = %self.handle.id(), panic = %what, "run panicked");
            conv.repair();
            self.emit(t::ErrorData {
                error_type: "internal".into(),
                message: format!("Internal error: {what}"),
                ..Default::default()
            });
        }
        self.conv = Some(conv);
        self.recover_from_persist_failure();
        let answered = self.handle.take_turn_mark().is_none_or(|m| m.answered);
        self.finish_withdrawal(answered);
        let Some(batch) = &self.batch else { return };
        let aborted = batch.aborted;
        if !batch.cancel.is_cancelled() {
            // Steering that arrived after the last model call runs next, as a queued message.
            for mut msg in std::mem::take(&mut self.steering).into_iter().rev() {
                msg.delivery = UserMessageDelivery::Queued;
                self.queue.push_front(msg);
            }
            if !self.queue.is_empty() {
                return;
            }
        }
        self.batch = None;
        Arc::make_mut(&mut self.view).running = false;
        self.publish();
        // The main loop is idle now, whatever background work still holds `session.idle` back.
        self.emit(t::AssistantIdleData { aborted: aborted.then_some(true) });
        // IdleData forbids extra fields (the schema wins over a `backgroundTasks` list), so
        // running background shells are signalled with `session.background_tasks_changed`.
        if !self.handle.shells().running_shells().is_empty() {
            self.emit(t::BackgroundTasksChangedData {});
        }
        // Written behind (batched, off this path); every later index read or write sees it.
        self.deps.index.touch_later(self.handle.id(), &protocol::now_iso());
        // Idle means no background agent is in flight either: one that ends either sends its
        // notice (a new batch, which ends idle) or settles (`BackgroundSettled`).
        if !aborted && self.handle.tasks().any_running() {
            self.idle_withheld = true;
            return;
        }
        self.idle_withheld = false;
        self.emit(t::IdleData { aborted: aborted.then_some(true), mode: Some(self.view.settings.mode) });
    }

    /// A background agent ended without a notice to answer: the idle it held back goes out
    /// once nothing else runs.
    fn background_settled(&mut self) {
        if !self.idle_withheld || self.batch.is_some() || self.handle.tasks().any_running() {
            return;
        }
        self.idle_withheld = false;
        self.emit(t::IdleData { aborted: None, mode: Some(self.view.settings.mode) });
    }
}

/// A selected agent's own MCP servers, and the configuration they were started with.
struct SelectedAgentServers {
    agent: String,
    config: serde_json::Map<String, serde_json::Value>,
    servers: crate::subagent::servers::AgentServers,
}

impl Actor {
    /// The host of the selected agent's own MCP servers, started when a run first needs them;
    /// servers of an agent no longer selected (or changed) stop.
    fn selected_agent_servers(&mut self, ctx: &RunCtx) -> Option<mcp_client::McpHost> {
        let settings = &self.view.settings;
        let wanted = settings
            .selected_agent
            .as_ref()
            .and_then(|a| a.mcp_servers.as_ref().filter(|m| !m.is_empty()).map(|m| (a.name.clone(), m.clone())));
        let Some((agent, config)) = wanted else {
            self.agent_servers = None;
            return None;
        };
        let current = self.agent_servers.as_ref().is_some_and(|s| s.agent == agent && s.config == config);
        if !current {
            let servers = crate::subagent::servers::AgentServers::start(ctx, &config, settings.cwd.clone());
            self.agent_servers = Some(SelectedAgentServers { agent, config, servers });
        }
        self.agent_servers.as_ref().map(|s| s.servers.host().clone())
    }

    /// What a compaction started here summarizes for: the session's next model call.
    fn call_parts(&self) -> (String, llm_providers::ToolSet, crate::byok::Route, u64) {
        let settings = &self.view.settings;
        let cwd = settings.cwd.to_string_lossy().to_string();
        let system = crate::system_prompt::build(settings.system_message.as_ref(), settings.prompt_vars(&cwd));
        let tools = llm_providers::ToolSet::new(crate::dispatch::tool_specs(&self.deps, settings, self.handle.mcp()));
        let route = self.route_for(&settings.model);
        let limit = route.prompt_limit.unwrap_or_else(|| self.deps.context_window(&settings.model));
        (system, tools, route, limit)
    }

    /// Who serves a call on `model` with the session's providers.
    fn route_for(&self, model: &str) -> crate::byok::Route {
        crate::byok::route(
            &self.view.settings.providers,
            model,
            &crate::byok::RouteCtx {
                default_client: &self.deps.model,
                http: &self.deps.http,
                emitter: self.handle.emitter_arc(),
                session_id: self.handle.id(),
                github_token: self.view.settings.github_token.as_ref(),
            },
        )
    }

    /// Starts the compaction a client asked for once the conversation is home and no other
    /// compaction is under way.
    fn start_deferred_compaction(&mut self) {
        let Some(conv) = self.conv.as_mut() else { return };
        if conv.compaction.is_some() {
            return;
        }
        let Some(req) = self.deferred_compaction.take() else { return };
        let (system, tools, route, token_limit) = self.call_parts();
        let interaction_id = uuid::Uuid::new_v4().to_string();
        let Some(conv) = self.conv.as_mut() else { return };
        let shape = compaction::CallShape {
            system: &system,
            tools: &tools,
            route: &route,
            token_limit,
            model: &self.view.settings.model,
            interaction_id: &interaction_id,
        };
        if compaction::nothing_to_compact(conv) {
            compaction::nothing(&self.handle, &shape, conv, req);
        } else {
            compaction::start(&self.deps, compaction::Owner::session(&self.handle), conv, &shape, req);
        }
    }

    async fn name(&mut self, op: crate::handle::NameOp) -> Result<crate::handle::NameResult, String> {
        use crate::handle::{NameOp, NameResult};
        let (name, user_named) = match op {
            NameOp::Get => {
                let title = self.conv.as_ref().and_then(|c| c.title.clone());
                return Ok(NameResult::Name(self.view.name.clone().or(title)));
            }
            NameOp::Set(name) => {
                // Surrounding white space is dropped rather than refused (as Skipper always did).
                let name = name.trim().to_string();
                store::check_session_name(&name)?;
                (name, true)
            }
            NameOp::SetAuto(summary) => {
                let summary = summary.trim().to_string();
                if summary.is_empty() || self.view.user_named {
                    return Ok(NameResult::Applied(false));
                }
                (summary, false)
            }
        };
        Arc::make_mut(&mut self.view).name = Some(name.clone());
        Arc::make_mut(&mut self.view).user_named |= user_named;
        self.publish();
        self.emit(t::TitleChangedData { title: name.clone() });
        if let Err(e) = self.deps.index.rename(self.handle.id(), &name).await {
            tracing::warn!(session = %self.handle.id(), error = %e, "index update failed");
        }
        let user_named = self.view.user_named;
        crate::workspace_yaml::write_workspace_yaml_named(
            &self.deps,
            &self.handle,
            &self.view.settings,
            Some(&name),
            user_named,
        )
        .await;
        Ok(NameResult::Applied(true))
    }

    fn update_options(&mut self, p: crate::handle::OptionsPatch) {
        let s = &mut Arc::make_mut(&mut self.view).settings;
        let model_change = p.model.filter(|m| *m != s.model).map(|m| (std::mem::replace(&mut s.model, m.clone()), m));
        if p.reasoning_effort.is_some() {
            s.reasoning_effort = p.reasoning_effort.clone();
        }
        if let Some(c) = p.client_name {
            s.client_name = c;
        }
        let cwd_changed = p.working_directory.filter(|d| *d != s.cwd).map(|d| s.cwd = d).is_some();
        if let Some(v) = p.streaming {
            s.streaming = v;
        }
        if p.available_tools.is_some() {
            s.available_tools = p.available_tools;
        }
        if let Some(t) = p.excluded_tools {
            s.excluded_tools = t;
        }
        if let Some(disabled) = p.ask_user_disabled {
            s.request_user_input = !disabled;
        }
        if let Some(skip) = p.skip_custom_instructions {
            s.skip_custom_instructions = skip;
        }
        if p.max_ai_credits.is_some() {
            s.max_ai_credits = p.max_ai_credits;
        }
        if let Some(n) = p.autopilot_max_continues {
            s.autopilot_max_continues = n;
        }
        if cwd_changed {
            s.config = self.deps.config_scope(&s.cwd);
            s.custom_instructions = s
                .config
                .reading(|| agent_config::instructions::load(&s.cwd, &s.config.home, &s.instruction_directories));
        }
        let context = crate::resume::cwd_context(s);
        self.publish();
        if let Some((previous, new)) = model_change {
            self.emit(t::ModelChangeData {
                previous_model: Some(previous),
                new_model: new,
                reasoning_effort: p.reasoning_effort,
                source: Some(t::ModelChangeSource::Sdk),
                ..Default::default()
            });
        }
        if cwd_changed {
            self.emit(context);
        }
    }

    /// Cuts the log before `event_id` and rebuilds the model's context from what is left.
    fn truncate(&mut self, event_id: &str) -> Result<t::HistoryTruncateResult, String> {
        let Some(conv) = self.conv.as_mut() else {
            return Err("Cannot truncate history while the session is processing a message.".into());
        };
        let cut = self.handle.emitter().truncate_log(event_id).map_err(|e| e.to_string())?;
        let Some((kept, removed)) = cut else { return Err(format!("Event {event_id} not found in session")) };
        conv.drop_compaction(&self.handle);
        let restored = crate::history::replay(&kept);
        let mut fresh = Conversation::new(restored.messages, restored.title);
        fresh.last_system = restored.last_system;
        fresh.prompts = restored.prompts;
        *conv = fresh;
        self.parked = false;
        self.emit_ephemeral(t::SnapshotRewindData {
            up_to_event_id: event_id.to_string(),
            events_removed: removed as u64,
        });
        Ok(t::HistoryTruncateResult {
            events_removed: removed as u64,
            checkpoint_cleanup_failed: Some(false),
            checkpoint_cleanup_error: None,
        })
    }

    /// Asks the model for a handoff summary on its own task; the session goes on meanwhile.
    fn handoff(&self, reply: tokio::sync::oneshot::Sender<Result<String, String>>) {
        let history = self.conv.as_ref().map_or_else(|| self.last_history.clone(), |c| c.history.clone());
        if history.is_empty() {
            let _ = reply.send(Ok(String::new()));
            return;
        }
        let (_, _, route, _) = self.call_parts();
        let req = compaction::handoff_request(history, &route.model, self.handle.id());
        tokio::spawn(async move {
            let _ = reply.send(compaction::handoff(route.client, req).await);
        });
    }
}

impl Actor {
    fn ephemeral_query(&self, question: String, reply: tokio::sync::oneshot::Sender<Result<String, String>>) {
        let history = self.conv.as_ref().map_or_else(|| self.last_history.clone(), |c| c.history.clone());
        let (system, _, route, _) = self.call_parts();
        let req = crate::ephemeral_query::request(history, system, &route.model, self.handle.id(), question);
        tokio::spawn(async move {
            let _ = reply.send(compaction::handoff(route.client, req).await);
        });
    }
}

/// The current run's completion, or never when nothing runs.
async fn poll_run(running: &mut Option<RunFuture>) -> RunDone {
    match running {
        Some(fut) => fut.await,
        None => std::future::pending().await,
    }
}
