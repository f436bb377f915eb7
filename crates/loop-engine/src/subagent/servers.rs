//! A custom agent's own MCP servers (its `mcpServers`): started on a host of their own when the
//! agent first runs, their tools offered to that agent only. They report through the session's
//! events and ask the session's clients for samples as the session's servers do; they stop
//! when the agent's conversation ends.

use std::path::PathBuf;

use mcp_client::McpHost;
use serde_json::{Map, Value};

use crate::run::RunCtx;

pub(super) struct AgentServers {
    host: McpHost,
}

impl AgentServers {
    /// Starts the servers in the background; returns at once.
    pub(super) fn start(ctx: &RunCtx, servers: &Map<String, Value>, cwd: PathBuf) -> Self {
        let host = McpHost::new(cwd, ctx.deps.tool_env.clone());
        crate::mcp::attach(&host, ctx.handle.emitter_arc().clone());
        crate::mcp_sampling::attach_to(&host, &ctx.handle);
        host.configure(servers, &[]);
        Self { host }
    }

    pub(super) fn host(&self) -> &McpHost {
        &self.host
    }
}

impl Drop for AgentServers {
    fn drop(&mut self) {
        self.host.shutdown();
    }
}
