//! Provider-neutral request/response types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// Kept under this path too, where the other request types are (it lives with the set of tools
// a request offers, which this file's `ChatRequest` holds).
pub use crate::tool_set::ToolSpec;
use crate::wire_format::WireFormat;

/// One message of the conversation, as sent to the model (OpenAI chat shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        /// `None` is sent as `null`; text replies carry a string.
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The provider's own reasoning items, sent back verbatim on the next call to the same
        /// provider (multi-turn reasoning needs them); another provider never sees them.
        /// Boxed: most messages have none, and every message is as large as the largest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Box<ReasoningBlocks>>,
    },
    Tool {
        tool_call_id: String,
        content: ToolContent,
    },
}

/// User content: plain text, or parts (text + images) for attachments and image views.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// Tool result content: text, or parts when a tool returns an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    ImageUrl {
        image_url: ImageUrl,
    },
    /// A document (a PDF, ...), in OpenAI's `file` part shape.
    File {
        file: FilePart,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// `data:<mime>;base64,<data>`
    pub file_data: String,
    /// Ask the model to cite passages of the document (Anthropic's document citations).
    #[serde(skip)]
    pub citations: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `data:<mime>;base64,<data>`
    pub url: String,
}

/// A tool call as the model made it. `arguments` is the model's original JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Who caused this call: the user's message (`user`) or the tool loop (`agent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Initiator {
    User,
    Agent,
}

/// One message of a conversation, with its wire form kept once it has been sent: the next call
/// copies those bytes instead of serializing the message again.
#[derive(Debug)]
pub struct HistoryItem {
    message: Message,
    /// The wire form in the first format it was sent in. A session that moves to a provider
    /// with another format encodes afresh each call (rare enough not to cache twice).
    wire: std::sync::OnceLock<(WireFormat, Box<str>)>,
}

// A long conversation holds one of these per message: keep them small (reasoning is boxed).
const _: () = assert!(std::mem::size_of::<HistoryItem>() <= 96);

impl Clone for HistoryItem {
    fn clone(&self) -> Self {
        Self { message: self.message.clone(), wire: self.wire.clone() }
    }
}

impl PartialEq for HistoryItem {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl HistoryItem {
    pub fn new(message: Message) -> Self {
        Self { message, wire: std::sync::OnceLock::new() }
    }

    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The message's wire form in `format`, made by `encode` the first time.
    pub(crate) fn wire(&self, format: WireFormat, encode: impl Fn(&Message) -> String) -> std::borrow::Cow<'_, str> {
        let (cached_format, text) = self.wire.get_or_init(|| (format, encode(&self.message).into_boxed_str()));
        if *cached_format == format {
            std::borrow::Cow::Borrowed(text)
        } else {
            std::borrow::Cow::Owned(encode(&self.message))
        }
    }
}

/// The conversation so far, shared by the loop and the calls it makes (never a copy per call).
/// Messages are kept in chunks of [`CHUNK`]: appending while someone else holds the history (a
/// call in flight, the actor's snapshot of a lent conversation) copies at most one chunk's
/// pointers and the list of chunks, never the messages or their cached wire forms, and never a
/// pointer per message of a long conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Full chunks, each exactly `CHUNK` messages.
    full: std::sync::Arc<Vec<std::sync::Arc<Sealed>>>,
    /// The last, partly filled chunk (fewer than `CHUNK` messages).
    tail: Chunk,
}

type Chunk = std::sync::Arc<Vec<std::sync::Arc<HistoryItem>>>;

/// A full chunk, with its messages' wire forms joined once it has been sent: a long
/// conversation's body is then a few dozen shared pieces, not a walk over thousands of small
/// allocations scattered over the heap (cold in the cache between two calls), nor a copy.
#[derive(Debug, Default)]
struct Sealed {
    items: Vec<std::sync::Arc<HistoryItem>>,
    /// The non-empty wire forms, each after a `,`, in the first format the chunk was sent in.
    /// A body shares these bytes ([`crate::body::BodyWriter::share`]); the leading comma is
    /// sliced off when the chunk comes first.
    joined: std::sync::OnceLock<(WireFormat, bytes::Bytes)>,
    /// Its messages' own wire forms have been dropped ([`History::shed_sent_copies`]).
    shed: bool,
}

