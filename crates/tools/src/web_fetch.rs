//! `web_fetch`: fetches an http(s) URL and hands the model the page as simplified markdown
//! (or raw), a window of `max_length` characters from `start_index`.
//!
//! Addresses that resolve to loopback, private, link-local or otherwise internal networks are
//! refused, as the original refuses them: a shared server must not let a model probe the
//! network it runs in. Each redirect hop is checked again. A deployment that wants intranet
//! pages turns the check off (`WebFetchTool::allowing_private`).

use std::net::IpAddr;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::args::{optional_bool, optional_number, required_str};
use crate::context::{PermissionRequest, ToolContext};
use crate::output::ToolOutput;
use crate::tool::Tool;

const DEFAULT_MAX_LENGTH: usize = 5000;
const MAX_MAX_LENGTH: usize = 20_000;
/// A page body larger than this is cut: the model sees at most a window of it anyway.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(30);

pub struct WebFetchTool {
    allow_private: bool,
    http: reqwest::Client,
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new(false)
    }
}

impl WebFetchTool {
    /// A tool that may also fetch loopback and private addresses (intranets, tests).
    pub fn allowing_private() -> Self {
        Self::new(true)
    }

    fn new(allow_private: bool) -> Self {
        // Redirects are followed by hand so every hop passes the address check; names resolve
        // only outside internal networks as the connection is made (a name that answers
        // differently the second time cannot slip past the check).
        let mut http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .user_agent(concat!("Skipper/", env!("CARGO_PKG_VERSION"), " (web_fetch)"));
        if !allow_private {
            http = http.dns_resolver(std::sync::Arc::new(sandbox::egress::Resolver));
        }
        let http = http.build().unwrap_or_default();
        Self { allow_private, http }
    }
}

#[async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        "Fetches a URL from the internet and returns the page as either markdown or raw HTML. Use this to \
         safely retrieve up-to-date information from HTML web pages."
    }

    fn parameters(&self) -> std::sync::Arc<Value> {
        crate::schema::parameters!("web_fetch")
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let given = match required_str(&args, "url") {
            Ok(u) => u.trim().to_string(),
            Err(e) => return e.into(),
        };
        let max_length = match optional_number(&args, "max_length") {
            Ok(n) => n.map_or(DEFAULT_MAX_LENGTH, |n| (n.max(1.0) as usize).min(MAX_MAX_LENGTH)),
            Err(e) => return e.into(),
        };
        let start_index = match optional_number(&args, "start_index") {
            Ok(n) => n.map_or(0, |n| n.max(0.0) as usize),
            Err(e) => return e.into(),
        };
        let raw = match optional_bool(&args, "raw") {
            Ok(r) => r.unwrap_or(false),
            Err(e) => return e.into(),
        };
        let url = match parse_url(&given) {
            Ok(u) => u,
            Err(text) => return ToolOutput::fail(text),
        };
        let request =
            PermissionRequest::Url { intention: format!("Fetch web content from {url}"), url: url.to_string() };
        if let Err(denied) = ctx.ask_permission(request).await {
            return denied;
        }
        let fetched = tokio::select! {
            _ = ctx.cancel.cancelled() => return ToolOutput::interrupted(),
            r = self.fetch(url.clone()) => r,
        };
        match fetched {
            Ok(page) => ToolOutput::ok(render(&url, &page, raw, start_index, max_length)),
            Err(e @ FetchError::Blocked { .. }) => {
                ToolOutput::fail(format!("Failed to fetch {url}: {e}")).sandbox_denied()
            }
            Err(e) => ToolOutput::fail(format!("Failed to fetch {url}: {e}")),
        }
    }
}

/// A fetched page: its content type and text.
struct Page {
    content_type: String,
    body: String,
}

#[derive(Debug)]
enum FetchError {
    Blocked { url: String, ip: IpAddr },
    Status(u16),
    Other(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Blocked { url, ip } => write!(
                f,
                "WebFetchBlockedUrlError: web_fetch URL \"{url}\" resolves to blocked address {ip}. URLs must not \
                 target loopback, private, or link-local addresses."
            ),
            FetchError::Status(code) => write!(f, "status code {code}"),
            FetchError::Other(msg) => f.write_str(msg),
        }
    }
}

