//! The Copilot Extensions agent endpoint (`POST /agents/{name}`) of `skipper serve`, through the
//! real binary against `fake-model`: a strict server-sent-events reader, references,
//! confirmations, thread continuity (across a restart), a model that is down, signatures, bad
//! requests, and the `X-GitHub-Token` going nowhere. (Byte-for-byte comparison with the
//! preview SDK: tests/node/test/extensions.test.mjs; an OpenAI client library against
//! `/v1/chat/completions`: tests/python/test_extensions.py.)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use fake_model::Reply;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{EncodePublicKey, LineEnding};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::harness::{with_timeout, Dirs};

const ALPHA: &str = "alpha-secret-token";
const GITHUB_TOKEN: &str = "ghu_NeverLogMeExtensionToken0123456789";
const KEY_ID: &str = "4fe6b016179b74078ade7581abf4e84fb398c6fae4fb973972235b84fcd70ca3";

fn signing_key() -> SigningKey {
    SigningKey::from_slice(&[0x5au8; 32]).expect("a valid scalar")
}

fn sign(body: &[u8]) -> String {
    let sig: Signature = signing_key().sign(body);
    base64::engine::general_purpose::STANDARD.encode(sig.to_der().as_bytes())
}

/// A running `skipper serve` with tenant alpha and agent `helper` (view runs unasked).
struct Agentd {
    child: Option<Child>,
    fake: fake_model::FakeModel,
    dirs: Arc<Dirs>,
    http: String,
    stderr: Arc<Mutex<Vec<u8>>>,
    client: reqwest::Client,
}

impl Agentd {
    async fn start() -> Self {
        let fake = fake_model::FakeModel::start().await.expect("fake model");
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let mut me = Self {
            child: None,
            fake,
            dirs,
            http: String::new(),
            stderr: Arc::default(),
            client: reqwest::Client::new(),
        };
        me.launch().await;
        me
    }

    fn config(&self) -> String {
        let pem = signing_key().verifying_key().to_public_key_pem(LineEnding::LF).unwrap();
        let keys = json!({"public_keys": [
            {"key_identifier": "some-older-key", "key": pem, "is_current": false},
            {"key_identifier": KEY_ID, "key": pem, "is_current": true}
        ]});
        let keys_path = self.dirs.home.join("copilot-keys.json");
        std::fs::write(&keys_path, keys.to_string()).unwrap();
        format!(
            "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"{}\"\n\n\
             [[agents]]\nname = \"helper\"\ntenant = \"alpha\"\ninstructions = \"Answer like a ship's pilot.\"\n\
             allow_tools = [\"view\", \"glob\", \"grep\"]\n\n\
             [extensions]\npublic_keys_file = \"{}\"\n",
            hex::encode(Sha256::digest(ALPHA.as_bytes())),
            keys_path.display()
        )
    }

    /// Starts (or restarts) the server on the same home.
    async fn launch(&mut self) {
        let config_path = self.dirs.home.join("server.toml");
        std::fs::write(&config_path, self.config()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skipper"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--sdk-listen", "127.0.0.1:0", "--config"]);
        cmd.arg(&config_path).arg("--home").arg(&self.dirs.copilot_home);
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
        cmd.env("HOME", &self.dirs.home);
        cmd.env("COPILOT_API_URL", self.fake.url());
        cmd.env("COPILOT_DEBUG_GITHUB_API_URL", self.fake.url());
        cmd.env("GH_TOKEN", "fake");
        // Debug logging on: the GitHub token must not reach even that.
        cmd.env("SKIPPER_LOG", "debug");
        cmd.current_dir(&self.dirs.workdir);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawning skipper serve");
        if let Some(mut err) = child.stderr.take() {
            let sink = self.stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let line = loop {
            match lines.next_line().await.expect("reading stdout") {
                Some(l) if l.contains("listening") => break l,
                Some(_) => continue,
                None => panic!("skipper serve exited before listening: {}", self.stderr_text()),
            }
        };
        let rest = &line[line.find("http://").expect("http address") + "http://".len()..];
        self.http = rest.split_whitespace().next().unwrap().to_string();
        self.child = Some(child);
    }

