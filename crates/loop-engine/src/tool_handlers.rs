//! The tools the engine runs itself, beside the `tools` crate's built-ins, the client's SDK
//! tools and MCP servers' tools: they need the session (its agents, its clients, its
//! database). Dispatch finds them by name in one registry.

use async_trait::async_trait;
use llm_providers::ToolCall;
use serde_json::Value;
use tools::ToolOutput;

use crate::run_ctx::RunCtx;
use crate::settings::SessionSettings;
use crate::subagent::agent_tools::{self, Caller};

/// One call, as a handler gets it.
pub(crate) struct Call<'a> {
    pub ctx: &'a RunCtx,
    pub call: &'a ToolCall,
    pub args: Value,
    pub settings: &'a SessionSettings,
}

impl Call<'_> {
    /// Who is calling: the session's agent, or one of its sub-agents.
    fn caller(&self) -> Caller<'_> {
        match self.ctx.scope.as_deref() {
            Some(scope) => Caller::Agent(&scope.agent_id),
            None => Caller::Session,
        }
    }
}

/// What a handler's call produced: the result, and text the model reads after the results (a
/// loaded skill's instructions).
pub(crate) struct Handled {
    pub output: ToolOutput,
    pub context: Option<String>,
}

impl From<ToolOutput> for Handled {
    fn from(output: ToolOutput) -> Self {
        Self { output, context: None }
    }
}

#[async_trait]
pub(crate) trait ToolHandler: Send + Sync {
    fn name(&self) -> &'static str;

    /// Whether the tool serves calls in this session now; a call it does not serve is one to
    /// an unknown tool.
    fn serves(&self, _ctx: &RunCtx) -> bool {
        true
    }

    async fn run(&self, call: Call<'_>) -> Handled;
}

/// The handler of a tool name, if the engine runs that tool itself.
pub(crate) fn handler(name: &str) -> Option<&'static dyn ToolHandler> {
    HANDLERS.iter().copied().find(|h| h.name() == name)
}

static HANDLERS: [&dyn ToolHandler; 9] =
    [&TaskComplete, &ExitPlanMode, &AskUser, &Task, &ReadAgent, &WriteAgent, &ListAgents, &Sql, &Skill];

struct TaskComplete;

#[async_trait]
impl ToolHandler for TaskComplete {
    fn name(&self) -> &'static str {
        crate::autopilot::TASK_COMPLETE
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        crate::autopilot::run_task_complete(&call.args).into()
    }
}

struct ExitPlanMode;

#[async_trait]
impl ToolHandler for ExitPlanMode {
    fn name(&self) -> &'static str {
        crate::exit_plan_mode::EXIT_PLAN_MODE
    }

    /// Only for a client that handles the request (the model is offered it only then).
    fn serves(&self, ctx: &RunCtx) -> bool {
        ctx.view().settings.request_exit_plan_mode
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        crate::exit_plan_mode::run(call.ctx, &call.args).await.into()
    }
}

struct AskUser;

#[async_trait]
impl ToolHandler for AskUser {
    fn name(&self) -> &'static str {
        crate::user_input::ASK_USER
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        crate::user_input::run(call.ctx, &call.call.id, &call.args).await.into()
    }
}

struct Task;

#[async_trait]
impl ToolHandler for Task {
    fn name(&self) -> &'static str {
        crate::subagent::TASK
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        crate::subagent::run_task(call.ctx, call.call, call.args, call.settings).await.into()
    }
}

struct ReadAgent;

#[async_trait]
impl ToolHandler for ReadAgent {
    fn name(&self) -> &'static str {
        agent_tools::READ_AGENT
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        agent_tools::read_agent(call.ctx.handle.tasks(), &call.args).await.into()
    }
}

struct WriteAgent;

#[async_trait]
impl ToolHandler for WriteAgent {
    fn name(&self) -> &'static str {
        agent_tools::WRITE_AGENT
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        agent_tools::write_agent(call.ctx.handle.tasks(), call.caller(), &call.args).into()
    }
}

struct ListAgents;

#[async_trait]
impl ToolHandler for ListAgents {
    fn name(&self) -> &'static str {
        agent_tools::LIST_AGENTS
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        agent_tools::list_agents(call.ctx.handle.tasks(), call.caller(), &call.args).into()
    }
}

struct Sql;

#[async_trait]
impl ToolHandler for Sql {
    fn name(&self) -> &'static str {
        crate::sql::SQL
    }

    async fn run(&self, call: Call<'_>) -> Handled {
        crate::sql::run(call.ctx, &call.args).await.into()
    }
}

struct Skill;

#[async_trait]
impl ToolHandler for Skill {
    fn name(&self) -> &'static str {
        crate::skill_tool::SKILL
    }

    /// The skill's instructions follow the results; `skill.invoked` says which was loaded.
    async fn run(&self, call: Call<'_>) -> Handled {
        let (output, loaded) = crate::skill_tool::run(&call.settings.skills, &call.args, &call.settings.model);
        let context = loaded.map(|l| {
            call.ctx.emitter().emit(l.event);
            l.context
        });
        Handled { output, context }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handler_is_found_by_its_name_and_no_other() {
        for h in HANDLERS {
            assert_eq!(handler(h.name()).map(|f| f.name()), Some(h.name()));
        }
        let names: std::collections::HashSet<_> = HANDLERS.iter().map(|h| h.name()).collect();
        assert_eq!(names.len(), HANDLERS.len(), "one handler a name");
        assert!(handler("view").is_none() && handler("bash").is_none(), "built-ins are the tools crate's");
    }
}