impl Clone for Sealed {
    fn clone(&self) -> Self {
        Self { items: self.items.clone(), joined: self.joined.clone(), shed: self.shed }
    }
}

impl PartialEq for Sealed {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl Sealed {
    fn joined(&self, format: WireFormat, encode: fn(&Message) -> String) -> bytes::Bytes {
        let join = || {
            let mut text = Vec::new();
            for item in &self.items {
                let wire = item.wire(format, encode);
                if !wire.is_empty() {
                    text.push(b',');
                    text.extend_from_slice(wire.as_bytes());
                }
            }
            bytes::Bytes::from(text.into_boxed_slice())
        };
        let (cached_format, text) = self.joined.get_or_init(|| (format, join()));
        if *cached_format == format {
            text.clone()
        } else {
            join()
        }
    }
}

/// Messages per chunk.
const CHUNK: usize = 64;

impl History {
    pub fn new(messages: Vec<Message>) -> Self {
        Self::from_items(messages.into_iter().map(|m| std::sync::Arc::new(HistoryItem::new(m))).collect())
    }

    pub(crate) fn from_items(items: Vec<std::sync::Arc<HistoryItem>>) -> Self {
        let mut history = Self::default();
        for item in items {
            history.push_item(item);
        }
        history
    }

    pub fn push(&mut self, message: Message) {
        self.push_item(std::sync::Arc::new(HistoryItem::new(message)));
    }

    fn push_item(&mut self, item: std::sync::Arc<HistoryItem>) {
        let tail = std::sync::Arc::make_mut(&mut self.tail);
        tail.push(item);
        if tail.len() == CHUNK {
            let items = std::mem::take(tail);
            let sealed = Sealed { items, joined: std::sync::OnceLock::new(), shed: false };
            std::sync::Arc::make_mut(&mut self.full).push(std::sync::Arc::new(sealed));
        }
    }

    /// Drops each message's own wire form from the full chunks that have been sent (their joined
    /// text holds the same bytes), so that a long conversation keeps its wire bytes once, not
    /// twice. Only what this history holds alone is changed: a chunk shared with a call in
    /// flight or a snapshot is left for a later turn.
    pub fn shed_sent_copies(&mut self) {
        let Some(full) = std::sync::Arc::get_mut(&mut self.full) else { return };
        for chunk in full.iter_mut().rev() {
            let Some(chunk) = std::sync::Arc::get_mut(chunk) else { continue };
            if chunk.shed {
                continue;
            }
            if !chunk.joined.get().is_some_and(|(format, _)| format.writes_joined_chunks()) {
                continue;
            }
            for item in &mut chunk.items {
                if let Some(item) = std::sync::Arc::get_mut(item) {
                    item.wire.take();
                }
            }
            chunk.shed = true;
        }
    }

    pub fn len(&self) -> usize {
        self.full.len() * CHUNK + self.tail.len()
    }

    /// How many of the newest messages are not in a sealed chunk: each is copied separately
    /// into a body.
    pub fn tail_len(&self) -> usize {
        self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Message `index` with its cached wire form.
    pub fn get(&self, index: usize) -> Option<&std::sync::Arc<HistoryItem>> {
        let sealed = self.full.len() * CHUNK;
        if index < sealed {
            self.full[index / CHUNK].items.get(index % CHUNK)
        } else {
            self.tail.get(index - sealed)
        }
    }

    /// Appends the messages' non-empty wire forms in `format`, each after a `,` unless
    /// `first` (which is cleared once something is written). Full chunks are shared, not
    /// copied.
    pub(crate) fn write_wire(
        &self,
        out: &mut crate::body::BodyWriter,
        format: WireFormat,
        encode: fn(&Message) -> String,
        first: &mut bool,
    ) {
        for chunk in self.full.iter() {
            let joined = chunk.joined(format, encode);
            if joined.is_empty() {
                continue;
            }
            if std::mem::take(first) {
                out.share(joined.slice(1..));
            } else {
                out.share(joined);
            }
        }
        for item in self.tail.iter() {
            let wire = item.wire(format, encode);
            if wire.is_empty() {
                continue;
            }
            if !std::mem::take(first) {
                out.push(b',');
            }
            out.extend_from_slice(wire.as_bytes());
        }
    }

    /// The messages with their cached wire forms, in order.
    pub fn items(&self) -> Items<'_> {
        Items { history: self, front: 0, back: self.len() }
    }