impl WebFetchTool {
    async fn fetch(&self, mut url: reqwest::Url) -> Result<Page, FetchError> {
        for _ in 0..=MAX_REDIRECTS {
            self.check_address(&url).await?;
            let resp = self.http.get(url.clone()).send().await.map_err(|e| FetchError::Other(describe(&e)))?;
            let status = resp.status();
            if status.is_redirection() {
                let location =
                    resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).ok_or_else(|| {
                        FetchError::Other(format!("redirect ({}) without a location", status.as_u16()))
                    })?;
                url = url.join(location).map_err(|_| FetchError::Other(format!("bad redirect location {location}")))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(FetchError::Other(format!("redirect to unsupported URL {url}")));
                }
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let body = read_limited(resp).await?;
            return Ok(Page { content_type, body: String::from_utf8_lossy(&body).into_owned() });
        }
        Err(FetchError::Other(format!("too many redirects (more than {MAX_REDIRECTS})")))
    }

    /// Refuses a host that is, or resolves to, an internal address.
    async fn check_address(&self, url: &reqwest::Url) -> Result<(), FetchError> {
        if self.allow_private {
            return Ok(());
        }
        let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| FetchError::Other(format!("could not resolve {host}: {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        match addrs.into_iter().find(|ip| sandbox::egress::is_internal(*ip)) {
            Some(ip) => Err(FetchError::Blocked { url: url.to_string(), ip }),
            None => Ok(()),
        }
    }
}

async fn read_limited(mut resp: reqwest::Response) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| FetchError::Other(describe(&e)))? {
        let room = MAX_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY_BYTES {
            break;
        }
    }
    Ok(body)
}

/// reqwest's error with its causes, which say what actually failed (refused, timed out, ...).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The URL the model gave, or the text it is told.
fn parse_url(given: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(given).map_err(|_| format!("Invalid URL: \"{given}\""))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "file" => {
            Err("The file:// protocol is not supported by web_fetch. Use the view tool to read local files instead."
                .into())
        }
        "http" | "https" => Err(format!("Invalid URL: \"{given}\"")),
        other => Err(format!(
            "The {other}:// protocol is not supported by web_fetch. Only http and https URLs can be fetched."
        )),
    }
}

/// The model-visible result: the window of the page's text.
fn render(url: &reqwest::Url, page: &Page, raw: bool, start_index: usize, max_length: usize) -> String {
    let is_html = page.content_type.contains("text/html")
        || page.content_type.contains("application/xhtml")
        || (page.content_type.is_empty() && page.body.trim_start().get(..100).unwrap_or(&page.body).contains("<html"));
    let (prefix, text) = if is_html && !raw {
        (String::new(), to_markdown(&page.body))
    } else if is_html || is_text(&page.content_type) {
        (String::new(), page.body.clone())
    } else {
        (
            format!(
                "Content type {} cannot be simplified to markdown, but here is the raw content:\n",
                page.content_type
            ),
            page.body.clone(),
        )
    };
    let chars: Vec<char> = text.chars().collect();
    if start_index >= chars.len() && !chars.is_empty() {
        return "<error>No more content available.</error>".into();
    }
    let end = (start_index + max_length).min(chars.len());
    let window: String = chars[start_index.min(chars.len())..end].iter().collect();
    let mut out = format!("{prefix}Contents of {url}:\n{window}");
    if end < chars.len() {
        out.push_str(&format!(
            "\n\n<error>Content truncated. Call the web_fetch tool with a start_index of {end} to get more content.</error>"
        ));
    }
    out
}

fn is_text(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.contains("javascript")
        || content_type.is_empty()
}

