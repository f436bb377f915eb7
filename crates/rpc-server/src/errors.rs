//! The one place internal errors become wire errors.

use loop_engine::EngineError;
use protocol::jsonrpc::RpcError;

pub(crate) fn engine_error(method: &str, e: &EngineError) -> RpcError {
    RpcError::handler_failed(method, e)
}
