//! Client-owned metadata of a session (`session.metadata.getClientMetadata`,
//! `updateClientMetadata`, `sessions.getClientMetadata`): string pairs an SDK client keeps with
//! a local session, stored by `store::client_metadata` as the original stores them, and never
//! shown to the model.

use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INVALID_PARAMS};
use store::client_metadata::{ClientMetadataError, Found, Patch};
use store::{Layout, StoreError};

use crate::ctx::Ctx;

/// Runs `read` on the session files off the async threads.
async fn on_disk<R: Send + 'static>(
    ctx: &Ctx,
    read: impl FnOnce(&Layout) -> R + Send + 'static,
) -> Result<R, RpcError> {
    let layout = ctx.server.engine.layout().clone();
    tokio::task::spawn_blocking(move || read(&layout)).await.map_err(|e| ctx.failed(e.to_string()))
}

fn wire_error(ctx: &Ctx, e: ClientMetadataError) -> RpcError {
    match e {
        // The caller's patch breaks a limit: a params error with the original's text.
        ClientMetadataError::Invalid(_) => RpcError::new(INVALID_PARAMS, e.to_string()),
        ClientMetadataError::Store(e) => ctx.failed(e),
        ClientMetadataError::Unreadable(_) => ctx.failed(e.to_string()),
    }
}

pub async fn get(ctx: &Ctx, p: t::SessionMetadataGetClientMetadataParams) -> Result<t::ClientMetadata, RpcError> {
    ctx.session(&p.session_id)?;
    let id = p.session_id;
    let found = on_disk(ctx, move |layout| layout.read_client_metadata(&id)).await?.map_err(|e| ctx.failed(e))?;
    found.into_bag().map_err(|e| wire_error(ctx, e))
}

pub async fn update(ctx: &Ctx, p: t::SessionMetadataUpdateClientMetadataParams) -> Result<t::ClientMetadata, RpcError> {
    ctx.session(&p.session_id)?;
    let patch =
        Patch { clear: p.clear.unwrap_or(false), remove: p.remove.unwrap_or_default(), set: p.set.unwrap_or_default() };
    let id = p.session_id;
    on_disk(ctx, move |layout| layout.update_client_metadata(&id, &patch)).await?.map_err(|e| wire_error(ctx, e))
}

/// Persisted sessions, opened or not, each answered on its own; a session the caller's tenant
/// may not see is not found. `keys` projects each bag onto those keys.
pub async fn get_many(
    ctx: &Ctx,
    p: t::SessionsGetClientMetadataRequest,
) -> Result<t::SessionsGetClientMetadataResult, RpcError> {
    let mut visible = Vec::with_capacity(p.session_ids.len());
    for id in &p.session_ids {
        if Layout::check_id(id).is_err() {
            // As the original: a path-like id fails the whole call.
            return Err(ctx.failed(format!("Invalid sessionId: {id:?}")));
        }
        ctx.learn_owners(Some(id)).await?;
        visible.push(ctx.visible(id));
    }
    let ids = p.session_ids;
    let read = on_disk(ctx, move |layout| {
        ids.into_iter()
            .zip(visible)
            .map(|(id, visible)| {
                let found = if visible { layout.read_client_metadata(&id) } else { Ok(Found::NotFound) };
                (id, found)
            })
            .collect::<Vec<_>>()
    })
    .await?;
    Ok(read.into_iter().map(|(id, found)| entry(id, found, p.keys.as_deref())).collect())
}

fn entry(
    session_id: String,
    found: Result<Found, StoreError>,
    keys: Option<&[String]>,
) -> t::SessionsClientMetadataEntry {
    use t::SessionsClientMetadataEntry as E;
    match found {
        Ok(Found::Ok(mut metadata)) => {
            if let Some(keys) = keys {
                metadata.retain(|k, _| keys.contains(k));
            }
            E::Ok(t::SessionsClientMetadataEntryOk { session_id, metadata })
        }
        Ok(Found::NotFound) => E::NotFound(t::SessionsClientMetadataEntryNotFound { session_id }),
        Ok(Found::Corrupt) => E::Corrupt(t::SessionsClientMetadataEntryCorrupt { session_id }),
        Ok(Found::UnsupportedVersion) => {
            E::UnsupportedVersion(t::SessionsClientMetadataEntryUnsupportedVersion { session_id })
        }
        Err(e) => E::Unavailable(t::SessionsClientMetadataEntryUnavailable {
            session_id,
            code: "EIO".into(),
            message: e.to_string(),
        }),
    }
}