    async fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
        self.launch().await;
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    fn workspace(&self) -> PathBuf {
        self.dirs.copilot_home.join("workspaces").join("alpha")
    }

    /// POSTs `body` to `path` with `headers`; status, content type and the whole body.
    async fn post_raw(&self, path: &str, body: Vec<u8>, headers: &[(&str, String)]) -> (u16, String, Vec<u8>) {
        let mut req = self.client.post(format!("http://{}{path}", self.http)).body(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = resp.bytes().await.expect("body").to_vec();
        (status, ctype, bytes)
    }

    /// A signed request as the platform sends it.
    async fn ask(&self, body: &Value) -> (u16, String, Vec<u8>) {
        let raw = body.to_string().into_bytes();
        let headers = [
            ("Github-Public-Key-Identifier", KEY_ID.to_string()),
            ("Github-Public-Key-Signature", sign(&raw)),
            ("X-GitHub-Token", GITHUB_TOKEN.to_string()),
            ("Content-Type", "application/json".to_string()),
        ];
        self.post_raw("/agents/helper", raw, &headers).await
    }

    /// A signed request whose answer must be a well-formed stream.
    async fn stream(&self, body: &Value) -> Answer {
        let (status, ctype, bytes) = self.ask(body).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        assert!(ctype.starts_with("text/event-stream"), "{ctype}");
        parse_strict(&bytes)
    }
}

/// One server-sent event: its name (`None`: an unnamed chunk) and its data line.
#[derive(Debug, Clone)]
struct SseEvent {
    name: Option<String>,
    data: String,
}

/// A whole answer as a strict client reads it.
#[derive(Debug)]
struct Answer {
    events: Vec<SseEvent>,
}

impl Answer {
    fn text(&self) -> String {
        self.events
            .iter()
            .filter(|e| e.name.is_none() && e.data != "[DONE]")
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_string))
            .collect()
    }

    fn named(&self, name: &str) -> Option<Value> {
        self.events.iter().find(|e| e.name.as_deref() == Some(name)).map(|e| serde_json::from_str(&e.data).unwrap())
    }
}

