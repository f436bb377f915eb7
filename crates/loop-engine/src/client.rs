//! Typed server→client requests (hooks, user input, system prompt transforms) through a
//! subscriber's [`ClientRequester`].

use protocol::rpc::RpcMethod;

use crate::emitter::ClientRequester;

/// Sends `M` to the client and reads its typed answer; `Err` carries a message for events.
pub(crate) async fn request<M: RpcMethod>(
    client: &dyn ClientRequester,
    params: &M::Params,
) -> Result<M::Result, String> {
    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
    let answer = client.request(M::NAME, params).await?;
    serde_json::from_value(answer).map_err(|e| format!("invalid answer to {}: {e}", M::NAME))
}
