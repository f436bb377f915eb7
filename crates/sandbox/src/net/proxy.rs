//! The proxy a sandboxed process reaches the network through: HTTP `CONNECT` tunnels and
//! plain `http://` requests, each checked against the sandbox's [`HostRules`] before a
//! connection is made. It listens on a Unix socket in a directory only the server's user can
//! open; the sandbox gets that one socket bound in, and nothing else of the host's network.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::HostRules;

/// The largest request head a client may send before its target is known.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head, and a connection to be made.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Connections one proxy serves at once; more wait for a slot.
const MAX_CONNECTIONS: usize = 256;

/// The HTTP proxy that the proxy itself goes through (the config's `network.proxy`), with
/// its credentials kept here: they never reach the sandboxed process.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    host: String,
    port: u16,
    /// `Basic …`, when the config gives a user name.
    authorization: Option<String>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("host", &self.host).field("port", &self.port).finish_non_exhaustive()
    }
}

impl Upstream {
    /// From the config's `url` (`http://host[:port]`; credentials in it are refused, as in
    /// the original) and optional `username` / `password`.
    pub fn parse(url: &str, username: Option<&str>, password: Option<&str>) -> Result<Upstream, String> {
        let uri: http::Uri = url.parse().map_err(|_| format!("the sandbox proxy URL \"{url}\" is not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(
                    "the sandbox proxy URL must be http://: Skipper's sandbox does not speak TLS to a proxy".into()
                )
            }
            _ => return Err(format!("the sandbox proxy URL \"{url}\" must start with http://")),
        }
        let authority = uri.authority().ok_or_else(|| format!("the sandbox proxy URL \"{url}\" names no host"))?;
        if authority.as_str().contains('@') {
            return Err("the sandbox proxy URL must not hold credentials; set proxy.username and proxy.password".into());
        }
        let authorization = username.map(|u| {
            let pair = format!("{u}:{}", password.unwrap_or(""));
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
        });
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_string();
        Ok(Upstream { host, port: authority.port_u16().unwrap_or(80), authorization })
    }
}

/// A running proxy; it stops, and its socket goes, when the last policy holding it is
/// dropped.
pub struct Proxy {
    socket: PathBuf,
    /// The program the sandbox runs to reach the socket ([`super::bridge`]): this one.
    exe: PathBuf,
    task: tokio::task::AbortHandle,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("socket", &self.socket).finish_non_exhaustive()
    }
}

impl PartialEq for Proxy {
    fn eq(&self, other: &Self) -> bool {
        self.socket == other.socket
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy that lets through what `rules` allow, directly or through `upstream`.
    /// Needs a Tokio runtime.
    pub fn start(rules: HostRules, upstream: Option<Upstream>) -> io::Result<Arc<Proxy>> {
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let exe = std::env::current_exe()?;
        // A short path (a socket's must fit 108 bytes), owner-only (`tempfile` makes it 0700).
        let dir = tempfile::Builder::new().prefix("skipper-net-").tempdir()?;
        let socket = dir.path().join("proxy.sock");
        let listener = {
            let _guard = runtime.enter();
            UnixListener::bind(&socket)?
        };
        let shared = Arc::new(Shared { rules, upstream, slots: Semaphore::new(MAX_CONNECTIONS) });
        let task = runtime.spawn(serve(listener, shared)).abort_handle();
        Ok(Arc::new(Proxy { socket, exe, task, _dir: dir }))
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub(crate) fn exe(&self) -> &Path {
        &self.exe
    }
}

struct Shared {
    rules: HostRules,
    upstream: Option<Upstream>,
    slots: Semaphore,
}

async fn serve(listener: UnixListener, shared: Arc<Shared>) {
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let Ok(_slot) = shared.slots.acquire().await else { return };
            if let Err(e) = handle(conn, &shared).await {
                tracing::debug!(error = %e, "sandbox proxy connection ended");
            }
        });
    }
}

/// What a client asked for.
struct Request {
    /// `CONNECT host:port` (a tunnel), or a plain request to forward.
    tunnel: bool,
    host: String,
    port: u16,
    /// The head to send on: origin-form for a direct plain request; unused for a tunnel.
    head: Vec<u8>,
    /// The head as received, for a plain request through the upstream proxy.
    raw: Vec<u8>,
    /// A plain request's body length (`None`: chunked, or not known from its head).
    body: Option<u64>,
}

