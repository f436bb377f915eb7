//! One session: the shared handle other tasks use, and the actor task that owns the
//! conversation and runs the loop.
//!
//! Inputs that make a session do work: a queued message ([`SessionShared::enqueue`]), an abort
//! ([`SessionShared::abort`]), an answer to a pending request ([`SessionShared::resolve_pending`]),
//! and shutdown. The actor is the only owner of the conversation; everything else here is
//! small shared state behind short, synchronous locks.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use llm_providers::Message;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

use crate::emitter::Emitter;
use crate::settings::SessionSettings;
use crate::{lock, Deps};

/// A user message waiting to be processed.
#[derive(Debug, Clone)]
pub struct QueuedMessage {
    pub message_id: String,
    pub prompt: String,
    pub attachments: Vec<Value>,
    pub agent_mode: Option<String>,
    pub request_headers: Vec<(String, String)>,
    /// `idle`, `queued` or `steering`.
    pub delivery: &'static str,
}

/// What a pending client request is waiting for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PendingKind {
    /// Carries the user-facing prompt, for `session.permissions.pendingRequests`.
    Permission(Value),
    ExternalTool,
}

#[derive(Default)]
struct RunControl {
    queue: VecDeque<QueuedMessage>,
    steering: Vec<QueuedMessage>,
    running: bool,
    cancel: CancellationToken,
    aborted: bool,
}

pub struct SessionShared {
    pub id: String,
    pub emitter: Emitter,
    pub settings: Mutex<SessionSettings>,
    pub workspace_path: PathBuf,
    pub start_time: String,
    pub shells: Arc<tools::ShellManager>,
    control: Mutex<RunControl>,
    pending: Mutex<HashMap<String, (PendingKind, oneshot::Sender<Value>)>>,
    wake: Notify,
    shutdown: CancellationToken,
    /// Keys approved "for the session" (see `permission::approval_keys`).
    approvals: Mutex<Vec<String>>,
    /// The user rejected a tool call in the current turn: the run ends after it.
    user_rejected: std::sync::atomic::AtomicBool,
}

