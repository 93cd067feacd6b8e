//! The manifest of one turn's checkpoint: what it records, how it is replaced atomically
//! (temp file, fsync, rename, fsync of the directory) and how it is read back.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Component, Path};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::CheckpointError;

/// The manifest file in a turn directory.
pub(crate) const MANIFEST: &str = "manifest.json";
/// Where a new manifest is written before it is renamed over [`MANIFEST`].
pub(crate) const MANIFEST_TMP: &str = "manifest.json.tmp";
/// The directory of saved copies in a turn directory.
pub(crate) const BLOBS: &str = "blobs";
/// The manifest format this crate writes and reads.
const FORMAT_VERSION: u32 = 1;

/// Everything one turn captured, in capture order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub version: u32,
    /// The caller's turn id.
    pub turn: String,
    /// When the first path was captured, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When the last path was captured, in milliseconds since the Unix epoch.
    pub updated_ms: u64,
    pub entries: Vec<Entry>,
}

/// One captured path and what it was before the turn first wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Relative to the real project root, `/`-separated.
    pub path: String,
    pub before: Before,
    /// How many parent directories did not exist at capture, so undoing a creation can
    /// remove them again if they are left empty.
    #[serde(default)]
    pub created_dirs: usize,
}

/// What a path held before the turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Before {
    /// Nothing: undo deletes whatever the turn created.
    Absent,
    /// A regular file, saved in `blobs/<blob>`.
    File {
        /// Permission bits (`mode & 0o7777`).
        mode: u32,
        /// Its length, checked when the blob is read back.
        len: u64,
        /// The blob's file name under `blobs/`.
        blob: String,
    },
}

impl Manifest {
    /// An empty manifest for a turn that starts now.
    pub fn new(turn: &str, now: SystemTime) -> Manifest {
        let ms = unix_ms(now);
        Manifest {
            version: FORMAT_VERSION,
            turn: turn.to_string(),
            created_ms: ms,
            updated_ms: ms,
            entries: Vec::new(),
        }
    }

    /// When the turn first captured something.
    pub fn created(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.created_ms)
    }

    /// When the turn last captured something.
    pub fn updated(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.updated_ms)
    }

    /// Whether a manifest read from disk is one this crate could have written: a
    /// tampered or foreign one is reported as damaged rather than acted on.
    fn is_well_formed(&self) -> bool {
        self.version == FORMAT_VERSION
            && self.entries.iter().all(|entry| {
                let path = Path::new(&entry.path);
                !entry.path.is_empty()
                    && path.components().all(|c| matches!(c, Component::Normal(_)))
                    && match &entry.before {
                        Before::Absent => true,
                        Before::File { blob, .. } => {
                            !blob.is_empty() && blob.bytes().all(|b| b.is_ascii_digit())
                        }
                    }
            })
    }
}

/// Milliseconds since the Unix epoch, 0 for times before it.
pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Why a turn directory's manifest could not be used.
#[derive(Debug)]
pub(crate) enum ReadProblem {
    /// No manifest: the first capture crashed before recording anything.
    Missing,
    /// The file is unreadable, not JSON, or not a manifest this crate wrote.
    Damaged,
}

/// Reads the manifest of a turn directory.
pub(crate) fn read(turn_dir: &Path) -> Result<Manifest, ReadProblem> {
    let text = match fs::read(turn_dir.join(MANIFEST)) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Err(ReadProblem::Missing),
        Err(_) => return Err(ReadProblem::Damaged),
    };
    match serde_json::from_slice::<Manifest>(&text) {
        Ok(manifest) if manifest.is_well_formed() => Ok(manifest),
        _ => Err(ReadProblem::Damaged),
    }
}

/// Replaces the manifest of `turn_dir` so that a crash leaves either the old or the new
/// one in place, never a torn file.
pub(crate) fn write(turn_dir: &Path, manifest: &Manifest) -> Result<(), CheckpointError> {
    let text = serde_json::to_vec_pretty(manifest)?;
    let tmp = turn_dir.join(MANIFEST_TMP);
    write_synced(&tmp, &text)?;
    let target = turn_dir.join(MANIFEST);
    fs::rename(&tmp, &target).map_err(|source| CheckpointError::io(&target, source))?;
    sync_dir(turn_dir)
}

/// Writes `bytes` to a new file at `path` and flushes it to disk.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let io = |source| CheckpointError::io(path, source);
    let mut file = File::create(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Copies what is left of `source` to a new file at `path`, flushes it to disk, and returns
/// how many bytes it holds.
pub(crate) fn copy_synced(path: &Path, source: &mut impl io::Read) -> Result<u64, CheckpointError> {
    let io = |source| CheckpointError::io(path, source);
    let mut file = File::create(path).map_err(io)?;
    let len = io::copy(source, &mut file).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(len)
}

/// Flushes a directory so that renames and new entries in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), CheckpointError> {
    File::open(dir)
        .and_then(|file| file.sync_all())
        .map_err(|source| CheckpointError::io(dir, source))
}