    pub fn messages(&self) -> impl DoubleEndedIterator<Item = &Message> + ExactSizeIterator {
        self.items().map(|item| item.message())
    }

    /// Whether both share the same messages (the same allocations, not equal copies).
    pub fn shares_messages_with(&self, other: &History) -> bool {
        self.len() == other.len() && self.items().zip(other.items()).all(|(a, b)| std::sync::Arc::ptr_eq(a, b))
    }

    /// Replaces the first `n` messages with `head`; the rest keep their cached wire forms.
    pub fn replace_front(&mut self, n: usize, head: Message) {
        let n = n.min(self.len());
        let rest = self.items().skip(n).cloned();
        let items = std::iter::once(std::sync::Arc::new(HistoryItem::new(head))).chain(rest).collect();
        *self = Self::from_items(items);
    }

    /// Keeps the first `n` messages only.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            *self = Self::from_items(self.items().take(n).cloned().collect());
        }
    }

    /// Changes message `index` (its wire form is made again when next sent).
    pub fn update(&mut self, index: usize, change: impl FnOnce(&mut Message)) {
        let sealed = self.full.len() * CHUNK;
        let slot = if index < sealed {
            std::sync::Arc::make_mut(&mut self.full).get_mut(index / CHUNK).and_then(|chunk| {
                let chunk = std::sync::Arc::make_mut(chunk);
                chunk.joined = std::sync::OnceLock::new();
                chunk.shed = false;
                chunk.items.get_mut(index % CHUNK)
            })
        } else {
            std::sync::Arc::make_mut(&mut self.tail).get_mut(index - sealed)
        };
        if let Some(item) = slot {
            let item = std::sync::Arc::make_mut(item);
            change(&mut item.message);
            item.wire = std::sync::OnceLock::new();
        }
    }
}

/// A history's messages in order (from either end).
pub struct Items<'a> {
    history: &'a History,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a std::sync::Arc<HistoryItem>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        self.history.get(self.front - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Items<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.history.get(self.back)
    }
}

impl ExactSizeIterator for Items<'_> {}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        Self::new(messages)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    /// The GitHub token of the session the call is made for (its `gitHubToken`): a provider
    /// that authenticates with GitHub sends it instead of the process's own.
    pub github_token: Option<crate::secret::Secret>,
    /// This call's system prompt (sent first).
    pub system: crate::system_text::SystemText,
    pub history: History,
    pub tools: crate::tool_set::ToolSet,
    /// `true` → SSE streaming with deltas; `false` → one JSON response.
    pub stream: bool,
    pub initiator: Initiator,
    /// Per user message; sent as `x-interaction-id`.
    pub interaction_id: String,
    /// Sent as `x-client-session-id`.
    pub session_id: String,
    /// Extra request headers (`session.send requestHeaders`).
    pub extra_headers: Vec<(String, String)>,
    /// The session's reasoning effort (`low`, `medium`, `high`, ...). Providers that take one
    /// ask the model to reason (and sample at temperature 1, as reasoning requires).
    pub reasoning_effort: Option<String>,
    /// Why the call is made; a summary call offers the tools but forbids calling them.
    pub purpose: Purpose,
    /// The SDK's `clientName`, named in the Copilot API's user agent.
    pub client_name: Option<String>,
    /// The sub-agent the call is made for; `None` for the session's own agent.
    pub sub_agent: Option<SubAgent>,
    /// Limits a caller put on the sampling itself (an MCP server's sampling request). All
    /// unset for the session's own calls, whose bodies then stay exactly as they were.
    pub sampling: SamplingOptions,
}

/// What an MCP `sampling/createMessage` asks of the inference; each is sent only when set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SamplingOptions {
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub stop: Vec<String>,
}

/// A sub-agent making a model call: its id, and the id of the agent that started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgent {
    pub id: String,
    pub parent_id: String,
}

/// Why a model call is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Purpose {
    /// A turn of the conversation.
    #[default]
    Turn,
    /// A summary of the conversation for compaction: the tools stay in the request (the prompt
    /// cache holds them) with `tool_choice: none`.
    Compaction,
}

impl ChatRequest {
    /// The `x-interaction-type` of this call.
    pub fn interaction_type(&self) -> &'static str {
        match (self.purpose, &self.sub_agent) {
            (Purpose::Turn, Some(_)) => "conversation-subagent",
            _ => interaction_type(self.purpose, self.initiator),
        }
    }
}

