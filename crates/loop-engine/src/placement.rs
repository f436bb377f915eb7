//! The seam between the engine and the deployment around it. On one node every session runs
//! here and there is nothing to do ([`OneNode`]). Several nodes on one database (the `cluster`
//! crate) take a lease before a session runs, load a session another node runs as a read-only
//! follower, and tell the other nodes what changed. The engine calls this trait at those points
//! and knows nothing else of nodes or databases.

use std::path::PathBuf;

use protocol::methods::{LifecycleNotification, SessionConfigParams};

use crate::error::EngineError;

/// Where a session about to be loaded runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// Here: this node alone appends to its log.
    Here,
    /// On the node named: this one follows it read-only.
    Elsewhere(String),
}

/// Told of each ephemeral event of a session run here, with the log's length then, in order
/// with the appends.
pub type EphemeralHook = Box<dyn Fn(&str, usize) + Send + Sync>;

/// What a deployment adds around a session's life on this node. Every method has a default
/// that does nothing, which is the whole of [`OneNode`].
#[async_trait::async_trait]
pub trait Placement: Send + Sync {
    /// Where session directories live, when not under the engine's home (a volume every node
    /// mounts, so a node taking a session over finds its files).
    fn session_state_dir(&self) -> Option<PathBuf> {
        None
    }

    /// A session is about to be created here: [`EngineError::SessionExists`] when another
    /// node has it.
    async fn claim_new(&self, _id: &str) -> Result<(), EngineError> {
        Ok(())
    }

    /// A session not loaded here is about to be loaded: run it here or follow its node.
    async fn claim(&self, _id: &str) -> Result<Placed, EngineError> {
        Ok(Placed::Here)
    }

    /// A session stopped running here, or never started after a claim.
    fn unloaded(&self, _id: &str) {}

    /// A session was loaded here as a follower of `owner`, with `read` events of its log read
    /// (called under the engine's registry lock: keep it short).
    fn following(&self, _id: &str, _owner: &str, _params: &SessionConfigParams, _read: i64) {}

    /// The node running a session this node follows.
    fn followed_owner(&self, _id: &str) -> Option<String> {
        None
    }

    /// A session run here persisted an event (its start excepted).
    fn persisted(&self, _id: &str, _start_time: &str) {}

    /// Where a session run here sends its ephemeral events, if anywhere.
    fn ephemeral_hook(&self, _id: &str) -> Option<EphemeralHook> {
        None
    }

    /// A session was created or deleted here: tells the other nodes.
    async fn publish(&self, _notification: &LifecycleNotification) {}

    /// The node running a session, when it is not this one.
    async fn running_elsewhere(&self, _id: &str) -> Result<Option<String>, EngineError> {
        Ok(None)
    }
}

/// One node: every session runs here.
pub struct OneNode;

impl Placement for OneNode {}
