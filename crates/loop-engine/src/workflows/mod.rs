//! Workflows ("factories" in the SDKs' names): programs an extension declares when it joins a
//! session (`workflows` / `factories` on its `session.resume`), which the session runs on
//! request (`session.workflow.run`). A run is the session's: it has an id, a status, attempts
//! (a failed, halted or paused run is resumed under the same id), progress lines and phases the
//! body reports, a journal of step results a resumed attempt reuses, and the sub-agents it
//! started. The body itself runs in the extension, which the caller asks (`workflow.execute`)
//! outside this component's lock; this component only keeps the state and says what changed.
//!
//! Each attempt has its own execution token: what the body sends after its attempt ended
//! (paused, cancelled, resumed since) is refused.

pub mod shape;

use std::collections::BTreeMap;
use std::sync::Mutex;

use protocol::generated::types as t;
use protocol::methods::{SessionConfigParams, WorkflowMeta};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Which names the extension and its clients use: the original's (`workflow.*`) or the SDKs'
/// (`factory.*`). Runs keep the family of the workflow they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Workflow,
    Factory,
}

impl Family {
    /// The request that runs a body, sent to the declaring client.
    pub fn execute_method(self) -> &'static str {
        match self {
            Family::Workflow => "workflow.execute",
            Family::Factory => "factory.execute",
        }
    }

    pub fn abort_method(self) -> &'static str {
        match self {
            Family::Workflow => "workflow.abort",
            Family::Factory => "factory.abort",
        }
    }

    /// The prefix of the run events this family's clients listen for.
    pub fn event_prefix(self) -> &'static str {
        match self {
            Family::Workflow => "workflow",
            Family::Factory => "factory",
        }
    }
}

/// Why a workflow request is refused; the texts and codes are the original's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkflowError {
    #[error("No workflow registered with name \"{0}\"")]
    UnknownWorkflow(String),
    #[error("Workflow \"{name}\" arguments are invalid: {why}")]
    InvalidArgs { name: String, why: String },
    #[error("Workflow run \"{0}\" was not found")]
    NotFound(String),
    /// `resume` of an unknown run (its code is `not_found`).
    #[error("Workflow run \"{0}\" was not found")]
    ResumeNotFound(String),
    #[error("No active workflow run found with id \"{0}\"")]
    NotActive(String),
    #[error("Workflow run \"{id}\" with status \"{status}\" cannot be resumed")]
    NonResumable { id: String, status: String },
    #[error("Workflow run \"{id}\" with status \"{status}\" is already active")]
    AlreadyActive { id: String, status: String },
}

impl WorkflowError {
    /// The error's `data` as the original sends it.
    pub fn data(&self) -> Value {
        match self {
            WorkflowError::UnknownWorkflow(name) => json!({"name": name, "code": "workflow_not_found"}),
            WorkflowError::InvalidArgs { name, why } => {
                json!({"name": name, "validationError": why, "code": "workflow_invalid_args"})
            }
            WorkflowError::NotFound(id) | WorkflowError::NotActive(id) => {
                json!({"runId": id, "code": "workflow_run_not_found"})
            }
            WorkflowError::ResumeNotFound(_) => json!({"code": "not_found"}),
            WorkflowError::NonResumable { .. } => json!({"code": "non_resumable"}),
            WorkflowError::AlreadyActive { .. } => json!({"code": "already_active"}),
        }
    }
}

/// What the caller sends the declaring client to run one attempt's body.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub client: u64,
    pub family: Family,
    pub name: String,
    pub run_id: String,
    pub token: String,
    pub args: Value,
    pub attempt: u64,
    /// The run's revision when the attempt began.
    pub revision: u64,
    /// Cancelled when the attempt ends (paused, cancelled): its agents stop with it.
    pub cancel: CancellationToken,
}

/// How an attempt ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    Completed(Option<Value>),
    Failed(String),
    /// The declaring client went away mid-body.
    Disconnected,
}

