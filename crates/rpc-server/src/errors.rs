//! The one place internal errors become wire errors.

use std::any::Any;
use std::fmt::Display;

use loop_engine::EngineError;
use protocol::jsonrpc::RpcError;
use store::StoreError;

/// Where the session's state is kept cannot take it now (a full disk, the database not
/// answering): the request was fine, and may be sent again once storage is back.
pub const STORAGE_UNAVAILABLE: i64 = -32010;

pub(crate) fn engine_error(method: &str, e: &EngineError) -> RpcError {
    match e {
        // The caller's settings are wrong, not the server: say so with the params code.
        EngineError::InvalidProviders(_) => RpcError::invalid_params(method, e),
        _ => failed(method, e),
    }
}

/// A handler's failure: `-32603` with the original's wording, or [`STORAGE_UNAVAILABLE`] when
/// the cause is storage that is down or full, whichever error type carried it there.
pub(crate) fn failed<D: Display + Any>(method: &str, detail: &D) -> RpcError {
    let any = detail as &dyn Any;
    let store = any.downcast_ref::<StoreError>().or_else(|| match any.downcast_ref::<EngineError>() {
        Some(EngineError::Store(s) | EngineError::Load(s)) => Some(s),
        _ => None,
    });
    match store.and_then(StoreError::unavailable) {
        Some(what) => {
            RpcError::new(STORAGE_UNAVAILABLE, format!("Request {method} failed with message: {what}: {detail}"))
        }
        None => RpcError::handler_failed(method, detail),
    }
}
