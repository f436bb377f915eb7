//! Hostile input against the real binary: every served method with bad params, unknown
//! sessions and methods; malformed, oversized and deeply nested frames; ids of every JSON type;
//! stray responses; 10,000 fuzzed frames with interleaved pings; a client that stops reading;
//! per-session lanes. After each, the process is alive and a `ping` is answered.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_model::Reply;
use protocol::rpc::Scope;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{with_timeout, Dirs, Options, RpcClient, Skipper, TestEnv, Transport};

const T: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Helpers

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    f.extend_from_slice(body);
    f
}

fn ping_body(id: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": {"message": message}}))
        .expect("ping body")
}

/// `ping` through the harness; panics unless it is answered with its pong.
async fn ping_ok(c: &RpcClient, msg: &str) {
    let r = c.ok("ping", json!({"message": msg})).await;
    assert_eq!(r["message"], json!(format!("pong: {msg}")), "{r}");
}

/// The response whose id is `id` (any JSON type), waiting for it.
async fn response_with_id(c: &RpcClient, id: &Value) -> Value {
    c.wait_until(T, &format!("the response with id {id}"), |c| c.responses().into_iter().find(|r| &r["id"] == id)).await
}

/// Responses with `id: null` that arrived after the first `start` responses, once at least
/// `n` of them are there.
async fn null_id_errors_since(c: &RpcClient, start: usize, n: usize) -> Vec<Value> {
    c.wait_until(T, &format!("{n} error(s) with id null"), |c| {
        let v: Vec<Value> = c.responses_from(start).into_iter().filter(|r| r["id"].is_null()).collect();
        (v.len() >= n).then_some(v)
    })
    .await
}

/// `VmRSS` / `VmHWM` (peak) of a process, in KiB.
fn mem_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reading /proc/<pid>/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name} missing in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn assert_alive(sk: &mut Skipper) {
    assert!(sk.child.try_wait().expect("try_wait").is_none(), "skipper exited; stderr:\n{}", sk.stderr_text());
}

async fn start_with_env(env: &[(&str, &str)]) -> (fake_model::FakeModel, Skipper, Arc<RpcClient>) {
    let fake = fake_model::FakeModel::start().await.expect("fake model");
    let dirs = Dirs::new();
    fake.set_workdir(&dirs.workdir);
    let opts =
        Options { extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), ..Default::default() };
    let sk = Skipper::spawn(&fake.url(), dirs, opts).await;
    let c = sk.client();
    c.connect().await;
    (fake, sk, c)
}

fn detail(message: &str) -> &str {
    message.split_once("failed with message: ").map_or(message, |(_, d)| d)
}

// ---------------------------------------------------------------------------------------------
// The method sweep

/// JSON types as the sweep names them (`integer` counts as `number`).
const KINDS: [&str; 5] = ["string", "number", "boolean", "object", "array"];

fn wrong_value(kind: &str) -> Value {
    match kind {
        "string" => json!("wrong-type"),
        "number" => json!(12345),
        "boolean" => json!(true),
        "object" => json!({"wrongType": 1}),
        _ => json!([1, "x"]),
    }
}

/// One property of a method's params: its JSON types (empty = untyped, accepts anything) and a
/// valid value for it.
#[derive(Clone, Debug)]
struct Prop {
    name: String,
    types: BTreeSet<&'static str>,
    valid: Value,
}

#[derive(Clone, Debug, Default)]
struct Shape {
    props: Vec<Prop>,
    required: Vec<String>,
}

/// `api.schema.json`, for the methods the schema describes.
struct ApiSchema {
    defs: serde_json::Map<String, Value>,
    params: BTreeMap<String, Value>,
}

impl ApiSchema {
    /// The SDKs' schema, then what the original's newer one adds (as the generator reads them).
    fn load() -> Self {
        let mut schema = Self::load_file("schemas/api.schema.json");
        let newer = Self::load_file("schemas/cli-1.0.102/api.schema.json");
        for (name, params) in newer.params {
            schema.params.entry(name).or_insert(params);
        }
        for (name, def) in newer.defs {
            schema.defs.entry(name).or_insert(def);
        }
        schema
    }

    fn load_file(file: &str) -> Self {
        let path = crate::schema::shared_dir().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let root: Value = serde_json::from_str(&text).expect("the api schema is JSON");
        let mut params = BTreeMap::new();
        fn walk(v: &Value, out: &mut BTreeMap<String, Value>) {
            match v {
                Value::Object(m) => {
                    if let Some(name) = m.get("rpcMethod").and_then(Value::as_str) {
                        out.insert(name.to_string(), m.get("params").cloned().unwrap_or(Value::Null));
                    }
                    m.values().for_each(|x| walk(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        walk(&root, &mut params);
        let defs = root["definitions"].as_object().cloned().expect("definitions");
        Self { defs, params }
    }

    fn resolve<'a>(&'a self, mut s: &'a Value) -> &'a Value {
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r);
            s = self.defs.get(name).unwrap_or_else(|| panic!("unresolved $ref {r}"));
        }
        s
    }

    /// The alternatives of a union, without `{"not": {}}` (the schema's "may be absent").
    fn alternatives<'a>(&'a self, s: &'a Value) -> Vec<&'a Value> {
        ["anyOf", "oneOf", "allOf"]
            .iter()
            .filter_map(|k| s.get(*k).and_then(Value::as_array))
            .flatten()
            .filter(|alt| alt.get("not").is_none())
            .collect()
    }

    fn types(&self, s: &Value) -> BTreeSet<&'static str> {
        let s = self.resolve(s);
        let mut out = BTreeSet::new();
        let mut add = |t: &str| {
            out.insert(match t {
                "string" => "string",
                "integer" | "number" => "number",
                "boolean" => "boolean",
                "object" => "object",
                "array" => "array",
                _ => "null",
            });
        };
        match s.get("type") {
            Some(Value::String(t)) => add(t),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(&mut add),
            _ => {}
        }
        if let Some(v) = s.get("const").or_else(|| s.get("enum").and_then(|e| e.get(0))) {
            add(json_kind(v));
        }
        for alt in self.alternatives(s) {
            out.extend(self.types(alt));
        }
        out
    }

    /// A value the schema accepts (first enum value, first union member, required fields only).
    fn valid(&self, s: &Value) -> Value {
        let s = self.resolve(s);
        if let Some(v) = s.get("const").or_else(|| s.get("enum").and_then(|e| e.get(0))) {
            return v.clone();
        }
        if let Some(alt) = self.alternatives(s).first() {
            return self.valid(alt);
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
            _ => "object",
        };
        match ty {
            "string" => json!("x"),
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "null" => Value::Null,
            _ => {
                let mut obj = serde_json::Map::new();
                let props = s.get("properties").and_then(Value::as_object);
                for r in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                    let v = props.and_then(|p| p.get(r)).map_or(json!("x"), |p| self.valid(p));
                    obj.insert(r.to_string(), v);
                }
                Value::Object(obj)
            }
        }
    }

    /// The params shape of a schema method (`None`: the schema does not describe it).
    fn shape(&self, method: &str) -> Option<Shape> {
        let params = self.params.get(method)?;
        if params.is_null() {
            return Some(Shape::default());
        }
        let mut s = self.resolve(params);
        if s.get("properties").is_none() {
            // `anyOf: [{not: {}}, {type: object, ...}]`: optional params.
            if let Some(obj) =
                self.alternatives(s).into_iter().map(|a| self.resolve(a)).find(|a| a.get("properties").is_some())
            {
                s = obj;
            }
        }
        let props = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(name, ps)| Prop { name: name.clone(), types: self.types(ps), valid: self.valid(ps) })
                    .collect()
            })
            .unwrap_or_default();
        let required = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        Some(Shape { props, required })
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Null => "null",
    }
}