/// What a run's settling tells the session (the `run_settled` event, the notice).
#[derive(Debug, Clone)]
pub struct Settled {
    pub run_id: String,
    pub name: String,
    pub family: Family,
    pub status: t::WorkflowRunStatus,
    pub attempt: u64,
    pub subagents: u64,
    pub elapsed_ms: i64,
    pub revision: u64,
    pub result_preview: Option<String>,
    pub failure_type: Option<String>,
    pub pause_info: Option<t::WorkflowPauseInfo>,
    /// The originating session is to be told (`notifyOnComplete`, on unless turned off).
    pub notify: bool,
}

#[derive(Debug)]
struct Phase {
    title: String,
    detail: Option<String>,
    status: t::WorkflowPhaseStatus,
    last_attempt: u64,
    entries: u64,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    active_ms: i64,
    entered_at: Option<i64>,
    agents: u64,
}

impl Phase {
    /// A phase not entered yet.
    fn new(title: String, detail: Option<String>) -> Self {
        Phase {
            title,
            detail,
            status: t::WorkflowPhaseStatus::Pending,
            last_attempt: 0,
            entries: 0,
            started_at: None,
            completed_at: None,
            active_ms: 0,
            entered_at: None,
            agents: 0,
        }
    }

    /// The body leaves the phase at `now`: its time stops; it is done when `completed`.
    fn leave(&mut self, now: i64, completed: bool) {
        self.active_ms += self.entered_at.take().map_or(0, |e| (now - e).max(0));
        if completed {
            self.status = t::WorkflowPhaseStatus::Completed;
            self.completed_at = Some(now);
        }
    }
}

#[derive(Debug)]
struct Run {
    id: String,
    seq: i64,
    name: String,
    description: String,
    family: Family,
    client: u64,
    args: Value,
    limits: t::WorkflowDeclaredLimits,
    /// Phases the workflow declared (those the body reports beyond them come after).
    declared_phases: u64,
    status: t::WorkflowRunStatus,
    attempt: u64,
    token: String,
    revision: u64,
    created_at: i64,
    started_at: Option<i64>,
    updated_at: i64,
    completed_at: Option<i64>,
    /// Active time of the attempts that ended; the running one's starts at `segment_start`.
    active_ms: i64,
    segment_start: Option<i64>,
    result: Option<Value>,
    error: Option<String>,
    reason: Option<String>,
    failure: Option<t::WorkflowRunFailure>,
    pause_info: Option<t::WorkflowPauseInfo>,
    phases: Vec<Phase>,
    current_phase: Option<usize>,
    progress: Vec<t::WorkflowProgressLine>,
    journal: BTreeMap<String, Value>,
    agents: Vec<t::WorkflowAgentSummary>,
    notify: bool,
    cancel: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    /// What each client declared, by client id, in declaration order.
    declared: BTreeMap<u64, (Family, Vec<WorkflowMeta>)>,
    runs: Vec<Run>,
}

#[derive(Debug, Default)]
pub struct Workflows {
    state: Mutex<State>,
}

/// Milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn is_active(status: &t::WorkflowRunStatus) -> bool {
    matches!(status, t::WorkflowRunStatus::Running | t::WorkflowRunStatus::Pending)
}

/// A preview of a completed result a prompt may show (the notice, the run's terminal).
fn preview(result: &Option<Value>) -> Option<String> {
    let text = result.as_ref()?.to_string();
    Some(if text.chars().count() > 256 { text.chars().take(253).collect::<String>() + "..." } else { text })
}

impl Run {
    fn elapsed(&self, now: i64) -> i64 {
        self.active_ms + self.segment_start.map_or(0, |s| (now - s).max(0))
    }

    fn touch(&mut self) -> u64 {
        self.revision += 1;
        self.updated_at = now_ms();
        self.revision
    }

    fn attempt_of(&self) -> Attempt {
        Attempt {
            client: self.client,
            family: self.family,
            name: self.name.clone(),
            run_id: self.id.clone(),
            token: self.token.clone(),
            args: self.args.clone(),
            attempt: self.attempt,
            revision: self.revision,
            cancel: self.cancel.clone(),
        }
    }

