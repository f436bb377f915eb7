//! What every JSON-RPC method has in common: its name, its params and result types, and the
//! scope its requests are ordered in. The generated `generated::methods` module describes the
//! schema's methods with [`RpcMethod`]; methods the schema lacks are described by hand in
//! [`crate::methods`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// How requests of a method are ordered on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Runs as soon as it arrives, in parallel with everything else.
    Server,
    /// Names a session (`sessionId`): runs after earlier requests for that session.
    Session,
    /// A request the server sends to the client (hooks, transforms, user input).
    Client,
}

/// One JSON-RPC method of the contract.
pub trait RpcMethod {
    const NAME: &'static str;
    const SCOPE: Scope;
    type Params: DeserializeOwned + Serialize + Send + 'static;
    type Result: DeserializeOwned + Serialize + Send + 'static;
}

/// Params of a session-scoped method: the session they address.
pub trait SessionScoped {
    fn session_id(&self) -> &str;
}

/// Params of a method that takes none. Absent, `null` and `{}` are all accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoParams {}