/// Parses an event stream the way gh-debug-cli does, failing on anything it would not accept:
/// only `event: ` and `data: ` lines (with the space), LF endings, one data line per event, no
/// comments, ids, retries or unknown names, text chunks of exactly the documented shape, at
/// most one `copilot_*` event, and the documented ending as the very last bytes.
fn parse_strict(bytes: &[u8]) -> Answer {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(!text.contains('\r'), "CR in the stream: {text:?}");
    assert!(text.ends_with("\n\n"), "the stream must end with a blank line: {text:?}");
    let mut events = Vec::new();
    for block in text[..text.len() - 2].split("\n\n") {
        let lines: Vec<&str> = block.split('\n').collect();
        let (name, data_lines) = match lines[0].strip_prefix("event: ") {
            Some(name) => (Some(name.to_string()), &lines[1..]),
            None => (None, &lines[..]),
        };
        assert_eq!(data_lines.len(), 1, "exactly one data line per event: {block:?}");
        let data = data_lines[0].strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {block:?}"));
        if let Some(n) = &name {
            assert!(
                ["copilot_references", "copilot_confirmation", "copilot_errors"].contains(&n.as_str()),
                "unknown event name {n}"
            );
        }
        events.push(SseEvent { name, data: data.to_string() });
    }
    let copilot = events.iter().filter(|e| e.name.is_some()).count();
    assert!(copilot <= 1, "at most one copilot_* event per response: {events:?}");
    let n = events.len();
    assert!(n >= 2, "{events:?}");
    assert_eq!(events[n - 1].data, "[DONE]");
    assert_eq!(events[n - 2].data, r#"{"choices":[{"index":0,"finish_reason":"stop","delta":{"content":null}}]}"#);
    for e in &events[..n - 2] {
        let value: Value = serde_json::from_str(&e.data).unwrap_or_else(|_| panic!("JSON data: {}", e.data));
        // Compact JSON, as JSON.stringify writes it.
        assert_eq!(value.to_string(), e.data);
        match e.name.as_deref() {
            None => {
                let content = value["choices"][0]["delta"]["content"].as_str().expect("a text chunk");
                let expected = json!({"choices": [{"index": 0, "delta": {"content": content, "role": "assistant"}}]});
                assert_eq!(e.data, expected.to_string(), "the chunk's exact shape and key order");
            }
            Some("copilot_references") => {
                for r in value.as_array().expect("an array") {
                    assert_eq!(r["type"], "file");
                    assert!(r["id"].is_string() && r["is_implicit"].is_boolean() && r.get("data").is_some());
                    assert!(r["metadata"]["display_name"].is_string());
                }
            }
            Some("copilot_confirmation") => {
                assert_eq!(value["type"], "action");
                assert!(value["title"].is_string() && value["message"].is_string());
                let first = value["confirmation"].as_object().expect("object").keys().next().cloned();
                assert_eq!(first.as_deref(), Some("id"), "the confirmation's first key is id");
            }
            Some("copilot_errors") => {
                let errors = value.as_array().expect("an array");
                assert!(!errors.is_empty());
                for err in errors {
                    assert!(["agent", "function", "reference"].contains(&err["type"].as_str().unwrap()));
                    assert!(err["code"].is_string() && err["message"].is_string() && err["identifier"].is_string());
                }
            }
            Some(other) => panic!("unexpected event {other}"),
        }
    }
    Answer { events }
}

/// Request headers as (name, value) pairs.
type Headers = Vec<(&'static str, String)>;

fn thread(id: &str, messages: Value) -> Value {
    json!({"copilot_thread_id": id, "messages": messages, "copilot_skills": null, "agent": "", "stop": null})
}

fn user(content: &str) -> Value {
    json!({"role": "user", "content": content, "copilot_references": [], "copilot_confirmations": null})
}

fn answering(state: &str, id: &str) -> Value {
    json!({"role": "user", "content": "", "copilot_confirmations": [{"state": state, "confirmation": {"id": id}}]})
}

/// The chat requests the fake model received.
fn chat_requests(fake: &fake_model::FakeModel) -> Vec<Value> {
    fake.requests().into_iter().filter(|r| r["path"].as_str().unwrap_or("").ends_with("/chat/completions")).collect()
}

fn user_texts(request: &Value) -> Vec<String> {
    request["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().map(str::to_string).unwrap_or_else(|| m["content"].to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_streams_strictly_with_the_files_it_read_as_references() {
    with_timeout(90, async {
        let s = Agentd::start().await;
        let notes = s.workspace().join("notes.txt");
        std::fs::write(&notes, "The channel is deep.\n").unwrap();
        s.fake.push_replies([
            Reply::tool_call("view", json!({"path": notes.to_str().unwrap()})),
            Reply::text("Dépth is fine — «sûr» 🚢"),
        ]);
        let answer = s.stream(&thread("t-refs", json!([user("What do the notes say?")]))).await;
        assert_eq!(answer.text(), "Dépth is fine — «sûr» 🚢");
        let refs = answer.named("copilot_references").expect("a references event");
        assert_eq!(refs[0]["id"], "notes.txt");
        assert_eq!(refs[0]["metadata"]["display_name"], "notes.txt");
        assert!(answer.named("copilot_errors").is_none());
        // Non-ASCII is written raw, not escaped.
        assert!(answer.events.iter().any(|e| e.data.contains("«sûr» 🚢")));
        // The agent's instructions reach the model in the system message.
        let first = &chat_requests(&s.fake)[0];
        let system = first["body"]["messages"][0]["content"].as_str().unwrap_or_default().to_string();
        assert!(system.contains("Answer like a ship's pilot."), "{system}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confirmation_accepted_runs_the_tool_and_the_answer_goes_on() {
    with_timeout(90, async {
        let s = Agentd::start().await;
        let target = s.workspace().join("log.txt");
        s.fake.push_replies([
            Reply::tool_call("create", json!({"path": target.to_str().unwrap(), "file_text": "aye\n"})),
            Reply::text("Logged."),
        ]);
        let first = s.stream(&thread("t-accept", json!([user("Write the log")]))).await;
        let confirm = first.named("copilot_confirmation").expect("a confirmation");
        assert!(confirm["title"].as_str().unwrap().contains("create"), "{confirm}");
        assert!(confirm["message"].as_str().unwrap().contains("log.txt"), "{confirm}");
        assert!(!target.exists(), "nothing runs before the user accepts");
        let id = confirm["confirmation"]["id"].as_str().unwrap().to_string();

        let history = json!([user("Write the log"), {"role": "assistant", "content": ""}, answering("accepted", &id)]);
        let second = s.stream(&thread("t-accept", history)).await;
        assert_eq!(second.text(), "Logged.");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "aye\n");
        assert!(second.named("copilot_confirmation").is_none());
        // A confirmation already answered cannot be answered again.
        let again = json!([user("Write the log"), answering("accepted", &id)]);
        let third = s.stream(&thread("t-accept", again)).await;
        assert_eq!(third.named("copilot_errors").unwrap()[0]["code"], "confirmation_expired");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confirmation_dismissed_gives_the_model_the_denial() {
    with_timeout(90, async {
        let s = Agentd::start().await;
        let target = s.workspace().join("never.txt");
        s.fake.push_reply(Reply::tool_call("create", json!({"path": target.to_str().unwrap(), "file_text": "x"})));
        let first = s.stream(&thread("t-dismiss", json!([user("Make a file")]))).await;
        let id = first.named("copilot_confirmation").unwrap()["confirmation"]["id"].as_str().unwrap().to_string();
        let second = s.stream(&thread("t-dismiss", json!([user("Make a file"), answering("dismissed", &id)]))).await;
        assert!(second.named("copilot_errors").is_none(), "{second:?}");
        assert!(!target.exists());
        // The next turn's model request carries the refusal as the call's result.
        s.fake.push_reply(Reply::text("Understood."));
        let third = s.stream(&thread("t-dismiss", json!([user("Make a file"), user("Never mind.")]))).await;
        assert_eq!(third.text(), "Understood.");
        let last = chat_requests(&s.fake).pop().unwrap();
        let tool_result = last["body"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        assert!(tool_result.contains("The user rejected this tool call."), "{last}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_thread_adds_only_the_last_message_even_after_a_restart() {
    with_timeout(120, async {
        let mut s = Agentd::start().await;
        s.fake.push_reply(Reply::text("Reply one."));
        let earlier = json!([
            user("Earlier question"),
            {"role": "assistant", "content": "Earlier answer"},
            {"role": "user", "content": "session-bookkeeping", "name": "_session"},
            user("First")
        ]);
        assert_eq!(s.stream(&thread("t-cont", earlier)).await.text(), "Reply one.");
        let first = chat_requests(&s.fake).pop().unwrap();
        let texts = user_texts(&first);
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert!(texts[0].contains("Earlier question") && texts[0].contains("Earlier answer"), "{texts:?}");
        assert!(texts[0].ends_with("First") && !texts[0].contains("session-bookkeeping"), "{texts:?}");

        s.fake.push_reply(Reply::text("Reply two."));
        let again = json!([
            user("Earlier question"),
            {"role": "assistant", "content": "Earlier answer"},
            user("First"),
            {"role": "assistant", "content": "Reply one."},
            user("Second")
        ]);
        assert_eq!(s.stream(&thread("t-cont", again.clone())).await.text(), "Reply two.");
        let texts = user_texts(&chat_requests(&s.fake).pop().unwrap());
        assert_eq!(texts.len(), 2, "the platform's repeated history is not added again: {texts:?}");
        assert!(texts[1].ends_with("\n\nSecond") && !texts[1].contains("Earlier"), "{texts:?}");

        // The thread's session survives a restart of the server.
        s.restart().await;
        s.fake.push_reply(Reply::text("Reply three."));
        let mut later = again.as_array().unwrap().clone();
        later.push(json!({"role": "assistant", "content": "Reply two."}));
        later.push(user("Third"));
        assert_eq!(s.stream(&thread("t-cont", Value::Array(later))).await.text(), "Reply three.");
        let texts = user_texts(&chat_requests(&s.fake).pop().unwrap());
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts[2].ends_with("\n\nThird") && !texts[2].contains("Reply"), "{texts:?}");
        // Another thread is another conversation.
        s.fake.push_reply(Reply::text("Fresh."));
        assert_eq!(s.stream(&thread("t-other", json!([user("Hello")]))).await.text(), "Fresh.");
        let texts = user_texts(&chat_requests(&s.fake).pop().unwrap());
        assert!(texts.len() == 1 && texts[0].ends_with("\n\nHello"), "{texts:?}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_is_down_is_reported_as_copilot_errors() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        s.fake.push_replies((0..8).map(|_| Reply::error(503, Some(0), "service unavailable")));
        let answer = s.stream(&thread("t-down", json!([user("Anyone there?")]))).await;
        let errors = answer.named("copilot_errors").expect("copilot_errors");
        assert_eq!(errors[0]["type"], "agent");
        assert!(answer.text().is_empty());
        // The server is still up and the thread still answers once the model is back.
        s.fake.clear();
        s.fake.push_reply(Reply::text("Back."));
        let next = s.stream(&thread("t-down", json!([user("Anyone there?"), user("Now?")]))).await;
        assert_eq!(next.text(), "Back.");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn only_correctly_signed_requests_run() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        let body = thread("t-sig", json!([user("hi")])).to_string().into_bytes();
        let good = sign(&body);
        let mut tampered = body.clone();
        let at = tampered.iter().position(|&b| b == b'h').unwrap();
        tampered[at] = b'H';
        let other_key = {
            let k = SigningKey::from_slice(&[0x33u8; 32]).unwrap();
            let sig: Signature = k.sign(&body);
            base64::engine::general_purpose::STANDARD.encode(sig.to_der().as_bytes())
        };
        let cases: Vec<(&str, Vec<u8>, Headers)> = vec![
            (
                "tampered body",
                tampered,
                vec![("Github-Public-Key-Identifier", KEY_ID.into()), ("Github-Public-Key-Signature", good.clone())],
            ),
            ("missing signature", body.clone(), vec![("Github-Public-Key-Identifier", KEY_ID.into())]),
            ("missing key id", body.clone(), vec![("Github-Public-Key-Signature", good.clone())]),
            (
                "unknown key id",
                body.clone(),
                vec![
                    ("Github-Public-Key-Identifier", "no-such-key".into()),
                    ("Github-Public-Key-Signature", good.clone()),
                ],
            ),
            (
                "another key's signature",
                body.clone(),
                vec![("Github-Public-Key-Identifier", KEY_ID.into()), ("Github-Public-Key-Signature", other_key)],
            ),
            (
                "not base64",
                body.clone(),
                vec![("Github-Public-Key-Identifier", KEY_ID.into()), ("Github-Public-Key-Signature", "%%%".into())],
            ),
        ];
        for (what, raw, headers) in cases {
            let (status, ctype, bytes) = s.post_raw("/agents/helper", raw, &headers).await;
            assert_eq!(status, 401, "{what}");
            assert!(ctype.starts_with("application/json"), "{what}: {ctype}");
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert!(v["error"].is_string(), "{what}: {v}");
        }
        assert!(chat_requests(&s.fake).is_empty(), "nothing ran for a refused request");
        // The older (non-current) key still verifies, and a correct signature runs.
        s.fake.push_reply(Reply::text("Signed and sealed."));
        let headers =
            [("Github-Public-Key-Identifier", "some-older-key".to_string()), ("Github-Public-Key-Signature", good)];
        let (status, _, bytes) = s.post_raw("/agents/helper", body, &headers).await;
        assert_eq!(status, 200);
        assert_eq!(parse_strict(&bytes).text(), "Signed and sealed.");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_agents_and_malformed_bodies_get_json_errors() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        let signed = |raw: &[u8]| {
            vec![("Github-Public-Key-Identifier", KEY_ID.to_string()), ("Github-Public-Key-Signature", sign(raw))]
        };
        let body = thread("t", json!([user("hi")])).to_string().into_bytes();
        let (status, ctype, bytes) = s.post_raw("/agents/nobody", body.clone(), &signed(&body)).await;
        assert_eq!(status, 404);
        assert!(ctype.starts_with("application/json"));
        assert!(serde_json::from_slice::<Value>(&bytes).unwrap()["error"].is_string());
        for bad in [&b"{not json"[..], br#"{"messages":[]}"#, br#"{"copilot_thread_id":"t","messages":"x"}"#] {
            let (status, ctype, bytes) = s.post_raw("/agents/helper", bad.to_vec(), &signed(bad)).await;
            assert_eq!(status, 400, "{}", String::from_utf8_lossy(bad));
            assert!(ctype.starts_with("application/json"));
            assert!(serde_json::from_slice::<Value>(&bytes).unwrap()["error"].is_string());
        }
        // Still up, and a body with everything the platform adds still parses.
        let client = reqwest::Client::new();
        let health = client.get(format!("http://{}/healthz", s.http)).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        s.fake.push_reply(Reply::text("Fine."));
        let platform = json!({
            "copilot_thread_id": "t-platform",
            "messages": [
                {"role": "user", "content": "ctx", "name": "_session", "copilot_references": null, "copilot_confirmations": null},
                {"role": "user", "content": "hi", "copilot_references": [
                    {"type": "github.repository", "id": "r1", "data": {"type": "repository", "name": "x", "ownerLogin": "o", "id": 7},
                     "is_implicit": false, "metadata": {"display_name": "o/x", "display_icon": "", "display_url": ""}}
                ], "copilot_confirmations": []}
            ],
            "copilot_skills": null, "agent": "", "tools": [], "functions": null, "model": ""
        });
        assert_eq!(s.stream(&platform).await.text(), "Fine.");
    })
    .await
}

fn files_containing(dir: &Path, needle: &[u8], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_containing(&path, needle, found);
        } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)) {
            found.push(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_github_token_reaches_no_log_file_or_model_request() {
    with_timeout(90, async {
        let s = Agentd::start().await;
        let notes = s.workspace().join("a.txt");
        std::fs::write(&notes, "x\n").unwrap();
        s.fake.push_replies([Reply::tool_call("view", json!({"path": notes.to_str().unwrap()})), Reply::text("Ok.")]);
        assert_eq!(s.stream(&thread("t-token", json!([user("Look")]))).await.text(), "Ok.");
        let needle = GITHUB_TOKEN.as_bytes();
        assert!(!s.stderr_text().contains(GITHUB_TOKEN), "the token is in the log");
        assert!(!s.stderr_text().is_empty(), "debug logging is on, so the check above means something");
        let mut found = Vec::new();
        files_containing(&s.dirs.copilot_home, needle, &mut found);
        files_containing(&s.dirs.home, needle, &mut found);
        assert!(found.is_empty(), "the token is in {found:?}");
        let requests = serde_json::to_string(&s.fake.requests()).unwrap();
        assert!(requests.contains("Look"), "the model saw the turn");
        assert!(!requests.contains(GITHUB_TOKEN), "the token reached the model");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_endpoint_needs_the_agents_tenant_token() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        let body = json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]}).to_string();
        let auth =
            |t: &str| vec![("Authorization", format!("Bearer {t}")), ("Content-Type", "application/json".into())];
        let (status, _, bytes) = s.post_raw("/v1/chat/completions", body.clone().into_bytes(), &auth("wrong")).await;
        assert_eq!(status, 401);
        assert!(serde_json::from_slice::<Value>(&bytes).unwrap()["error"]["message"].is_string());
        let other = json!({"model": "nobody", "messages": [{"role": "user", "content": "hi"}]}).to_string();
        let (status, _, _) = s.post_raw("/v1/chat/completions", other.into_bytes(), &auth(ALPHA)).await;
        assert_eq!(status, 404);
        s.fake.push_reply(Reply::text("Hello there."));
        let (status, _, bytes) = s.post_raw("/v1/chat/completions", body.into_bytes(), &auth(ALPHA)).await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "Hello there.");
        assert_eq!(v["model"], "helper");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_never_answers_is_given_up_and_reported() {
    with_timeout(90, async {
        let s = Agentd::start().await;
        s.fake.push_reply(Reply::Hang);
        let answer = s.stream(&thread("t-hang", json!([user("Hello?")]))).await;
        let errors = answer.named("copilot_errors").expect("copilot_errors");
        assert_eq!(errors[0]["code"], "timeout", "{errors}");
        // The turn was stopped: the thread takes the next message.
        s.fake.push_reply(Reply::text("Here now."));
        let next = s.stream(&thread("t-hang", json!([user("Hello?"), user("Again?")]))).await;
        assert_eq!(next.text(), "Here now.");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_tool_is_reported_as_a_function_error() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        let missing = s.workspace().join("no-such-file.txt");
        s.fake.push_replies([
            Reply::tool_call("view", json!({"path": missing.to_str().unwrap()})),
            Reply::text("That file does not exist."),
        ]);
        let answer = s.stream(&thread("t-fail", json!([user("Read it")]))).await;
        assert_eq!(answer.text(), "That file does not exist.");
        let errors = answer.named("copilot_errors").expect("copilot_errors");
        assert_eq!(errors[0]["type"], "function");
        assert_eq!(errors[0]["identifier"], "view");
        assert!(answer.named("copilot_references").is_none());
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_message_instead_of_an_answer_dismisses_the_confirmation() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        let target = s.workspace().join("skipped.txt");
        s.fake.push_reply(Reply::tool_call("create", json!({"path": target.to_str().unwrap(), "file_text": "x"})));
        let first = s.stream(&thread("t-move-on", json!([user("Make a file")]))).await;
        assert!(first.named("copilot_confirmation").is_some());
        s.fake.push_reply(Reply::text("Talking about something else."));
        let next = s.stream(&thread("t-move-on", json!([user("Make a file"), user("Something else")]))).await;
        assert_eq!(next.text(), "Talking about something else.");
        assert!(!target.exists());
        let last = chat_requests(&s.fake).pop().unwrap();
        assert!(last.to_string().contains("The user rejected this tool call."), "{last}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_on_one_thread_take_turns() {
    with_timeout(60, async {
        let s = Agentd::start().await;
        s.fake.push_replies([
            Reply::Delay { ms: 300, then: Box::new(Reply::text("First answer.")) },
            Reply::text("Second answer."),
        ]);
        let a = thread("t-race", json!([user("one")]));
        let b = thread("t-race", json!([user("one"), user("two")]));
        let (first, second) = tokio::join!(s.stream(&a), async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            s.stream(&b).await
        });
        // Each request's stream carries its own turn's answer, whole.
        let mut texts = [first.text(), second.text()];
        texts.sort();
        assert_eq!(texts, ["First answer.".to_string(), "Second answer.".to_string()]);
    })
    .await
}
