//! Method handlers, grouped by what they touch. Each is
//! `async fn(&Ctx, Params) -> Result<Result, RpcError>`, listed in [`crate::methods`].

pub mod agents;
pub mod commands;
pub mod history;
pub mod inference;
pub mod mcp;
pub mod providers;
pub mod server;
pub mod session;
pub mod session_extras;
pub mod session_state;
pub mod shell;
pub mod ui;
pub mod workspaces;
