//! A custom agent's own MCP servers (its `mcpServers`): started on a host of their own when the
//! agent first runs, their tools offered to that agent only. They report through the session's
//! events and ask the session's clients for samples as the session's servers do; they stop
//! when the agent's conversation ends. The agent selected for the session's own conversation
//! (`session.agent.select`) has its servers started the same way, kept by the session's actor
//! while the agent stays selected.

use std::path::PathBuf;

use mcp_client::McpHost;
use serde_json::{Map, Value};

use crate::run_ctx::RunCtx;

pub(crate) struct AgentServers {
    host: McpHost,
}

impl AgentServers {
    /// Starts the servers in the background; returns at once.
    pub(crate) fn start(ctx: &RunCtx, servers: &Map<String, Value>, cwd: PathBuf) -> Self {
        let host = McpHost::new(cwd, ctx.deps.tool_env.clone());
        crate::mcp::attach(&host, ctx.handle.emitter_arc().clone());
        crate::mcp_sampling::attach_to(&host, &ctx.handle);
        host.configure(servers, &[]);
        Self { host }
    }

    pub(crate) fn host(&self) -> &McpHost {
        &self.host
    }
}

impl Drop for AgentServers {
    fn drop(&mut self) {
        self.host.shutdown();
    }
}