fn prop(name: &str, types: &[&'static str], valid: Value) -> Prop {
    Prop { name: name.into(), types: types.iter().copied().collect(), valid }
}

/// Params of the hand-written methods (`crates/protocol/src/methods.rs`), which the schema does
/// not describe. Checked against the Rust types' field lists below, so it cannot drift silently.
fn hand_shape(method: &str) -> Option<(&'static str, Shape)> {
    let config = || Shape {
        props: vec![
            prop("sessionId", &["string"], json!("x")),
            prop("model", &["string"], json!("x")),
            prop("reasoningEffort", &["string"], json!("x")),
            prop("clientName", &["string"], json!("x")),
            prop("workingDirectory", &["string"], json!("x")),
            prop("streaming", &["boolean"], json!(true)),
            prop("tools", &["array"], json!([])),
            prop("availableTools", &["array"], json!([])),
            prop("excludedTools", &["array"], json!([])),
            // `serde_json::Value`: free-form agent settings; see SKIPPED.
            prop("defaultAgent", &[], json!({})),
            prop("systemMessage", &["object"], json!({})),
            prop("requestPermission", &["boolean"], json!(true)),
            prop("requestUserInput", &["boolean"], json!(true)),
            prop("hooks", &["boolean"], json!(true)),
            prop("disableResume", &["boolean"], json!(true)),
            prop("continuePendingWork", &["boolean"], json!(true)),
            prop("provider", &["object"], json!({"baseUrl": "http://127.0.0.1:1"})),
            prop("providers", &["array"], json!([])),
            prop("models", &["array"], json!([])),
            prop("infiniteSessions", &["object"], json!({"enabled": false})),
            prop("gitHubToken", &["string"], json!("x")),
            prop("enableCitations", &["boolean"], json!(true)),
            prop("customAgents", &["array"], json!([])),
            prop("skillDirectories", &["array"], json!([])),
            prop("disabledSkills", &["array"], json!([])),
            prop("agent", &["string"], json!("x")),
            prop("enableConfigDiscovery", &["boolean"], json!(true)),
            prop("mcpServers", &["object"], json!({})),
            prop("disabledMcpServers", &["array"], json!([])),
            prop("pluginDirectories", &["array"], json!([])),
            prop("commands", &["array"], json!([])),
            prop("requestElicitation", &["boolean"], json!(true)),
            prop("instructionDirectories", &["array"], json!([])),
            prop("excludedBuiltinAgents", &["array"], json!([])),
            prop("sessionLimits", &["object"], json!({"maxAiCredits": 5})),
            prop("canvases", &["array"], json!([])),
            prop("canvasProvider", &["object"], json!({"id": "x"})),
            prop("workflows", &["array"], json!([])),
            prop("factories", &["array"], json!([])),
            prop("requestCanvasRenderer", &["boolean"], json!(true)),
            prop("enableFileChangeTracking", &["boolean"], json!(true)),
            prop("enableGitHubTelemetryForwarding", &["boolean"], json!(true)),
            prop("requestExtensions", &["boolean"], json!(false)),
            prop("extensionSdkPath", &["string"], json!("x")),
            prop("githubMcpToolConfig", &["object"], json!({"enableAllTools": false})),
            prop("modelCapabilities", &["object"], json!({})),
            prop("sandboxConfig", &["object"], json!({"enabled": false})),
            prop("requestExitPlanMode", &["boolean"], json!(false)),
            prop("requestAutoModeSwitch", &["boolean"], json!(false)),
        ],
        required: Vec::new(),
    };
    let session_id =
        || Shape { props: vec![prop("sessionId", &["string"], json!("x"))], required: vec!["sessionId".into()] };
    Some(match method {
        "session.create" => ("SessionConfigParams", config()),
        // The handler requires `sessionId` (a -32602 of its own).
        "session.resume" => ("SessionConfigParams", Shape { required: vec!["sessionId".into()], ..config() }),
        "session.getMessages" | "session.detach" | "session.destroy" | "session.delete" | "session.getMetadata" => {
            ("SessionIdParams", session_id())
        }
        "session.list" => {
            ("ListParams", Shape { props: vec![prop("filter", &["object"], json!({}))], required: vec![] })
        }
        "session.setForeground" => {
            ("ForegroundParams", Shape { props: vec![prop("sessionId", &["string"], json!("x"))], required: vec![] })
        }
        "tenant.getUsage" => {
            ("TenantUsageParams", Shape { props: vec![prop("days", &["integer"], json!(1))], required: vec![] })
        }
        "status.get" | "auth.getStatus" | "session.getLastId" | "session.getForeground" => {
            ("NoParams", Shape::default())
        }
        _ => return None,
    })
}

/// Required fields Skipper accepts missing, as the original does: the Python SDK leaves
/// `subagents` out (`[relax] optional` in the codegen allowlist); `sessions.open` without a
/// `kind` opens nothing (`not_found`).
const RELAXED: &[(&str, &str)] = &[("session.tools.updateSubagentSettings", "subagents"), ("sessions.open", "kind")];

/// Fields whose wrong-typed values are accepted on purpose.
const SKIPPED: &[(&str, &str, &str)] = &[
    ("session.workflow.run", "args", "x-opaque-json: a workflow's input is any JSON, checked against its argsSchema"),
    ("session.factory.run", "args", "x-opaque-json: a workflow's input is any JSON, checked against its argsSchema"),
    ("session.workflow.journal.put", "resultJson", "x-opaque-json: a step's result is any JSON"),
    ("session.factory.journal.put", "resultJson", "x-opaque-json: a step's result is any JSON"),
    (
        "sandbox.getUnsupportedStartupNotice",
        "managedSandbox",
        "untyped in the schema (a managed settings slice): any JSON is accepted, only its flags are read",
    ),
    ("sandbox.settings.applyDefaults", "stored", "untyped in the schema: a non-object is refused by the handler"),
    ("sandbox.resolveFlooredConfig", "userSandbox", "untyped in the schema: a non-object is refused by the handler"),
    ("sandbox.resolveFlooredConfig", "managedSandbox", "untyped in the schema: a non-object is refused by the handler"),
    ("sandbox.resolveForOptional", "sandbox", "untyped in the schema: a non-object is no sandbox, as the original"),
    ("sandbox.preparePickerPolicy", "sandbox", "untyped in the schema: a non-object is no sandbox"),
    ("sandbox.filterPickerCandidates", "sandbox", "untyped in the schema: a non-object is no sandbox"),
    (
        "session.workspaces.ensure",
        "context",
        "untyped in the schema (the client's context): any JSON is accepted and unused",
    ),
    ("session.create", "defaultAgent", "typed serde_json::Value (free-form agent settings): any JSON is accepted"),
    ("session.resume", "defaultAgent", "typed serde_json::Value (free-form agent settings): any JSON is accepted"),
    (
        "user.settings.set",
        "settings",
        "x-opaque-json in the schema: any JSON parses (a non-object is refused by the handler)",
    ),
    (
        "session.mcp.executeSampling",
        "mcpRequestId",
        "a JSON-RPC id in the schema (string or number): any JSON parses, the handler looks it up",
    ),
    (
        "session.ui.ephemeralQuery",
        "onChunk",
        "in-process callback in the schema: ignored over the wire, any JSON accepted",
    ),
    ("session.canvas.open", "input", "x-opaque-json in the schema: any JSON is handed to the canvas provider as given"),
    (
        "session.canvas.action.invoke",
        "input",
        "x-opaque-json in the schema: any JSON is handed to the canvas provider as given",
    ),
    (
        "session.ui.ephemeralQuery",
        "abortSignal",
        "in-process AbortSignal in the schema: ignored over the wire, any JSON accepted",
    ),
];

/// What a valid request naming an unknown session gets, where it is not "Session not found".
fn unknown_session_expectation(method: &str) -> Option<&'static str> {
    Some(match method {
        // Creating a session with a new id is what create is for.
        "session.create" => "creates the session (not applicable)",
        // spec/methods.md §3.7: idempotent, `{success: true}` (the SDKs retry on `false`).
        "session.detach" | "session.destroy" => "success",
        // spec/methods.md §3.8: `{success: false, error: "Session not found: …"}` as a result.
        "session.delete" => "result-not-found",
        // spec/methods.md §3.10: unknown → `{}`.
        "session.getMetadata" => "empty",
        _ => return None,
    })
}

