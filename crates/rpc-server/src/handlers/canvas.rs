//! `session.canvas.*`: canvases SDK clients provide. Listing reads the session's `Canvases`;
//! open, close and actions are requests to the providing client (`canvas.open`,
//! `canvas.close`, `canvas.action.invoke`), whose answers become the open-instance snapshot and
//! the ephemeral `session.canvas.opened` / `session.canvas.closed` events.

use loop_engine::canvases::Target;
use loop_engine::SessionHandle;
use protocol::generated::methods as g;
use protocol::generated::types as t;
use protocol::jsonrpc::RpcError;
use protocol::rpc::RpcMethod;
use serde_json::Value;

use crate::ctx::Ctx;

pub async fn list(ctx: &Ctx, p: t::SessionCanvasListParams) -> Result<t::CanvasList, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::CanvasList { canvases: session.canvases().list() })
}

pub async fn list_open(ctx: &Ctx, p: t::SessionCanvasListOpenParams) -> Result<t::CanvasListOpenResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    Ok(t::CanvasListOpenResult { open_canvases: session.canvases().list_open() })
}

pub async fn open(ctx: &Ctx, p: t::SessionCanvasOpenParams) -> Result<t::OpenCanvasInstance, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let target = session
        .canvases()
        .resolve(&p.canvas_id, p.extension_id.as_deref(), &p.instance_id)
        .map_err(|e| ctx.failed(e))?;
    let params = t::CanvasOpenParams {
        session_id: p.session_id.clone(),
        extension_id: target.extension_id.clone(),
        canvas_id: target.canvas_id.clone(),
        instance_id: p.instance_id.clone(),
        input: p.input.clone(),
        host: Some(host(&session)),
        session: Some(session_context(&session)),
    };
    let answer = ask::<g::CanvasOpen>(ctx, &session, &target, &params).await?;
    // A provider that answers nothing (`null`) opened the canvas without a URL or title.
    let answer: t::CanvasProviderOpenResult = if answer.is_null() {
        t::CanvasProviderOpenResult::default()
    } else {
        serde_json::from_value(answer).map_err(|e| ctx.failed(format!("Invalid canvas.open result: {e}")))?
    };
    if let Some(url) = answer.url.as_deref() {
        check_url(url).map_err(|e| ctx.failed(e))?;
    }
    let instance = t::OpenCanvasInstance {
        instance_id: p.instance_id,
        extension_id: target.extension_id.clone(),
        extension_name: target.extension_name.clone(),
        canvas_id: target.canvas_id.clone(),
        icon: None,
        title: answer.title,
        status: answer.status,
        url: answer.url,
        input: p.input,
    };
    session.canvases().opened(target.client, instance.clone());
    session.emit_ephemeral(t::CanvasOpenedData {
        instance_id: instance.instance_id.clone(),
        extension_id: instance.extension_id.clone(),
        extension_name: instance.extension_name.clone(),
        canvas_id: instance.canvas_id.clone(),
        icon: instance.icon.clone(),
        title: instance.title.clone(),
        status: instance.status.clone(),
        url: instance.url.clone(),
        input: instance.input.clone(),
    });
    Ok(instance)
}

pub async fn close(ctx: &Ctx, p: t::SessionCanvasCloseParams) -> Result<(), RpcError> {
    let session = ctx.session(&p.session_id)?;
    let (target, _) = session.canvases().open_instance(&p.instance_id).map_err(|e| ctx.failed(e))?;
    let params = t::CanvasCloseParams {
        session_id: p.session_id.clone(),
        extension_id: target.extension_id.clone(),
        canvas_id: target.canvas_id.clone(),
        instance_id: p.instance_id.clone(),
        host: Some(host(&session)),
        session: Some(session_context(&session)),
    };
    // The provider is told; its failure does not keep the instance open (the SDKs treat
    // `onClose` as fire-and-forget).
    if let Err(e) = ask::<g::CanvasClose>(ctx, &session, &target, &params).await {
        tracing::debug!(session = session.id(), instance = %p.instance_id, error = %e.message, "canvas.close failed");
    }
    if let Some(gone) = session.canvases().closed(&p.instance_id) {
        session.emit_ephemeral(t::CanvasClosedData {
            instance_id: gone.instance_id,
            extension_id: gone.extension_id,
            canvas_id: gone.canvas_id,
        });
    }
    Ok(())
}

pub async fn invoke_action(
    ctx: &Ctx,
    p: t::SessionCanvasActionInvokeParams,
) -> Result<t::CanvasActionInvokeResult, RpcError> {
    let session = ctx.session(&p.session_id)?;
    let (target, _) = session.canvases().open_instance(&p.instance_id).map_err(|e| ctx.failed(e))?;
    session.canvases().check_action(&target, &p.action_name).map_err(|e| ctx.failed(e))?;
    let params = t::CanvasActionInvokeParams {
        session_id: p.session_id.clone(),
        extension_id: target.extension_id.clone(),
        canvas_id: target.canvas_id.clone(),
        instance_id: p.instance_id,
        action_name: p.action_name,
        input: p.input,
        host: Some(host(&session)),
        session: Some(session_context(&session)),
    };
    let answer = ask::<g::CanvasActionInvoke>(ctx, &session, &target, &params).await?;
    Ok(t::CanvasActionInvokeResult { result: Some(answer) })
}

/// Sends `M` to the client providing `target` and returns its raw answer.
async fn ask<M: RpcMethod>(
    ctx: &Ctx,
    session: &SessionHandle,
    target: &Target,
    params: &M::Params,
) -> Result<Value, RpcError>
where
    M::Params: serde::Serialize,
{
    let Some(client) = session.requester_of(target.client) else {
        return Err(ctx.failed(format!("Canvas provider connection \"{}\" is not connected.", target.extension_id)));
    };
    let params = serde_json::to_value(params).map_err(|e| ctx.failed(e))?;
    client.request(M::NAME, params).await.map_err(|e| ctx.failed(format!("Canvas operation failed: {e}")))
}

fn host(session: &SessionHandle) -> t::CanvasHostContext {
    let capabilities = t::CanvasHostContextCapabilities { canvases: Some(session.canvases().has_renderer()) };
    t::CanvasHostContext { capabilities: Some(capabilities) }
}

fn session_context(session: &SessionHandle) -> t::CanvasSessionContext {
    let cwd = session.view().settings.cwd.to_string_lossy().into_owned();
    t::CanvasSessionContext { working_directory: Some(cwd) }
}

/// Web canvases are shown in a browser view: only http(s) URLs are accepted from providers.
fn check_url(url: &str) -> Result<(), String> {
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
    if scheme == "http" || scheme == "https" {
        Ok(())
    } else {
        Err(format!("Canvas provider returned a URL with a disallowed scheme: {scheme}"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_web_urls_are_accepted() {
        assert!(super::check_url("https://example.test/x").is_ok());
        assert!(super::check_url("HTTP://example.test").is_ok());
        assert!(super::check_url("javascript:alert(1)").is_err());
        assert!(super::check_url("file:///etc/passwd").is_err());
    }
}