    /// A new attempt: a fresh token, running from now.
    fn begin_attempt(&mut self) -> Attempt {
        let now = now_ms();
        self.attempt += 1;
        self.token = uuid::Uuid::new_v4().to_string();
        self.status = t::WorkflowRunStatus::Running;
        self.started_at.get_or_insert(now);
        self.segment_start = Some(now);
        self.completed_at = None;
        (self.result, self.error, self.reason, self.failure, self.pause_info) = (None, None, None, None, None);
        self.cancel = CancellationToken::new();
        self.touch();
        self.attempt_of()
    }

    /// The attempt ends with `status`: time stops, the running phase closes, agents stop.
    fn end_attempt(&mut self, status: t::WorkflowRunStatus) {
        let now = now_ms();
        self.active_ms = self.elapsed(now);
        self.segment_start = None;
        if let Some(i) = self.current_phase {
            self.phases[i].leave(now, status == t::WorkflowRunStatus::Completed);
        }
        if status == t::WorkflowRunStatus::Completed {
            self.current_phase = None;
        }
        self.status = status;
        self.completed_at = Some(now);
        self.cancel.cancel();
        self.touch();
    }

    fn settled(&self) -> Settled {
        Settled {
            run_id: self.id.clone(),
            name: self.name.clone(),
            family: self.family,
            status: self.status,
            attempt: self.attempt,
            subagents: self.agents.len() as u64,
            elapsed_ms: self.active_ms,
            revision: self.revision,
            result_preview: preview(&self.result),
            failure_type: self.failure.as_ref().map(|f| f.tag().to_string()),
            pause_info: self.pause_info.clone(),
            notify: self.notify,
        }
    }

    /// The journal and progress a stopped run keeps, as its envelope shows them.
    fn snapshot(&self) -> Value {
        let journal: Vec<Value> = self.journal.iter().map(|(k, v)| json!({"key": k, "resultJson": v})).collect();
        json!({"journal": journal, "progress": self.progress})
    }

    fn envelope(&self) -> t::WorkflowRunResult {
        let mut e = t::WorkflowRunResult::new(self.id.clone(), self.status);
        e.attempt = Some(self.attempt).filter(|a| *a > 0);
        e.result = self.result.clone().filter(|_| self.status == t::WorkflowRunStatus::Completed);
        e.error = self.error.clone();
        e.reason = self.reason.clone();
        e.failure = self.failure.clone();
        e.pause_info = self.pause_info.clone();
        if matches!(
            self.status,
            t::WorkflowRunStatus::Paused
                | t::WorkflowRunStatus::Cancelled
                | t::WorkflowRunStatus::Halted
                | t::WorkflowRunStatus::Error
        ) {
            e.snapshot = Some(self.snapshot());
        }
        e
    }

    fn can_resume(&self) -> bool {
        matches!(self.status, t::WorkflowRunStatus::Error | t::WorkflowRunStatus::Halted | t::WorkflowRunStatus::Paused)
    }

    fn terminal(&self) -> Option<t::WorkflowRunTerminal> {
        if is_active(&self.status) {
            return None;
        }
        Some(t::WorkflowRunTerminal {
            reason: self.reason.clone(),
            failure: self.failure.clone(),
            error: self.error.clone(),
            result_preview: preview(&self.result).filter(|_| self.status == t::WorkflowRunStatus::Completed),
            pause_info: self.pause_info.clone(),
        })
    }

    fn summary(&self, now: i64) -> t::WorkflowRunSummary {
        let live = self.agents.iter().filter(|a| a.status == "running").count() as u64;
        t::WorkflowRunSummary {
            run_id: self.id.clone(),
            workflow_name: self.name.clone(),
            description: self.description.clone(),
            status: self.status,
            revision: self.revision as i64,
            created_at: self.created_at,
            started_at: self.started_at,
            updated_at: self.updated_at,
            completed_at: self.completed_at,
            current_phase: self
                .current_phase
                .map(|i| t::WorkflowCurrentPhase { id: format!("p{i}"), ordinal: Some(i as u64) }),
            declared_phase_count: self.declared_phases,
            live_agent_count: live,
            total_spawned_agent_count: self.agents.len() as u64,
            consumed: t::WorkflowRunConsumed {
                active_ms: self.elapsed(now),
                subagents: self.agents.len() as u64,
                nano_aiu: 0,
            },
            declared_limits: self.limits.clone(),
            approved: Some(self.limits.clone()),
            observed_at: now,
            active_segment_started_at: self.segment_start,
            terminal: self.terminal(),
            can_resume: self.can_resume(),
        }
    }