/// Proves every method in the table answers bad params with `-32602` naming the problem,
/// unknown sessions with "Session not found" (or the documented result), unknown methods with
/// `-32601`, and that the connection still answers `ping` afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn method_sweep_gets_correct_errors_for_every_bad_input() {
    with_timeout(120, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let schema = ApiSchema::load();

        // The hand table matches the Rust params types (every field, nothing extra).
        let fields = |v: Value| -> BTreeSet<String> { v.as_object().expect("object").keys().cloned().collect() };
        let rust_fields: BTreeMap<&str, BTreeSet<String>> = BTreeMap::from([
            ("SessionConfigParams", fields(serde_json::to_value(protocol::methods::SessionConfigParams::default()).unwrap())),
            (
                "SessionIdParams",
                fields(serde_json::to_value(protocol::methods::SessionIdParams { session_id: String::new() }).unwrap()),
            ),
            ("ListParams", fields(serde_json::to_value(protocol::methods::ListParams::default()).unwrap())),
            ("ForegroundParams", fields(serde_json::to_value(protocol::methods::ForegroundParams::default()).unwrap())),
            ("NoParams", fields(serde_json::to_value(protocol::rpc::NoParams::default()).unwrap())),
            (
                "TenantUsageParams",
                fields(serde_json::to_value(protocol::methods::TenantUsageParams { days: Some(1) }).unwrap()),
            ),
        ]);

        let mut cases = 0usize;
        let mut wrong: Vec<String> = Vec::new();
        let mut skipped_seen = BTreeSet::new();
        let mut check = |ok: bool, what: String| {
            cases += 1;
            if !ok {
                wrong.push(what);
            }
        };
        let methods = rpc_server::methods::METHODS;
        for entry in methods {
            let m = entry.name;
            // The seed's names of methods the schema knows by their current names.
            let seed_workspace = m.strip_prefix("session.workspace.").map(|rest| format!("session.workspaces.{rest}"));
            let canonical = match m {
                "session.compaction.compact" => "session.history.compact",
                _ => seed_workspace.as_deref().unwrap_or(m),
            };
            let shape = match (schema.shape(canonical), hand_shape(m)) {
                (Some(s), None) => s,
                (None, Some((ty, s))) => {
                    let names: BTreeSet<String> = s.props.iter().map(|p| p.name.clone()).collect();
                    assert_eq!(names, rust_fields[ty], "hand table for {m} ({ty}) is out of date");
                    s
                }
                (Some(_), Some(_)) => panic!("{m} is in the schema and in the hand table"),
                (None, None) => panic!("served method {m} is neither in api.schema.json nor in the hand table"),
            };

            // Params that are not an object.
            for bad in [json!([1]), json!("str"), json!(42), json!(true)] {
                let r = c.call(m, bad.clone()).await;
                let ok = matches!(&r, Err(e) if e.code == -32602 && e.message.contains("params must be an object"));
                check(ok, format!("{m} params={bad}: {r:?}"));
            }

            let unknown_sid = uuid::Uuid::new_v4().to_string();
            let mut valid = serde_json::Map::new();
            for p in shape.props.iter().filter(|p| shape.required.contains(&p.name)) {
                let v = if p.name == "sessionId" { json!(unknown_sid) } else { p.valid.clone() };
                valid.insert(p.name.clone(), v);
            }

            // Missing required fields: `{}`, then each one left out of otherwise valid params.
            let must: Vec<&String> = shape.required.iter().filter(|f| !RELAXED.contains(&(m, f.as_str()))).collect();
            if !must.is_empty() {
                let r = c.call(m, json!({})).await;
                let ok = matches!(&r, Err(e) if e.code == -32602
                    && must.iter().any(|f| detail(&e.message).contains(&format!("`{f}`"))));
                check(ok, format!("{m} {{}}: {r:?}"));
                for f in must.iter().copied() {
                    let mut params = valid.clone();
                    params.remove(f);
                    let r = c.call(m, Value::Object(params.clone())).await;
                    let ok = matches!(&r, Err(e) if e.code == -32602 && detail(&e.message).contains(&format!("missing field `{f}`")));
                    check(ok, format!("{m} without {f} {}: {r:?}", Value::Object(params)));
                }
            }

            // Every property with a value of each wrong JSON type, the rest valid.
            for p in &shape.props {
                if p.types.is_empty() {
                    let skip = SKIPPED.iter().find(|(sm, sf, _)| *sm == m && *sf == p.name);
                    assert!(skip.is_some(), "{m}.{} has no type: add it to SKIPPED with the reason", p.name);
                    skipped_seen.insert((m, p.name.clone()));
                    continue;
                }
                for kind in KINDS.iter().filter(|k| !p.types.contains(*k)) {
                    let mut params = valid.clone();
                    params.insert(p.name.clone(), wrong_value(kind));
                    let r = c.call(m, Value::Object(params.clone())).await;
                    let ok = matches!(&r, Err(e) if e.code == -32602 && {
                        let d = detail(&e.message);
                        d.strip_prefix(p.name.as_str()).is_some_and(|rest| rest.starts_with([':', '.', '[']))
                    });
                    check(ok, format!("{m}.{} as {kind} {}: {r:?}", p.name, Value::Object(params)));
                }
            }

            // Valid params naming a session that does not exist.
            let applicable = unknown_session_expectation(m) != Some("creates the session (not applicable)");
            if entry.scope == Scope::Session && applicable {
                let r = c.call(m, Value::Object(valid.clone())).await;
                let ok = match unknown_session_expectation(m) {
                    Some("success") => matches!(&r, Ok(v) if v["success"] == json!(true)),
                    Some("result-not-found") => matches!(&r, Ok(v) if v["success"] == json!(false)
                        && v["error"].as_str().is_some_and(|e| e.contains("Session not found"))),
                    Some("empty") => matches!(&r, Ok(v) if v == &json!({})),
                    _ => matches!(&r, Err(e) if e.code == -32603 && e.message.contains("Session not found")),
                };
                check(ok, format!("{m} unknown session {}: {r:?}", Value::Object(valid.clone())));
            }
        }

        // Nested fields: the error names the path.
        let sid = uuid::Uuid::new_v4().to_string();
        let nested = [
            ("session.create", json!({"tools": [{"name": 5}]}), "tools[0].name"),
            ("session.create", json!({"tools": [{"description": "no name"}]}), "tools[0]"),
            ("session.create", json!({"systemMessage": {"mode": 5}}), "systemMessage.mode"),
            ("session.list", json!({"filter": {"cwd": 5}}), "filter.cwd"),
            ("connect", json!({"supportedTaskKinds": [5]}), "supportedTaskKinds[0]"),
            ("session.send", json!({"sessionId": sid, "prompt": "p", "attachments": [5]}), "attachments[0]"),
            ("session.tools.set", json!({"sessionId": sid, "tools": [{"name": 1}]}), "tools[0]"),
        ];
        for (m, params, path) in nested {
            let r = c.call(m, params.clone()).await;
            let ok = matches!(&r, Err(e) if e.code == -32602 && detail(&e.message).starts_with(path));
            check(ok, format!("{m} {params} (expected path {path}): {r:?}"));
        }

        // Session ids that try to leave session-state/: refused, nothing outside is touched.
        for bad in ["..", "../..", "../../work", "a/b", "", "/etc"] {
            for m in ["session.create", "session.resume", "session.delete", "session.getMessages"] {
                let r = c.call(m, json!({"sessionId": bad})).await;
                let ok = match m {
                    "session.delete" => matches!(&r, Ok(v) if v["success"] == json!(false)),
                    _ => r.is_err(),
                };
                check(ok, format!("{m} sessionId={bad:?}: {r:?}"));
            }
        }
        assert!(env.dirs.copilot_home.is_dir() && env.dirs.workdir.is_dir(), "a hostile session id removed a directory");

        // Unknown methods.
        let long = "m".repeat(10_000);
        for name in ["session.nope", "", "PING", "ping ", "session.send.x", "rpc.discover", "__proto__", "constructor", &long] {
            let r = c.call(name, json!({})).await;
            let ok = matches!(&r, Err(e) if e.code == -32601 && e.message == format!("Unhandled method {name}"));
            check(ok, format!("unknown method {:?}: {r:?}", &name[..name.len().min(40)]));
        }

        ping_ok(c, "after-the-sweep").await;
        let skipped: Vec<String> = skipped_seen.iter().map(|(m, f)| format!("{m}.{f}")).collect();
        eprintln!(
            "method sweep: {} methods, {} cases, {} wrong; skipped fields (accept any JSON): {}",
            methods.len(),
            cases,
            wrong.len(),
            skipped.join(", ")
        );
        for (m, f, _) in SKIPPED {
            assert!(skipped_seen.contains(&(*m, f.to_string())), "SKIPPED entry {m}.{f} is stale");
        }
        assert!(wrong.is_empty(), "{} of {cases} cases got the wrong answer:\n{}", wrong.len(), wrong.join("\n"));
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Frames

/// A `Content-Length` shorter than the body: the cut body is a parse error, the rest is junk
/// skipped up to the next header, and the next request is answered.
#[tokio::test(flavor = "multi_thread")]
async fn content_length_too_short_cuts_the_body_and_the_rest_is_skipped() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let body = ping_body("cut-1", "never");
        let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() - 10).into_bytes();
        bytes.extend_from_slice(&body);
        let start = c.response_count();
        c.send_raw(&bytes).await;
        ping_ok(c, "after-short-length").await;
        let errors = null_id_errors_since(c, start, 2).await;
        assert!(errors.iter().all(|e| e["error"]["code"] == json!(-32700)), "{errors:?}");
        assert!(errors[1]["error"]["message"].as_str().unwrap().contains("junk"), "{errors:?}");
        assert!(c.responses().iter().all(|r| r["id"] != json!("cut-1")), "the cut request must not run");
    })
    .await;
}

