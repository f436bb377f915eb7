//! Canvases: panels an SDK client provides (`canvases` in its `session.create` /
//! `session.resume`). The session lists them (`session.canvas.list`), keeps the instances that
//! are open (`session.canvas.listOpen`), and routes `canvas.open` / `canvas.close` /
//! `canvas.action.invoke` to the client that declared the canvas. A client that leaves takes
//! its canvases and their open instances with it.
//!
//! Like `clients`, this is a component with its own short lock beside the actor; the requests
//! to the providing client are made by the caller, never under the lock.

use std::collections::BTreeMap;
use std::sync::Mutex;

use protocol::generated::types as t;
use protocol::methods::{CanvasDeclaration, SessionConfigParams};

/// One client's canvases and the identity they are listed under.
#[derive(Debug, Clone, PartialEq)]
struct Provider {
    extension_id: String,
    extension_name: Option<String>,
    canvases: Vec<CanvasDeclaration>,
}

/// An open canvas instance and the client that provides it.
#[derive(Debug, Clone, PartialEq)]
struct Open {
    client: u64,
    instance: t::OpenCanvasInstance,
}

#[derive(Debug, Default)]
struct State {
    providers: BTreeMap<u64, Provider>,
    open: Vec<Open>,
    /// Some client renders canvases.
    renderers: BTreeMap<u64, bool>,
}

/// Where a canvas request goes: the providing client and the canvas it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub client: u64,
    pub extension_id: String,
    pub extension_name: Option<String>,
    pub canvas_id: String,
}

/// Why a canvas request cannot be routed; the texts are the original's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CanvasError {
    #[error("No canvas matches canvasId \"{0}\".")]
    NotFound(String),
    #[error("Multiple canvases match canvasId \"{0}\"; pass extensionId to choose one.")]
    Ambiguous(String),
    #[error("Canvas instance ID \"{0}\" is already owned by a different canvas.")]
    InstanceConflict(String),
    #[error("Canvas instance \"{0}\" is not open.")]
    NotOpen(String),
    #[error("Unknown action \"{action}\" on canvas \"{canvas}\".")]
    UnknownAction { action: String, canvas: String },
}

#[derive(Debug, Default)]
pub struct Canvases {
    state: Mutex<State>,
}

/// The canvas declarations in `params` are acceptable: action names may not use the reserved
/// `canvas.` prefix, ids and names must be there.
pub fn validate(params: &SessionConfigParams) -> Result<(), String> {
    for canvas in params.canvases.iter().flatten() {
        if canvas.id.trim().is_empty() {
            return Err("invalid canvas contributions: canvas id must be a non-empty string".into());
        }
        for action in canvas.actions.iter().flatten() {
            if action.name.starts_with("canvas.") {
                return Err(format!("Canvas action names beginning with \"canvas.\" are reserved: {}", action.name));
            }
        }
    }
    Ok(())
}

impl Canvases {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Only short map operations happen under this lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records (or replaces) what a client provides, from its create/resume params.
    pub fn join(&self, client: u64, params: &SessionConfigParams) {
        let mut s = self.lock();
        s.renderers.insert(client, params.request_canvas_renderer.unwrap_or(false));
        let canvases = params.canvases.clone().unwrap_or_default();
        if canvases.is_empty() {
            s.providers.remove(&client);
            s.open.retain(|o| o.client != client);
            return;
        }
        // A provider id in the reserved `connection:` namespace is ignored, as the original does.
        let (extension_id, extension_name) = match &params.canvas_provider {
            Some(p) if !p.id.is_empty() && !p.id.starts_with("connection:") => (p.id.clone(), p.name.clone()),
            _ => (format!("connection:{client}"), None),
        };
        s.providers.insert(client, Provider { extension_id, extension_name, canvases });
    }

