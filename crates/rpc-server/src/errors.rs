//! The one place internal errors become wire errors.

use loop_engine::EngineError;
use protocol::jsonrpc::RpcError;

pub(crate) fn engine_error(method: &str, e: &EngineError) -> RpcError {
    match e {
        // The caller's settings are wrong, not the server: say so with the params code.
        EngineError::InvalidProviders(_) => RpcError::invalid_params(method, e),
        _ => RpcError::handler_failed(method, e),
    }
}