    fn phase_views(&self, now: i64) -> Vec<t::WorkflowPhaseObservation> {
        self.phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let current = p.entered_at.map_or(0, |e| (now - e).max(0));
                let mut o = t::WorkflowPhaseObservation::new(
                    format!("p{i}"),
                    Some(i as u64),
                    p.title.clone(),
                    p.status,
                    p.last_attempt,
                    p.entries,
                    p.active_ms + current,
                    current,
                    p.agents,
                    0,
                );
                o.detail = p.detail.clone();
                o.started_at = p.started_at;
                o.completed_at = p.completed_at;
                o
            })
            .collect()
    }

    fn progress_page(&self, after: Option<i64>, before: Option<i64>, limit: usize) -> t::WorkflowProgressPage {
        let matching: Vec<&t::WorkflowProgressLine> = self
            .progress
            .iter()
            .filter(|l| after.is_none_or(|a| (l.seq as i64) > a) && before.is_none_or(|b| (l.seq as i64) < b))
            .collect();
        // Backward paging keeps the newest records before the cursor; otherwise the oldest.
        let (skip, take) = if before.is_some() && after.is_none() {
            (matching.len().saturating_sub(limit), limit)
        } else {
            (0, limit)
        };
        let records: Vec<t::WorkflowProgressLine> =
            matching.iter().skip(skip).take(take).map(|l| (*l).clone()).collect();
        let oldest = records.first().map(|l| l.seq as i64);
        let newest = records.last().map(|l| l.seq as i64);
        t::WorkflowProgressPage {
            has_more_older: oldest.is_some_and(|o| self.progress.iter().any(|l| (l.seq as i64) < o)),
            has_more_newer: newest.is_some_and(|n| self.progress.iter().any(|l| (l.seq as i64) > n)),
            records,
            oldest_seq: oldest,
            newest_seq: newest,
            revision: self.revision,
        }
    }
}

impl Workflows {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records (or replaces) what a client declares, from its create/resume params.
    pub fn join(&self, client: u64, params: &SessionConfigParams) {
        let mut s = self.lock();
        let declared = match (&params.workflows, &params.factories) {
            (Some(w), _) if !w.is_empty() => Some((Family::Workflow, w.clone())),
            (_, Some(f)) if !f.is_empty() => Some((Family::Factory, f.clone())),
            _ => None,
        };
        match declared {
            Some(d) => s.declared.insert(client, d),
            None => s.declared.remove(&client),
        };
    }

    /// A client left: what it declared goes (its running bodies fail on their own).
    pub fn leave(&self, client: u64) {
        self.lock().declared.remove(&client);
    }

    /// Whether any client declared a workflow.
    pub fn any_declared(&self) -> bool {
        !self.lock().declared.is_empty()
    }

