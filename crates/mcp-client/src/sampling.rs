//! Sampling: a server asks the client to run one inference for it (`sampling/createMessage`).
//! The host advertises the capability on every connection and hands each request to whoever
//! the session installed ([`McpHost::set_sampling_handler`](crate::McpHost::set_sampling_handler));
//! without one, or when the handler declines, the server gets an error.

// MCP marks sampling deprecated (SEP-2577) but servers still send it and the original answers it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One `sampling/createMessage` request from a server.
#[derive(Debug, Clone)]
pub struct SamplingRequest {
    /// The server's name in the session's configuration.
    pub server: String,
    /// The JSON-RPC id of the server's request.
    pub mcp_request_id: Value,
    /// The request's params as the server sent them (MCP `CreateMessageRequest` params).
    pub params: Value,
}

/// Answers a sampling request with an MCP `CreateMessageResult`, or an error the server sees.
/// The token is cancelled when the server cancels its request or the connection ends.
pub type SamplingHandler = Arc<
    dyn Fn(SamplingRequest, CancellationToken) -> futures::future::BoxFuture<'static, Result<Value, String>>
        + Send
        + Sync,
>;

/// The host's handler slot, shared with every connection (installed before or after they start).
pub(crate) type HandlerSlot = Arc<Mutex<Option<SamplingHandler>>>;

/// The client side of one connection: what it advertises and how it answers server requests.
pub(crate) struct Client {
    pub server: String,
    pub handler: HandlerSlot,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        let mut caps = ClientCapabilities::default();
        caps.sampling = serde_json::from_value(serde_json::json!({})).ok();
        info.capabilities = caps;
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let handler = self.handler.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(handler) = handler else {
            return Err(ErrorData::internal_error("Sampling is not available in this session", None));
        };
        let request = SamplingRequest {
            server: self.server.clone(),
            mcp_request_id: serde_json::to_value(&context.id).unwrap_or(Value::Null),
            params: raw_params(&params)?,
        };
        let answer = handler(request, context.ct.clone()).await.map_err(|e| ErrorData::internal_error(e, None))?;
        serde_json::from_value(answer)
            .map_err(|e| ErrorData::internal_error(format!("Invalid sampling result: {e}"), None))
    }
}

/// The params as JSON. rmcp keeps `temperature` as an `f32`, whose widening to a JSON number
/// would turn the server's `0.3` into `0.30000001192092896`; its shortest decimal form is what
/// the server sent.
fn raw_params(params: &CreateMessageRequestParams) -> Result<Value, ErrorData> {
    let mut value = serde_json::to_value(params).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    if let Some(t) = params.temperature {
        let widened = t.to_string().parse::<f64>().ok().and_then(serde_json::Number::from_f64);
        if let (Some(n), Some(obj)) = (widened, value.as_object_mut()) {
            obj.insert("temperature".into(), Value::Number(n));
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temperature_keeps_the_servers_decimal() {
        let params: CreateMessageRequestParams = serde_json::from_value(serde_json::json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5,
            "temperature": 0.3,
        }))
        .unwrap();
        let raw = raw_params(&params).unwrap();
        assert_eq!(raw["temperature"], serde_json::json!(0.3));
        assert_eq!(raw["maxTokens"], 5);
    }
}
