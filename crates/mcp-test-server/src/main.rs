//! A small MCP server for Skipper's tests, on the official Rust SDK's server side.
//!
//! `mcp-test-server` serves stdio; `--http 127.0.0.1:0` serves streamable HTTP at `/mcp` and
//! prints `listening <url>` on stdout. Tools succeed (`echo`, `get_env`, `echo_meta`, `add`),
//! fail (`fail`: `isError`), hang (`hang`), crash the process (`crash`), and return images,
//! resources and structured content; `read_only_info` is annotated read-only; `sample` asks the
//! client to sample (`sampling/createMessage`) and returns the text it got.
//! `--oauth-token T` (with `--http`) makes it an OAuth-protected resource (see `oauth.rs`).

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

mod oauth;

#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP on this address instead of stdio.
    #[arg(long)]
    http: Option<String>,
    /// The name the server reports.
    #[arg(long, default_value = "skipper-test")]
    name: String,
    /// Append this process's id to a file on start (tests check that it is gone later).
    #[arg(long)]
    pid_file: Option<std::path::PathBuf>,
    /// Exit at once with status 3: a server that fails to start.
    #[arg(long)]
    fail_start: bool,
    /// With `--http`: protect `/mcp` with OAuth bearer tokens (see `oauth.rs`).
    #[arg(long)]
    oauth_token: Option<String>,
}

/// A 1×1 transparent PNG.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[derive(Clone)]
struct TestServer {
    name: String,
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    })
}

fn tools() -> Value {
    let text = json!({"text": {"type": "string", "description": "Text to echo"}});
    let mut read_only = tool("read_only_info", "Reports static information; changes nothing.", json!({}), &[]);
    read_only["annotations"] = json!({"readOnlyHint": true, "title": "Read-only info"});
    json!([
        tool("echo", "Echoes the text back.", text.clone(), &["text"]),
        tool(
            "get_env",
            "Returns the value of the specified environment variable.",
            json!({"name": {"type": "string", "description": "Environment variable name"}}),
            &["name"]
        ),
        tool(
            "echo_meta",
            "Echoes the value and the _meta received in the request.",
            json!({"value": {"type": "string", "description": "A value to echo back"}}),
            &["value"]
        ),
        tool(
            "add",
            "Adds two numbers; the sum is also structured content.",
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"]
        ),
        tool("fail", "Always fails with the given message.", text, &[]),
        tool("hang", "Never answers.", json!({}), &[]),
        tool("crash", "Exits the server process in the middle of the call.", json!({}), &[]),
        tool("image", "Returns a small PNG image and a caption.", json!({}), &[]),
        tool("resource", "Returns an embedded text resource.", json!({}), &[]),
        read_only,
        tool(
            "sample",
            "Asks the client's model to answer the prompt (MCP sampling) and returns its answer.",
            json!({
                "prompt": {"type": "string", "description": "What to ask the model"},
                "maxTokens": {"type": "integer", "description": "The request's maxTokens (default 100)"},
                "temperature": {"type": "number", "description": "The request's temperature"},
                "stopSequences": {"type": "array", "items": {"type": "string"}, "description": "The request's stop sequences"},
                "model": {"type": "string", "description": "A model name hint (modelPreferences)"}
            }),
            &["prompt"]
        ),
    ])
}

fn result(v: Value) -> Result<CallToolResponse, ErrorData> {
    let r: CallToolResult = serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(CallToolResponse::Complete(r))
}

fn text(t: impl Into<String>) -> Value {
    json!({"type": "text", "text": t.into()})
}