/// A `Content-Length` longer than what arrives before EOF: that connection ends (TCP: the
/// server closes it; stdio: the process exits cleanly), other connections are unaffected.
#[tokio::test(flavor = "multi_thread")]
async fn truncated_body_then_eof_closes_only_that_connection() {
    with_timeout(60, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let mut sk =
            Skipper::spawn(&fake.url(), Dirs::new(), Options { transport: Transport::Tcp, ..Default::default() }).await;
        let other = sk.connect_tcp().await;
        other.connect().await;
        let c = sk.connect_tcp().await;
        c.connect().await;
        c.send_raw(b"Content-Length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1").await;
        c.close().await;
        c.wait_until(T, "the server to close the truncated connection", |c| c.is_closed().then_some(())).await;
        assert_alive(&mut sk);
        ping_ok(&other, "other-connection").await;
        let fresh = sk.connect_tcp().await;
        fresh.connect().await;
        ping_ok(&fresh, "new-connection").await;

        // Stdio: the one connection is the process; EOF inside a frame is a clean exit.
        let env = TestEnv::start().await;
        let mut env = env;
        env.client.send_raw(b"Content-Length: 1000\r\n\r\n{\"jsonrpc\"").await;
        env.client.close().await;
        let status = env.skipper.wait_exit(Duration::from_secs(10)).await.expect("exit after EOF");
        assert!(status.success(), "{status:?}");
    })
    .await;
}

/// Negative, non-numeric, empty, overflowing and huge lengths: refused at once with `-32700`
/// (id null), nothing allocated for them, and the next frame is decoded.
#[tokio::test(flavor = "multi_thread")]
async fn bad_length_values_are_refused_and_the_stream_stays_in_sync() {
    with_timeout(30, async {
        let mut env = TestEnv::start().await;
        let c = env.client.clone();
        let pid = env.skipper.child.id().expect("pid");
        ping_ok(&c, "warm-up").await;
        let (rss_before, _) = mem_kib(pid);
        for (i, value) in
            ["-5", "abc", "", "99999999999999999999999999", "1000000000000000", "0x10", "1e3", "5 5"].iter().enumerate()
        {
            let start = c.response_count();
            let mut bytes = format!("Content-Length: {value}\r\n\r\n").into_bytes();
            bytes.extend(frame(&ping_body(&format!("after-{i}"), "x")));
            c.send_raw(&bytes).await;
            let r = response_with_id(&c, &json!(format!("after-{i}"))).await;
            assert_eq!(r["result"]["message"], json!("pong: x"), "length {value:?}: {r}");
            let errors = null_id_errors_since(&c, start, 1).await;
            assert_eq!(errors[0]["error"]["code"], json!(-32700), "length {value:?}: {errors:?}");
            if *value == "1000000000000000" {
                let msg = errors[0]["error"]["message"].as_str().unwrap();
                assert!(msg.contains("exceeds the limit"), "{msg}");
            }
        }
        let (rss_after, _) = mem_kib(pid);
        eprintln!("bad lengths: VmRSS {rss_before} KiB -> {rss_after} KiB");
        assert!(
            rss_after < rss_before + 16 * 1024,
            "a declared length allocated memory: {rss_before} -> {rss_after} KiB"
        );
        assert_alive(&mut env.skipper);
    })
    .await;
}

/// With `SKIPPER_MAX_FRAME_BYTES=1048576`, a 2 MB body is refused with `-32700` naming the
/// limit (its bytes skipped as they arrive), a body of exactly the limit is accepted, and the
/// connection goes on.
#[tokio::test(flavor = "multi_thread")]
async fn frames_over_a_lowered_limit_are_refused_with_a_clear_error() {
    with_timeout(60, async {
        let (_fake, mut sk, c) = start_with_env(&[("SKIPPER_MAX_FRAME_BYTES", "1048576")]).await;
        let start = c.response_count();
        c.send_raw(&frame(&ping_body("too-big", &"x".repeat(2 * 1024 * 1024)))).await;
        ping_ok(&c, "after-too-big").await;
        let errors = null_id_errors_since(&c, start, 1).await;
        assert_eq!(errors.len(), 1, "one error for the refused frame: {errors:?}");
        let msg = errors[0]["error"]["message"].as_str().unwrap();
        assert_eq!(errors[0]["error"]["code"], json!(-32700));
        assert!(msg.contains("exceeds the limit of 1048576 bytes"), "{msg}");
        assert!(c.responses().iter().all(|r| r["id"] != json!("too-big")));

        // Exactly at the limit: accepted.
        let overhead = ping_body("at-limit", "").len();
        c.send_raw(&frame(&ping_body("at-limit", &"y".repeat(1048576 - overhead)))).await;
        let r = response_with_id(&c, &json!("at-limit")).await;
        assert!(r["result"]["message"].as_str().is_some_and(|m| m.starts_with("pong: yyy")), "at the limit: {r}");
        ping_ok(&c, "still-fine").await;
        assert_alive(&mut sk);
    })
    .await;
}

/// Invalid UTF-8 anywhere in a body: an error, not a crash, and the connection goes on.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_utf8_bodies_get_errors() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let bodies: [&[u8]; 4] = [
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u1\",\"method\":\"ping\",\"params\":{\"message\":\"\xff\xfe\"}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u2\",\"method\":\"pi\xc3\x28ng\",\"params\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u3\",\"method\":\"ping\",\"extra\":\"\xed\xa0\x80\"}",
            b"\xff\xff\xff\xff",
        ];
        for (i, body) in bodies.iter().enumerate() {
            let start = c.response_count();
            c.send_raw(&frame(body)).await;
            ping_ok(c, &format!("after-utf8-{i}")).await;
            let errs = null_id_errors_since(c, start, 1).await;
            assert_eq!(errs[0]["error"]["code"], json!(-32700), "body {i}: {errs:?}");
        }
        assert!(c.responses().iter().all(|r| !r["id"].as_str().is_some_and(|id| id.starts_with('u'))));
        assert!(c.protocol_errors().is_empty(), "{:?}", c.protocol_errors());
    })
    .await;
}

