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

    /// The node running a session this node only follows (several nodes).
    pub fn follower_of(&self, id: &str) -> Option<String> {
        self.server.cluster.as_ref().and_then(|c| c.follower_of(id))
    }

    /// The mode and title of a session this node follows, as the relayed events set them.
    pub fn followed_state(
        &self,
        id: &str,
    ) -> Option<(Option<protocol::generated::types::SessionMode>, Option<String>)> {
        self.server.cluster.as_ref().and_then(|c| c.followed_state(id))
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

/// What a node that only follows a session (another node runs it, see `follower_gate`) does
/// with a request naming it: a column of the method table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFollower {
    /// Refused, naming the node that runs it: the default, so a method added later cannot
    /// change a copy that is never persisted.
    Refuse,
    /// Answered here: it reads the log, the shared files or the settings the session was
    /// loaded with, or concerns only this connection.
    Read,
    /// Handed to the node running the session, whose answer the client gets.
    Forward,
    /// The handler refuses in the method's own answer shape (`session.delete`).
    Handler,
}

/// A row's follower rule: `Refuse` unless the row says otherwise.
macro_rules! on_follower {
    () => {
        $crate::table::OnFollower::Refuse
    };
    ($rule:ident) => {
        $crate::table::OnFollower::$rule
    };
}

pub(crate) use on_follower;

/// One row of the table, as the connection sees it.
pub struct Entry {
    pub name: &'static str,
    pub scope: Scope,
    pub follower: OnFollower,
    /// Parses the params text into this method's call (or says what is wrong with it).
    pub parse: fn(&str) -> Result<crate::methods::Call, String>,
}

/// Serializes a handler's result.
pub(crate) fn to_json<T: serde::Serialize>(method: &str, value: &T) -> Result<Vec<u8>, RpcError> {
    serde_json::to_vec(value).map_err(|e| RpcError::handler_failed(method, e))
}

/// Declares the method table. Each row:
///
/// `Variant: Descriptor => handler, lane |p| <Option<&str> from p>, aliases [..] [, follower Rule];`
///
/// The handler is `async fn(&Ctx, Descriptor::Params) -> Result<Descriptor::Result, RpcError>`;
/// the lane expression picks the session whose lane orders the request (`None`: run at once);
/// the follower rule ([`OnFollower`], `Refuse` when left out) says what a node that only
/// follows the named session does with the request.
macro_rules! method_table {
    ($( $variant:ident : $m:ty => $handler:path, lane |$p:ident| $lane:expr, aliases [$($alias:literal),*] $(, follower $rule:ident)?; )*) => {
        /// Each method's follower rule, by variant (shared by its aliases).
        #[allow(non_upper_case_globals)]
        mod follower_rules {
            $( pub const $variant: $crate::table::OnFollower = $crate::table::on_follower!($($rule)?); )*
        }

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
                    follower: follower_rules::$variant,
                    parse: |text| {
                        protocol::methods::parse_params_text::<<$m as protocol::rpc::RpcMethod>::Params>(text)
                            .map(|p| Call::$variant(Box::new(p)))
                    },
                },
                $(
                    $crate::table::Entry {
                        name: $alias,
                        scope: <$m as protocol::rpc::RpcMethod>::SCOPE,
                        follower: follower_rules::$variant,
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