/// Simplified markdown: scripts, styles and page furniture dropped.
fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "noscript", "template", "svg", "head", "nav", "iframe"])
        .build();
    match converter.convert(html) {
        Ok(md) if !md.trim().is_empty() => md.trim().to_string(),
        _ => "<error>Failed to simplify the page to markdown; fetch it with raw set to true.</error>".into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback HTTP server answering every request with `status`, `headers` and `body`.
    async fn serve(status: &'static str, headers: &'static str, body: String) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = sock.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(body.as_bytes()).await;
                });
            }
        });
        format!("http://{addr}")
    }

    async fn run(tool: &WebFetchTool, args: Value) -> ToolOutput {
        tool.run(args, &ToolContext::simple(std::env::temp_dir())).await
    }

    #[tokio::test]
    async fn html_becomes_markdown_without_scripts() {
        let page = "<html><head><title>T</title><script>var secret=1;</script></head><body><h1>Title</h1>\
                    <p>Some <b>bold</b> text and <a href=\"/x\">a link</a>.</p></body></html>";
        let base = serve("200 OK", "content-type: text/html; charset=utf-8\r\n", page.into()).await;
        let out = run(&WebFetchTool::allowing_private(), json!({"url": format!("{base}/page")})).await;
        assert!(out.success, "{}", out.text_for_llm);
        let text = out.text_for_llm;
        assert!(text.starts_with(&format!("Contents of {base}/page:\n# Title")), "{text}");
        assert!(text.contains("**bold**") && text.contains("[a link](/x)"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[tokio::test]
    async fn raw_and_windows_and_the_end_of_the_content() {
        let body = "<p>".to_string() + &"x".repeat(100) + "</p>";
        let base = serve("200 OK", "content-type: text/html\r\n", body.clone()).await;
        let tool = WebFetchTool::allowing_private();
        let out = run(&tool, json!({"url": base.clone(), "raw": true, "max_length": 10})).await;
        let expected = format!(
            "Contents of {base}/:\n<p>xxxxxxx\n\n<error>Content truncated. Call the web_fetch tool with a start_index \
             of 10 to get more content.</error>"
        );
        assert_eq!(out.text_for_llm, expected);
        let out = run(&tool, json!({"url": base.clone(), "raw": true, "start_index": 100, "max_length": 50})).await;
        assert_eq!(out.text_for_llm, format!("Contents of {base}/:\nxxx</p>"));
        let out = run(&tool, json!({"url": base, "start_index": 5000})).await;
        assert_eq!(out.text_for_llm, "<error>No more content available.</error>");
    }

    #[tokio::test]
    async fn loopback_is_refused_by_default_even_through_a_redirect() {
        let base = serve("200 OK", "content-type: text/plain\r\n", "internal".into()).await;
        let url = format!("{base}/secret");
        let out = run(&WebFetchTool::default(), json!({"url": url})).await;
        assert!(!out.success);
        assert_eq!(
            out.text_for_llm,
            format!(
                "Failed to fetch {url}: WebFetchBlockedUrlError: web_fetch URL \"{url}\" resolves to blocked address \
                 127.0.0.1. URLs must not target loopback, private, or link-local addresses."
            )
        );
        let out = run(&WebFetchTool::default(), json!({"url": "http://localhost:9/"})).await;
        assert!(out.text_for_llm.contains("WebFetchBlockedUrlError"), "{}", out.text_for_llm);
        assert_eq!(out.telemetry.get(crate::output::SANDBOX_DENIED), Some(&json!("true")), "counted as a denial");
    }

    #[tokio::test]
    async fn errors_are_told_plainly() {
        let tool = WebFetchTool::allowing_private();
        assert_eq!(run(&tool, json!({"url": "notaurl"})).await.text_for_llm, "Invalid URL: \"notaurl\"");
        assert_eq!(
            run(&tool, json!({"url": "file:///etc/passwd"})).await.text_for_llm,
            "The file:// protocol is not supported by web_fetch. Use the view tool to read local files instead."
        );
        let base = serve("404 Not Found", "content-type: text/html\r\n", "nope".into()).await;
        let out = run(&tool, json!({"url": format!("{base}/missing")})).await;
        assert!(!out.success);
        assert_eq!(out.text_for_llm, format!("Failed to fetch {base}/missing: status code 404"));
        assert!(!run(&tool, json!({})).await.success);
    }

    #[tokio::test]
    async fn plain_text_and_json_pass_through() {
        let base = serve("200 OK", "content-type: application/json\r\n", "{\"a\": 1}".into()).await;
        let out = run(&WebFetchTool::allowing_private(), json!({"url": base.clone()})).await;
        assert_eq!(out.text_for_llm, format!("Contents of {base}/:\n{{\"a\": 1}}"));
    }
}
