//! The machinery of the method table ([`crate::methods`]): one declaration per method gives
//! its name (and older aliases), its params type (parsed once, from the raw params text, with
//! `-32602` naming the bad field), its handler, the lane its requests are ordered in, and its
//! result type — all checked against the method's [`RpcMethod`] descriptor at compile time.

use std::sync::Arc;

use protocol::jsonrpc::RpcError;
use protocol::rpc::Scope;

use crate::caller::Caller;
use crate::Server;

/// What a handler gets: the server, who is calling, and which method (for error messages).
pub struct Ctx {
    pub server: Arc<Server>,
    pub caller: Arc<Caller>,
    pub method: &'static str,
}

impl Ctx {
    /// The loaded session a request names, or "Session not found" — also for a session the
    /// caller may not see (another tenant's), which is answered exactly as an unknown id.
    pub fn session(&self, id: &str) -> Result<loop_engine::SessionHandle, RpcError> {
        if !self.visible(id) {
            return Err(self.not_found(id));
        }
        self.server.engine.require(id).map_err(|e| self.engine_error(&e))
    }

    /// Whether the caller may see this session (always, on a single-user server).
    pub fn visible(&self, id: &str) -> bool {
        self.caller.can_see(id)
    }

    /// Brings the caller's view of who owns what up to date with the shared database (several
    /// nodes): for one session, or for all (`None`, before a listing).
    pub async fn learn_owners(&self, id: Option<&str>) -> Result<(), RpcError> {
        let Some(tenancy) = &self.server.tenancy else { return Ok(()) };
        let learned = match id {
            Some(id) => tenancy.learn(id).await,
            None => tenancy.learn_all().await,
        };
        learned.map_err(|e| self.failed(e))
    }

    /// The answer to a request naming an unknown session.
    pub fn not_found(&self, id: &str) -> RpcError {
        self.engine_error(&loop_engine::EngineError::SessionNotFound(id.to_string()))
    }

    /// Claims a session for a tenant before creating it (see [`crate::tenancy::Tenancy::claim`]).
    pub async fn tenancy_claim(&self, tenant: &crate::tenancy::Tenant, id: &str) -> Result<bool, RpcError> {
        match &self.server.tenancy {
            Some(t) => t.claim(tenant, id).await.map_err(|e| self.failed(e)),
            None => Ok(false),
        }
    }

    /// Drops a session's ownership; a failure is logged (the id stays taken, nothing leaks).
    pub async fn tenancy_release(&self, id: &str) {
        if let Some(t) = &self.server.tenancy {
            if let Err(e) = t.release(id).await {
                tracing::warn!(session = %id, error = %e, "releasing session ownership failed");
            }
        }
    }

    pub fn engine_error(&self, e: &loop_engine::EngineError) -> RpcError {
        crate::errors::engine_error(self.method, e)
    }

    pub fn failed(&self, detail: impl std::fmt::Display) -> RpcError {
        RpcError::handler_failed(self.method, detail)
    }
}

/// One row of the table, as the connection sees it.
pub struct Entry {
    pub name: &'static str,
    pub scope: Scope,
    /// Parses the params text into this method's call (or says what is wrong with it).
    pub parse: fn(&str) -> Result<crate::methods::Call, String>,
}

/// Serializes a handler's result.
pub(crate) fn to_json<T: serde::Serialize>(method: &str, value: &T) -> Result<Vec<u8>, RpcError> {
    serde_json::to_vec(value).map_err(|e| RpcError::handler_failed(method, e))
}

/// Declares the method table. Each row:
///
/// `Variant: Descriptor => handler, lane |p| <Option<&str> from p>, aliases [..];`
///
/// The handler is `async fn(&Ctx, Descriptor::Params) -> Result<Descriptor::Result, RpcError>`;
/// the lane expression picks the session whose lane orders the request (`None`: run at once).
macro_rules! method_table {
    ($( $variant:ident : $m:ty => $handler:path, lane |$p:ident| $lane:expr, aliases [$($alias:literal),*]; )*) => {
        /// A parsed request, ready to run.
        pub enum Call {
            $( $variant(Box<<$m as protocol::rpc::RpcMethod>::Params>), )*
        }

        /// Every method and alias the server answers.
        pub static METHODS: &[$crate::table::Entry] = &[
            $(
                $crate::table::Entry {
                    name: <$m as protocol::rpc::RpcMethod>::NAME,
                    scope: <$m as protocol::rpc::RpcMethod>::SCOPE,
                    parse: |text| {
                        protocol::methods::parse_params_text::<<$m as protocol::rpc::RpcMethod>::Params>(text)
                            .map(|p| Call::$variant(Box::new(p)))
                    },
                },
                $(
                    $crate::table::Entry {
                        name: $alias,
                        scope: <$m as protocol::rpc::RpcMethod>::SCOPE,
                        parse: |text| {
                            protocol::methods::parse_params_text::<<$m as protocol::rpc::RpcMethod>::Params>(text)
                                .map(|p| Call::$variant(Box::new(p)))
                        },
                    },
                )*
            )*
        ];

        impl Call {
            /// The session whose lane orders this request, if any.
            pub fn lane(&self) -> Option<&str> {
                match self {
                    $( Call::$variant(params) => { let $p = &**params; $lane } )*
                }
            }

            /// Runs the handler; the result comes back as JSON text. Each handler's future is
            /// boxed at its own size: awaited inline, this future (and every request's, which
            /// holds it) would be as large as the largest handler's, and moved whole into its
            /// box per request.
            pub async fn run(self, ctx: &$crate::table::Ctx) -> Result<Vec<u8>, protocol::jsonrpc::RpcError> {
                match self {
                    $(
                        Call::$variant(params) => {
                            let result: <$m as protocol::rpc::RpcMethod>::Result =
                                Box::pin($handler(ctx, *params)).await?;
                            $crate::table::to_json(ctx.method, &result)
                        }
                    )*
                }
            }
        }
    };
}

pub(crate) use method_table;

/// The table row for a method name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    crate::methods::METHODS.iter().find(|e| e.name == name)
}
