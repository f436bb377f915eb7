//! Who is speaking in a run: the main agent, or a sub-agent started by a `task` call. A
//! sub-agent's events carry its `agentId` on the envelope and the `task` call's id as
//! `parentToolCallId` in the payloads that have one.

use std::sync::Arc;

use protocol::event::SessionEvent;

use crate::emitter::{ClientRequester, Emitter};

/// A sub-agent instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScope {
    pub agent_id: String,
    /// The `task` call that started it.
    pub parent_tool_call_id: String,
}

impl AgentScope {
    /// Sets `parentToolCallId` where the payload has one.
    fn tag(&self, payload: &mut SessionEvent) {
        let id = Some(self.parent_tool_call_id.clone());
        match payload {
            SessionEvent::AssistantMessage(d) => d.parent_tool_call_id = id,
            SessionEvent::AssistantMessageDelta(d) => d.parent_tool_call_id = id,
            SessionEvent::AssistantUsage(d) => d.parent_tool_call_id = id,
            SessionEvent::ToolExecutionStart(d) => d.parent_tool_call_id = id,
            SessionEvent::ToolExecutionComplete(d) => d.parent_tool_call_id = id,
            SessionEvent::HookStart(d) => d.parent_tool_call_id = id,
            SessionEvent::HookEnd(d) => d.parent_tool_call_id = id,
            _ => {}
        }
    }
}

/// The session's emitter as one run sees it.
#[derive(Clone, Copy)]
pub struct ScopedEmitter<'a> {
    pub(crate) emitter: &'a Emitter,
    pub(crate) scope: Option<&'a AgentScope>,
}

impl ScopedEmitter<'_> {
    fn send(&self, payload: SessionEvent, ephemeral: bool, deliver: bool) -> String {
        match self.scope {
            None if !deliver => self.emitter.record(payload),
            None if ephemeral => self.emitter.emit_ephemeral(payload),
            None => self.emitter.emit(payload),
            Some(scope) => {
                let mut payload = payload;
                scope.tag(&mut payload);
                self.emitter.emit_from(&scope.agent_id, payload, ephemeral, deliver)
            }
        }
    }

    pub fn emit(&self, payload: impl Into<SessionEvent>) -> String {
        self.send(payload.into(), false, true)
    }

    pub fn emit_ephemeral(&self, payload: impl Into<SessionEvent>) -> String {
        self.send(payload.into(), true, true)
    }

    pub fn record(&self, payload: impl Into<SessionEvent>) -> String {
        self.send(payload.into(), false, false)
    }

    pub fn requester(&self) -> Option<Arc<dyn ClientRequester>> {
        self.emitter.requester()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::Event;
    use protocol::generated::types as t;
    use std::sync::Mutex;

    struct Collect(Mutex<Vec<Event>>);
    impl crate::emitter::EventSubscriber for Collect {
        fn subscriber_id(&self) -> u64 {
            1
        }
        fn deliver(&self, _: &str, e: &Event, _: &str) -> bool {
            crate::mutex::lock(&self.0).push(e.clone());
            true
        }
    }

    #[test]
    fn a_sub_agent_s_events_carry_its_id_and_the_parent_call() {
        let em = Emitter::new("s".into(), None, None, 0);
        let c = Arc::new(Collect(Mutex::new(vec![])));
        em.subscribe(c.clone());
        let scope = AgentScope { agent_id: "a1".into(), parent_tool_call_id: "call_9".into() };
        let main = ScopedEmitter { emitter: &em, scope: None };
        let sub = ScopedEmitter { emitter: &em, scope: Some(&scope) };
        main.emit(t::ToolExecutionStartData {
            tool_call_id: "x".into(),
            tool_name: "view".into(),
            ..Default::default()
        });
        sub.emit(t::ToolExecutionStartData {
            tool_call_id: "y".into(),
            tool_name: "view".into(),
            ..Default::default()
        });
        sub.emit(t::AbortData { reason: t::AbortReason::UserInitiated });
        let got = crate::mutex::lock(&c.0).clone();
        let parent = |e: &Event| match &e.payload {
            SessionEvent::ToolExecutionStart(d) => d.parent_tool_call_id.clone(),
            _ => None,
        };
        assert_eq!((got[0].agent_id.as_deref(), parent(&got[0])), (None, None));
        assert_eq!((got[1].agent_id.as_deref(), parent(&got[1]).as_deref()), (Some("a1"), Some("call_9")));
        assert_eq!(got[2].agent_id.as_deref(), Some("a1"), "payloads without the field still carry the agent id");
    }
}