    /// Starts a run of the workflow named `name`: checks the arguments, records the run as
    /// running and returns its envelope and the attempt to send.
    pub fn start(
        &self,
        name: &str,
        args: Value,
        notify: bool,
    ) -> Result<(t::WorkflowRunResult, Attempt), WorkflowError> {
        let mut s = self.lock();
        let (client, family, meta) = s
            .declared
            .iter()
            .find_map(|(c, (f, metas))| metas.iter().find(|m| m.name == name).map(|m| (*c, *f, m.clone())))
            .ok_or_else(|| WorkflowError::UnknownWorkflow(name.to_string()))?;
        if let Some(schema) = &meta.args_schema {
            shape::check(schema, &args).map_err(|why| WorkflowError::InvalidArgs { name: name.to_string(), why })?;
        }
        let now = now_ms();
        let phases = meta.phases.iter().map(|p| Phase::new(p.title.clone(), p.detail.clone())).collect();
        let seq = s.runs.last().map_or(1, |r| r.seq + 1);
        let mut run = Run {
            id: uuid::Uuid::new_v4().to_string(),
            seq,
            name: meta.name.clone(),
            description: meta.description.clone(),
            family,
            client,
            args,
            limits: meta.limits.clone().unwrap_or_default(),
            declared_phases: meta.phases.len() as u64,
            status: t::WorkflowRunStatus::Pending,
            attempt: 0,
            token: String::new(),
            revision: 0,
            created_at: now,
            started_at: None,
            updated_at: now,
            completed_at: None,
            active_ms: 0,
            segment_start: None,
            result: None,
            error: None,
            reason: None,
            failure: None,
            pause_info: None,
            phases,
            current_phase: None,
            progress: Vec::new(),
            journal: BTreeMap::new(),
            agents: Vec::new(),
            notify,
            cancel: CancellationToken::new(),
        };
        run.touch();
        let attempt = run.begin_attempt();
        let envelope = run.envelope();
        s.runs.push(run);
        Ok((envelope, attempt))
    }

