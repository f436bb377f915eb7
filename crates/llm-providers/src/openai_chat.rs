//! The OpenAI chat-completions wire format (CAPI speaks it, so do OpenAI-compatible BYOK
//! endpoints): request bodies out, streamed chunks or one completion object in.

mod request;
mod response;

#[cfg(test)]
pub(crate) use request::wire_message;
pub(crate) use request::{capacity_hint, request_body, BodyFlavor};
pub(crate) use response::{parse_completion, StreamAssembler};

/// Chat-completions answers: one `chat.completion` object, or its chunks.
pub(crate) struct ChatCompletions;

impl crate::exchange::ReplyFormat for ChatCompletions {
    type Assembler = StreamAssembler;
    const END_OF_REPLY: &'static str = "with no finish_reason";

    fn parse_json(body: &[u8]) -> Result<crate::types::ChatResponse, crate::types::ProviderError> {
        parse_completion(body)
    }
}
