//! Method handlers, grouped by what they touch.

pub mod server;
pub mod session;
pub mod session_state;

use std::sync::Arc;

use protocol::jsonrpc::RpcError;

use crate::connection::Conn;
use crate::errors::engine_error;

/// The loaded session a request names, or the wire error for "Session not found".
pub(crate) fn loaded_session(conn: &Arc<Conn>, method: &str, id: &str) -> Result<loop_engine::SessionHandle, RpcError> {
    conn.server.engine.require(id).map_err(|e| engine_error(method, &e))
}
