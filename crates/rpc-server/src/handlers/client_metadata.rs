//! Client-owned metadata of a session (`session.metadata.getClientMetadata`,
//! `updateClientMetadata`, `sessions.getClientMetadata`): string pairs an SDK client keeps with
//! a local session, stored by `store::client_metadata` as the original stores them, and never
//! shown to the model.

use protocol::generated::types as t;
use protocol::jsonrpc::{RpcError, INVALID_PARAMS};
use store::client_metadata::{ClientMetadataError, Found, Patch};

use crate::ctx::Ctx;

pub async fn get(ctx: &Ctx, p: t::SessionMetadataGetClientMetadataParams) -> Result<t::ClientMetadata, RpcError> {
    ctx.session(&p.session_id)?;
    let layout = ctx.server.engine.layout().clone();
    let id = p.session_id.clone();
    let found = tokio::task::spawn_blocking(move || layout.read_client_metadata(&id))
        .await
        .map_err(|e| ctx.failed(e.to_string()))?
        .map_err(|e| ctx.failed(e))?;
    match found {
        Found::Ok(bag) => Ok(bag),
        // The session is open, so its directory is there; a file it cannot read is an error.
        Found::NotFound => Ok(t::ClientMetadata::new()),
        Found::Corrupt => Err(ctx.failed("client metadata file is corrupt")),
        Found::UnsupportedVersion => Err(ctx.failed("client metadata file is of an unsupported version")),
    }
}

pub async fn update(ctx: &Ctx, p: t::SessionMetadataUpdateClientMetadataParams) -> Result<t::ClientMetadata, RpcError> {
    ctx.session(&p.session_id)?;
    let patch =
        Patch { clear: p.clear.unwrap_or(false), remove: p.remove.unwrap_or_default(), set: p.set.unwrap_or_default() };
    let layout = ctx.server.engine.layout().clone();
    let id = p.session_id.clone();
    let updated = tokio::task::spawn_blocking(move || layout.update_client_metadata(&id, &patch))
        .await
        .map_err(|e| ctx.failed(e.to_string()))?;
    match updated {
        Ok(bag) => Ok(bag),
        // The caller's patch breaks a limit: a params error with the original's text.
        Err(e @ ClientMetadataError::Invalid(_)) => Err(RpcError::new(INVALID_PARAMS, e.to_string())),
        Err(ClientMetadataError::Store(e)) => Err(ctx.failed(e)),
        Err(e) => Err(ctx.failed(e.to_string())),
    }
}

/// Persisted sessions, opened or not, each answered on its own; a session the caller's tenant
/// may not see is not found. `keys` projects each bag onto those keys.
pub async fn get_many(
    ctx: &Ctx,
    p: t::SessionsGetClientMetadataRequest,
) -> Result<t::SessionsGetClientMetadataResult, RpcError> {
    let mut out = Vec::with_capacity(p.session_ids.len());
    for id in p.session_ids {
        if store::Layout::check_id(&id).is_err() {
            // As the original: a path-like id fails the whole call.
            return Err(ctx.failed(format!("Invalid sessionId: {id:?}")));
        }
        ctx.learn_owners(Some(&id)).await?;
        if !ctx.visible(&id) {
            out.push(t::SessionsClientMetadataEntry::NotFound(t::SessionsClientMetadataEntryNotFound {
                session_id: id,
            }));
            continue;
        }
        let layout = ctx.server.engine.layout().clone();
        let read_id = id.clone();
        let found = tokio::task::spawn_blocking(move || layout.read_client_metadata(&read_id)).await;
        out.push(match found {
            Ok(Ok(Found::Ok(mut bag))) => {
                if let Some(keys) = &p.keys {
                    bag.retain(|k, _| keys.contains(k));
                }
                t::SessionsClientMetadataEntry::Ok(t::SessionsClientMetadataEntryOk { session_id: id, metadata: bag })
            }
            Ok(Ok(Found::NotFound)) => {
                t::SessionsClientMetadataEntry::NotFound(t::SessionsClientMetadataEntryNotFound { session_id: id })
            }
            Ok(Ok(Found::Corrupt)) => {
                t::SessionsClientMetadataEntry::Corrupt(t::SessionsClientMetadataEntryCorrupt { session_id: id })
            }
            Ok(Ok(Found::UnsupportedVersion)) => {
                t::SessionsClientMetadataEntry::UnsupportedVersion(t::SessionsClientMetadataEntryUnsupportedVersion {
                    session_id: id,
                })
            }
            Ok(Err(e)) => unavailable(id, &e),
            Err(e) => unavailable(id, &e),
        });
    }
    Ok(out)
}

fn unavailable(session_id: String, e: &dyn std::fmt::Display) -> t::SessionsClientMetadataEntry {
    t::SessionsClientMetadataEntry::Unavailable(t::SessionsClientMetadataEntryUnavailable {
        session_id,
        code: "EIO".into(),
        message: e.to_string(),
    })
}
