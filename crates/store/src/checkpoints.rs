//! Compaction checkpoints: `checkpoints/NNN-<slug>.md`, one per successful compaction, listed
//! in `checkpoints/index.md` (a markdown table the model can read, as the original writes it).

use crate::error::{blocking, io_err, read_if_present, remove_if_present, StoreError};
use crate::layout::Layout;

/// One checkpoint as `index.md` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub number: u32,
    pub title: String,
    pub filename: String,
}

impl Checkpoint {
    /// The index is ours, but a file name read from disk must still not leave the directory.
    fn stays_inside(&self) -> bool {
        !self.filename.contains(['/', '\\']) && !self.filename.starts_with('.')
    }
}

const INDEX_HEAD: &str = "# Checkpoint History\n\nCheckpoints are listed in chronological order. \
Checkpoint 1 is the oldest, higher numbers are more recent.\n\n| # | Title | File |\n|---|-------|------|\n";

/// How many characters of the title go into a file name.
const SLUG_LEN: usize = 30;

/// `Dragon storytelling, creative!` → `dragon-storytelling-creative`, cut to 30 characters.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let cut: String = out.chars().take(SLUG_LEN).collect();
    let cut = cut.trim_matches('-');
    if cut.is_empty() {
        "checkpoint".into()
    } else {
        cut.to_string()
    }
}

/// The rows of `index.md`. A title may hold `|`: the number is the first cell, the file the
/// last, the title whatever lies between.
fn parse_index(text: &str) -> Vec<Checkpoint> {
    text.lines()
        .filter_map(|line| {
            let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
            let (number, rest) = inner.split_once('|')?;
            let (title, filename) = rest.rsplit_once('|')?;
            let number = number.trim().parse().ok()?;
            Some(Checkpoint { number, title: title.trim().to_string(), filename: filename.trim().to_string() })
        })
        .collect()
}

pub(crate) fn render_index(rows: &[Checkpoint]) -> String {
    let mut out = INDEX_HEAD.to_string();
    for r in rows {
        // A line break would end the table row.
        let title = r.title.replace(['\n', '\r'], " ");
        out.push_str(&format!("| {} | {} | {} |\n", r.number, title, r.filename));
    }
    out
}