async fn handle(mut conn: UnixStream, shared: &Shared) -> io::Result<()> {
    let (head, rest) = match tokio::time::timeout(TIMEOUT, read_head(&mut conn)).await {
        Ok(Ok(Some(parts))) => parts,
        Ok(Ok(None)) => return refuse(&mut conn, 431, "the request head is too large").await,
        Ok(Err(e)) => return Err(e),
        Err(_) => return refuse(&mut conn, 408, "no request arrived in time").await,
    };
    let req = match parse(&head) {
        Ok(r) => r,
        Err(why) => return refuse(&mut conn, 400, &why).await,
    };
    if let Err(why) = shared.rules.host(&req.host) {
        tracing::info!(host = %req.host, "sandbox proxy refused a connection: {why}");
        return refuse(&mut conn, 403, &why).await;
    }
    let mut out = match tokio::time::timeout(TIMEOUT, open(shared, &req)).await {
        Ok(Ok(s)) => s,
        Ok(Err(Open::Refused(why))) => {
            tracing::info!(host = %req.host, "sandbox proxy refused a connection: {why}");
            return refuse(&mut conn, 403, &why).await;
        }
        Ok(Err(Open::Failed(why))) => return refuse(&mut conn, 502, &why).await,
        Err(_) => return refuse(&mut conn, 504, &format!("{}:{} did not answer in time", req.host, req.port)).await,
    };
    if req.tunnel {
        conn.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
    } else if let Some(up) = &shared.upstream {
        // The upstream proxy would take a next request on this connection to any host: only
        // this one request (its head and its body) goes, and then only the answer comes back.
        let Some(length) = req.body else {
            return refuse(&mut conn, 411, "a request body of unknown length cannot go through the upstream proxy")
                .await;
        };
        out.write_all(&with_authorization(&req.raw, up.authorization.as_deref())).await?;
        let first = rest.len().min(usize::try_from(length).unwrap_or(usize::MAX));
        out.write_all(&rest[..first]).await?;
        let mut remaining = (&mut conn).take(length - first as u64);
        tokio::io::copy(&mut remaining, &mut out).await?;
        tokio::io::copy(&mut out, &mut conn).await?;
        return Ok(());
    } else {
        out.write_all(&req.head).await?;
    }
    out.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut out).await?;
    Ok(())
}

enum Open {
    Refused(String),
    Failed(String),
}

/// The connection a request goes on: to its host, or (a tunnel opened) through the
/// upstream proxy.
async fn open(shared: &Shared, req: &Request) -> Result<TcpStream, Open> {
    let rules = &shared.rules;
    let Some(up) = &shared.upstream else {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((req.host.as_str(), req.port))
            .await
            .map_err(|e| Open::Failed(format!("{} does not resolve: {e}", req.host)))?
            .collect();
        let reachable: Vec<SocketAddr> = addrs.iter().copied().filter(|a| rules.address(a.ip())).collect();
        if reachable.is_empty() {
            return Err(Open::Refused(format!(
                "{} is on the local network, which the sandbox's policy does not allow",
                req.host
            )));
        }
        return TcpStream::connect(&reachable[..]).await.map_err(|e| Open::Failed(format!("{}: {e}", req.host)));
    };
    if let Ok(ip) = req.host.parse() {
        if !rules.address(ip) {
            return Err(Open::Refused(format!(
                "{} is on the local network, which the sandbox's policy does not allow",
                req.host
            )));
        }
    }
    let mut s = TcpStream::connect((up.host.as_str(), up.port))
        .await
        .map_err(|e| Open::Failed(format!("the sandbox's upstream proxy: {e}")))?;
    if !req.tunnel {
        return Ok(s);
    }
    let target = authority(&req.host, req.port);
    let mut ask = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(a) = &up.authorization {
        ask.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    ask.push_str("\r\n");
    s.write_all(ask.as_bytes()).await.map_err(|e| Open::Failed(format!("the sandbox's upstream proxy: {e}")))?;
    let answer = read_head(&mut s).await.map_err(|e| Open::Failed(format!("the sandbox's upstream proxy: {e}")))?;
    let status = answer.as_ref().and_then(|(h, _)| {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut headers);
        r.parse(h).ok()?;
        r.code
    });
    match status {
        Some(code) if (200..300).contains(&code) => Ok(s),
        Some(code) => Err(Open::Failed(format!("the sandbox's upstream proxy answered {code} for {target}"))),
        None => Err(Open::Failed("the sandbox's upstream proxy sent no valid answer".into())),
    }
}

fn authority(host: &str, port: u16) -> String {
    match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    }
}