/// 100,000-deep nesting at top level, in params and in an unknown field: errors (or ignored),
/// never a stack overflow.
#[tokio::test(flavor = "multi_thread")]
async fn deep_nesting_is_an_error_not_a_crash() {
    with_timeout(60, async {
        let mut env = TestEnv::start().await;
        let c = env.client.clone();
        let deep_arr = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let deep_obj = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
        // Top level: not a request at all.
        for body in [&deep_arr, &deep_obj] {
            let start = c.response_count();
            c.send_raw(&frame(body.as_bytes())).await;
            let errs = null_id_errors_since(&c, start, 1).await;
            assert!([-32700, -32600].contains(&errs[0]["error"]["code"].as_i64().unwrap()), "{errs:?}");
            ping_ok(&c, "after-deep-top").await;
        }
        // In params: the params parse meets it.
        for (i, deep) in [&deep_arr, &deep_obj].iter().enumerate() {
            for (j, params) in [format!("{{\"message\":{deep}}}"), format!("{{\"unknown\":{deep}}}")].iter().enumerate() {
                let id = format!("deep-{i}-{j}");
                let body = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"ping\",\"params\":{params}}}");
                c.send_raw(&frame(body.as_bytes())).await;
                let r = response_with_id(&c, &json!(id)).await;
                if j == 0 {
                    assert_eq!(r["error"]["code"], json!(-32602), "{id}: {r}");
                } else {
                    // An unknown field may be skipped or refused; either way it is answered.
                    assert!(r.get("result").is_some() || r["error"]["code"] == json!(-32602), "{id}: {r}");
                }
            }
            let body = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"deep-create-{i}\",\"method\":\"session.create\",\"params\":{{\"defaultAgent\":{deep}}}}}"
            );
            c.send_raw(&frame(body.as_bytes())).await;
            let r = response_with_id(&c, &json!(format!("deep-create-{i}"))).await;
            assert_eq!(r["error"]["code"], json!(-32602), "{r}");
        }
        ping_ok(&c, "after-deep").await;
        assert_alive(&mut env.skipper);
    })
    .await;
}

/// A 50 MB string in `ping`'s message is answered; the server's peak memory growth stays
/// within 4x the body, and its resident memory afterwards does not keep the body.
#[tokio::test(flavor = "multi_thread")]
async fn fifty_megabyte_string_is_answered_within_bounded_memory() {
    with_timeout(120, async {
        let mut env = TestEnv::start().await;
        let c = env.client.clone();
        let pid = env.skipper.child.id().expect("pid");
        ping_ok(&c, "warm-up").await;
        let (rss_before, hwm_before) = mem_kib(pid);
        let message = "z".repeat(50 * 1024 * 1024);
        let body = ping_body("big", &message);
        let body_kib = body.len() as u64 / 1024;
        let t0 = Instant::now();
        c.send_raw(&frame(&body)).await;
        drop(body);
        let r = c
            .wait_until(Duration::from_secs(60), "the 50 MB pong", |c| {
                c.responses_from(c.response_count().saturating_sub(1)).into_iter().find(|r| r["id"] == json!("big"))
            })
            .await;
        let elapsed = t0.elapsed();
        let pong = r["result"]["message"].as_str().expect("pong");
        assert_eq!(pong.len(), message.len() + 6);
        assert!(pong.starts_with("pong: zzz") && pong.ends_with("zzz"));
        // Measured after another round trip: by then the writer has moved on from the big frame.
        ping_ok(&c, "after-big").await;
        let (rss_after, hwm_after) = mem_kib(pid);
        let peak_growth = hwm_after.saturating_sub(rss_before);
        eprintln!(
            "50 MB frame: body {body_kib} KiB, answered in {elapsed:?}; VmRSS before {rss_before} KiB, after \
             {rss_after} KiB; VmHWM before {hwm_before} KiB, after {hwm_after} KiB; peak growth {peak_growth} KiB \
             ({:.2}x the body)",
            peak_growth as f64 / body_kib as f64
        );
        assert!(peak_growth < 4 * body_kib, "peak growth {peak_growth} KiB is over 4x the body ({body_kib} KiB)");
        assert!(rss_after < rss_before + body_kib / 4, "the frame's memory stayed resident: {rss_after} KiB");
        assert_alive(&mut env.skipper);
    })
    .await;
}

/// Batches and bodies that are not objects: `-32600` with id null.
#[tokio::test(flavor = "multi_thread")]
async fn batches_and_non_object_bodies_are_invalid_requests() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let cases: [(&[u8], &str); 7] = [
            (br#"[{"jsonrpc":"2.0","id":77,"method":"ping","params":{}}]"#, "batches are not supported"),
            (b"[]", "batches are not supported"),
            (br#"[1,2,3]"#, "batches are not supported"),
            (br#""just a string""#, "expected a JSON object"),
            (b"42", "expected a JSON object"),
            (b"null", "expected a JSON object"),
            (b"true", "expected a JSON object"),
        ];
        for (body, expected) in cases {
            let start = c.response_count();
            c.send_raw(&frame(body)).await;
            let errs = null_id_errors_since(c, start, 1).await;
            assert_eq!(errs[0]["error"]["code"], json!(-32600), "{errs:?}");
            assert!(errs[0]["error"]["message"].as_str().unwrap().contains(expected), "{errs:?}");
        }
        // Empty body, and a body that is only whitespace: not JSON.
        for body in [&b""[..], b"   "] {
            let start = c.response_count();
            c.send_raw(&frame(body)).await;
            let errs = null_id_errors_since(c, start, 1).await;
            assert_eq!(errs[0]["error"]["code"], json!(-32700), "{errs:?}");
        }
        assert!(c.responses().iter().all(|r| r["id"] != json!(77)), "a batch member must not run");
        // A method that is not a string: the id is read, so the error carries it.
        c.send_json(&json!({"jsonrpc": "2.0", "id": "m5", "method": 5})).await;
        let r = response_with_id(c, &json!("m5")).await;
        assert_eq!(r["error"]["code"], json!(-32600), "{r}");
        ping_ok(c, "after-batches").await;
    })
    .await;
}

/// Ids of every JSON type: strings and numbers are echoed verbatim, `null` and absent make a
/// notification (no answer), objects, arrays and booleans are `-32600` with id null.
#[tokio::test(flavor = "multi_thread")]
async fn ids_of_every_json_type() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        for id in [r#""s-1""#, r#""""#, r#""ünï\"code""#, "0", "-7", "1.5e3", "12345678901234567890", "2.50"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"message":"id"}}}}"#);
            c.send_raw(&frame(body.as_bytes())).await;
            let needle = format!(r#""id":{id},"result""#);
            c.wait_until(T, &format!("the answer to id {id}, verbatim"), |c| {
                let raw = c.raw_bytes();
                raw.windows(needle.len()).any(|w| w == needle.as_bytes()).then_some(())
            })
            .await;
        }
        // No answer for null and absent ids: the ping sent after them is the next response.
        for body in [
            r#"{"jsonrpc":"2.0","id":null,"method":"ping","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"ping","params":{}}"#,
        ] {
            let start = c.response_count();
            c.send_raw(&frame(body.as_bytes())).await;
            ping_ok(c, "after-notification").await;
            let since = c.responses_from(start);
            assert_eq!(since.len(), 1, "a notification was answered: {since:?}");
        }
        for id in ["{}", r#"{"a":1}"#, "[]", "[1]", "true", "false"] {
            let start = c.response_count();
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{}}}}"#);
            c.send_raw(&frame(body.as_bytes())).await;
            let errs = null_id_errors_since(c, start, 1).await;
            assert_eq!(errs[0]["error"]["code"], json!(-32600), "id {id}: {errs:?}");
            assert!(errs[0]["error"]["message"].as_str().unwrap().contains("id must be a string or a number"));
        }
        ping_ok(c, "after-ids").await;
    })
    .await;
}

/// Responses the server never asked for, and notifications of real methods: ignored (no
/// answer, no effect), and the connection is fine.
#[tokio::test(flavor = "multi_thread")]
async fn stray_responses_and_notifications_are_ignored() {
    with_timeout(30, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let start = c.response_count();
        let stray = [
            json!({"jsonrpc": "2.0", "id": 999, "result": {"anything": true}}),
            json!({"jsonrpc": "2.0", "id": "never-asked", "result": null}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}}),
            json!({"jsonrpc": "2.0", "id": 2, "error": "not an error object"}),
            json!({"jsonrpc": "2.0", "id": -1}),
            json!({"jsonrpc": "2.0", "method": "session.create", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "session.create", "params": {"sessionId": "from-a-notification"}}),
            json!({"jsonrpc": "2.0", "method": "runtime.shutdown"}),
            json!({"jsonrpc": "2.0", "method": "no.such.method", "params": [1]}),
        ];
        for m in &stray {
            c.send_json(m).await;
        }
        ping_ok(c, "after-stray").await;
        let since = c.responses_from(start);
        assert_eq!(since.len(), 1, "stray messages were answered: {since:?}");
        let state = env.dirs.copilot_home.join("session-state");
        let created = std::fs::read_dir(&state).map(|d| d.count()).unwrap_or(0);
        assert_eq!(created, 0, "a notification created a session");
        ping_ok(c, "still-running").await; // runtime.shutdown as a notification did nothing
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Fuzz through the binary

