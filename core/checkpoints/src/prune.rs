//! Retention: deleting the checkpoints of sessions that have been idle too long.
//!
//! A session's age is measured from its last capture: the newest `updated_ms` recorded
//! in its turn manifests (a manifest that cannot be read counts by its file mtime, and a
//! session directory holding no manifest at all by its own mtime). A recorded time is
//! used rather than mtimes alone so that copying or touching the directory does not
//! change what is kept.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::CheckpointError;
use crate::in_use::{self, Claim};
use crate::manifest::{self, MANIFEST};

const SECONDS_PER_DAY: u64 = 24 * 60 * 60;

/// What [`prune`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Session checkpoint directories deleted.
    pub removed: Vec<PathBuf>,
    /// How many session directories were young enough to keep.
    pub kept: usize,
    /// How many were due but kept because their session is open (in any process).
    pub in_use: usize,
    /// Directories that were due but could not be deleted, with the error as text.
    pub failed: Vec<(PathBuf, String)>,
}

/// Deletes every session checkpoint directory directly under `root` (for example
/// `<data dir>/checkpoints/`) whose last capture is more than `retention_days` days
/// before `now`.
///
/// A negative `retention_days` keeps everything. `0` keeps nothing older than `now`: all
/// sessions captured before this call are deleted, which is how "do not keep
/// checkpoints across runs" is expressed when the binary calls this at startup. A
/// session dated after `now` (a clock that moved back) is kept, and so is one whose store
/// is open in any process (see [`crate::CheckpointStore::open`]). Only real directories
/// are deleted: a symlink under `root` is left alone and never followed. A missing
/// `root` is not an error.
pub fn prune(
    root: &Path,
    retention_days: i64,
    now: SystemTime,
) -> Result<PruneReport, CheckpointError> {
    let mut report = PruneReport::default();
    let Ok(days) = u64::try_from(retention_days) else {
        return Ok(report);
    };
    let Some(cutoff) = days
        .checked_mul(SECONDS_PER_DAY)
        .and_then(|secs| now.checked_sub(Duration::from_secs(secs)))
    else {
        return Ok(report);
    };
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(report),
        Err(error) => return Err(CheckpointError::io(root, error)),
    };
    for entry in entries {
        let entry = entry.map_err(|source| CheckpointError::io(root, source))?;
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let last = last_activity(&path).or_else(|| meta.modified().ok());
        match last {
            Some(last) if last < cutoff => match in_use::claim(&path) {
                // Deleted while the claim holds the lock, so no store opens meanwhile.
                Ok(Claim::Free(_held)) => match fs::remove_dir_all(&path) {
                    Ok(()) => report.removed.push(path),
                    Err(error) => report.failed.push((path, error.to_string())),
                },
                Ok(Claim::InUse) => report.in_use += 1,
                Err(error) => report.failed.push((path, error.to_string())),
            },
            _ => report.kept += 1,
        }
    }
    report.removed.sort();
    Ok(report)
}

/// The newest capture time among a session's turn manifests.
fn last_activity(session: &Path) -> Option<SystemTime> {
    let turns = fs::read_dir(session).ok()?;
    turns
        .flatten()
        .filter(|turn| turn.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|turn| {
            let dir = turn.path();
            match manifest::read(&dir) {
                Ok(manifest) => Some(manifest.updated()),
                Err(_) => fs::metadata(dir.join(MANIFEST))
                    .and_then(|meta| meta.modified())
                    .ok(),
            }
        })
        .max()
}