/// Reads up to the end of the head: the head, and whatever came after it. `None` when it is
/// larger than [`MAX_HEAD`].
async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed before the request head ended"));
        }
        let searched = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = searched + end + 4;
            let rest = buf.split_off(end);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

fn parse(head: &[u8]) -> Result<Request, String> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut r = httparse::Request::new(&mut headers);
    match r.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("not an HTTP request".into()),
    }
    let (Some(method), Some(target)) = (r.method, r.path) else {
        return Err("not an HTTP request".into());
    };
    if method == "CONNECT" {
        let a: http::uri::Authority = target.parse().map_err(|_| format!("CONNECT {target}: not host:port"))?;
        let port = a.port_u16().ok_or_else(|| format!("CONNECT {target}: no port"))?;
        return Ok(Request { tunnel: true, host: bare(a.host()), port, head: Vec::new(), raw: Vec::new(), body: None });
    }
    let uri: http::Uri = target.parse().map_err(|_| format!("{target} is not a URL"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("{method} {target}: a proxy request must name an http:// URL (use CONNECT for https)"));
    }
    let a = uri.authority().ok_or_else(|| format!("{target} names no host"))?;
    let host = bare(a.host());
    let port = a.port_u16().unwrap_or(80);
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    // The client's own version: an HTTP/1.0 client cannot read a chunked answer.
    let version = r.version.unwrap_or(1);
    let mut out = format!("{method} {path} HTTP/1.{version}\r\n").into_bytes();
    let mut has_host = false;
    let mut body = Some(0);
    for h in r.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "content-length" {
            body = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse().ok());
        } else if name == "transfer-encoding" {
            body = None;
        }
        if name.starts_with("proxy-") {
            continue;
        }
        has_host |= name == "host";
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    if !has_host {
        out.extend_from_slice(format!("Host: {}\r\n", a.as_str()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    Ok(Request { tunnel: false, host, port, head: out, raw: head.to_vec(), body })
}

fn bare(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_string()
}

/// `head` with the client's own proxy credentials (if any) replaced by the upstream's, and
/// the connection closed after the answer.
fn with_authorization(head: &[u8], authorization: Option<&str>) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let dropped = ["proxy-authorization:", "proxy-connection:", "connection:"];
    let mut lines: Vec<&str> =
        text.split("\r\n").filter(|l| !dropped.iter().any(|d| l.to_ascii_lowercase().starts_with(d))).collect();
    // The head ends with two empty lines' worth of split: insert before them.
    let at = lines.len().saturating_sub(2);
    let header = authorization.map(|a| format!("Proxy-Authorization: {a}"));
    if let Some(h) = &header {
        lines.insert(at, h);
    }
    lines.insert(at, "Connection: close");
    lines.join("\r\n").into_bytes()
}

async fn refuse<S: AsyncWrite + Unpin>(conn: &mut S, code: u16, why: &str) -> io::Result<()> {
    let reason = match code {
        400 => "Bad Request",
        411 => "Length Required",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = format!("{why}\n");
    let answer = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(answer.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_request_goes_on_in_origin_form_without_proxy_headers() {
        let r = parse(b"GET http://example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Authorization: x\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n").unwrap();
        assert!(!r.tunnel && r.host == "example.com" && r.port == 8080);
        assert_eq!(
            String::from_utf8(r.head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n"
        );
        let old = parse(b"GET http://example.com/ HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(String::from_utf8(old.head).unwrap(), "GET / HTTP/1.0\r\nHost: example.com\r\n\r\n");
        let t = parse(b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n").unwrap();
        assert!(t.tunnel && t.host == "::1" && t.port == 443);
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"CONNECT example.com HTTP/1.1\r\n\r\n",
            b"GET https://x.com/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn upstream_credentials_replace_the_clients_and_never_sit_in_the_url() {
        let up = Upstream::parse("http://proxy.corp:3128", Some("u"), Some("p")).unwrap();
        assert_eq!((up.host.as_str(), up.port), ("proxy.corp", 3128));
        assert!(!format!("{up:?}").contains("Basic"), "no credentials in debug output");
        let head = with_authorization(
            b"GET http://a/ HTTP/1.1\r\nProxy-Authorization: mine\r\nHost: a\r\n\r\n",
            up.authorization.as_deref(),
        );
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
        assert!(Upstream::parse("http://u:p@proxy:1", None, None).unwrap_err().contains("credentials"));
        assert!(Upstream::parse("https://proxy:1", None, None).is_err());
        assert_eq!(Upstream::parse("http://proxy", None, None).unwrap().port, 80);
    }

    #[tokio::test]
    async fn the_proxy_refuses_what_the_rules_deny_and_tunnels_what_they_allow() {
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                tokio::spawn(async move {
                    let _ = read_head(&mut s).await;
                    let _ =
                        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").await;
                });
            }
        });
        let rules = HostRules::new(&["localhost".into()], &[], true).unwrap();
        let proxy = Proxy::start(rules, None).unwrap();
        let ask = |req: String| {
            let socket = proxy.socket().to_path_buf();
            async move {
                let mut c = UnixStream::connect(socket).await.unwrap();
                c.write_all(req.as_bytes()).await.unwrap();
                let mut out = String::new();
                c.read_to_string(&mut out).await.unwrap();
                out
            }
        };
        let ok = ask(format!("GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n")).await;
        assert!(ok.starts_with("HTTP/1.1 200 OK") && ok.ends_with("hello"), "{ok}");
        let denied = ask(format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n")).await;
        assert!(denied.starts_with("HTTP/1.1 403") && denied.contains("allowedHosts"), "{denied}");
        let tunnel = ask(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")).await;
        assert!(tunnel.starts_with("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK"), "{tunnel}");
        let socket = proxy.socket().to_path_buf();
        drop(proxy);
        assert!(!socket.exists(), "the socket goes with the proxy");
    }

    /// An upstream proxy that records each connection's bytes and answers every head with 200.
    async fn recording_upstream() -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let Ok(Some((head, rest))) = read_head(&mut s).await else { return };
                    let mut all = head.clone();
                    all.extend_from_slice(&rest);
                    let tunnel = head.starts_with(b"CONNECT");
                    let answer: &[u8] = match tunnel {
                        true => b"HTTP/1.1 200 Connection Established\r\n\r\n",
                        false => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    };
                    let _ = s.write_all(answer).await;
                    // Whatever else arrives before the client closes (a tunnel's bytes).
                    let mut more = Vec::new();
                    let _ = tokio::time::timeout(Duration::from_millis(300), s.read_to_end(&mut more)).await;
                    all.extend_from_slice(&more);
                    log.lock().unwrap().push(String::from_utf8_lossy(&all).into_owned());
                });
            }
        });
        (port, seen)
    }

    #[tokio::test]
    async fn through_an_upstream_only_the_checked_request_goes_with_the_upstreams_credentials() {
        let (port, seen) = recording_upstream().await;
        let up = Upstream::parse(&format!("http://127.0.0.1:{port}"), Some("u"), Some("p")).unwrap();
        let rules = HostRules::new(&["allowed.example".into()], &[], false).unwrap();
        let proxy = Proxy::start(rules, Some(up)).unwrap();
        let ask = |req: &'static str| {
            let socket = proxy.socket().to_path_buf();
            async move {
                let mut c = UnixStream::connect(socket).await.unwrap();
                c.write_all(req.as_bytes()).await.unwrap();
                let mut out = String::new();
                let _ = tokio::time::timeout(Duration::from_secs(2), c.read_to_string(&mut out)).await;
                out
            }
        };
        // A second request pipelined after the first, to a host the rules deny, never leaves.
        let out = ask("GET http://allowed.example/a HTTP/1.1\r\nHost: allowed.example\r\n\r\nGET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\n\r\n").await;
        assert!(out.ends_with("ok"), "{out}");
        let denied = ask("GET http://denied.example/ HTTP/1.1\r\n\r\n").await;
        assert!(denied.starts_with("HTTP/1.1 403"), "{denied}");
        let chunked = ask("POST http://allowed.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").await;
        assert!(chunked.starts_with("HTTP/1.1 411"), "{chunked}");
        let tunnel = ask("CONNECT allowed.example:443 HTTP/1.1\r\n\r\nhello").await;
        assert!(tunnel.starts_with("HTTP/1.1 200 Connection Established"), "{tunnel}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].starts_with("GET http://allowed.example/a HTTP/1.1\r\n"), "{seen:?}");
        assert!(seen[0].contains("Proxy-Authorization: Basic dTpw") && seen[0].contains("Connection: close"));
        assert!(!seen[0].contains("denied.example"), "the pipelined request stayed behind: {seen:?}");
        assert!(seen[1].starts_with("CONNECT allowed.example:443 HTTP/1.1") && seen[1].ends_with("hello"), "{seen:?}");
        assert!(seen.iter().all(|s| !s.contains("denied.example")));
    }
}