    fn find<'a>(s: &'a mut State, id: &str) -> Result<&'a mut Run, WorkflowError> {
        s.runs.iter_mut().find(|r| r.id == id).ok_or_else(|| WorkflowError::NotFound(id.to_string()))
    }

    /// The run whose current attempt `token` names, if it is still running.
    fn active<'a>(s: &'a mut State, id: &str, token: &str) -> Result<&'a mut Run, WorkflowError> {
        s.runs
            .iter_mut()
            .find(|r| r.id == id && r.token == token && r.status == t::WorkflowRunStatus::Running)
            .ok_or_else(|| WorkflowError::NotActive(id.to_string()))
    }

    pub fn envelope(&self, id: &str) -> Result<t::WorkflowRunResult, WorkflowError> {
        Ok(Self::find(&mut self.lock(), id)?.envelope())
    }

    /// The run's family and its current revision (for events about it).
    pub fn family_of(&self, id: &str) -> Option<Family> {
        self.lock().runs.iter().find(|r| r.id == id).map(|r| r.family)
    }

    /// The attempt `token` ended with `outcome`; `None` when it had ended already (paused,
    /// cancelled, resumed since), whose late answer changes nothing.
    pub fn settle(&self, id: &str, token: &str, outcome: Outcome) -> Option<Settled> {
        let mut s = self.lock();
        let run = Self::active(&mut s, id, token).ok()?;
        let status = match outcome {
            Outcome::Completed(result) => {
                run.result = result.filter(|v| !v.is_null());
                t::WorkflowRunStatus::Completed
            }
            Outcome::Failed(error) => {
                run.error = Some(error);
                t::WorkflowRunStatus::Error
            }
            Outcome::Disconnected => {
                run.reason = Some("The workflow's extension disconnected while the run was executing".into());
                run.failure = Some(t::WorkflowRunFailure::WorkflowProviderDisconnected(
                    t::WorkflowRunFailureWorkflowProviderDisconnected { run_id: id.to_string() },
                ));
                t::WorkflowRunStatus::Halted
            }
        };
        run.end_attempt(status);
        Some(run.settled())
    }

    /// Pauses (`pause`) or cancels a run. A running one's attempt ends (the returned attempt is
    /// the one to abort); one that already ended is left as it is, but for a paused or failed
    /// run being cancelled.
    pub fn stop(
        &self,
        id: &str,
        pause: bool,
    ) -> Result<(t::WorkflowRunResult, Option<(Attempt, Settled)>), WorkflowError> {
        let mut s = self.lock();
        let run = Self::find(&mut s, id)?;
        let stoppable = if pause { is_active(&run.status) } else { is_active(&run.status) || run.can_resume() };
        if !stoppable {
            return Ok((run.envelope(), None));
        }
        let was_running = is_active(&run.status);
        let attempt = run.attempt_of();
        if pause {
            run.reason = Some("Workflow execution was paused by the user".into());
            run.pause_info = Some(t::WorkflowPauseInfo::User);
            run.end_attempt(t::WorkflowRunStatus::Paused);
        } else if was_running {
            run.reason = Some("Workflow execution was cancelled".into());
            run.end_attempt(t::WorkflowRunStatus::Cancelled);
        } else {
            run.reason = Some("Workflow execution was cancelled".into());
            (run.error, run.failure, run.pause_info) = (None, None, None);
            run.status = t::WorkflowRunStatus::Cancelled;
            run.touch();
        }
        let settled = run.settled();
        Ok((run.envelope(), Some((attempt, settled)).filter(|_| was_running)))
    }

    /// Starts the next attempt of a failed, halted or paused run.
    pub fn resume(&self, id: &str) -> Result<(String, Family, t::WorkflowRunResult, Attempt), WorkflowError> {
        let mut s = self.lock();
        let run = Self::find(&mut s, id).map_err(|_| WorkflowError::ResumeNotFound(id.to_string()))?;
        if is_active(&run.status) {
            return Err(WorkflowError::AlreadyActive { id: id.to_string(), status: run.status.as_str().into() });
        }
        if !run.can_resume() {
            return Err(WorkflowError::NonResumable { id: id.to_string(), status: run.status.as_str().into() });
        }
        let attempt = run.begin_attempt();
        Ok((run.name.clone(), run.family, run.envelope(), attempt))
    }

    /// Progress lines from the body of the attempt `token` names; the run's new revision.
    pub fn log(&self, id: &str, token: &str, lines: &[t::WorkflowLogLine]) -> Result<u64, WorkflowError> {
        let mut s = self.lock();
        let run = Self::active(&mut s, id, token)?;
        let now = now_ms();
        for line in lines {
            if line.kind == t::WorkflowLogLineKind::Phase {
                enter_phase(run, &line.text, now);
            }
            let seq = run.progress.last().map_or(1, |l| l.seq + 1);
            run.progress.push(t::WorkflowProgressLine::new(
                seq,
                run.attempt,
                run.current_phase.map(|i| format!("p{i}")),
                now,
                line.kind,
                line.text.clone(),
            ));
        }
        Ok(run.touch())
    }

    pub fn journal_get(&self, id: &str, token: &str, key: &str) -> Result<Option<Value>, WorkflowError> {
        let mut s = self.lock();
        Ok(Self::active(&mut s, id, token)?.journal.get(key).cloned())
    }

    pub fn journal_put(&self, id: &str, token: &str, key: &str, value: Value) -> Result<u64, WorkflowError> {
        let mut s = self.lock();
        let run = Self::active(&mut s, id, token)?;
        run.journal.insert(key.to_string(), value);
        Ok(run.touch())
    }

    /// A sub-agent of the attempt `token` names starts: recorded under the current phase; its
    /// id and the attempt's cancellation.
    pub fn agent_started(
        &self,
        id: &str,
        token: &str,
        plan: &crate::subagent::workflow_agent::Plan,
    ) -> Result<(String, CancellationToken, u64), WorkflowError> {
        let mut s = self.lock();
        let run = Self::active(&mut s, id, token)?;
        let agent_id = uuid::Uuid::new_v4().to_string();
        let phase_id = run.current_phase.map(|i| format!("p{i}"));
        if let Some(i) = run.current_phase {
            run.phases[i].agents += 1;
        }
        run.agents.push(t::WorkflowAgentSummary {
            agent_id: agent_id.clone(),
            tool_call_id: agent_id.clone(),
            run_id: id.to_string(),
            phase_id,
            label: plan.label.clone(),
            display_name: Some(plan.display_name.clone()),
            agent_type: plan.agent_type.clone(),
            status: "running".into(),
            requested_model: None,
            resolved_model: Some(plan.model.clone()),
            started_at: Some(now_ms()),
            completed_at: None,
            active_ms: 0,
            activity: None,
        });
        Ok((agent_id, run.cancel.clone(), run.touch()))
    }

    /// A sub-agent ended; the run's new revision.
    pub fn agent_finished(&self, id: &str, agent_id: &str, ok: bool) -> Option<u64> {
        let mut s = self.lock();
        let run = s.runs.iter_mut().find(|r| r.id == id)?;
        let agent = run.agents.iter_mut().find(|a| a.agent_id == agent_id)?;
        let now = now_ms();
        agent.status = if ok { "completed" } else { "failed" }.into();
        agent.completed_at = Some(now);
        agent.active_ms = agent.started_at.map_or(0, |s| (now - s).max(0));
        Some(run.touch())
    }

    /// A page of runs in creation order: the newest `limit` unless a cursor says otherwise.
    pub fn list(&self, after: Option<i64>, before: Option<i64>, limit: usize) -> t::WorkflowListRunsResult {
        let s = self.lock();
        let now = now_ms();
        let matching: Vec<&Run> =
            s.runs.iter().filter(|r| after.is_none_or(|a| r.seq > a) && before.is_none_or(|b| r.seq < b)).collect();
        let skip = if after.is_some() { 0 } else { matching.len().saturating_sub(limit) };
        let page: Vec<&Run> = matching.iter().skip(skip).take(limit).copied().collect();
        let newest = page.last().map(|r| r.seq);
        t::WorkflowListRunsResult {
            oldest_seq: page.first().map(|r| r.seq),
            newest_seq: newest,
            has_more_newer: Some(newest.is_some_and(|n| s.runs.iter().any(|r| r.seq > n))),
            omitted_older: Some(skip as u64),
            runs: page.iter().map(|r| r.summary(now)).collect(),
        }
    }

    pub fn detail(&self, id: &str) -> Result<t::WorkflowRunDetail, WorkflowError> {
        let mut s = self.lock();
        let run = Self::find(&mut s, id)?;
        let now = now_ms();
        let summary = run.summary(now);
        Ok(t::WorkflowRunDetail::new(
            summary.run_id,
            summary.workflow_name,
            summary.description,
            summary.status,
            summary.revision,
            summary.created_at,
            summary.started_at,
            summary.updated_at,
            summary.completed_at,
            summary.current_phase,
            summary.declared_phase_count,
            summary.live_agent_count,
            summary.total_spawned_agent_count,
            summary.consumed,
            summary.declared_limits,
            summary.approved,
            summary.observed_at,
            summary.active_segment_started_at,
            summary.terminal,
            run.can_resume(),
            run.phase_views(now),
            run.agents.clone(),
            run.progress_page(None, None, 200),
        ))
    }

    pub fn progress(
        &self,
        id: &str,
        phase: Option<&str>,
        after: Option<i64>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<t::WorkflowProgressPage, WorkflowError> {
        let mut s = self.lock();
        let run = Self::find(&mut s, id)?;
        let mut page = run.progress_page(after, before, limit);
        if let Some(phase) = phase {
            page.records.retain(|l| l.phase_id.as_deref() == Some(phase));
        }
        Ok(page)
    }
}

