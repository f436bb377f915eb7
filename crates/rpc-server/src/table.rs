//! The machinery of the method table ([`crate::methods`]): one declaration per method gives
//! its name (and older aliases), its params type (parsed once, from the raw params text, with
//! `-32602` naming the bad field), its handler, the lane its requests are ordered in, and its
//! result type — all checked against the method's [`RpcMethod`] descriptor at compile time.

use protocol::jsonrpc::RpcError;
use protocol::rpc::Scope;

// What handlers get; kept under its old path (it lives in `crate::ctx`, which does not import
// the method table).
pub use crate::ctx::Ctx;

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

/// One row of the table, as the connection sees it. `C` is the table's parsed call
/// ([`crate::methods::Call`], which `method_table!` declares there): generic, so that this
/// machinery does not import the table it builds.
pub struct Entry<C> {
    pub name: &'static str,
    pub scope: Scope,
    pub follower: OnFollower,
    /// Parses the params text into this method's call (or says what is wrong with it).
    pub parse: fn(&str) -> Result<C, String>,
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
        pub static METHODS: &[$crate::table::Entry<Call>] = &[
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
            pub async fn run(self, ctx: &$crate::ctx::Ctx) -> Result<Vec<u8>, protocol::jsonrpc::RpcError> {
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
