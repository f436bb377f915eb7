//! Several nodes on one PostgreSQL share one directory, `[cluster] shared_root`: the tenants'
//! default workspaces (`workspaces/<name>`) and the session directories (`session-state/<id>`)
//! are there, so a node taking a session over finds what the last one wrote. The database keeps
//! the rest (index, owners, leases, event logs, notifications).
//!
//! The classic mistake is a node whose `shared_root` is a local directory, or another volume:
//! it would run sessions whose files the other nodes never see. So the volume carries an id
//! ([`VOLUME_FILE`]) that the first node writes and records in the database; a node whose root
//! holds no id, or another one, refuses to start.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The file in the shared root naming the volume (one line: its id).
pub const VOLUME_FILE: &str = ".skipper-volume";

const WHAT_TO_MOUNT: &str = "every node must mount one shared directory (NFS, EFS, CephFS, a Kubernetes \
     ReadWriteMany volume) for workspaces and session directories";

/// The configured shared root, resolved: required with PostgreSQL, and it must exist (a
/// missing directory is most often a mount that did not happen, so it is not created here).
pub fn resolve(configured: Option<&Path>, config_path: &Path) -> anyhow::Result<PathBuf> {
    let Some(root) = configured else {
        bail!(
            "--database-url postgres://… runs several nodes: {WHAT_TO_MOUNT}; mount it and set \
             `[cluster] shared_root = \"/path/to/it\"` in {}",
            config_path.display()
        );
    };
    if !root.is_dir() {
        bail!("[cluster] shared_root {} is not a directory: {WHAT_TO_MOUNT}, mounted there", root.display());
    }
    root.canonicalize().with_context(|| format!("resolving [cluster] shared_root {}", root.display()))
}

/// Refuses to start on a root that is not the cluster's volume; the first node names the volume.
pub async fn check_volume(root: &Path, pg: &store::pg::PgEvents) -> anyhow::Result<()> {
    let recorded = pg.volume().await.context("reading the cluster's volume id from PostgreSQL")?;
    let here = read_id(root)?;
    let file = root.join(VOLUME_FILE);
    match (recorded, here) {
        (Some(recorded), Some(here)) if recorded == here => Ok(()),
        (Some(recorded), Some(here)) => bail!(
            "[cluster] shared_root {} is not the cluster's shared volume: {} holds volume id {here}, \
             the database records {recorded}; {WHAT_TO_MOUNT}, and shared_root must point at it",
            root.display(),
            file.display()
        ),
        (Some(recorded), None) => bail!(
            "[cluster] shared_root {} is not the cluster's shared volume: it has no {VOLUME_FILE} \
             (the database records volume {recorded}, written there by the first node); \
             {WHAT_TO_MOUNT}, and shared_root must point at it",
            root.display()
        ),
        (None, here) => {
            let candidate = match here {
                Some(id) => id,
                None => write_new_id(root)?,
            };
            let claimed = pg.claim_volume(&candidate).await.context("recording the volume id in PostgreSQL")?;
            if claimed != candidate {
                bail!(
                    "[cluster] shared_root {} is not the cluster's shared volume: another node \
                     recorded volume {claimed} first, this root holds {candidate}; {WHAT_TO_MOUNT}",
                    root.display()
                );
            }
            tracing::info!(volume = %claimed, root = %root.display(), "shared volume");
            Ok(())
        }
    }
}

/// The id in the root's volume file, if there is one.
fn read_id(root: &Path) -> anyhow::Result<Option<String>> {
    let path = root.join(VOLUME_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim() {
            "" => bail!("{} is empty: remove it, or restore the id the other nodes' root holds", path.display()),
            id => Ok(Some(id.to_string())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Names a fresh volume: written aside, then linked into place, which fails if another node got
/// there first (its id is then the one to use) — so no reader ever sees a half-written file.
fn write_new_id(root: &Path) -> anyhow::Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    let path = root.join(VOLUME_FILE);
    let aside = root.join(format!("{VOLUME_FILE}.{id}"));
    let written = std::fs::File::create(&aside).and_then(|mut f| {
        writeln!(f, "{id}")?;
        f.sync_all()
    });
    written.with_context(|| format!("writing {}", aside.display()))?;
    let linked = std::fs::hard_link(&aside, &path);
    let _ = std::fs::remove_file(&aside);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_id(root)?.with_context(|| format!("{} vanished as it was written", path.display()))
        }
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_required_and_must_exist() {
        let config = Path::new("node.toml");
        let err = resolve(None, config).unwrap_err().to_string();
        assert!(err.contains("shared_root") && err.contains("node.toml") && err.contains("mount"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("not-mounted");
        let err = resolve(Some(&missing), config).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
        assert!(!missing.exists(), "a missing mount point is not created");
        assert_eq!(resolve(Some(dir.path()), config).unwrap(), dir.path().canonicalize().unwrap());
    }

    #[test]
    fn a_fresh_id_is_written_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_id(dir.path()).unwrap(), None);
        let id = write_new_id(dir.path()).unwrap();
        assert_eq!(read_id(dir.path()).unwrap().as_deref(), Some(id.as_str()));
        // A second writer finds the first one's id, and leaves no side file behind.
        assert_eq!(write_new_id(dir.path()).unwrap(), id);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(VOLUME_FILE)]);
    }
}
