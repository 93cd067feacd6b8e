//! Which files the model has read, so that changes land only on text it has seen.
//!
//! `read` records each file's modification time and size; `write`, `edit` and
//! `multi_edit` refuse to change an existing file the model never read, or one that
//! changed on disk since (the user saved it, a formatter ran), because the model's idea of
//! its text would be stale. After a tool writes a file it records the new state, so a
//! second edit needs no fresh read. Files are keyed by their real path, so reading through
//! a symlink counts for the file it points to.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use larik_protocol::sync::locked;

use crate::paths;

/// The files one agent has read, with the state they had then. Shared by every call of
/// the agent (hence the interior mutability).
#[derive(Debug, Default)]
pub struct ReadTracker {
    /// Every update is one insert or remove, so the map stays consistent even if a holder
    /// panicked.
    seen: Mutex<HashMap<PathBuf, Stamp>>,
}

/// What identifies a version of a file cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    size: u64,
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Stamp {
            modified: meta.modified().ok(),
            size: meta.len(),
        }
    }
}

/// Why an existing file may not be changed yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StaleRead {
    /// The file was never read by this agent.
    #[error(
        "Read the file first: {0} exists but was not read in this session; read it before changing it"
    )]
    NotRead(String),
    /// The file changed on disk after it was last read.
    #[error(
        "{0} was modified since it was last read (by the user or a linter); read it again before editing"
    )]
    Modified(String),
}

impl ReadTracker {
    /// Records that the file at `path` was seen in the state `meta` describes.
    pub fn record(&self, path: &Path, meta: &Metadata) {
        locked(&self.seen).insert(paths::real_path(path), Stamp::of(meta));
    }

    /// Records the current state of the file at `path`, e.g. after a tool wrote it; a file
    /// that cannot be examined is forgotten, so changing it needs a fresh read.
    pub fn record_current(&self, path: &Path) {
        match std::fs::metadata(path) {
            Ok(meta) => self.record(path, &meta),
            Err(_) => {
                locked(&self.seen).remove(&paths::real_path(path));
            }
        }
    }

    /// Whether the existing file at `path` may be changed: it was read and has not changed
    /// since. `shown` names the file in the error.
    pub fn check(&self, path: &Path, shown: &str) -> Result<(), StaleRead> {
        let Some(seen) = locked(&self.seen).get(&paths::real_path(path)).copied() else {
            return Err(StaleRead::NotRead(shown.to_string()));
        };
        match std::fs::metadata(path) {
            Ok(meta) if Stamp::of(&meta) == seen => Ok(()),
            _ => Err(StaleRead::Modified(shown.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_file_passes_until_it_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one").expect("write");
        let tracker = ReadTracker::default();
        assert_eq!(
            tracker.check(&path, "a.txt"),
            Err(StaleRead::NotRead("a.txt".to_string()))
        );
        tracker.record_current(&path);
        assert_eq!(tracker.check(&path, "a.txt"), Ok(()));
        std::fs::write(&path, "one more").expect("rewrite");
        assert_eq!(
            tracker.check(&path, "a.txt"),
            Err(StaleRead::Modified("a.txt".to_string()))
        );
    }

    #[test]
    fn reading_through_a_symlink_counts_for_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "x").expect("write");
        std::os::unix::fs::symlink(&real, dir.path().join("link.txt")).expect("symlink");
        let tracker = ReadTracker::default();
        tracker.record_current(&dir.path().join("link.txt"));
        assert_eq!(tracker.check(&real, "real.txt"), Ok(()));
    }
}
