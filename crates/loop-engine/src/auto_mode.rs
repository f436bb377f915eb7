//! Getting past a rate limit with the `auto` model. When a model call is refused with HTTP 429
//! after its retries, and a client can answer (it sent `requestAutoModeSwitch` on create or
//! resume, or registered a direct handler), the session asks whether to go on with `auto`:
//! `auto_mode_switch.requested`, then `autoModeSwitch.request` to the client (or an answer
//! through `session.ui.handlePendingAutoModeSwitch` under the announced id; the first one
//! decides), then `auto_mode_switch.completed`. On `yes` the model becomes `auto`
//! (`session.model_change` with cause `rate_limit_auto_switch`) and the call is made again; on
//! `yes_always` later rate limits switch without asking; on `no`, or when nobody answers, the
//! turn fails with the rate-limit error as before.

use llm_providers::ProviderError;
use protocol::generated::types as t;
use protocol::rpc::{RpcMethod, Scope};
use serde::{Deserialize, Serialize};

use crate::run_ctx::RunCtx;

/// The model the session switches to: the service picks a model that has capacity.
pub const AUTO_MODEL: &str = "auto";

/// `session.model_change.cause` of the switch.
const CAUSE: &str = "rate_limit_auto_switch";

/// Server→client: asks whether to switch to `auto`.
pub struct AutoModeSwitchRequest;

impl RpcMethod for AutoModeSwitchRequest {
    const NAME: &'static str = "autoModeSwitch.request";
    const SCOPE: Scope = Scope::Client;
    type Params = AutoModeSwitchParams;
    type Result = AutoModeSwitchAnswer;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AutoModeSwitchParams {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AutoModeSwitchAnswer {
    pub response: t::UIAutoModeSwitchResponse,
}

/// Whether `err` is a rate limit this run may offer to get past with `auto`.
pub(crate) fn offered(ctx: &RunCtx, err: &ProviderError) -> bool {
    let view = ctx.view();
    let settings = &view.settings;
    matches!(err, ProviderError::Http { status: 429, .. })
        && ctx.scope.is_none()
        && settings.model != AUTO_MODEL
        && (settings.request_auto_mode_switch || ctx.handle.ui().has_auto_mode_handler())
}

/// Asks (unless a client already said `yes_always`) and switches. Returns whether the session
/// now uses `auto`, so the call is worth making again.
pub(crate) async fn ask_and_switch(ctx: &RunCtx, err: &ProviderError) -> bool {
    let (error_code, retry_after_seconds) = match err {
        ProviderError::Http { code, retry_after, .. } => (code.clone(), retry_after.map(|d| d.as_secs())),
        _ => (None, None),
    };
    let ui = ctx.handle.ui();
    let response = if ui.auto_switch_always() {
        t::UIAutoModeSwitchResponse::Yes
    } else {
        let request_id = uuid::Uuid::new_v4().to_string();
        ctx.emitter().emit(t::AutoModeSwitchRequestedData {
            request_id: request_id.clone(),
            error_code: error_code.clone(),
            retry_after_seconds,
        });
        let pending = ui.register_auto_mode_switch(&request_id);
        let asks_client = ctx.view().settings.request_auto_mode_switch;
        let client = ctx.emitter().requester().filter(|_| asks_client);
        let params = AutoModeSwitchParams { session_id: ctx.handle.id().to_string(), error_code, retry_after_seconds };
        let asked = async {
            match &client {
                Some(client) => {
                    crate::client::request::<AutoModeSwitchRequest>(&**client, &params).await.map(|a| a.response)
                }
                // Only a direct handler answers, through `handlePendingAutoModeSwitch`.
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            asked = asked => asked.ok(),
            Ok(answer) = pending => Some(answer),
            _ = ctx.cancel.cancelled() => None,
        };
        ui.forget_auto_mode_switch(&request_id);
        // A client that failed to answer, or a run cancelled meanwhile, declines.
        let response = answer.unwrap_or(t::UIAutoModeSwitchResponse::No);
        ctx.emitter().emit(t::AutoModeSwitchCompletedData { request_id, response: completed(&response) });
        response
    };
    match response {
        t::UIAutoModeSwitchResponse::No => false,
        t::UIAutoModeSwitchResponse::YesAlways | t::UIAutoModeSwitchResponse::Yes => {
            if response == t::UIAutoModeSwitchResponse::YesAlways {
                ui.set_auto_switch_always();
            }
            ctx.handle.switch_model_for(AUTO_MODEL, CAUSE).await.is_ok()
        }
    }
}

/// The answer as `auto_mode_switch.completed` spells it.
fn completed(response: &t::UIAutoModeSwitchResponse) -> t::AutoModeSwitchResponse {
    match response {
        t::UIAutoModeSwitchResponse::Yes => t::AutoModeSwitchResponse::Yes,
        t::UIAutoModeSwitchResponse::YesAlways => t::AutoModeSwitchResponse::YesAlways,
        t::UIAutoModeSwitchResponse::No => t::AutoModeSwitchResponse::No,
    }
}
