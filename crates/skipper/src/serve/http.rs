//! The HTTP side of `skipper serve` (axum): health, readiness, metrics, and the `/rpc`
//! WebSocket, which authenticates with `Authorization: Bearer TOKEN` on the upgrade.

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rpc_server::tenancy::Tenancy;
use rpc_server::Server;

use super::metrics::Metrics;
use super::metrics_format::{self, Format};

#[derive(Clone)]
pub struct App {
    pub server: Arc<Server>,
    pub tenancy: Arc<Tenancy>,
    pub metrics: Arc<Metrics>,
    /// Connections open at once, WebSocket and SDK TCP together.
    pub slots: Arc<tokio::sync::Semaphore>,
}

pub fn router(app: App) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/rpc", get(rpc))
        .with_state(app)
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready while the database answers: a node that cannot persist must not take sessions.
async fn readyz(State(app): State<App>) -> Response {
    if app.tenancy.ready().await {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n").into_response()
    }
}

/// In the format the scraper asks for (`Accept`): OpenMetrics, else the classic text format.
async fn metrics(State(app): State<App>, headers: HeaderMap) -> Response {
    let format = Format::negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let text = app.metrics.render(
        app.server.engine.loaded_count(),
        app.tenancy.auth_failures(),
        app.server.meter.get().map(|m| m.as_ref()),
    );
    let text = match format {
        Format::OpenMetrics => text,
        Format::Classic => metrics_format::classic(&text),
    };
    ([(header::CONTENT_TYPE, format.content_type())], text).into_response()
}

/// The bearer token of a request, if it carries one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

async fn rpc(
    State(app): State<App>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    // Authentication first: an unauthenticated caller learns nothing else, not even whether
    // its upgrade request was well formed.
    let tenant = match bearer(&headers) {
        Some(token) => app.tenancy.authenticate(token),
        None => {
            app.tenancy.record_auth_failure();
            None
        }
    };
    let Some(tenant) = tenant else {
        app.server.audit().record("connect.refused", None, None, serde_json::json!({"transport": "websocket"}));
        return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "missing or invalid bearer token\n")
            .into_response();
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(rejection) => return rejection.into_response(),
    };
    let Ok(slot) = app.slots.clone().try_acquire_owned() else {
        tracing::warn!("WebSocket refused: too many connections");
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections; retry later\n").into_response();
    };
    let Some(tenant_slot) = tenant.tenant.admit() else {
        tracing::warn!(tenant = %tenant.tenant.name, "WebSocket refused: too many connections for the tenant");
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections for this tenant; retry later\n")
            .into_response();
    };
    app.server.audit().record("connect", Some(&tenant), None, serde_json::json!({"transport": "websocket"}));
    let limit = app.server.limits.max_frame_bytes;
    let server = app.server.clone();
    upgrade.max_message_size(limit).max_frame_size(limit).on_upgrade(move |socket| async move {
        rpc_server::websocket::serve_websocket(server, socket, tenant).await;
        drop((slot, tenant_slot));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "bearer  abc ".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }
}