/// The frame limit of the fuzzed server (lowered, so oversized frames are exercised cheaply).
const FUZZ_LIMIT: usize = 65_536;

struct Fuzzer {
    rng: StdRng,
    methods: Vec<&'static str>,
}

impl Fuzzer {
    fn string(&mut self) -> String {
        const POOL: &[&str] =
            &["", "x", "sessionId", "ping", "Content-Type", "\u{0}", "ü", "\"", "\\", "{", "../..", "interactive"];
        match self.rng.gen_range(0..3) {
            0 => POOL[self.rng.gen_range(0..POOL.len())].to_string(),
            1 => (0..self.rng.gen_range(0..20)).map(|_| self.rng.gen_range(' '..='~')).collect(),
            _ => (0..self.rng.gen_range(0..8)).map(|_| self.rng.gen::<char>()).collect(),
        }
    }

    /// Random JSON; `depth` bounds nesting (a few cases go deeper than serde's limit of 128).
    fn json(&mut self, depth: u32) -> Value {
        if depth == 0 {
            return json!(null);
        }
        match self.rng.gen_range(0..9) {
            0 => Value::Null,
            1 => json!(self.rng.gen::<bool>()),
            2 => json!(self.rng.gen::<i64>()),
            3 => json!(self.rng.gen::<f64>() * 1e6),
            4 | 5 => json!(self.string()),
            6 => Value::Array((0..self.rng.gen_range(0..5)).map(|_| self.json(depth - 1)).collect()),
            _ => {
                const KEYS: &[&str] = &[
                    "sessionId",
                    "prompt",
                    "model",
                    "tools",
                    "mode",
                    "requestId",
                    "result",
                    "kind",
                    "message",
                    "streaming",
                    "hooks",
                    "attachments",
                    "name",
                    "filter",
                    "token",
                    "enabled",
                    "content",
                ];
                let mut m = serde_json::Map::new();
                for _ in 0..self.rng.gen_range(0..5) {
                    let k = if self.rng.gen_bool(0.8) {
                        KEYS[self.rng.gen_range(0..KEYS.len())].to_string()
                    } else {
                        self.string()
                    };
                    let v = self.json(depth - 1);
                    m.insert(k, v);
                }
                Value::Object(m)
            }
        }
    }

    fn deep(&mut self) -> String {
        let n = self.rng.gen_range(100..400);
        if self.rng.gen_bool(0.5) {
            format!("{}{}", "[".repeat(n), "]".repeat(n))
        } else {
            format!("{}0{}", "{\"a\":".repeat(n), "}".repeat(n))
        }
    }

    /// A request body: a served method (or not) with random params and an id of any type.
    /// Numeric ids stay clear of the harness's own small positive ids.
    fn request(&mut self) -> Vec<u8> {
        let method = if self.rng.gen_bool(0.85) {
            json!(self.methods[self.rng.gen_range(0..self.methods.len())])
        } else {
            json!(self.string())
        };
        let mut m = serde_json::Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        match self.rng.gen_range(0..8) {
            0..=2 => {
                m.insert("id".into(), json!(self.rng.gen_range(1_000_000_000i64..i64::MAX)));
            }
            3 => {
                m.insert("id".into(), json!(-self.rng.gen_range(1..1_000_000i64)));
            }
            4 | 5 => {
                m.insert("id".into(), json!(format!("fz-{}", self.rng.gen::<u32>())));
            }
            6 => {}
            _ => {
                let v = self.json(2);
                if !matches!(&v, Value::String(s) if s.starts_with("fzping-")) {
                    m.insert("id".into(), v);
                }
            }
        }
        m.insert("method".into(), method);
        let params = match self.rng.gen_range(0..6) {
            0 => None,
            1 => Some(self.json(3)),
            _ => {
                let mut p = self.json(4);
                if let (Some(obj), true) = (p.as_object_mut(), self.rng.gen_bool(0.7)) {
                    obj.insert("sessionId".into(), json!(uuid::Uuid::new_v4().to_string()));
                }
                Some(p)
            }
        };
        let mut text = serde_json::to_string(&Value::Object(m)).expect("json");
        if let Some(p) = params {
            text.pop();
            text.push_str(",\"params\":");
            if self.rng.gen_range(0..20) == 0 {
                text.push_str(&self.deep());
            } else {
                text.push_str(&p.to_string());
            }
            text.push('}');
        }
        text.into_bytes()
    }

    /// A length for a lying header, and how many bytes must follow to keep the stream in sync
    /// if the decoder believes it (lengths up to the limit wait for their body; a little over
    /// the limit are skipped as they arrive; 10^13 and more are refused outright).
    fn lying_length(&mut self, body_len: usize) -> (String, usize) {
        match self.rng.gen_range(0..10) {
            0..=3 => {
                let v = self.rng.gen_range(0..body_len * 2 + 10);
                (v.to_string(), v)
            }
            4 => {
                let v = self.rng.gen_range(FUZZ_LIMIT + 1..FUZZ_LIMIT + 20_000);
                (v.to_string(), v)
            }
            5 => (self.rng.gen_range(10_000_000_000_000u64..u64::MAX).to_string(), 0),
            6 => (format!("-{}", self.rng.gen_range(0..1000)), 0),
            7 => ("99999999999999999999999999999".into(), 0),
            8 => (String::new(), 0),
            _ => {
                // Junk; a string that happens to be a number is replaced (its padding is unknown).
                let v = self.string().replace(['\r', '\n'], "");
                if v.trim().parse::<u64>().is_ok() {
                    ("abc".into(), 0)
                } else {
                    (v, 0)
                }
            }
        }
    }

