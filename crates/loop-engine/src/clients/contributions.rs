//! The contributions of the clients attached to a session, and their union: the state
//! `clients/mod.rs` keeps on the session's handle (apart so the handle does not depend on the
//! joining and leaving, which take the handle).

use std::sync::Mutex;

use protocol::methods::{ClientCommandDef, ExternalToolDef, SessionConfigParams};

/// One client's contributions (from its `session.create` / `session.resume` params).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Contribution {
    pub tools: Vec<ExternalToolDef>,
    pub commands: Vec<ClientCommandDef>,
    pub elicitation: bool,
    /// The client answers permission requests (`requestPermission`, on unless `false`).
    pub permission: bool,
}

impl Contribution {
    pub fn from_params(p: &SessionConfigParams) -> Self {
        Self {
            tools: p.tools.clone().unwrap_or_default(),
            commands: p.commands.clone().unwrap_or_default(),
            elicitation: p.request_elicitation.unwrap_or(false),
            permission: p.request_permission.unwrap_or(true),
        }
    }
}

/// The contributions of every attached client, by subscriber id (connection).
#[derive(Debug, Default)]
pub struct Clients {
    /// Sorted by client id. A vector, not a map: a session has one client or a few, and an
    /// idle session should not hold a map node sized for eleven.
    by_client: Mutex<Vec<(u64, Contribution)>>,
    /// Tools that went away with their client since the model last heard about it.
    removed_tools: Mutex<Vec<String>>,
}

/// What the session offers, all clients together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Union {
    pub tools: Vec<ExternalToolDef>,
    pub commands: Vec<ClientCommandDef>,
    pub elicitation: bool,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Contribution)>> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.by_client.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records (or replaces) a client's contributions; returns the union before and after.
    pub fn set(&self, client: u64, contribution: Contribution) -> (Union, Union) {
        let mut map = self.lock();
        let before = union_of(&map);
        match map.binary_search_by_key(&client, |(id, _)| *id) {
            Ok(i) => map[i].1 = contribution,
            Err(i) => map.insert(i, (client, contribution)),
        }
        (before, union_of(&map))
    }

    /// Forgets a client; returns the union before and after (`None` if it contributed nothing).
    pub fn remove(&self, client: u64) -> Option<(Union, Union)> {
        let mut map = self.lock();
        let before = union_of(&map);
        let i = map.binary_search_by_key(&client, |(id, _)| *id).ok()?;
        map.remove(i);
        Some((before, union_of(&map)))
    }

    pub fn has(&self, client: u64) -> bool {
        self.lock().iter().any(|(id, _)| *id == client)
    }

    /// Whether some attached client answers permission requests; `None` with no client
    /// attached (the session's own setting decides then). One client that declines them does
    /// not take them away from the others.
    pub fn answers_permissions(&self) -> Option<bool> {
        let clients = self.lock();
        (!clients.is_empty()).then(|| clients.iter().any(|(_, c)| c.permission))
    }

    /// Remembers which tools went away (and which came back) between `before` and `after`.
    pub(crate) fn note_tool_changes(&self, before: &Union, after: &Union) {
        let mut removed = self.removed_tools.lock().unwrap_or_else(|e| e.into_inner());
        removed.retain(|name| !after.tools.iter().any(|t| &t.name == name));
        for tool in &before.tools {
            if !after.tools.iter().any(|t| t.name == tool.name) && !removed.contains(&tool.name) {
                removed.push(tool.name.clone());
            }
        }
    }

    /// The notice the next user message carries when tools went away since the last one
    /// (`None` when nothing did); taking it clears it.
    pub fn take_tools_changed_notice(&self) -> Option<String> {
        let removed = std::mem::take(&mut *self.removed_tools.lock().unwrap_or_else(|e| e.into_inner()));
        if removed.is_empty() {
            return None;
        }
        Some(format!(
            "<tools_changed_notice>\nTools no longer available: {}\n\nImportant: Do not attempt to call tools that are no longer available unless you've been notified that they're available again.\n</tools_changed_notice>",
            removed.join(", ")
        ))
    }

    pub fn union(&self) -> Union {
        union_of(&self.lock())
    }

    /// The client that registered slash command `name` (case-insensitive), if any.
    pub fn command_owner(&self, name: &str) -> Option<u64> {
        let map = self.lock();
        map.iter().find(|(_, c)| c.commands.iter().any(|cmd| cmd.name.eq_ignore_ascii_case(name))).map(|(id, _)| *id)
    }
}

/// Tools and commands by first registration (a later client's tool of the same name is not
/// offered twice); elicitation when any client answers it.
fn union_of(map: &[(u64, Contribution)]) -> Union {
    let mut out = Union::default();
    for (_, c) in map {
        for tool in &c.tools {
            if !out.tools.iter().any(|t| t.name == tool.name) {
                out.tools.push(tool.clone());
            }
        }
        for cmd in &c.commands {
            if !out.commands.iter().any(|x| x.name == cmd.name) {
                out.commands.push(cmd.clone());
            }
        }
        out.elicitation |= c.elicitation;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ExternalToolDef {
        ExternalToolDef {
            name: name.into(),
            description: String::new(),
            parameters: None,
            overrides_built_in_tool: false,
            skip_permission: false,
        }
    }

    #[test]
    fn the_union_keeps_every_clients_tools_and_a_leaving_client_takes_only_its_own() {
        let clients = Clients::default();
        clients.set(1, Contribution { tools: vec![tool("a")], ..Default::default() });
        let (_, after) = clients.set(
            2,
            Contribution {
                tools: vec![tool("b"), tool("a")],
                elicitation: true,
                commands: vec![ClientCommandDef { name: "deploy".into(), description: None }],
                permission: true,
            },
        );
        assert_eq!(after.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(after.elicitation);
        assert_eq!(clients.command_owner("DEPLOY"), Some(2));
        let (before, after) = clients.remove(2).expect("client 2 contributed");
        assert!(before.elicitation && !after.elicitation);
        assert_eq!(after.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a"]);
        assert!(after.commands.is_empty());
        assert!(clients.remove(2).is_none());
        clients.note_tool_changes(&before, &after);
        let notice = clients.take_tools_changed_notice().expect("b went away");
        assert!(notice.contains("Tools no longer available: b\n"), "{notice}");
        assert!(clients.take_tools_changed_notice().is_none(), "told once");
    }

    #[test]
    fn a_client_that_resumes_again_replaces_its_contribution() {
        let clients = Clients::default();
        clients.set(1, Contribution { tools: vec![tool("a")], ..Default::default() });
        let (_, after) = clients.set(1, Contribution::default());
        assert!(after.tools.is_empty());
    }

    #[test]
    fn a_client_declining_permissions_leaves_them_to_the_others() {
        let clients = Clients::default();
        assert_eq!(clients.answers_permissions(), None);
        clients.set(1, Contribution { permission: true, ..Default::default() });
        clients.set(2, Contribution { permission: false, ..Default::default() });
        assert_eq!(clients.answers_permissions(), Some(true));
        clients.remove(1);
        assert_eq!(clients.answers_permissions(), Some(false));
    }
}
