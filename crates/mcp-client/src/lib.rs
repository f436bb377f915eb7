//! MCP servers for Skipper sessions, on the official Rust MCP SDK (`rmcp`): configuration as
//! the SDKs send it, a per-session [`McpHost`] that starts servers in the background, lists and
//! calls their tools, answers their sampling requests through the session, and kills their processes when it stops; [`render`] turns results into
//! what the model reads.
//!
//! Knows nothing of sessions, events or JSON-RPC: the host reports through a sink.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod config;
mod connect;
pub mod host;
pub mod oauth;
pub mod render;
pub mod sampling;
mod stderr_tail;
mod tls;

pub use config::{ConfigError, ServerConfig, Transport};
pub use host::{
    qualified_name, CallError, HostError, HostEvent, McpHost, McpTool, Resolver, ServerSummary, Source, Status,
};
pub use oauth::{AuthProvider, AuthReason, AuthReply, AuthRequest, Challenge, StaticClient};
pub use render::{render, Rendered};
pub use sampling::{SamplingHandler, SamplingRequest};