    /// One fuzzed frame, plus what it takes to get back in sync: `\r\n\r\n` ends any header
    /// block it left open, then `pad` spaces complete any body the decoder is waiting for.
    /// Over-padding is harmless (whitespace between frames is skipped silently).
    fn case(&mut self) -> (Vec<u8>, &'static str) {
        let body = self.request();
        let mut pad = 0usize;
        let (mut bytes, kind) = match self.rng.gen_range(0..14) {
            0 => (frame(&body), "valid request"),
            1 => {
                let mut b = body.clone();
                for _ in 0..self.rng.gen_range(1..8) {
                    let i = self.rng.gen_range(0..b.len());
                    b[i] ^= 1 << self.rng.gen_range(0..8);
                }
                (frame(&b), "body bit flips")
            }
            2 => {
                let cut = self.rng.gen_range(0..body.len());
                (frame(&body[..cut]), "body truncated")
            }
            3 => {
                let n = self.rng.gen_range(0..300);
                let b: Vec<u8> = (0..n).map(|_| self.rng.gen()).collect();
                (frame(&b), "random bytes body")
            }
            4 => {
                let d = self.rng.gen_range(1..8);
                let text = if self.rng.gen_range(0..10) == 0 { self.deep() } else { self.json(d).to_string() };
                (frame(text.as_bytes()), "random JSON body")
            }
            5 => {
                let f = frame(&body);
                pad = body.len();
                let cut = self.rng.gen_range(0..f.len());
                (f[..cut].to_vec(), "frame truncated")
            }
            6 => {
                let (v, p) = self.lying_length(body.len());
                pad = p;
                let mut f = format!("Content-Length: {v}\r\n\r\n").into_bytes();
                f.extend_from_slice(&body);
                (f, "random Content-Length")
            }
            7 => {
                let (a, pa) = self.lying_length(body.len());
                let (b, pb) = if self.rng.gen_bool(0.5) {
                    (body.len().to_string(), body.len())
                } else {
                    self.lying_length(body.len())
                };
                pad = pa.max(pb).max(body.len());
                let mut f = format!("Content-Length: {a}\r\nContent-Length: {b}\r\n\r\n").into_bytes();
                f.extend_from_slice(&body);
                (f, "duplicated headers")
            }
            8 => {
                let header = match self.rng.gen_range(0..5) {
                    0 => format!(
                        "content-length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8",
                        body.len()
                    ),
                    1 => format!("Content-Type: application/json\r\nContent-Length:{}", body.len()),
                    2 => format!(
                        "X-{}: {}\r\nCONTENT-LENGTH: \t{} ",
                        self.rng.gen::<u16>(),
                        self.string().replace(['\r', '\n'], ""),
                        body.len()
                    ),
                    3 => format!("Content-Length : {}", body.len()),
                    _ => format!("Content-Length: {}\r\nContent-Length: {}", body.len(), body.len()),
                };
                pad = body.len();
                let mut f = format!("{header}\r\n\r\n").into_bytes();
                f.extend_from_slice(&body);
                (f, "odd headers")
            }
            9 => {
                let n = self.rng.gen_range(1..500);
                let junk: Vec<u8> = (0..n).map(|_| self.rng.gen()).collect();
                (junk, "junk without a header")
            }
            10 => {
                let mut f = format!("Content-Length: {}\n\n", body.len()).into_bytes();
                f.extend_from_slice(&body);
                pad = body.len();
                (f, "LF-only header")
            }
            11 => {
                let msg = match self.rng.gen_range(0..3) {
                    0 => json!({"jsonrpc": "2.0", "id": self.rng.gen_range(0..100), "result": self.json(3)}),
                    1 => json!({"jsonrpc": "2.0", "id": self.rng.gen_range(0..100), "error": self.json(2)}),
                    _ => {
                        json!({"jsonrpc": "2.0", "method": self.methods[self.rng.gen_range(0..self.methods.len())], "params": self.json(3)})
                    }
                };
                (frame(msg.to_string().as_bytes()), "stray response / notification")
            }
            12 => {
                let mut b = body.clone();
                let i = self.rng.gen_range(0..=b.len());
                let options: [&[u8]; 4] = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28"];
                let bad = options[self.rng.gen_range(0..4)];
                b.splice(i..i, bad.iter().copied());
                (frame(&b), "invalid UTF-8")
            }
            _ => {
                // A bit flip in the header: digits may change (any value the digit run can
                // spell), the name or the terminator may break.
                let f = frame(&body);
                let header_len = f.len() - body.len();
                let mut f2 = f.clone();
                let i = self.rng.gen_range(0..header_len);
                f2[i] ^= 1 << self.rng.gen_range(0..8);
                let digits = f2[..header_len].split(|b| !b.is_ascii_digit()).map(|d| d.len()).max().unwrap_or(0);
                pad = 10usize.pow(digits.min(6) as u32);
                (f2, "header bit flip")
            }
        };
        if pad > 0 || matches!(kind, "junk without a header" | "frame truncated") {
            bytes.extend_from_slice(b"\r\n\r\n");
            bytes.resize(bytes.len() + pad, b' ');
        }
        (bytes, kind)
    }
}

