//! Session extensions (`requestExtensions` on `session.create`): programs in the repository's
//! `.github/extensions/<name>/extension.mjs` (or `.js`) that join the session as clients of
//! their own. Each runs under `node` with `SESSION_ID` set; its stdin/stdout is a JSON-RPC
//! connection to this server (the SDK's `joinSession` speaks to its parent process), served
//! like any other connection. The SDK module `@github/copilot-sdk/extension` is resolved to
//! the client's `extensionSdkPath` by a module resolution hook given to `node --import`.
//!
//! Sensitive environment variables are not requested from the user: an extension that asks for
//! some (`requestedEnvironmentVariables`) is granted none, as the original does without the
//! feature, and joins all the same.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::process::{ChildStdin, ChildStdout};

use crate::Server;

/// Serves an extension's stdin/stdout as a trusted JSON-RPC connection (no `connect` token):
/// `connection::serve_trusted`, handed in through the handler's [`crate::ctx::Ctx`]. Handed in
/// rather than imported: extensions are started by a handler, which the connection's method
/// table calls, so naming the connection here closed an import circle through every handler
/// (issue 32).
pub type ServeTrusted = fn(Arc<Server>, ChildStdout, ChildStdin) -> BoxFuture<'static, ()>;

/// The specifiers an extension imports the SDK by, and the file of the SDK's build each maps
/// to.
const SDK_MODULES: &[(&str, &str)] =
    &[("@github/copilot-sdk/extension", "extension.js"), ("@github/copilot-sdk", "index.js")];

/// Starts the extensions of the repository around `cwd` for `session_id`; each runs until it
/// exits or the server does. Problems are logged, never fatal to the session.
pub fn start(server: &Arc<Server>, serve: ServeTrusted, session_id: &str, cwd: &Path, sdk_path: Option<&str>) {
    let Some(node) = find_node() else {
        tracing::info!(session = session_id, "extensions requested, but no `node` on PATH");
        return;
    };
    for program in discover(&repository_root(cwd)) {
        if let Err(e) = launch(server, serve, session_id, &node, &program, sdk_path) {
            tracing::warn!(session = session_id, extension = %program.display(), error = %e, "extension not started");
        }
    }
}

/// The repository `cwd` is in (the nearest directory up with a `.git`), else `cwd`.
fn repository_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

/// `<root>/.github/extensions/<name>/extension.{mjs,js}`, by name.
fn discover(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".github").join("extensions")) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|d| ["extension.mjs", "extension.js"].iter().map(|f| d.join(f)).find(|f| f.is_file()))
        .collect()
}

fn find_node() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("node")).find(|p| p.is_file())
}

fn launch(
    server: &Arc<Server>,
    serve: ServeTrusted,
    session_id: &str,
    node: &Path,
    program: &Path,
    sdk_path: Option<&str>,
) -> std::io::Result<()> {
    let mut command = tokio::process::Command::new(node);
    if let Some(sdk) = sdk_path {
        command.arg("--import").arg(resolve_hook(Path::new(sdk)));
    }
    command
        .arg(program)
        .current_dir(program.parent().unwrap_or(Path::new(".")))
        .env("SESSION_ID", session_id)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("extension pipes unavailable"));
    };
    let server = server.clone();
    let name = program.display().to_string();
    tokio::spawn(async move {
        let serving = serve(server.clone(), stdout, stdin);
        tokio::select! {
            _ = serving => {}
            status = child.wait() => tracing::debug!(extension = %name, ?status, "extension exited"),
            _ = server.shutdown.cancelled() => {}
        }
        // Dropping the child kills it if it is still running.
    });
    Ok(())
}

/// A `data:` module for `node --import` that registers a resolution hook mapping the SDK's
/// specifiers to the files of the build at `sdk`.
fn resolve_hook(sdk: &Path) -> String {
    let map: serde_json::Map<String, serde_json::Value> = SDK_MODULES
        .iter()
        .map(|(spec, file)| (spec.to_string(), serde_json::Value::String(file_url(&sdk.join(file)))))
        .collect();
    let hooks = format!(
        "const m={};export async function resolve(s,c,n){{return m[s]?{{url:m[s],shortCircuit:true}}:n(s,c)}}",
        serde_json::Value::Object(map)
    );
    let register = format!(
        "import{{register}}from'node:module';register('data:text/javascript,'+encodeURIComponent({}));",
        serde_json::Value::String(hooks)
    );
    format!("data:text/javascript,{}", percent_encode(&register))
}

fn file_url(path: &Path) -> String {
    format!("file://{}", percent_encode(&path.to_string_lossy()).replace("%2F", "/"))
}

/// Percent-encodes everything but unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_found_in_the_repository_around_the_working_directory() {
        let repo = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(repo.path().join(".git")).expect("git dir");
        let ext = repo.path().join(".github/extensions");
        for (name, file) in [("b-tools", "extension.js"), ("a-env", "extension.mjs"), ("c-empty", "README.md")] {
            std::fs::create_dir_all(ext.join(name)).expect("dir");
            std::fs::write(ext.join(name).join(file), "").expect("file");
        }
        let nested = repo.path().join("src/deep");
        std::fs::create_dir_all(&nested).expect("nested");
        let found = discover(&repository_root(&nested));
        assert_eq!(found, [ext.join("a-env/extension.mjs"), ext.join("b-tools/extension.js")]);
    }

    #[test]
    fn the_resolve_hook_maps_the_sdk_specifiers_to_the_build() {
        let hook = resolve_hook(Path::new("/opt/sdk dist"));
        let code = decode(hook.strip_prefix("data:text/javascript,").expect("a data URL"));
        assert!(code.starts_with("import{register}from'node:module';"), "{code}");
        assert!(
            code.contains(r#"\"@github/copilot-sdk/extension\":\"file:///opt/sdk%20dist/extension.js\""#),
            "{code}"
        );
    }

    fn decode(s: &str) -> String {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let byte = s.as_bytes()[i];
            match (byte, s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
                (b'%', Some(v)) => {
                    out.push(v);
                    i += 3;
                }
                _ => {
                    out.push(byte);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}