/// The `x-interaction-type` of a call made for `purpose`, caused by `initiator`.
pub fn interaction_type(purpose: Purpose, initiator: Initiator) -> &'static str {
    {
        match (purpose, initiator) {
            (Purpose::Compaction, _) => "conversation-compaction",
            (Purpose::Turn, Initiator::User) => "conversation-user",
            (Purpose::Turn, Initiator::Agent) => "conversation-agent",
        }
    }
}

/// Progress while a reply streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// Text for choice `choice` (several choices = several sequential assistant messages).
    TextDelta {
        choice: usize,
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// A tool-call fragment; the first fragment of an index carries `id` and `name`.
    ToolCallDelta {
        choice: usize,
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Total bytes of the response body received so far.
    Bytes {
        total: u64,
    },
    /// A failed attempt that will be retried after `delay_ms`. `attempt` is the 0-based index
    /// of the attempt that failed (the CLI's `retryAttempt`); `status` is `None` for
    /// connection failures and truncated streams.
    Retry {
        attempt: u32,
        status: Option<u16>,
        reason: RetryReason,
        delay_ms: u64,
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    RateLimit,
    ServerError,
    Network,
    /// A 401 from a provider whose credential may rotate.
    Auth,
}

impl RetryReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RetryReason::RateLimit => "rate_limit",
            RetryReason::ServerError => "server_error",
            RetryReason::Network => "network",
            RetryReason::Auth => "authentication",
        }
    }
}

/// Reasoning as the provider returned it (Anthropic `thinking` / `redacted_thinking` blocks,
/// OpenAI Responses `reasoning` items with `encrypted_content`), kept verbatim and in order:
/// signatures and ids depend on the exact content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningBlocks {
    /// Which wire API produced them (`anthropic`, `openai-responses`, ...).
    pub provider: String,
    pub blocks: Vec<Value>,
}

/// One assistant message of a reply. CAPI may answer with several choices; each is one message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantReply {
    pub content: String,
    /// Readable reasoning text (or its summary), for `assistant.reasoning`.
    pub reasoning: Option<String>,
    /// Opaque reasoning to send back on the next call.
    pub reasoning_blocks: Option<ReasoningBlocks>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    /// In choice order; usually exactly one, never empty (an answer without choices is one
    /// empty reply).
    pub replies: Vec<AssistantReply>,
    pub usage: Usage,
    /// The completion `id` (→ `apiCallId`).
    pub api_call_id: Option<String>,
    /// `x-github-request-id` response header (→ `providerCallId`).
    pub provider_call_id: Option<String>,
    pub model: Option<String>,
    pub duration_ms: u64,
    /// Size of the request body sent.
    pub request_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub capabilities: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing: Option<Value>,
    #[serde(rename = "supportedReasoningEfforts", default, skip_serializing_if = "Option::is_none")]
    pub supported_reasoning_efforts: Option<Value>,
    #[serde(rename = "defaultReasoningEffort", default, skip_serializing_if = "Option::is_none")]
    pub default_reasoning_effort: Option<Value>,
}

impl ModelInfo {
    /// `capabilities.limits.max_context_window_tokens` (or max_prompt_tokens), if known.
    pub fn context_window(&self) -> Option<u64> {
        let limits = self.capabilities.get("limits")?;
        limits.get("max_prompt_tokens").or_else(|| limits.get("max_context_window_tokens")).and_then(Value::as_u64)
    }

    /// `billing.multiplier`: what one user request to it counts as, in premium requests.
    pub fn multiplier(&self) -> Option<f64> {
        self.billing.as_ref()?.get("multiplier")?.as_f64()
    }
}

/// Failure classes map onto `session.error.errorType`.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{message}")]
    Http {
        status: u16,
        message: String,
        provider_call_id: Option<String>,
        /// The service's own error code (`error.code` in the body), e.g. `user_weekly_rate_limited`.
        code: Option<String>,
        /// When the service said to try again (`retry-after`).
        retry_after: Option<std::time::Duration>,
    },
    #[error("network error: {0}")]
    Network(String),
    #[error("stream ended before the reply was complete: {0}")]
    Truncated(String),
    #[error("invalid response from model: {0}")]
    Protocol(String),
    #[error("not authenticated: {0}")]
    Auth(String),
    /// Not sent: the endpoint is somewhere this session may not reach (final, never retried).
    #[error("request refused: {0}")]
    Refused(String),
    #[error("request cancelled")]
    Cancelled,
}