/// 10,000 fuzzed frames (mutations of valid requests, lying lengths, junk, odd headers, random
/// JSON, random methods from the table with random params), each followed by a `ping` with a
/// unique id: the process survives, every ping is answered exactly once with its pong, and the
/// server's output stays well-formed frames.
#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_fuzzed_frames_and_every_ping_is_answered() {
    with_timeout(120, async {
        let limit = FUZZ_LIMIT.to_string();
        let (_fake, mut sk, c) = start_with_env(&[("SKIPPER_MAX_FRAME_BYTES", &limit)]).await;
        // runtime.shutdown with valid params would (rightly) stop the server.
        let methods: Vec<&str> =
            rpc_server::methods::METHODS.iter().map(|e| e.name).filter(|m| *m != "runtime.shutdown").collect();
        let seed = std::env::var("SKIPPER_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_f00d_u64);
        let mut fz = Fuzzer { rng: StdRng::seed_from_u64(seed), methods };
        const CASES: usize = 10_000;
        const BATCH: usize = 50;
        let t0 = Instant::now();
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        let mut seen = HashSet::new();
        let mut duplicates = Vec::new();
        let mut bad_pongs = Vec::new();
        let mut scanned = c.response_count();
        let mut bytes_sent = 0usize;
        for batch in 0..CASES / BATCH {
            let mut out = Vec::new();
            for i in 0..BATCH {
                let n = batch * BATCH + i;
                let (bytes, kind) = fz.case();
                *kinds.entry(kind).or_default() += 1;
                out.extend_from_slice(&bytes);
                out.extend(frame(&ping_body(&format!("fzping-{n}"), &n.to_string())));
            }
            bytes_sent += out.len();
            c.send_raw(&out).await;
            let want = (batch + 1) * BATCH;
            let res = c
                .try_wait_until(Duration::from_secs(20), |c| {
                    for r in c.responses_from(scanned) {
                        scanned += 1;
                        let Some(id) = r["id"].as_str().and_then(|s| s.strip_prefix("fzping-")) else { continue };
                        if !seen.insert(id.to_string()) {
                            duplicates.push(id.to_string());
                        }
                        if r["result"]["message"] != json!(format!("pong: {id}")) {
                            bad_pongs.push(r.clone());
                        }
                    }
                    (seen.len() >= want).then_some(())
                })
                .await;
            if let Err(why) = res {
                let missing: Vec<usize> = (batch * BATCH..want).filter(|n| !seen.contains(&n.to_string())).collect();
                panic!("batch {batch}: {why}; pings not answered: {missing:?} (seed {seed})");
            }
        }
        let elapsed = t0.elapsed();
        ping_ok(&c, "after-fuzz").await;
        assert_alive(&mut sk);
        eprintln!(
            "fuzz: {CASES} frames + {CASES} pings ({} KiB) in {elapsed:?}, seed {seed:#x}; kinds: {kinds:?}",
            bytes_sent / 1024
        );
        assert!(duplicates.is_empty(), "pings answered twice: {duplicates:?}");
        assert!(bad_pongs.is_empty(), "pings answered with something else: {:?}", &bad_pongs[..bad_pongs.len().min(5)]);
        assert_eq!(seen.len(), CASES);
        assert!(c.protocol_errors().is_empty(), "server output not well-formed: {:?}", c.protocol_errors());
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Slow client

/// A TCP client that creates a streaming session, asks for a long streamed reply and never
/// reads: once more than `SKIPPER_MAX_QUEUED_EVENT_BYTES` wait for it, the server closes that
/// connection. Another client resumes the session and works with it; the server keeps
/// answering.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_stops_reading_is_disconnected_and_the_session_goes_on() {
    with_timeout(120, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let dirs = Dirs::new();
        fake.set_workdir(&dirs.workdir);
        let opts = Options {
            transport: Transport::Tcp,
            extra_env: vec![("SKIPPER_MAX_QUEUED_EVENT_BYTES".into(), "65536".into())],
            ..Default::default()
        };
        let mut sk = Skipper::spawn(&fake.url(), dirs, opts).await;
        // 10,000 one-character deltas: ~7 MB of events for 10 KB of text, so the final
        // `assistant.message` stays far below the limit while the deltas overflow any socket
        // buffer of a client that does not read.
        let chunks: Vec<String> = (0..10_000).map(|i| ((b'a' + (i % 26) as u8) as char).to_string()).collect();
        let text = chunks.concat();
        // Paced (1 ms a chunk, ~10 s in all) as a model streams: a client that reads keeps up,
        // one that does not falls behind by megabytes.
        fake.push_reply(Reply::SlowText { chunks, delay_ms: 1 });
        fake.push_reply(Reply::text("second answer"));

        // The non-reading client: a small receive buffer, requests written, nothing read.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut slow = socket.connect(([127, 0, 0, 1], sk.port.unwrap()).into()).await.unwrap();
        let sid = uuid::Uuid::new_v4().to_string();
        let msgs = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "connect", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "session.create", "params": {"sessionId": sid, "streaming": true}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "session.send", "params": {"sessionId": sid, "prompt": "long please"}}),
        ];
        // The well-behaved client is connected before the session exists, so the broadcast
        // `session.created` cannot come before it is listening (it did when a fast create beat
        // the second connection)...
        let good = sk.connect_tcp().await;
        good.connect().await;
        for m in &msgs[..2] {
            slow.write_all(&frame(m.to_string().as_bytes())).await.unwrap();
        }

        // ... and follows the session from its creation on.
        // (Resumed once `session.created` was broadcast; a resume racing the create is
        // `resume_racing_create_subscribes_the_caller`.)
        good.wait_until(T, "session.created", |c| {
            c.inbound().into_iter().find(|m| m["method"] == json!("session.lifecycle") && m["params"]["sessionId"] == json!(sid))
        })
        .await;
        // Resume replaces the session's settings: streaming stays on.
        good.ok("session.resume", json!({"sessionId": sid, "streaming": true})).await;
        // ... then the slow one asks for the long reply and reads nothing more.
        slow.write_all(&frame(msgs[2].to_string().as_bytes())).await.unwrap();
        let deadline = Duration::from_secs(60);
        // Scans only what is new at each wake-up (the run is tens of thousands of events).
        let mut scanned = 0;
        let mut got_message = false;
        good.wait_until(deadline, "the long reply and session.idle", |c| {
            for m in c.inbound_from(scanned) {
                scanned += 1;
                if m["params"]["sessionId"] != json!(sid) {
                    continue;
                }
                let event = &m["params"]["event"];
                if event["type"] == json!("assistant.message") && event["data"]["content"] == json!(text) {
                    got_message = true;
                }
                if event["type"] == json!("session.idle") {
                    return Some(());
                }
            }
            None
        })
        .await;
        assert!(got_message, "the reading client got the whole reply");

        // The slow client was cut off: what is buffered drains, then EOF (or a reset).
        let mut drained = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let end = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match slow.read(&mut buf).await {
                    Ok(0) => return "eof",
                    Ok(n) => drained.extend_from_slice(&buf[..n]),
                    Err(_) => return "reset",
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the server did not close the non-reading connection"));
        let good_bytes = good.raw_bytes().len();
        eprintln!(
            "slow client: connection ended by {end} after {} buffered bytes; the reading client got {good_bytes} bytes",
            drained.len()
        );
        let idle = b"\"type\":\"session.idle\"";
        assert!(
            !drained.windows(idle.len()).any(|w| w == idle),
            "the slow client got the whole run ({} bytes): it was never cut off",
            drained.len()
        );
        assert!(sk.stderr_text().contains("not reading its events"), "the reason is logged");

        // The session goes on for the other client; the server keeps answering.
        good.send(&sid, "again").await;
        good.wait_for_nth_event(&sid, "session.idle", 2, deadline).await;
        ping_ok(&good, "after-slow-client").await;
        assert_alive(&mut sk);
        good.assert_schema_clean();
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Lanes

/// 20,000 requests naming 20,000 different unknown sessions on one connection: all answered
/// with "Session not found", and the server's memory stays flat (lanes of idle sessions are
/// dropped; there is no direct probe from outside, so this is behavioural).
#[tokio::test(flavor = "multi_thread")]
async fn requests_for_many_session_ids_leave_no_lanes_behind() {
    with_timeout(120, async {
        let mut env = TestEnv::start().await;
        let c = env.client.clone();
        let pid = env.skipper.child.id().expect("pid");
        let mut rss = Vec::new();
        for round in 0..10 {
            let start = c.response_count();
            let mut out = Vec::new();
            for i in 0..2_000 {
                let sid = uuid::Uuid::new_v4().to_string();
                let body = json!({"jsonrpc": "2.0", "id": format!("lane-{round}-{i}"), "method": "session.getMessages", "params": {"sessionId": sid}});
                out.extend(frame(body.to_string().as_bytes()));
            }
            c.send_raw(&out).await;
            let answers = c
                .wait_until(T, "2,000 answers", |c| {
                    let v = c.responses_from(start);
                    (v.len() >= 2_000).then_some(v)
                })
                .await;
            for a in &answers {
                let msg = a["error"]["message"].as_str().unwrap_or_default();
                assert!(msg.contains("Session not found"), "{a}");
            }
            rss.push(mem_kib(pid).0);
        }
        ping_ok(&c, "after-lanes").await;
        assert_alive(&mut env.skipper);
        eprintln!("lanes: VmRSS after each round of 2,000 session ids (KiB): {rss:?}");
        // After two warm-up rounds, 16,000 more session ids add less than 8 MiB.
        assert!(rss[9] < rss[1] + 8 * 1024, "memory grows with the number of session ids: {rss:?}");
    })
    .await;
}

/// Requests for one session are answered in arrival order, and a request for another session
/// is not held up by them. Session A's lane is held by a `session.detach` waiting on the
/// client's answer to its `sessionEnd` hook (the one handler that waits on the client), with 20
/// more requests for A queued behind it; B's request is answered while all of A's wait.
#[tokio::test(flavor = "multi_thread")]
async fn one_sessions_requests_are_ordered_and_do_not_block_another_session() {
    with_timeout(60, async {
        let env = TestEnv::start().await;
        let c = &env.client;
        let a = c.create_session(json!({"hooks": true})).await;
        let b = c.create_session(json!({})).await;
        c.send_json(&json!({"jsonrpc": "2.0", "id": "detach-a", "method": "session.detach", "params": {"sessionId": a}}))
            .await;
        let hook = c
            .wait_until(T, "the sessionEnd hook request", |c| {
                c.inbound().into_iter().find(|m| m["method"] == json!("hooks.invoke") && m["params"]["sessionId"] == json!(a))
            })
            .await;
        for i in 0..20 {
            let m = json!({"jsonrpc": "2.0", "id": format!("a-{i}"), "method": "session.mode.get", "params": {"sessionId": a}});
            c.send_json(&m).await;
        }
        let t0 = Instant::now();
        let mode = c.ok("session.mode.get", json!({"sessionId": b})).await;
        let b_time = t0.elapsed();
        assert_eq!(mode, json!("interactive"));
        let a_answered = c.responses().iter().filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with("a-"))).count();
        assert_eq!(a_answered, 0, "A's requests ran before its detach finished");
        eprintln!("lanes: session B answered in {b_time:?} while session A's lane was held");

        // Answer the hook: the detach finishes, then A's requests run, in order.
        c.send_json(&json!({"jsonrpc": "2.0", "id": hook["id"], "result": {}})).await;
        let order = c
            .wait_until(T, "A's 21 answers", |c| {
                let ids: Vec<String> = c
                    .responses()
                    .iter()
                    .filter_map(|r| r["id"].as_str().map(str::to_string))
                    .filter(|id| id == "detach-a" || id.starts_with("a-"))
                    .collect();
                (ids.len() == 21).then_some(ids)
            })
            .await;
        let expected: Vec<String> =
            std::iter::once("detach-a".to_string()).chain((0..20).map(|i| format!("a-{i}"))).collect();
        assert_eq!(order, expected);
        ping_ok(c, "after-lanes").await;
    })
    .await;
}

/// A `session.resume` that races another client's `session.create` of the same id (the events
/// file exists before the session is registered) joins the created session, and its caller is
/// subscribed to it (the cold-load path finds the session registered meanwhile and resumes
/// that one with the caller's subscriber).
#[tokio::test(flavor = "multi_thread")]
async fn resume_racing_create_subscribes_the_caller() {
    with_timeout(60, async {
        let fake = fake_model::FakeModel::start().await.unwrap();
        let sk =
            Skipper::spawn(&fake.url(), Dirs::new(), Options { transport: Transport::Tcp, ..Default::default() }).await;
        let creator = sk.connect_tcp().await;
        creator.connect().await;
        let resumer = sk.connect_tcp().await;
        resumer.connect().await;
        let sid = uuid::Uuid::new_v4().to_string();
        let create =
            json!({"jsonrpc": "2.0", "id": "create", "method": "session.create", "params": {"sessionId": sid}});
        creator.send_json(&create).await;
        while resumer.call("session.resume", json!({"sessionId": sid})).await.is_err() {}
        resumer.ok("session.log", json!({"sessionId": sid, "message": "am I subscribed?"})).await;
        let r = resumer
            .try_wait_until(Duration::from_secs(5), |c| {
                c.events_of_type(&sid, "session.info")
                    .into_iter()
                    .find(|e| e["data"]["message"] == json!("am I subscribed?"))
            })
            .await;
        assert!(r.is_ok(), "session.resume succeeded but its caller gets no events of the session");
    })
    .await;
}
