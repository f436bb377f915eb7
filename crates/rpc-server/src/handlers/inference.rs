//! `llmInference.*`: a client registers to perform model requests and streams their answers.

use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::NoParams;

use crate::ctx::Ctx;

pub async fn set_provider(ctx: &Ctx, _p: NoParams) -> Result<t::LlmInferenceSetProviderResult, RpcError> {
    if ctx.server.tenancy.is_some() {
        // The bridge serves every session of the process: on a shared server one tenant would
        // see (and answer) the model requests of all the others.
        return Err(ctx.failed("SDK-hosted inference is not available on a shared server"));
    }
    ctx.server.inference.set_provider(&ctx.caller).map_err(|e| ctx.failed(e))?;
    Ok(t::LlmInferenceSetProviderResult { success: true })
}

pub async fn response_start(
    ctx: &Ctx,
    p: t::LlmInferenceHttpResponseStartRequest,
) -> Result<t::LlmInferenceHttpResponseStartResult, RpcError> {
    Ok(t::LlmInferenceHttpResponseStartResult { accepted: ctx.server.inference.response_start(p) })
}

pub async fn response_chunk(
    ctx: &Ctx,
    p: t::LlmInferenceHttpResponseChunkRequest,
) -> Result<t::LlmInferenceHttpResponseChunkResult, RpcError> {
    Ok(t::LlmInferenceHttpResponseChunkResult { accepted: ctx.server.inference.response_chunk(p).await })
}