impl ProviderError {
    /// An HTTP failure known only by its status and message.
    pub fn http(status: u16, message: impl Into<String>) -> Self {
        ProviderError::Http { status, message: message.into(), provider_call_id: None, code: None, retry_after: None }
    }

    /// `session.error.errorType` for this failure.
    pub fn error_type(&self) -> &'static str {
        match self {
            ProviderError::Http { status: 401, .. } | ProviderError::Auth(_) => "authentication",
            ProviderError::Http { status: 403, .. } => "authorization",
            ProviderError::Http { status: 402, .. } => "quota",
            ProviderError::Http { status: 429, .. } => "rate_limit",
            _ if self.is_context_overflow() => "context_limit",
            _ => "query",
        }
    }

    /// The request was too big for the model's context window (or the service's body limit).
    pub fn is_context_overflow(&self) -> bool {
        const MARKERS: [&str; 6] = [
            "context_length_exceeded",
            "maximum context length",
            "prompt is too long",
            "model_max_prompt_tokens_exceeded",
            "exceeds the context window",
            "too many tokens",
        ];
        match self {
            ProviderError::Http { status: 413, .. } => true,
            ProviderError::Http { status: 400, message, .. } => {
                let lower = message.to_ascii_lowercase();
                MARKERS.iter().any(|m| lower.contains(m))
            }
            _ => false,
        }
    }

    pub fn status_code(&self) -> Option<u16> {
        match self {
            ProviderError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(t: &str) -> Message {
        Message::User { content: UserContent::Text(t.into()) }
    }

    #[test]
    fn appending_to_a_shared_history_copies_no_message() {
        let mut live = History::new(vec![user("a"), user("b")]);
        let snapshot = live.clone();
        live.push(user("c"));
        assert_eq!(snapshot.len(), 2);
        assert_eq!(live.len(), 3);
        for (a, b) in snapshot.items().zip(live.items()) {
            assert!(std::sync::Arc::ptr_eq(a, b), "a message was copied");
        }
        let mut head = live.clone();
        head.truncate(2);
        assert!(head.shares_messages_with(&snapshot));
    }

    #[test]
    fn wire_forms_survive_sharing_and_an_update_touches_only_its_copy() {
        let mut live = History::new(vec![user("a"), user("b")]);
        let encode = |m: &Message| format!("{m:?}");
        let first = live.get(0).unwrap().wire(WireFormat::ChatCompletions, encode).into_owned();
        let snapshot = live.clone();
        live.push(user("c"));
        // Cached once: the shared item answers without encoding again.
        let again = live.get(0).unwrap().wire(WireFormat::ChatCompletions, |_| -> String { panic!("encoded again") });
        assert_eq!(again, first);
        live.update(0, |m| *m = user("changed"));
        assert_eq!(snapshot.messages().next(), Some(&user("a")));
        assert_eq!(live.messages().next(), Some(&user("changed")));
        assert!(!live.get(0).unwrap().wire(WireFormat::ChatCompletions, encode).contains("\"a\""));
        assert!(std::sync::Arc::ptr_eq(snapshot.get(1).unwrap(), live.get(1).unwrap()));
    }

    #[test]
    fn a_sent_chunk_sheds_its_messages_wire_forms_only_when_held_alone() {
        let encode: fn(&Message) -> String = |m| format!("{m:?}");
        let body = |h: &History| {
            let mut out = crate::body::BodyWriter::default();
            h.write_wire(&mut out, WireFormat::ChatCompletions, encode, &mut true);
            String::from_utf8(out.finish().to_bytes().to_vec()).unwrap()
        };
        let copies = |h: &History| h.items().filter(|item| item.wire.get().is_some()).count();
        let mut live = History::default();
        let mut expected = Vec::new();
        for n in 0..2 * CHUNK + 10 {
            live.push(user(&n.to_string()));
            expected.push(encode(&user(&n.to_string())));
            assert_eq!(body(&live), expected.join(","));
        }
        assert_eq!(copies(&live), live.len());
        // A snapshot shares the chunks: nothing is dropped under it.
        let snapshot = live.clone();
        live.shed_sent_copies();
        assert_eq!(copies(&live), live.len());
        drop(snapshot);
        live.shed_sent_copies();
        assert_eq!(copies(&live), 10, "only the tail keeps its own wire forms");
        assert_eq!(body(&live), expected.join(","));
        // An edited message is encoded again, and its chunk sheds again once sent.
        live.update(3, |m| *m = user("three"));
        expected[3] = encode(&user("three"));
        assert_eq!(body(&live), expected.join(","));
        live.shed_sent_copies();
        assert_eq!(copies(&live), 10);
        // Sent in another format, the shed messages are encoded again, correctly.
        let mut other = crate::body::BodyWriter::default();
        live.write_wire(&mut other, WireFormat::Responses, |m| format!("<{m:?}>"), &mut true);
        let wrapped: Vec<String> = live.messages().map(|m| format!("<{m:?}>")).collect();
        assert_eq!(String::from_utf8(other.finish().to_bytes().to_vec()).unwrap(), wrapped.join(","));
    }

    #[test]
    fn a_body_shares_the_sealed_chunks_instead_of_copying_them() {
        // Messages long enough that a chunk's joined text is worth a piece of its own.
        let encode: fn(&Message) -> String = |m| format!("{m:?}{}", " ".repeat(40));
        let mut live = History::default();
        for n in 0..2 * CHUNK + 3 {
            live.push(user(&n.to_string()));
        }
        let write = |first: bool| {
            let mut out = crate::body::BodyWriter::default();
            out.extend_from_slice(b"[");
            live.write_wire(&mut out, WireFormat::ChatCompletions, encode, &mut { first });
            out.finish()
        };
        let body = write(true);
        let chunks: Vec<bytes::Bytes> = live.full.iter().map(|c| c.joined.get().unwrap().1.clone()).collect();
        assert_eq!(chunks.len(), 2);
        // The first chunk comes first: its leading comma is left out, the memory is the same.
        assert!(body.pieces().iter().any(|p| p.as_ptr() == chunks[0][1..].as_ptr()));
        assert!(body.pieces().iter().any(|p| p.as_ptr() == chunks[1].as_ptr()));
        let expected: Vec<String> = live.messages().map(encode).collect();
        assert_eq!(body.to_bytes(), format!("[{}", expected.join(",")).into_bytes());
        // After something else, the first chunk keeps its comma.
        let after = write(false);
        assert!(after.pieces().iter().any(|p| p.as_ptr() == chunks[0].as_ptr()));
        assert_eq!(after.to_bytes(), format!("[,{}", expected.join(",")).into_bytes());
    }

    #[test]
    fn a_long_history_keeps_order_through_chunks_and_edits() {
        let texts: Vec<String> = (0..200).map(|n| n.to_string()).collect();
        let mut live = History::new(texts[..130].iter().map(|t| user(t)).collect());
        let snapshot = live.clone();
        for t in &texts[130..] {
            live.push(user(t));
        }
        assert_eq!(live.len(), 200);
        let expected: Vec<Message> = texts.iter().map(|t| user(t)).collect();
        assert!(live.messages().eq(expected.iter()));
        assert_eq!(live.messages().next_back(), Some(&user("199")));
        assert_eq!(live.messages().rposition(|m| *m == user("64")), Some(64));
        assert_eq!(live.items().len(), 200);
        // The snapshot still sees its 130, sharing every one with the live history.
        assert_eq!(snapshot.len(), 130);
        assert!(snapshot.items().zip(live.items()).all(|(a, b)| std::sync::Arc::ptr_eq(a, b)));
        live.update(70, |m| *m = user("seventy"));
        assert_eq!(live.get(70).map(|i| i.message()), Some(&user("seventy")));
        assert_eq!(snapshot.get(70).map(|i| i.message()), Some(&user("70")));
        live.replace_front(100, user("summary"));
        assert_eq!(live.len(), 101);
        assert_eq!(live.get(0).map(|i| i.message()), Some(&user("summary")));
        assert_eq!(live.get(1).map(|i| i.message()), Some(&user("100")));
        live.truncate(65);
        assert_eq!(live.len(), 65);
        assert_eq!(live.messages().last(), Some(&user("163")));
        assert_eq!(History::new(vec![user("a")]), History::new(vec![user("a")]));
    }
}
