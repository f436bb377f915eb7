//! The first line: `{"type": "session", "version": 1, "externalId", "createdAt", "updatedAt"?,
//! "title"?, "source"?: {"application", "version"?}, "workspace"?: {"repository"?: {"host",
//! "owner", "name"}, "branch"?, "workingDirectory"?}}`.

use serde_json::Value;

use super::{non_empty, time, Diagnostic};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub external_id: String,
    pub created_at: String,
    pub title: Option<String>,
    pub workspace: Workspace,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    pub repository: Option<Repository>,
    pub branch: Option<String>,
    pub working_directory: Option<String>,
}

/// A repository on a host the original knows: GitHub (`github`) or Azure DevOps (`ado`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    pub host: String,
    pub host_type: &'static str,
    pub owner: String,
    pub name: String,
}

pub(super) fn parse(v: &Value, line: usize, out: &mut Vec<Diagnostic>) -> Option<Header> {
    if v.get("type").and_then(Value::as_str) != Some("session") || !v.is_object() {
        out.push(Diagnostic::new(line, "missing_session_header", "The first record must be a session header."));
        return None;
    }
    let before = out.len();
    let mut fail = |code, message: &str| out.push(Diagnostic::new(line, code, message));
    let version_ok = v.get("version").and_then(Value::as_f64) == Some(1.0);
    if !version_ok {
        fail("unsupported_version", "Session interchange version must be 1.");
    }
    let external_id = non_empty(v.get("externalId"));
    if external_id.is_none() {
        fail("invalid_external_id", "Session externalId must be a non-empty string.");
    }
    let created = v.get("createdAt").and_then(Value::as_str).and_then(time::utc_millis);
    if created.is_none() {
        fail("invalid_timestamp", "Session createdAt must be an ISO 8601 timestamp.");
    }
    if v.get("updatedAt").is_some() && !time::is_valid(v.get("updatedAt")) {
        fail("invalid_timestamp", "Session updatedAt must be an ISO 8601 timestamp.");
    }
    if v.get("title").is_some() && non_empty(v.get("title")).is_none() {
        fail("invalid_title", "Session title must be a non-empty string when present.");
    }
    if let Some(source) = v.get("source") {
        let version_ok = source.get("version").is_none() || non_empty(source.get("version")).is_some();
        if !source.is_object() || non_empty(source.get("application")).is_none() || !version_ok {
            fail("invalid_source", "Session source must contain a non-empty application.");
        }
    }
    let workspace = match v.get("workspace") {
        None => Workspace::default(),
        Some(w) if !w.is_object() => {
            fail("invalid_workspace", "Session workspace must be an object.");
            Workspace::default()
        }
        Some(w) => workspace(w, &mut fail),
    };
    if out.len() > before {
        return None;
    }
    Some(Header {
        external_id: external_id?.to_string(),
        created_at: created?,
        title: non_empty(v.get("title")).map(str::to_string),
        workspace,
    })
}

fn workspace(w: &Value, fail: &mut impl FnMut(&'static str, &str)) -> Workspace {
    let repository = w.get("repository").and_then(repository);
    if let (Some(raw), None) = (w.get("repository"), &repository) {
        let fields = ["host", "owner", "name"].iter().all(|k| non_empty(raw.get(*k)).is_some());
        let known = host_name(raw["host"].as_str().unwrap_or_default()).and_then(|h| host_type(&h));
        if fields && known.is_none() {
            fail(
                "unsupported_repository_host",
                "Workspace repository host must be github.com, dev.azure.com, or visualstudio.com.",
            );
        } else {
            fail(
                "invalid_repository",
                "Workspace repository must contain single-segment, non-empty host, owner, and name fields.",
            );
        }
    }
    let mut optional = |key: &str, code, message: &str| match w.get(key) {
        None => None,
        Some(v) => {
            let s = non_empty(Some(v)).map(str::to_string);
            if s.is_none() {
                fail(code, message);
            }
            s
        }
    };
    let branch = optional("branch", "invalid_branch", "Workspace branch must be a non-empty string when present.");
    let working_directory = optional(
        "workingDirectory",
        "invalid_working_directory",
        "Workspace workingDirectory must be a non-empty string when present.",
    );
    Workspace { repository, branch, working_directory }
}

fn repository(v: &Value) -> Option<Repository> {
    let (host, owner, name) = (non_empty(v.get("host"))?, non_empty(v.get("owner"))?, non_empty(v.get("name"))?);
    if owner.contains('/') || name.contains('/') {
        return None;
    }
    let host = host_name(host)?;
    let host_type = host_type(&host)?;
    Some(Repository { host, host_type, owner: owner.to_string(), name: name.to_string() })
}

/// The host as a bare lower-case name: from a URL (http or https, no credentials, no port), or
/// as written if it is one.
fn host_name(host: &str) -> Option<String> {
    let mut h = host.trim().to_lowercase();
    if let Some((scheme, rest)) = h.split_once("://") {
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() || authority.contains('@') || authority.contains(':') {
            return None;
        }
        h = authority.to_string();
    } else if h.contains('/') || h.contains('@') || h.contains(':') {
        return None;
    }
    let h = h.strip_suffix('.').unwrap_or(&h).to_string();
    (!h.is_empty()).then_some(h)
}

/// The kind of host a bare name ([`host_name`]) is, if the original knows it.
fn host_type(h: &str) -> Option<&'static str> {
    let under = |domain: &str| h == domain || h.ends_with(&format!(".{domain}"));
    if h == "github.com" {
        Some("github")
    } else if under("dev.azure.com") || under("visualstudio.com") {
        Some("ado")
    } else {
        None
    }
}