impl Layout {
    /// The session's checkpoints, oldest first; none when it has no `index.md`. The index is a
    /// line per checkpoint, read in place (see `files`).
    pub async fn list_checkpoints(&self, id: &str) -> Result<Vec<Checkpoint>, StoreError> {
        Self::check_id(id)?;
        let path = self.checkpoints_dir(id).join("index.md");
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(parse_index(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    /// Checkpoint `number`'s text, or `None` when there is no such checkpoint.
    pub async fn read_checkpoint(&self, id: &str, number: u64) -> Result<Option<String>, StoreError> {
        let Some(row) = self.list_checkpoints(id).await?.into_iter().find(|c| u64::from(c.number) == number) else {
            return Ok(None);
        };
        if !row.stays_inside() {
            return Ok(None);
        }
        read_if_present(&self.checkpoints_dir(id).join(&row.filename)).await
    }

    /// Records in `workspace.yaml` how many summaries the session has (a session without one
    /// yet keeps none).
    async fn set_summary_count(&self, id: &str, count: u32) -> Result<(), StoreError> {
        let (layout, id) = (self.clone(), id.to_string());
        let update = move || -> Result<(), StoreError> {
            let Some(mut meta) = layout.read_workspace_yaml(&id)? else { return Ok(()) };
            meta.summary_count = count;
            layout.write_workspace_yaml_blocking(&id, &meta)
        };
        blocking(update).await
    }

    /// Writes the next checkpoint and lists it in `index.md`; returns its number and path.
    pub async fn write_checkpoint(
        &self,
        id: &str,
        title: &str,
        content: &str,
    ) -> Result<(u32, std::path::PathBuf), StoreError> {
        let mut rows = self.list_checkpoints(id).await?;
        let dir = self.checkpoints_dir(id);
        tokio::fs::create_dir_all(&dir).await.map_err(io_err(&dir))?;
        let number = rows.iter().map(|r| r.number).max().unwrap_or(0) + 1;
        let filename = format!("{number:03}-{}.md", slug(title));
        let path = dir.join(&filename);
        tokio::fs::write(&path, content).await.map_err(io_err(&path))?;
        rows.push(Checkpoint { number, title: title.to_string(), filename });
        let index = dir.join("index.md");
        tokio::fs::write(&index, render_index(&rows)).await.map_err(io_err(&index))?;
        self.set_summary_count(id, rows.len() as u32).await?;
        Ok((number, path))
    }

    /// Keeps the first `keep` checkpoints (`session.workspaces.truncateSummaries`, as the
    /// original counts them); the others' files go, and the index and `summary_count` follow.
    pub async fn truncate_checkpoints(&self, id: &str, keep: usize) -> Result<(), StoreError> {
        let rows = self.list_checkpoints(id).await?;
        if rows.len() <= keep {
            return Ok(());
        }
        let dir = self.checkpoints_dir(id);
        let (kept, gone) = rows.split_at(keep);
        for row in gone.iter().filter(|r| r.stays_inside()) {
            remove_if_present(&dir.join(&row.filename)).await?;
        }
        let index = dir.join("index.md");
        tokio::fs::write(&index, render_index(kept)).await.map_err(io_err(&index))?;
        self.set_summary_count(id, kept.len() as u32).await
    }
}

// Tests fail loudly by design.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slugs_as_the_original_names_files() {
        assert_eq!(slug("Dragon storytelling creative writing"), "dragon-storytelling-creative-w");
        assert_eq!(slug("Second Title!! with Punctuation & stuff longer than thirty"), "second-title-with-punctuation");
        assert_eq!(slug("Session 39264416"), "session-39264416");
        assert_eq!(slug("  ¿¡!!  "), "checkpoint");
    }

    #[tokio::test]
    async fn checkpoints_are_numbered_listed_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        layout.ensure_session_dir("s1").unwrap();
        assert!(layout.list_checkpoints("s1").await.unwrap().is_empty());
        assert_eq!(layout.read_checkpoint("s1", 1).await.unwrap(), None);

        let meta = crate::WorkspaceMeta { id: "s1".into(), cwd: "/w".into(), ..Default::default() };
        layout.write_workspace_yaml("s1", &meta).await.unwrap();
        let (n1, p1) = layout.write_checkpoint("s1", "First title", "<overview>s1</overview>").await.unwrap();
        let (n2, _) = layout.write_checkpoint("s1", "A | piped\ntitle", "two").await.unwrap();
        assert_eq!((n1, n2), (1, 2));
        assert!(p1.ends_with("checkpoints/001-first-title.md"));

        let rows = layout.list_checkpoints("s1").await.unwrap();
        assert_eq!(
            rows,
            vec![
                Checkpoint { number: 1, title: "First title".into(), filename: "001-first-title.md".into() },
                Checkpoint { number: 2, title: "A | piped title".into(), filename: "002-a-piped-title.md".into() },
            ]
        );
        let index = std::fs::read_to_string(layout.checkpoints_dir("s1").join("index.md")).unwrap();
        assert!(index.starts_with("# Checkpoint History\n"), "{index}");
        assert!(index.contains("| 1 | First title | 001-first-title.md |\n"), "{index}");
        assert_eq!(layout.read_checkpoint("s1", 2).await.unwrap().as_deref(), Some("two"));
        assert_eq!(layout.read_workspace_yaml("s1").unwrap().unwrap().summary_count, 2);
        assert_eq!(layout.read_checkpoint("s1", 0).await.unwrap(), None);
        assert_eq!(layout.read_checkpoint("s1", 4_294_967_294).await.unwrap(), None);

        // Truncated to the first one: the second's file, row and count go; more than there are
        // changes nothing.
        layout.truncate_checkpoints("s1", 5).await.unwrap();
        assert_eq!(layout.list_checkpoints("s1").await.unwrap().len(), 2);
        layout.truncate_checkpoints("s1", 1).await.unwrap();
        assert_eq!(layout.list_checkpoints("s1").await.unwrap().len(), 1);
        assert!(!layout.checkpoints_dir("s1").join("002-a-piped-title.md").exists());
        assert_eq!(layout.read_workspace_yaml("s1").unwrap().unwrap().summary_count, 1);
        let (n, _) = layout.write_checkpoint("s1", "Again", "three").await.unwrap();
        assert_eq!(n, 2, "numbering goes on from what is left");
    }
}
