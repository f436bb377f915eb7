//! What each client attached to a session brings to it: its SDK tools, its slash commands and
//! whether it answers elicitations. Several clients may share a session; the session offers the
//! union, and a client that leaves takes only its own contributions with it. Changes that other
//! clients must learn of are announced as `commands.changed` / `capabilities.changed`.
//!
//! Like the session's `McpHost`, this is a component with its own short lock beside the actor:
//! the tools reach the actor's settings through `SessionHandle::set_tools`.

pub mod contributions;

use protocol::generated::types as t;
use protocol::methods::SessionConfigParams;

pub use contributions::{Clients, Contribution, Union};

use crate::handle::SessionHandle;

/// A client created or resumed the session with `params`: record what it brings, offer the
/// union of tools, and tell the clients what changed (`announce`: not for the first client,
/// which learns the state from its own create result).
pub async fn join(handle: &SessionHandle, client: u64, params: &SessionConfigParams, announce: bool) {
    let (before, after) = handle.clients().set(client, Contribution::from_params(params));
    handle.canvases().join(client, params);
    handle.workflows().join(client, params);
    apply(handle, &before, &after, announce).await;
}

/// A client detached or disconnected: what it brought goes with it.
pub async fn leave(handle: &SessionHandle, client: u64) {
    handle.workflows().leave(client);
    for gone in handle.canvases().leave(client) {
        handle.emit_ephemeral(t::CanvasClosedData {
            instance_id: gone.instance_id,
            extension_id: gone.extension_id,
            canvas_id: gone.canvas_id,
        });
    }
    if let Some((before, after)) = handle.clients().remove(client) {
        apply(handle, &before, &after, true).await;
    }
}

async fn apply(handle: &SessionHandle, before: &Union, after: &Union, announce: bool) {
    handle.clients().note_tool_changes(before, after);
    if !after.elicitation {
        handle.ui().drop_elicitations(); // nobody is left to answer them
    }
    if handle.view().settings.external_tools != after.tools {
        if let Err(e) = handle.set_tools(after.tools.clone()).await {
            tracing::debug!(session = handle.id(), error = %e, "client tools not applied");
        }
    }
    if !announce {
        return;
    }
    let emitter = handle.emitter();
    if before.commands != after.commands {
        let commands = after
            .commands
            .iter()
            .map(|c| t::CommandsChangedCommand { name: c.name.clone(), description: c.description.clone() })
            .collect();
        emitter.emit_ephemeral(t::CommandsChangedData { commands });
    }
    if before.elicitation != after.elicitation {
        let ui = t::CapabilitiesChangedUI { elicitation: Some(after.elicitation), ..Default::default() };
        emitter.emit_ephemeral(t::CapabilitiesChangedData { ui: Some(ui) });
    }
}
