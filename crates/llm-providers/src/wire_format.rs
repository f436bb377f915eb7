//! The request formats a history message can be encoded in. A leaf: the history
//! ([`crate::types::History`]) and the tool set ([`crate::tool_set::ToolSet`]) keep their wire
//! forms by format, and the request types hold the tool set, so in either of their files it
//! closed an import circle between them.

/// The request formats a history message can be encoded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireFormat {
    ChatCompletions,
    Responses,
    Anthropic,
}

impl WireFormat {
    /// Whether a body in this format is written from the joined chunks ([`crate::types::History::write_wire`]).
    /// Anthropic's merges neighbouring messages of one role, so it reads every message's own
    /// wire form.
    pub(crate) fn writes_joined_chunks(self) -> bool {
        !matches!(self, WireFormat::Anthropic)
    }
}
