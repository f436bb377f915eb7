//! Property tests for what the wire hands the server: the frame decoder, the JSON-RPC envelope
//! and params parsing never panic on hostile input, and the decoder never loses a valid frame.
//!
//! Cases per property: `PROPTEST_CASES` (default 2,000, enough to stay well under 20 s in
//! release for the whole file).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use protocol::frame::{encode, FrameDecoder, FrameError};
use protocol::generated::types::{SessionPermissionsHandlePendingPermissionRequestParams, SessionSendParams};
use protocol::jsonrpc::{self, Incoming};
use protocol::methods::{parse_params_text, SessionConfigParams};
use serde_json::Value;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    // No regression files written into the source tree; a failure prints its minimal input.
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Pushes `stream` in pieces cut at `cuts` (offsets, any order), draining after each push.
/// Returns the decoded bodies and the number of errors. Fails the case if a call to
/// `next_frame` neither returns `Ok(None)` nor consumes input within a bounded number of calls
/// (the server's reader loops on errors, so an error that consumed nothing would spin forever).
fn decode_all(limit: usize, stream: &[u8], cuts: &[usize]) -> Result<(Vec<Vec<u8>>, usize), TestCaseError> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.push(0);
    cuts.push(stream.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut dec = FrameDecoder::new(limit);
    let (mut bodies, mut errors) = (Vec::new(), 0);
    for w in cuts.windows(2) {
        dec.push(&stream[w[0]..w[1]]);
        // Every call that does not return Ok(None) consumes at least one byte, so this many
        // calls always reach Ok(None).
        let mut budget = stream.len() + 2;
        loop {
            prop_assert!(budget > 0, "next_frame made no progress");
            budget -= 1;
            match dec.next_frame() {
                Ok(Some(b)) => bodies.push(b.to_vec()),
                Ok(None) => break,
                Err(_) => errors += 1,
            }
        }
    }
    Ok((bodies, errors))
}

fn contains_header_name(bytes: &[u8]) -> bool {
    bytes.windows(14).any(|w| w.eq_ignore_ascii_case(b"content-length"))
}

#[derive(Debug, Clone)]
enum Item {
    /// A valid frame with this body (any bytes, including header-like text).
    Frame(Vec<u8>),
    /// Junk between frames that does not contain the `Content-Length` header name.
    Garbage(Vec<u8>),
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        // Bodies that look like frames must still be taken by their length, never as headers.
        Just(b"Content-Length: 2\r\n\r\n{}".to_vec()),
        "[ -~]{0,80}".prop_map(|s| s.into_bytes()),
    ]
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        // Header-like junk: names, colons, CRLFs, digits, partial header names.
        proptest::collection::vec(
            prop_oneof![
                Just(b"X-Junk: 1".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"\r\n\r\n".to_vec()),
                Just(b":".to_vec()),
                Just(b"Content-Len".to_vec()),
                Just(b"content-".to_vec()),
                Just(b"Content-Type: text/plain".to_vec()),
                Just(b"12345".to_vec()),
                Just(b"-7".to_vec()),
                Just(b"{\"id\":1}".to_vec()),
                Just(b" ".to_vec()),
            ],
            0..12
        )
        .prop_map(|parts| parts.concat()),
    ]
    .prop_filter("garbage must not contain the header name", |g| !contains_header_name(g))
}

fn items() -> impl Strategy<Value = Vec<Item>> {
    proptest::collection::vec(prop_oneof![body().prop_map(Item::Frame), garbage().prop_map(Item::Garbage)], 0..12)
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(any::<usize>(), 0..16)
}

