//! Whether there is room for a turn's events. A turn writes tens to hundreds of kilobytes; one
//! started on a nearly full disk would fail part-way (its events then stop, see
//! `EventLog::append_json`), so a send is refused cleanly instead. One `statvfs` per send.

use std::path::Path;

use crate::error::{io_err, StoreError};
use crate::layout::Layout;

/// Below this much free space no turn starts.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

impl Layout {
    /// `DiskFull` when the file system holding the session's directory has less than
    /// [`MIN_FREE_BYTES`] free for this process (blocks reserved for root count only for root).
    pub fn room_for_a_turn(&self, id: &str) -> Result<(), StoreError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        // A new session's directory may not exist yet: the nearest one that does is on the
        // same file system.
        let at = dir.ancestors().find(|d| d.exists()).unwrap_or(&dir);
        let free = free_bytes(at)?;
        if free < MIN_FREE_BYTES {
            return Err(StoreError::DiskFull { free_kib: free / 1024, needed_kib: MIN_FREE_BYTES / 1024 });
        }
        Ok(())
    }
}

fn free_bytes(path: &Path) -> Result<u64, StoreError> {
    let stat = rustix::fs::statvfs(path).map_err(|e| io_err(path)(e.into()))?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_room_passes() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        layout.ensure_session_dir("s1").unwrap();
        // This machine's temporary directory has more than a megabyte free.
        layout.room_for_a_turn("s1").unwrap();
        layout.room_for_a_turn("not-created-yet").unwrap();
        assert!(matches!(layout.room_for_a_turn("../x"), Err(StoreError::InvalidSessionId(_))));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_file_system_is_reported_in_kib() {
        // /proc is a file system with no free blocks.
        assert_eq!(free_bytes(Path::new("/proc")).unwrap(), 0);
    }
}