impl SessionShared {
    pub(crate) fn new(
        id: String,
        emitter: Emitter,
        settings: SessionSettings,
        workspace_path: PathBuf,
        start_time: String,
    ) -> Self {
        Self {
            id,
            emitter,
            settings: Mutex::new(settings),
            workspace_path,
            start_time,
            shells: Arc::new(tools::ShellManager::default()),
            control: Mutex::new(RunControl::default()),
            pending: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            shutdown: CancellationToken::new(),
            approvals: Mutex::new(Vec::new()),
            user_rejected: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn settings(&self) -> SessionSettings {
        lock(&self.settings).clone()
    }

    /// Reads part of the settings without cloning all of them.
    pub fn read_settings<R>(&self, f: impl FnOnce(&SessionSettings) -> R) -> R {
        f(&lock(&self.settings))
    }

    pub fn update_settings(&self, f: impl FnOnce(&mut SessionSettings)) {
        f(&mut lock(&self.settings));
    }

    pub fn is_running(&self) -> bool {
        lock(&self.control).running
    }

    /// Queues a message. `immediate` while a run is active steers it into the next model call.
    pub fn enqueue(&self, mut msg: QueuedMessage, immediate: bool) {
        let mut c = lock(&self.control);
        if c.running {
            if immediate {
                msg.delivery = "steering";
                c.steering.push(msg);
            } else {
                msg.delivery = "queued";
                c.queue.push_back(msg);
            }
            self.emitter.emit("pending_messages.modified", json!({}), true);
        } else {
            msg.delivery = "idle";
            c.queue.push_back(msg);
            self.emitter.emit("pending_messages.modified", json!({}), true);
            self.wake.notify_one();
        }
    }

    /// Aborts the running loop. Returns whether anything was running.
    pub fn abort(&self, reason: &str) -> bool {
        let mut c = lock(&self.control);
        if !c.running {
            return false;
        }
        c.aborted = true;
        let dropped = c.queue.len() + c.steering.len();
        c.queue.clear();
        c.steering.clear();
        self.emitter.emit("abort", json!({"reason": reason}), false);
        if dropped > 0 {
            self.emitter.emit("pending_messages.modified", json!({}), true);
        }
        c.cancel.cancel();
        true
    }

    pub(crate) fn take_steering(&self) -> Vec<QueuedMessage> {
        std::mem::take(&mut lock(&self.control).steering)
    }

    /// Registers a pending client request (permission, external tool) by id.
    pub(crate) fn register_pending(&self, request_id: &str, kind: PendingKind) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(request_id.to_string(), (kind, tx));
        rx
    }

    /// The last client went away: nobody can answer what is pending, so answer it ourselves
    /// rather than leave the run waiting forever.
    pub fn fail_all_pending(&self) {
        let pending: Vec<_> = lock(&self.pending).drain().collect();
        for (_, (kind, tx)) in pending {
            let answer = match kind {
                PendingKind::Permission(_) => json!({"kind": "user-not-available"}),
                PendingKind::ExternalTool => json!({"error": "The client that handles this tool disconnected"}),
            };
            let _ = tx.send(answer);
        }
    }

    pub(crate) fn forget_pending(&self, request_id: &str) {
        lock(&self.pending).remove(request_id);
    }

    /// Permission requests still waiting for an answer: `[{requestId, request}]`.
    pub fn pending_permission_requests(&self) -> Vec<Value> {
        lock(&self.pending)
            .iter()
            .filter_map(|(id, (kind, _))| match kind {
                PendingKind::Permission(prompt) => Some(json!({"requestId": id, "request": prompt})),
                PendingKind::ExternalTool => None,
            })
            .collect()
    }

    /// Answers a pending request. Returns `false` when no such request is waiting (unknown id,
    /// or already answered by another client).
    pub fn resolve_pending(&self, request_id: &str, value: Value) -> bool {
        match lock(&self.pending).remove(request_id) {
            Some((_, tx)) => tx.send(value).is_ok(),
            None => false,
        }
    }

    pub(crate) fn note_user_rejection(&self) {
        self.user_rejected.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the user rejected a call since the last check (and clears it).
    pub(crate) fn take_user_rejection(&self) -> bool {
        self.user_rejected.swap(false, std::sync::atomic::Ordering::AcqRel)
    }

    pub(crate) fn is_approved_for_session(&self, keys: &[String]) -> bool {
        let approvals = lock(&self.approvals);
        !keys.is_empty() && keys.iter().all(|k| approvals.contains(k))
    }

    pub(crate) fn approve_for_session(&self, keys: Vec<String>) {
        let mut approvals = lock(&self.approvals);
        for k in keys {
            if !approvals.contains(&k) {
                approvals.push(k);
            }
        }
    }

    /// Stops the actor; running work is cancelled.
    pub fn shutdown(&self) {
        lock(&self.control).cancel.cancel();
        self.shutdown.cancel();
        self.shells.kill_all();
    }
}

/// The conversation the actor owns.
pub(crate) struct Conversation {
    pub messages: Vec<Message>,
    pub title: Option<String>,
}

/// The session actor: waits for queued messages, runs them in order, and emits
/// `session.idle` after every run, whatever happened inside it.
pub(crate) async fn run_actor(shared: Arc<SessionShared>, mut conv: Conversation, deps: Arc<Deps>) {
    loop {
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = shared.shutdown.cancelled() => break,
        }
        let cancel = {
            let mut c = lock(&shared.control);
            if c.queue.is_empty() {
                continue;
            }
            c.running = true;
            c.aborted = false;
            c.cancel = CancellationToken::new();
            c.cancel.clone()
        };
        loop {
            let next = {
                let mut c = lock(&shared.control);
                let next = if cancel.is_cancelled() { None } else { c.queue.pop_front() };
                if next.is_none() {
                    c.running = false;
                }
                next
            };
            let Some(msg) = next else { break };
            let message_id = msg.message_id.clone();
            let run = crate::run::run_message(&shared, &mut conv, &deps, msg, cancel.clone());
            let outcome = AssertUnwindSafe(run).catch_unwind().await;
            if shared.settings().mode == "autopilot" {
                let reason = match &outcome {
                    Ok(r) => *r,
                    Err(_) => crate::autopilot::StopReason::Error,
                };
                // Python's send_and_wait completes on this in autopilot; it must precede idle.
                shared.emitter.emit(
                    "session.autopilot_stopped",
                    json!({"reason": reason.as_str(), "requestId": message_id}),
                    true,
                );
            }
            if let Err(panic) = outcome {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                tracing::error!(session = %shared.id, panic = %what, "run panicked");
                crate::run::repair(&mut conv.messages);
                shared.emitter.emit(
                    "session.error",
                    json!({"errorType": "internal", "message": format!("Internal error: {what}")}),
                    false,
                );
            }
        }
        let aborted = {
            let mut c = lock(&shared.control);
            c.running = false;
            std::mem::take(&mut c.aborted)
        };
        let mode = shared.settings().mode;
        let mut data = json!({"mode": mode});
        if aborted {
            data["aborted"] = json!(true);
        }
        // IdleData forbids extra fields (the schema wins over a `backgroundTasks` list), so
        // running background shells are signalled with `session.background_tasks_changed`.
        if !shared.shells.running_shells().is_empty() {
            shared.emitter.emit("session.background_tasks_changed", json!({}), true);
        }
        if let Err(e) = deps.index.touch(&shared.id, &crate::now()).await {
            tracing::warn!(session = %shared.id, error = %e, "index touch failed");
        }
        shared.emitter.emit("session.idle", data, true);
    }
    shared.shells.kill_all();
}
