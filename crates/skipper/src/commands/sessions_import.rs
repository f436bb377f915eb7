//! One import: the checks in the original's order (the transcript, its attachments, the name,
//! the working directory), then the session's directory, log, `workspace.yaml` and index row.
//! A session that could not be written whole is removed again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use store::interchange::{self, Content, Diagnostic, ImportedAttachment, Parsed, Record};
use store::{Layout, WorkspaceMeta};

use super::attachment_file::{read_beneath, Refused};

/// What one attachment may weigh, and all of a transcript's together (the original's limits).
const ONE_ATTACHMENT: u64 = 10 * 1024 * 1024;
const ALL_ATTACHMENTS: u64 = 24 * 1024 * 1024;
const MAX_ATTACHMENTS: usize = 100;

pub struct Options {
    pub input: PathBuf,
    pub dry_run: bool,
    /// `--working-directory`, made absolute.
    pub working_directory: Option<PathBuf>,
    /// Where the command runs: the directory when neither the option nor the transcript names one.
    pub default_working_directory: PathBuf,
    pub name: Option<String>,
}

/// The answer, as the original's `--output json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub ok: bool,
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub dry_run: bool,
    pub imported: Counts,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    sessions: usize,
    messages: usize,
    tool_calls: usize,
    tool_results: usize,
    attachments: usize,
}

impl Outcome {
    fn failed(code: &'static str, message: impl Into<String>, external_id: Option<&str>, dry_run: bool) -> Self {
        Self {
            ok: false,
            code,
            message: message.into(),
            external_id: external_id.map(str::to_string),
            session_id: None,
            dry_run,
            imported: Counts::default(),
            diagnostics: Vec::new(),
        }
    }

    fn with(mut self, diagnostics: Vec<Diagnostic>) -> Self {
        self.diagnostics = diagnostics;
        self
    }
}

pub fn import(home: &Path, options: &Options) -> Outcome {
    let dry = options.dry_run;
    let text = match std::fs::read_to_string(&options.input) {
        Ok(t) => t,
        Err(e) => {
            let message = format!("Session import read failed: {e} ({})", options.input.display());
            return Outcome::failed("input_read_failed", message, None, dry);
        }
    };
    let parsed = match interchange::parse(&text) {
        Ok(p) => p,
        Err(d) => return Outcome::failed("validation_error", "Session JSONL validation failed.", None, dry).with(d),
    };
    let ext = Some(parsed.header.external_id.as_str());
    let at_header = |code, message: &str| vec![Diagnostic::new(parsed.header_line, code, message)];
    let dir = options.input.parent().unwrap_or(Path::new("/"));
    let attachments = match read_attachments(&parsed, dir) {
        Ok(a) => a,
        Err(d) => {
            return Outcome::failed("validation_error", "Session attachment validation failed.", ext, dry).with(d)
        }
    };
    let name = options.name.clone().or_else(|| parsed.header.title.clone());
    if let Some(Err(reason)) = name.as_deref().map(store::check_session_name) {
        return Outcome::failed("invalid_name", reason, ext, dry).with(at_header("invalid_name", reason));
    }
    let cwd = match working_directory(&parsed, options) {
        Ok(cwd) => cwd,
        Err((message, hint)) => {
            return Outcome::failed("invalid_working_directory", message, ext, dry)
                .with(at_header("invalid_working_directory", &hint))
        }
    };
    let mut counts = count(&parsed, &attachments);
    if dry {
        return Outcome {
            ok: true,
            code: "dry_run",
            message: "Session JSONL is valid; no session was created.".into(),
            external_id: ext.map(str::to_string),
            session_id: None,
            dry_run: true,
            imported: counts,
            diagnostics: Vec::new(),
        };
    }
    let id = uuid::Uuid::new_v4().to_string();
    let layout = Layout::new(home);
    match write(&layout, &id, &parsed, &cwd, &attachments, name) {
        Ok(()) => {
            counts.sessions = 1;
            Outcome {
                ok: true,
                code: "session_imported",
                message: "Session imported.".into(),
                external_id: ext.map(str::to_string),
                session_id: Some(id),
                dry_run: false,
                imported: counts,
                diagnostics: Vec::new(),
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "session import could not be written");
            if let Err(cleanup) = layout.delete_session_dir(&id) {
                let message =
                    format!("Session import failed ({e}) and partial state could not be removed ({cleanup}).");
                return Outcome { session_id: Some(id), ..Outcome::failed("cleanup_failed", message, ext, false) }
                    .with(at_header("cleanup_failed", &cleanup.to_string()));
            }
            Outcome::failed("persistence_failed", format!("Session import could not be persisted: {e}"), ext, false)
                .with(at_header("persistence_failed", &e.to_string()))
        }
    }
}