/// Arbitrary JSON, with keys the real params types know so parsing gets past the first field.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::String),
        prop_oneof![
            Just("approve-once"),
            Just("reject"),
            Just("interactive"),
            Just("immediate"),
            Just("file"),
            Just("user")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    let key = prop_oneof![
        Just("sessionId".to_string()),
        Just("prompt".to_string()),
        Just("requestId".to_string()),
        Just("result".to_string()),
        Just("kind".to_string()),
        Just("tools".to_string()),
        Just("name".to_string()),
        Just("mode".to_string()),
        Just("model".to_string()),
        Just("attachments".to_string()),
        Just("type".to_string()),
        Just("path".to_string()),
        Just("systemMessage".to_string()),
        Just("streaming".to_string()),
        Just("requestHeaders".to_string()),
        "\\PC{0,8}",
    ];
    leaf.prop_recursive(6, 64, 8, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    proptest::collection::vec(
        (prop_oneof![Just("sessionId"), Just("prompt"), Just("requestId"), Just("result"), Just("tools")], json()),
        0..6,
    )
    .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary bytes cut anywhere: no panic, and every call makes progress.
    #[test]
    fn decoder_survives_arbitrary_bytes(stream in proptest::collection::vec(any::<u8>(), 0..2_000), cuts in cuts()) {
        decode_all(1 << 20, &stream, &cuts)?;
    }

    /// Valid frames interleaved with garbage that does not contain the text `Content-Length`,
    /// the whole stream cut at arbitrary points: exactly the valid bodies come out, in order.
    /// (Garbage cannot swallow a frame: without the header name it never yields a length, and
    /// a frame's body is taken by its length even when it contains header-like text.)
    #[test]
    fn no_valid_frame_is_lost_after_garbage(items in items(), cuts in cuts()) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for item in &items {
            match item {
                Item::Frame(b) => {
                    stream.extend(encode(b));
                    expected.push(b.clone());
                }
                Item::Garbage(g) => stream.extend_from_slice(g),
            }
        }
        let (bodies, _errors) = decode_all(1 << 20, &stream, &cuts)?;
        prop_assert_eq!(bodies, expected);
    }

    /// With a tiny limit, oversized frames are refused with `TooLarge` (their bodies skipped in
    /// sync) and every frame within the limit still comes out, in order.
    #[test]
    fn oversized_frames_are_skipped_in_sync(sizes in proptest::collection::vec(0usize..64, 1..12), cuts in cuts()) {
        let limit = 16;
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        let mut too_large = 0;
        for n in &sizes {
            let body = vec![b'a'; *n];
            stream.extend(encode(&body));
            if *n > limit { too_large += 1 } else { expected.push(body) }
        }
        let mut dec = FrameDecoder::new(limit);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.extend([0, stream.len()]);
        cuts.sort_unstable();
        cuts.dedup();
        let (mut bodies, mut errors) = (Vec::new(), Vec::new());
        for w in cuts.windows(2) {
            dec.push(&stream[w[0]..w[1]]);
            loop {
                match dec.next_frame() {
                    Ok(Some(b)) => bodies.push(b.to_vec()),
                    Ok(None) => break,
                    Err(e) => errors.push(e),
                }
            }
        }
        prop_assert_eq!(bodies, expected);
        prop_assert_eq!(errors.len(), too_large);
        prop_assert!(errors.iter().all(|e| matches!(e, FrameError::TooLarge { .. })), "{:?}", errors);
    }

    /// `Content-Length` values of every shape in front of a valid frame: nothing panics, nothing
    /// is allocated for the declared size, and lengths that are refused outright (negative,
    /// non-numeric, beyond anything skippable) leave the following frame decodable.
    #[test]
    fn bad_lengths_never_swallow_the_next_frame(
        value in prop_oneof![
            "-[0-9]{1,20}",
            "[a-z]{1,10}",
            "[0-9]{21,40}",                       // overflows usize
            (1u64 << 33..u64::MAX).prop_map(|v| v.to_string()), // beyond MAX_SKIP_BYTES
            Just(String::new()),
        ],
        cuts in cuts(),
    ) {
        let mut stream = format!("Content-Length: {value}\r\n\r\n").into_bytes();
        stream.extend(encode(b"{\"ok\":1}"));
        let (bodies, errors) = decode_all(1 << 20, &stream, &cuts)?;
        prop_assert_eq!(bodies, vec![b"{\"ok\":1}".to_vec()]);
        prop_assert!(errors >= 1);
    }

    /// The envelope decoder never panics on arbitrary bytes, and what it accepts as a request
    /// has params that can be asked for their object text.
    #[test]
    fn jsonrpc_decode_survives_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..500)) {
        if let Ok(Incoming::Request { params, .. }) = jsonrpc::decode(&body) {
            let _ = params.object_text();
        }
    }

    /// ... and arbitrary JSON: every outcome is a message, a request, or an error with a
    /// JSON-RPC code; a request's params are an object, or refused as "params must be an object".
    #[test]
    fn jsonrpc_decode_survives_arbitrary_json(v in json(), id in json(), method in json(), params in json()) {
        let envelope = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        for body in [serde_json::to_vec(&v).unwrap(), serde_json::to_vec(&envelope).unwrap()] {
            match jsonrpc::decode(&body) {
                Ok(Incoming::Request { params, .. }) => match params.object_text() {
                    Ok(text) => prop_assert!(text.starts_with('{'), "{}", text),
                    Err(e) => prop_assert!(e.contains("params must be an object")),
                },
                Ok(_) => {}
                Err(e) => prop_assert!([-32700, -32600].contains(&e.error.code), "{:?}", e),
            }
        }
    }

    /// Params parsing into real params types never panics on arbitrary JSON objects, and every
    /// refusal says what is wrong (a non-empty message).
    #[test]
    fn params_parsing_survives_arbitrary_objects(obj in json_object()) {
        let text = obj.to_string();
        let results = [
            parse_params_text::<SessionSendParams>(&text).err(),
            parse_params_text::<SessionPermissionsHandlePendingPermissionRequestParams>(&text).err(),
            parse_params_text::<SessionConfigParams>(&text).err(),
        ];
        for err in results.into_iter().flatten() {
            prop_assert!(!err.is_empty());
        }
    }

    /// Arbitrary text (not necessarily JSON) as params: no panic.
    #[test]
    fn params_parsing_survives_arbitrary_text(text in "\\PC{0,200}") {
        let _ = parse_params_text::<SessionSendParams>(&text);
        let _ = parse_params_text::<SessionConfigParams>(&text);
    }
}

/// Deep nesting where the params are parsed is an error, not a stack overflow.
#[test]
fn deep_params_are_an_error_not_a_crash() {
    for depth in [1_000, 100_000] {
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for text in [
            format!(r#"{{"sessionId":"s","prompt":"p","attachments":{nested}}}"#),
            format!(r#"{{"sessionId":"s","prompt":"p","unknown":{nested}}}"#),
            format!(r#"{{"defaultAgent":{nested}}}"#),
        ] {
            let _ = parse_params_text::<SessionSendParams>(&text);
            let _ = parse_params_text::<SessionConfigParams>(&text);
        }
    }
}