impl TestServer {
    async fn call(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
        meta: Option<Value>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        match name {
            "echo" => result(json!({"content": [text(arg("text"))]})),
            "get_env" => result(json!({"content": [text(std::env::var(arg("name")).unwrap_or_default())]})),
            "echo_meta" => {
                let system = ["progressToken", "traceparent", "tracestate"];
                let meta = meta
                    .and_then(|m| m.as_object().cloned())
                    .map(|m| {
                        m.into_iter()
                            .filter(|(k, _)| {
                                !system.contains(&k.as_str()) && !k.starts_with("io.modelcontextprotocol/")
                            })
                            .collect::<serde_json::Map<_, _>>()
                    })
                    .filter(|m| !m.is_empty())
                    .map(Value::Object)
                    .unwrap_or(Value::Null);
                let body = json!({"meta": meta, "value": arg("value")});
                result(json!({"content": [text(body.to_string())]}))
            }
            "add" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                let sum = n("a") + n("b");
                result(json!({"content": [text(sum.to_string())], "structuredContent": {"sum": sum}}))
            }
            "fail" => {
                let message = Some(arg("text")).filter(|t| !t.is_empty()).unwrap_or_else(|| "it failed".into());
                result(json!({"content": [text(message)], "isError": true}))
            }
            "hang" => {
                std::future::pending::<()>().await;
                result(json!({"content": []}))
            }
            "crash" => std::process::exit(7),
            "image" => result(
                json!({"content": [text("a pixel"), {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"}]}),
            ),
            "resource" => result(
                json!({"content": [{"type": "resource", "resource": {"uri": "test://greeting", "mimeType": "text/plain", "text": format!("hello from {}", self.name)}}]}),
            ),
            "read_only_info" => result(json!({"content": [text(format!("server {}", self.name))]})),
            other => result(json!({"content": [text(format!("Unknown tool: {other}"))], "isError": true})),
        }
    }
}

/// Asks the client to sample; its answer (or why it refused) is the tool's result.
#[allow(deprecated)] // MCP marks sampling deprecated (SEP-2577); clients still answer it.
/// The tool's optional arguments become the request's limits and model hint.
async fn sample(
    context: &RequestContext<RoleServer>,
    args: &serde_json::Map<String, Value>,
) -> Result<CallToolResponse, ErrorData> {
    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or_default();
    let mut params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "systemPrompt": "Answer in one short sentence.",
        "maxTokens": args.get("maxTokens").cloned().unwrap_or(json!(100)),
    });
    for key in ["temperature", "stopSequences"] {
        if let Some(v) = args.get(key) {
            params[key] = v.clone();
        }
    }
    if let Some(model) = args.get("model") {
        params["modelPreferences"] = json!({"hints": [{"name": model}]});
    }
    let params = serde_json::from_value(params).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    match context.peer.create_message(params).await {
        Ok(answer) => {
            let answer = serde_json::to_value(&answer).unwrap_or_default();
            let said = answer.pointer("/content/text").and_then(Value::as_str).unwrap_or_default();
            let model = answer.get("model").and_then(Value::as_str).unwrap_or_default();
            result(json!({"content": [text(format!("sampled ({model}): {said}"))]}))
        }
        Err(e) => result(json!({"content": [text(format!("sampling failed: {e}"))], "isError": true})),
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> InitializeResult {
        let info = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            "serverInfo": {"name": self.name, "version": "1.0.0"},
        });
        serde_json::from_value(info).unwrap_or_default()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({"tools": tools()})).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The SDK moves the request's `_meta` into the context.
        let meta = request.meta.as_ref().or(Some(&context.meta)).and_then(|m| serde_json::to_value(m).ok());
        let args = request.arguments.clone().unwrap_or_default();
        if request.name == "sample" {
            return sample(&context, &args).await;
        }
        self.call(&request.name, &args, meta).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let list = json!({"resources": [{"uri": "test://greeting", "name": "greeting", "mimeType": "text/plain"}]});
        serde_json::from_value(list).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let list = json!({"resourceTemplates": [
            {"uriTemplate": "test://greeting/{name}", "name": "greeting-for", "mimeType": "text/plain"}
        ]});
        serde_json::from_value(list).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    /// Two prompts, in pages of one: the client's cursor is the index of the next.
    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = [
            json!({"name": "greet", "description": "Greets someone",
                   "arguments": [{"name": "who", "description": "Whom to greet", "required": true}]}),
            json!({"name": "farewell", "description": "Says goodbye"}),
        ];
        let at: usize = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        let mut page = json!({"prompts": prompts.get(at).into_iter().collect::<Vec<_>>()});
        if at + 1 < prompts.len() {
            page["nextCursor"] = json!((at + 1).to_string());
        }
        serde_json::from_value(page).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "greet" && request.name != "farewell" {
            return Err(ErrorData::invalid_params(format!("no prompt {}", request.name), None));
        }
        let who = request.arguments.as_ref().and_then(|a| a.get("who")).and_then(Value::as_str).unwrap_or("you");
        let body = json!({"description": format!("{} from {}", request.name, self.name), "messages": [
            {"role": "user", "content": {"type": "text", "text": format!("Please {} {who}.", request.name)}}
        ]});
        let r: GetPromptResult =
            serde_json::from_value(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(GetPromptResponse::Complete(r))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "test://greeting" {
            return Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None));
        }
        let body = json!({"contents": [{"uri": "test://greeting", "mimeType": "text/plain", "text": format!("hello from {}", self.name)}]});
        let r: ReadResourceResult =
            serde_json::from_value(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResponse::Complete(r))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.pid_file {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        // One write per line: servers started together append to the same file, and a
        // line written in pieces could interleave with another's.
        f.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    }
    if args.fail_start {
        eprintln!("mcp-test-server: failing on purpose");
        std::process::exit(3);
    }
    let server = TestServer { name: args.name.clone() };
    match args.http {
        None => {
            let running = server.serve(rmcp::transport::stdio()).await.context("stdio handshake")?;
            running.waiting().await?;
        }
        Some(addr) => {
            use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
            use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
            let service = StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let mut router = axum::Router::new().nest_service("/mcp", service);
            if let Some(token) = args.oauth_token {
                router = oauth::protect(router, token);
            }
            let listener = tokio::net::TcpListener::bind(&addr).await.context("bind")?;
            println!("listening http://{}/mcp", listener.local_addr()?);
            axum::serve(listener, router).await?;
        }
    }
    Ok(())
}
