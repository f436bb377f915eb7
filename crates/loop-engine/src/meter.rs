//! [`Meter`]: what a deployment counts and limits around its sessions' work. The team server
//! counts model calls, tokens and tool calls per tenant and user, writes tool calls and
//! permission decisions to its audit log, and holds its tenants to their limits (turns at
//! once, model requests per minute, tokens per day). The engine knows nothing of tenants: it
//! shows each event to the meter and asks it before a message runs and before each model call.

use std::any::Any;

use protocol::event::Event;

/// Held while a message runs; dropping it gives its place back.
pub type TurnPermit = Box<dyn Any + Send>;

#[async_trait::async_trait]
pub trait Meter: Send + Sync {
    /// Sees every event a session of this node emits (not those relayed from another node),
    /// after it is stored and delivered. Called on the emitting task: cheap, no I/O.
    fn observe(&self, session_id: &str, event: &Event);

    /// Waits for a place for one more message of `session_id` to run (a queued message waits
    /// rather than fails). The engine stops waiting when the message is aborted.
    async fn admit_turn(&self, _session_id: &str) -> TurnPermit {
        Box::new(())
    }

    /// Waits until `session_id` may call the model, or says why it may not (the call is then
    /// not sent, and the turn ends with the error).
    async fn admit_model_call(&self, _session_id: &str) -> Result<(), llm_providers::ProviderError> {
        Ok(())
    }
}