/// A `phase` line: the running phase ends and the named one (declared, or new) begins.
fn enter_phase(run: &mut Run, title: &str, now: i64) {
    if let Some(i) = run.current_phase {
        run.phases[i].leave(now, true);
    }
    let index = match run.phases.iter().position(|p| p.title == title) {
        Some(i) => i,
        None => {
            run.phases.push(Phase::new(title.to_string(), None));
            run.phases.len() - 1
        }
    };
    let phase = &mut run.phases[index];
    phase.status = t::WorkflowPhaseStatus::Active;
    phase.entries += 1;
    phase.last_attempt = run.attempt;
    phase.started_at.get_or_insert(now);
    phase.completed_at = None;
    phase.entered_at = Some(now);
    run.current_phase = Some(index);
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::methods::WorkflowPhaseMeta;

    fn declared(names: &[&str]) -> Workflows {
        let w = Workflows::default();
        let metas = names
            .iter()
            .map(|n| WorkflowMeta {
                name: n.to_string(),
                description: format!("{n} desc"),
                phases: vec![WorkflowPhaseMeta { title: "One".into(), detail: None }],
                args_schema: Some(json!({"type": "object"})),
                limits: None,
            })
            .collect();
        w.join(7, &SessionConfigParams { factories: Some(metas), ..Default::default() });
        w
    }

    #[test]
    fn a_run_goes_from_running_to_completed_once_and_its_late_answers_change_nothing() {
        let w = declared(&["echo"]);
        assert_eq!(w.start("nope", json!({}), true).unwrap_err(), WorkflowError::UnknownWorkflow("nope".into()));
        let bad = w.start("echo", json!([1]), true).unwrap_err();
        assert_eq!(bad.to_string(), "Workflow \"echo\" arguments are invalid: $ should be object but is array");
        let (envelope, attempt) = w.start("echo", json!({"a": 1}), true).unwrap();
        assert_eq!((envelope.status, envelope.attempt), (t::WorkflowRunStatus::Running, Some(1)));
        assert_eq!((attempt.client, attempt.family), (7, Family::Factory));
        w.log(
            &attempt.run_id,
            &attempt.token,
            &[t::WorkflowLogLine::new(0, t::WorkflowLogLineKind::Phase, "One".into())],
        )
        .unwrap();
        assert!(w.log(&attempt.run_id, "stale", &[]).is_err(), "another attempt's token is refused");
        let settled = w.settle(&attempt.run_id, &attempt.token, Outcome::Completed(Some(json!({"a": 1})))).unwrap();
        assert_eq!(
            (settled.status, settled.result_preview.as_deref()),
            (t::WorkflowRunStatus::Completed, Some("{\"a\":1}"))
        );
        assert!(w.settle(&attempt.run_id, &attempt.token, Outcome::Failed("late".into())).is_none());
        let done = w.envelope(&attempt.run_id).unwrap();
        assert_eq!((done.status, done.result), (t::WorkflowRunStatus::Completed, Some(json!({"a": 1}))));
        let detail = w.detail(&attempt.run_id).unwrap();
        assert_eq!(detail.phases[0].status, t::WorkflowPhaseStatus::Completed);
        assert_eq!(detail.progress.records.len(), 1);
        assert!(!detail.can_resume);
        let err = w.resume(&attempt.run_id).unwrap_err();
        assert_eq!(err.data()["code"], "non_resumable");
        assert_eq!(w.resume("x").unwrap_err().data()["code"], "not_found");
    }

    #[test]
    fn a_failed_or_paused_run_resumes_with_its_journal_under_a_new_token() {
        let w = declared(&["f"]);
        let (_, first) = w.start("f", json!({}), false).unwrap();
        w.journal_put(&first.run_id, &first.token, "k", json!(5)).unwrap();
        w.settle(&first.run_id, &first.token, Outcome::Failed("boom".into())).unwrap();
        assert_eq!(w.envelope(&first.run_id).unwrap().error.as_deref(), Some("boom"));
        let (name, _, envelope, second) = w.resume(&first.run_id).unwrap();
        assert_eq!((name.as_str(), envelope.attempt), ("f", Some(2)));
        assert_ne!(first.token, second.token);
        assert_eq!(w.journal_get(&second.run_id, &second.token, "k").unwrap(), Some(json!(5)));
        assert_eq!(w.resume(&first.run_id).unwrap_err().data()["code"], "already_active");
        let (paused, stopped) = w.stop(&first.run_id, true).unwrap();
        assert_eq!(paused.status, t::WorkflowRunStatus::Paused);
        assert!(stopped.is_some_and(|(a, _)| a.cancel.is_cancelled()), "the paused attempt's work is cancelled");
        let (cancelled, _) = w.stop(&first.run_id, false).unwrap();
        assert_eq!(cancelled.status, t::WorkflowRunStatus::Cancelled);
        assert_eq!(w.list(None, None, 200).runs.len(), 1);
    }
}