/// Each user message's attachments, read from beside the transcript (by message record id).
fn read_attachments(parsed: &Parsed, dir: &Path) -> Result<HashMap<String, Vec<ImportedAttachment>>, Vec<Diagnostic>> {
    let wanted = parsed
        .records
        .iter()
        .map(|r| match r {
            Record::Message { content, .. } => {
                content.iter().filter(|c| matches!(c, Content::Attachment { .. })).count()
            }
            _ => 0,
        })
        .sum::<usize>();
    if wanted > MAX_ATTACHMENTS {
        let message = format!("Session imports support at most {MAX_ATTACHMENTS} attachments.");
        return Err(vec![Diagnostic::new(parsed.header_line, "too_many_attachments", message)]);
    }
    let mut out: HashMap<String, Vec<ImportedAttachment>> = HashMap::new();
    let mut problems = Vec::new();
    let mut total = 0u64;
    for record in &parsed.records {
        let Record::Message { id, line, assistant, content, .. } = record else { continue };
        let problem =
            |code, message: &str| Diagnostic { external_id: Some(id.clone()), ..Diagnostic::new(*line, code, message) };
        for part in content {
            let Content::Attachment { path, media_type, name } = part else { continue };
            let left = ALL_ATTACHMENTS.saturating_sub(total);
            let combined = "Combined attachment data exceeds the 24 MB session import limit.";
            if left == 0 {
                problems.push(problem("attachments_too_large", combined));
                break;
            }
            if *assistant {
                let m = "Assistant message attachments are not supported by the runtime event model.";
                problems.push(problem("unsupported_assistant_attachment", m));
                continue;
            }
            if Path::new(path).is_absolute() {
                problems.push(problem(
                    "absolute_attachment_path",
                    "Attachment paths must be relative to the JSONL input file.",
                ));
                continue;
            }
            let limit = left.min(ONE_ATTACHMENT);
            match read_beneath(dir, Path::new(path), limit) {
                Ok(data) => {
                    total += data.len() as u64;
                    let display_name = name.clone().unwrap_or_else(|| {
                        Path::new(path).file_name().map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned())
                    });
                    out.entry(id.clone()).or_default().push(ImportedAttachment {
                        mime_type: media_type.clone(),
                        display_name,
                        data,
                    });
                }
                Err(Refused::TooLarge) if limit < ONE_ATTACHMENT => {
                    problems.push(problem("attachments_too_large", combined));
                    break;
                }
                Err(refused) => {
                    let (code, message) = refused.diagnostic();
                    problems.push(problem(code, &message));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// `--working-directory`, else the transcript's, else where the command runs; absolute and an
/// existing directory. On failure: the message and the hint.
fn working_directory(parsed: &Parsed, options: &Options) -> Result<PathBuf, (String, String)> {
    let absolute_hint = "Use --working-directory with an existing absolute directory.";
    let dir = options
        .working_directory
        .clone()
        .or_else(|| parsed.header.workspace.working_directory.as_ref().map(PathBuf::from))
        .unwrap_or_else(|| options.default_working_directory.clone());
    if !dir.is_absolute() {
        return Err(("The effective working directory must be absolute.".into(), absolute_hint.into()));
    }
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err((
            "The effective working directory is not a directory.".into(),
            "Use --working-directory with an existing directory.".into(),
        )),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            Err(("The effective working directory does not exist.".into(), absolute_hint.into()))
        }
        Err(e) => Err((
            format!("The effective working directory could not be accessed: {e}."),
            format!("Could not access the working directory: {e}"),
        )),
    }
}

fn count(parsed: &Parsed, attachments: &HashMap<String, Vec<ImportedAttachment>>) -> Counts {
    let mut c = Counts { attachments: attachments.values().map(Vec::len).sum(), ..Counts::default() };
    for r in &parsed.records {
        match r {
            Record::Message { .. } => c.messages += 1,
            Record::ToolCall { .. } => c.tool_calls += 1,
            Record::ToolResult { .. } => c.tool_results += 1,
        }
    }
    c
}

/// The session's directory, log and metadata, then its row in the index (so it is listed and
/// `--resume` finds it).
fn write(
    layout: &Layout,
    id: &str,
    parsed: &Parsed,
    cwd: &Path,
    attachments: &HashMap<String, Vec<ImportedAttachment>>,
    name: Option<String>,
) -> Result<(), store::StoreError> {
    let cwd = cwd.display().to_string();
    let events = interchange::events(id, parsed, &cwd, attachments, env!("CARGO_PKG_VERSION"));
    let workspace = &parsed.header.workspace;
    let meta = WorkspaceMeta {
        id: id.to_string(),
        cwd,
        repository: workspace.repository.as_ref().map(|r| format!("{}/{}", r.owner, r.name)),
        branch: workspace.branch.clone(),
        client_name: Some(CLIENT_NAME.into()),
        user_named: name.is_some(),
        name,
        created_at: parsed.header.created_at.clone(),
        updated_at: protocol::now_iso(),
        ..Default::default()
    };
    let row = store::index::row_from_events(id, &events, Some(&meta))
        .ok_or_else(|| store::StoreError::NotFound(id.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| store::StoreError::Io { path: "the import's runtime".into(), source })?;
    // Written as `sessions.fork` writes a session: the log and `workspace.yaml` through the
    // store, then its row in the index.
    runtime.block_on(async {
        let store = store::EventStore::Files(layout.clone());
        store.write_log(id, events).await?;
        store.write_meta(id, &meta).await?;
        let index = store::SessionIndex::open(layout.db_path()).await?;
        let written = index.upsert(&row).await;
        index.close().await;
        written
    })
}

/// The client an imported session names in its metadata.
const CLIENT_NAME: &str = "skipper-cli";
