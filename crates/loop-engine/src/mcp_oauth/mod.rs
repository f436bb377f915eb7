//! Host-provided tokens for a session's OAuth-protected MCP servers: a server's challenge
//! becomes an `mcp.oauth_required` event (when a client registered interest in it), and the
//! request waits until a client answers with `session.mcp.oauth.handlePendingRequest`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcp_client::{AuthReply, AuthRequest};
use protocol::generated::types as t;
use tokio::sync::oneshot;

use crate::handle::{SessionHandle, SessionParts};

pub(crate) mod requests;

use requests::OAuthRequests;

/// The event clients register interest in to provide tokens.
const EVENT: &str = "mcp.oauth_required";
/// A server may challenge before the creating client's `registerInterest` arrives (right after
/// `session.create` returns): how long to wait for one before the server needs auth.
const INTEREST_GRACE: Duration = Duration::from_secs(5);
const INTEREST_POLL: Duration = Duration::from_millis(50);

/// Forgets a request whose asker stopped waiting (timeout, stop).
struct Forget<'a>(&'a OAuthRequests, String);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

/// Lets the session's MCP host ask the session's clients for tokens.
pub(crate) fn attach(handle: &SessionHandle) {
    let session = handle.downgrade();
    handle.mcp().set_auth_provider(Arc::new(move |request| Box::pin(ask(session.clone(), request))));
}

async fn ask(session: Weak<SessionParts>, request: AuthRequest) -> AuthReply {
    let Some(parts) = session.upgrade() else { return AuthReply::Cancelled };
    let handle = SessionHandle::from_parts(parts);
    let mut waited = Duration::ZERO;
    while !handle.has_interest(EVENT) {
        if waited >= INTEREST_GRACE {
            return AuthReply::Cancelled;
        }
        tokio::time::sleep(INTEREST_POLL).await;
        waited += INTEREST_POLL;
    }
    let request_id = uuid::Uuid::new_v4().to_string();
    let (tx, rx) = oneshot::channel();
    let requests = handle.mcp_oauth_requests();
    requests.lock().insert(request_id.clone(), tx);
    let _forget = Forget(requests, request_id.clone());
    handle.emitter().emit(event_data(request_id, request));
    rx.await.unwrap_or(AuthReply::Cancelled)
}

fn event_data(request_id: String, r: AuthRequest) -> t::McpOauthRequiredData {
    let reason = match r.reason {
        mcp_client::AuthReason::Initial => t::McpOauthRequestReason::Initial,
        mcp_client::AuthReason::Refresh => t::McpOauthRequestReason::Refresh,
        mcp_client::AuthReason::Reauth => t::McpOauthRequestReason::Reauth,
        mcp_client::AuthReason::Upscope => t::McpOauthRequestReason::Upscope,
    };
    let mut data = t::McpOauthRequiredData::new(request_id, r.server_name, r.server_url, reason);
    data.www_authenticate_params = r.challenge.map(|c| t::McpOauthWWWAuthenticateParams {
        resource_metadata_url: c.resource_metadata_url,
        scope: c.scope,
        error: c.error,
    });
    data.resource_metadata = r.resource_metadata;
    data.static_client_config = r.static_client.map(|c| t::McpOauthRequiredStaticClientConfig {
        client_id: c.client_id,
        client_secret: None,
        public_client: c.public_client,
        grant_type: c.grant_type,
    });
    data
}

/// `session.mcp.oauth.handlePendingRequest`: whether a request with that id was waiting.
pub(crate) fn resolve(handle: &SessionHandle, request_id: &str, result: t::McpOauthPendingRequestResponse) -> bool {
    let Some(tx) = handle.mcp_oauth_requests().lock().remove(request_id) else { return false };
    let (reply, outcome) = match result {
        t::McpOauthPendingRequestResponse::Token(token) if !token.access_token.is_empty() => {
            (AuthReply::Token(token.access_token), t::McpOauthCompletionOutcome::Token)
        }
        _ => (AuthReply::Cancelled, t::McpOauthCompletionOutcome::Cancelled),
    };
    let delivered = tx.send(reply).is_ok();
    handle.emitter().emit(t::McpOauthCompletedData::new(request_id.to_string(), outcome));
    delivered
}

impl SessionHandle {
    /// `session.mcp.oauth.handlePendingRequest`: answers a waiting MCP OAuth token request;
    /// `false` when none with that id waits.
    pub fn resolve_mcp_oauth(&self, request_id: &str, result: t::McpOauthPendingRequestResponse) -> bool {
        resolve(self, request_id, result)
    }
}
