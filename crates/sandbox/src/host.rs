//! Whether this host can run the sandbox: `bwrap` on `PATH`, recent enough, and allowed to
//! make the namespaces a policy asks for. Probed once per process, by running it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSupport {
    /// The `bwrap` to run, when the host can sandbox.
    pub bwrap: Option<PathBuf>,
    /// Why it cannot, with what to do about it.
    pub reason: Option<String>,
}

impl HostSupport {
    pub fn supported(&self) -> bool {
        self.bwrap.is_some()
    }
}

/// The host's answer, probed on first use.
pub fn host_support() -> &'static HostSupport {
    static SUPPORT: OnceLock<HostSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let support = probe(std::env::var_os("PATH").as_deref().map(Path::new));
        if let Some(reason) = &support.reason {
            tracing::info!(%reason, "command sandbox unavailable");
        }
        support
    })
}

fn unsupported(reason: impl Into<String>) -> HostSupport {
    HostSupport { bwrap: None, reason: Some(reason.into()) }
}

fn probe(path: Option<&Path>) -> HostSupport {
    let found =
        path.map(std::env::split_paths).into_iter().flatten().map(|dir| dir.join("bwrap")).find(|p| p.is_file());
    let Some(bwrap) = found else {
        return unsupported(
            "Bubblewrap (bwrap) was not found on PATH. Install it (Debian and Ubuntu: apt install bubblewrap) to \
             sandbox commands.",
        );
    };
    let version = Command::new(&bwrap).arg("--version").stdin(Stdio::null()).output();
    let version = match version {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Ok(out) => {
            return unsupported(format!("bwrap --version failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
        Err(e) => return unsupported(format!("bwrap could not be started: {e}")),
    };
    if !recent_enough(&version) {
        return unsupported(format!("Bubblewrap 0.5 or newer is needed; {} has {version}.", bwrap.display()));
    }
    // The namespaces every policy uses, tried for real: hosts that forbid unprivileged user
    // namespaces fail here, not on the first command.
    let tried = Command::new(&bwrap)
        .args(["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match tried {
        Ok(out) if out.status.success() => HostSupport { bwrap: Some(bwrap), reason: None },
        Ok(out) => unsupported(format!(
            "Bubblewrap cannot create namespaces on this host ({}). Allow unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1, or the AppArmor profile for bwrap).",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => unsupported(format!("bwrap could not be started: {e}")),
    }
}

/// `bubblewrap 0.8.0` → at least 0.5.
fn recent_enough(version: &str) -> bool {
    let number = version.rsplit(' ').next().unwrap_or("");
    let mut parts = number.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (0, 5)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_0_5_are_too_old() {
        assert!(recent_enough("bubblewrap 0.8.0"));
        assert!(recent_enough("bubblewrap 0.5.0"));
        assert!(recent_enough("bubblewrap 1.0"));
        assert!(!recent_enough("bubblewrap 0.4.1"));
        assert!(!recent_enough("garbage"));
    }

    #[test]
    fn no_bwrap_on_the_path_is_unsupported_with_a_remedy() {
        let empty = tempfile::tempdir().unwrap();
        let support = probe(Some(empty.path()));
        assert!(!support.supported());
        assert!(support.reason.unwrap().contains("apt install bubblewrap"));
    }
}
