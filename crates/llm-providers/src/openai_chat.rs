//! The OpenAI chat-completions wire format (CAPI speaks it, so do OpenAI-compatible BYOK
//! endpoints): request bodies out, streamed chunks or one completion object in.

mod request;
mod response;
mod transport;

#[cfg(test)]
pub(crate) use request::wire_message;
pub(crate) use request::{capacity_hint, request_body, BodyFlavor};
pub(crate) use response::{error_message, parse_completion, StreamAssembler, StreamStep};
pub(crate) use transport::chat_attempt;