    /// A client left: its canvases and their open instances go; returns those instances.
    pub fn leave(&self, client: u64) -> Vec<t::OpenCanvasInstance> {
        let mut s = self.lock();
        s.providers.remove(&client);
        s.renderers.remove(&client);
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut s.open).into_iter().partition(|o| o.client == client);
        s.open = kept;
        gone.into_iter().map(|o| o.instance).collect()
    }

    /// Whether some attached client renders canvases.
    pub fn has_renderer(&self) -> bool {
        self.lock().renderers.values().any(|r| *r)
    }

    /// Every declared canvas, by client in order of attachment id, then declaration order.
    pub fn list(&self) -> Vec<t::DiscoveredCanvas> {
        let s = self.lock();
        s.providers
            .values()
            .flat_map(|p| {
                p.canvases.iter().map(|c| t::DiscoveredCanvas {
                    display_name: c.display_name.clone(),
                    description: c.description.clone(),
                    icon: c.icon.clone(),
                    input_schema: c.input_schema.clone(),
                    actions: c.actions.clone(),
                    extension_id: p.extension_id.clone(),
                    extension_name: p.extension_name.clone(),
                    canvas_id: c.id.clone(),
                })
            })
            .collect()
    }

    /// The open instances, in the order they were first opened.
    pub fn list_open(&self) -> Vec<t::OpenCanvasInstance> {
        self.lock().open.iter().map(|o| o.instance.clone()).collect()
    }

    /// Who provides `canvas_id` (from `extension_id` when given), for opening `instance_id`.
    pub fn resolve(
        &self,
        canvas_id: &str,
        extension_id: Option<&str>,
        instance_id: &str,
    ) -> Result<Target, CanvasError> {
        let s = self.lock();
        let matches: Vec<Target> = s
            .providers
            .iter()
            .filter(|(_, p)| extension_id.is_none_or(|e| e == p.extension_id))
            .filter(|(_, p)| p.canvases.iter().any(|c| c.id == canvas_id))
            .map(|(client, p)| Target {
                client: *client,
                extension_id: p.extension_id.clone(),
                extension_name: p.extension_name.clone(),
                canvas_id: canvas_id.to_string(),
            })
            .collect();
        let target = match matches.len() {
            0 => return Err(CanvasError::NotFound(canvas_id.to_string())),
            1 => matches.into_iter().next().ok_or_else(|| CanvasError::NotFound(canvas_id.to_string()))?,
            _ => return Err(CanvasError::Ambiguous(canvas_id.to_string())),
        };
        if let Some(open) = s.open.iter().find(|o| o.instance.instance_id == instance_id) {
            if open.instance.canvas_id != target.canvas_id || open.instance.extension_id != target.extension_id {
                return Err(CanvasError::InstanceConflict(instance_id.to_string()));
            }
        }
        Ok(target)
    }

    /// The open instance `instance_id` and who provides it.
    pub fn open_instance(&self, instance_id: &str) -> Result<(Target, t::OpenCanvasInstance), CanvasError> {
        let s = self.lock();
        let open = s
            .open
            .iter()
            .find(|o| o.instance.instance_id == instance_id)
            .ok_or_else(|| CanvasError::NotOpen(instance_id.to_string()))?;
        let target = Target {
            client: open.client,
            extension_id: open.instance.extension_id.clone(),
            extension_name: open.instance.extension_name.clone(),
            canvas_id: open.instance.canvas_id.clone(),
        };
        Ok((target, open.instance.clone()))
    }

    /// Checks that the canvas behind `target` declares `action`.
    pub fn check_action(&self, target: &Target, action: &str) -> Result<(), CanvasError> {
        let s = self.lock();
        let declared = s
            .providers
            .get(&target.client)
            .and_then(|p| p.canvases.iter().find(|c| c.id == target.canvas_id))
            .is_some_and(|c| c.actions.iter().flatten().any(|a| a.name == action));
        if declared {
            Ok(())
        } else {
            Err(CanvasError::UnknownAction { action: action.to_string(), canvas: target.canvas_id.clone() })
        }
    }

    /// Records an instance the provider opened (a re-open replaces it in place).
    pub fn opened(&self, client: u64, instance: t::OpenCanvasInstance) {
        let mut s = self.lock();
        match s.open.iter_mut().find(|o| o.instance.instance_id == instance.instance_id) {
            Some(existing) => *existing = Open { client, instance },
            None => s.open.push(Open { client, instance }),
        }
    }

    /// Forgets an open instance; returns it when it was open.
    pub fn closed(&self, instance_id: &str) -> Option<t::OpenCanvasInstance> {
        let mut s = self.lock();
        let at = s.open.iter().position(|o| o.instance.instance_id == instance_id)?;
        Some(s.open.remove(at).instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(canvases: &[&str], provider: Option<&str>) -> SessionConfigParams {
        SessionConfigParams {
            canvases: Some(
                canvases
                    .iter()
                    .map(|id| CanvasDeclaration {
                        id: id.to_string(),
                        display_name: id.to_uppercase(),
                        description: format!("{id} canvas"),
                        actions: Some(vec![t::CanvasAction { name: "go".into(), ..Default::default() }]),
                        ..Default::default()
                    })
                    .collect(),
            ),
            canvas_provider: provider
                .map(|id| protocol::methods::CanvasProviderIdentity { id: id.into(), name: Some("Named".into()) }),
            ..Default::default()
        }
    }

    fn instance(target: &Target, id: &str) -> t::OpenCanvasInstance {
        t::OpenCanvasInstance {
            instance_id: id.into(),
            extension_id: target.extension_id.clone(),
            canvas_id: target.canvas_id.clone(),
            ..Default::default()
        }
    }

    #[test]
    fn canvases_are_listed_under_their_provider_and_routed_to_it() {
        let c = Canvases::default();
        c.join(1, &params(&["counter"], None));
        c.join(2, &params(&["chart"], Some("acme")));
        let listed: Vec<_> = c.list().into_iter().map(|d| (d.canvas_id, d.extension_id)).collect();
        assert_eq!(listed, [("counter".into(), "connection:1".into()), ("chart".into(), "acme".into())]);
        let target = c.resolve("chart", None, "i1").expect("declared");
        assert_eq!(target.client, 2);
        assert_eq!(c.resolve("nope", None, "i1"), Err(CanvasError::NotFound("nope".into())));
        assert!(c.resolve("chart", Some("other"), "i1").is_err());
    }

    #[test]
    fn the_same_canvas_id_from_two_providers_needs_an_extension_id() {
        let c = Canvases::default();
        c.join(1, &params(&["counter"], None));
        c.join(2, &params(&["counter"], Some("acme")));
        assert_eq!(c.resolve("counter", None, "i"), Err(CanvasError::Ambiguous("counter".into())));
        assert_eq!(c.resolve("counter", Some("acme"), "i").map(|t| t.client), Ok(2));
    }

    #[test]
    fn open_instances_are_kept_until_closed_or_their_provider_leaves() {
        let c = Canvases::default();
        c.join(1, &params(&["counter", "other"], None));
        let target = c.resolve("counter", None, "a").expect("declared");
        c.opened(1, instance(&target, "a"));
        c.opened(1, instance(&target, "b"));
        assert_eq!(c.resolve("other", None, "a"), Err(CanvasError::InstanceConflict("a".into())));
        assert!(c.check_action(&target, "go").is_ok());
        assert!(c.check_action(&target, "stop").is_err());
        assert_eq!(c.closed("a").map(|i| i.instance_id), Some("a".into()));
        assert_eq!(c.closed("a"), None);
        assert_eq!(c.open_instance("a").map(|_| ()), Err(CanvasError::NotOpen("a".into())));
        assert_eq!(c.leave(1).len(), 1);
        assert!(c.list().is_empty());
        assert!(c.list_open().is_empty());
    }

    #[test]
    fn reserved_action_names_are_refused() {
        let mut p = params(&["counter"], None);
        assert!(validate(&p).is_ok());
        if let Some(c) = p.canvases.as_mut() {
            c[0].actions = Some(vec![t::CanvasAction { name: "canvas.open".into(), ..Default::default() }]);
        }
        assert!(validate(&p).unwrap_err().contains("reserved"));
    }
}
