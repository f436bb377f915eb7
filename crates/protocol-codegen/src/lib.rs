//! Generates `crates/protocol/src/generated/` (Rust wire types) from the upstream JSON
//! Schemas (`shared/schemas/*.json`) and `allowlist.toml`.
//!
//! Pipeline: [`schema`] loads and indexes the schemas; [`mapper`] walks from the allowlist's
//! roots and maps every reachable schema to [`model`] items (naming them with [`naming`],
//! classifying unions with [`unions`]); [`analysis`] boxes recursive fields and decides
//! `Default`; [`emit`] prints the files. [`check`] compares them with the committed ones.

pub mod allowlist;
pub mod analysis;
pub mod diff;
pub mod docs;
pub mod emit;
pub mod mapper;
pub mod model;
pub mod naming;
pub mod schema;
pub mod unions;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use allowlist::Allowlist;
pub use schema::Schemas;

/// Where the generator reads and writes.
#[derive(Debug, Clone)]
pub struct Paths {
    pub schema_dir: PathBuf,
    pub allowlist: PathBuf,
    pub out_dir: PathBuf,
}

impl Paths {
    /// The workspace's own layout: schemas in `$SKIPPER_SHARED_DIR/schemas` if set, else
    /// `<workspace>/../shared/schemas`; output in `crates/protocol/src/generated`.
    pub fn workspace() -> Paths {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        // crates/protocol-codegen -> the workspace root.
        let workspace = crate_dir.parent().and_then(Path::parent).unwrap_or(crate_dir);
        let schema_dir = match std::env::var_os("SKIPPER_SHARED_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("schemas"),
            _ => workspace.join("../shared/schemas"),
        };
        Paths {
            schema_dir,
            allowlist: crate_dir.join("allowlist.toml"),
            out_dir: workspace.join("crates/protocol/src/generated"),
        }
    }
}

/// The generated files and what the run found worth reporting.
pub struct Output {
    /// `(file name in the output directory, contents)`.
    pub files: Vec<(String, String)>,
    pub summary: String,
}

/// Generates from already-loaded inputs (tests use this with a custom allowlist).
pub fn generate_from(schemas: &Schemas, allow: &Allowlist) -> Result<Output> {
    let mut schemas = schemas.clone();
    schemas.adopt_newer(&allow.newer.properties)?;
    let mut model = mapper::build(&schemas, allow)?;
    let boxed = analysis::box_recursive_fields(&mut model.items);
    analysis::derive_defaults(&mut model.items);
    let files = emit::files(&model);
    let summary = summarize(&model, &boxed);
    Ok(Output { files, summary })
}

pub fn generate(paths: &Paths) -> Result<Output> {
    let schemas = Schemas::load(&paths.schema_dir)?;
    let allow = Allowlist::load(&paths.allowlist)?;
    generate_from(&schemas, &allow)
}

fn summarize(model: &mapper::Model, boxed: &[String]) -> String {
    let count = |f: fn(&model::Item) -> bool| model.items.values().filter(|i| f(i)).count();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} types ({} structs, {} string enums, {} tagged enums, {} untagged enums, {} aliases), {} events, {} methods",
        model.items.len(),
        count(|i| matches!(i, model::Item::Struct(_))),
        count(|i| matches!(i, model::Item::StringEnum(_))),
        count(|i| matches!(i, model::Item::Tagged(_))),
        count(|i| matches!(i, model::Item::Untagged(_))),
        count(|i| matches!(i, model::Item::Alias(_))),
        model.events.len(),
        model.methods.len(),
    );
    let mut section = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            let _ = writeln!(s, "{title}:");
            for l in lines {
                let _ = writeln!(s, "  - {l}");
            }
        }
    };
    let uses = |v: &[model::ValueUse]| v.iter().map(|u| format!("{}: {}", u.site, u.reason)).collect();
    section("serde_json::Value fallbacks", uses(&model.fallbacks));
    section("serde_json::Value (schema leaves it open)", uses(&model.opaque));
    section("naming collisions", model.collisions.clone());
    section("boxed (recursive)", boxed.to_vec());
    section("notes", model.notes.clone());
    s
}

/// Writes the files, touching only those whose contents changed, and removes generated
/// files that are no longer produced.
pub fn write(paths: &Paths, output: &Output) -> Result<Vec<String>> {
    std::fs::create_dir_all(&paths.out_dir).with_context(|| format!("creating {}", paths.out_dir.display()))?;
    let mut changed = Vec::new();
    for (name, contents) in &output.files {
        let path = paths.out_dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
            std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
            changed.push(name.clone());
        }
    }
    for stale in stale_files(paths, output)? {
        let path = paths.out_dir.join(&stale);
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        changed.push(format!("{stale} (removed)"));
    }
    Ok(changed)
}

/// Generated-looking files in the output directory that this run does not produce.
fn stale_files(paths: &Paths, output: &Output) -> Result<Vec<String>> {
    let mut stale = Vec::new();
    let Ok(entries) = std::fs::read_dir(&paths.out_dir) else {
        return Ok(stale);
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let produced = output.files.iter().any(|(n, _)| *n == name);
        let generated = std::fs::read_to_string(entry.path()).is_ok_and(|text| text.starts_with(emit::HEADER));
        if !produced && generated {
            stale.push(name);
        }
    }
    stale.sort();
    Ok(stale)
}

/// Compares the committed files with `output`: one readable message per difference
/// (empty when up to date).
pub fn check(paths: &Paths, output: &Output) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (name, expected) in &output.files {
        let path = paths.out_dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(actual) if actual == *expected => {}
            Ok(actual) => problems.push(format!(
                "{} differs from what protocol-codegen generates:\n{}",
                path.display(),
                diff::first_difference(&actual, expected)
            )),
            Err(_) => problems.push(format!("{} is missing", path.display())),
        }
    }
    for stale in stale_files(paths, output)? {
        problems.push(format!("{} is no longer generated", paths.out_dir.join(stale).display()));
    }
    Ok(problems)
}
