//! Method handlers, grouped by what they touch. Each is
//! `async fn(&Ctx, Params) -> Result<Result, RpcError>`, listed in [`crate::methods`].

pub mod account;
pub mod agents;
pub mod auth;
pub mod builtin_commands;
pub mod canvas;
pub mod client_metadata;
pub mod commands;
pub mod discovery;
pub mod fleet;
pub mod history;
pub mod inference;
pub mod mcp;
pub mod mcp_extras;
pub mod not_offered;
pub mod permission_paths;
pub mod plugins;
pub mod providers;
pub mod rewind;
pub mod sandbox;
pub mod server;
pub mod session;
pub mod session_extras;
pub mod session_fs;
pub mod session_services;
pub mod session_state;
pub mod sessions_admin;
pub mod shell;
pub mod tasks;
pub mod telemetry;
pub mod ui;
pub mod user_settings;
pub mod workspace_extras;
pub mod workspaces;
