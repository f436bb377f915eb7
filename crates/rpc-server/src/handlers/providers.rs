//! A session's models and bring-your-own-key providers: `session.model.list`,
//! `session.provider.add`, `session.provider.getEndpoint`.

use llm_providers::provider::{ProviderKind, WireApi};
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;

use crate::ctx::Ctx;

/// A model entry as the wire shows it (the catalogue's free-form capabilities pass through).
fn model_json(ctx: &Ctx, m: &llm_providers::ModelInfo) -> Result<serde_json::Value, RpcError> {
    serde_json::to_value(m).map_err(|e| ctx.failed(e))
}

pub async fn model_list(ctx: &Ctx, p: t::SessionModelListParams) -> Result<t::SessionModelList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let models = ctx.server.engine.session_models(&session).await.map_err(|e| ctx.engine_error(&e))?;
    let list = models.iter().map(|m| model_json(ctx, m)).collect::<Result<_, _>>()?;
    Ok(t::SessionModelList { list, ..Default::default() })
}

pub async fn provider_add(ctx: &Ctx, p: t::SessionProviderAddParams) -> Result<t::ProviderAddResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let added = session
        .add_providers(p.providers.unwrap_or_default(), p.models.unwrap_or_default())
        .await
        .map_err(|e| ctx.engine_error(&e))?;
    let models = added.iter().map(|m| model_json(ctx, m)).collect::<Result<_, _>>()?;
    Ok(t::ProviderAddResult { models })
}

pub async fn provider_endpoint(
    ctx: &Ctx,
    p: t::SessionProviderGetEndpointParams,
) -> Result<t::ProviderEndpoint, RpcError> {
    let session = ctx.session(&p.session_id)?;
    // It hands out credentials: only when the operator opted in.
    if !ctx.server.auth.expose_provider_endpoint {
        return Err(ctx.failed(
            "session.provider.getEndpoint is disabled; set COPILOT_ALLOW_GET_PROVIDER_ENDPOINT=true to enable it",
        ));
    }
    let endpoint = ctx
        .server
        .engine
        .provider_endpoint(&session)
        .await
        .map_err(|e| ctx.engine_error(&e))?
        .ok_or_else(|| ctx.failed("the session's model service has no endpoint to describe"))?;
    let kind = match endpoint.kind {
        ProviderKind::OpenAi => t::ProviderEndpointType::Openai,
        ProviderKind::Azure => t::ProviderEndpointType::Azure,
        ProviderKind::Anthropic => t::ProviderEndpointType::Anthropic,
    };
    let mut out = t::ProviderEndpoint::new(kind, endpoint.base_url, endpoint.headers.into_iter().collect());
    out.wire_api = endpoint.wire_api.map(|w| match w {
        WireApi::Completions => t::ProviderEndpointWireApi::Completions,
        WireApi::Responses => t::ProviderEndpointWireApi::Responses,
    });
    out.api_key = endpoint.api_key.map(|k| k.expose().to_string());
    Ok(out)
}
