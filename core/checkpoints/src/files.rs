//! Reading and writing the files a checkpoint covers without ever following a symlink at
//! the final component: reads check that the opened file is the entry that was looked
//! at, writes go to a temp file in the same directory renamed over the entry, and
//! deletions remove the entry itself.

use std::fs::{self, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::CheckpointError;

/// The permission bits a checkpoint saves and restores.
const MODE_BITS: u32 = 0o7777;

/// What is at a path, as far as a checkpoint cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileState {
    /// Nothing.
    Absent,
    /// A regular file with these permission bits and bytes.
    File {
        /// `mode & 0o7777`.
        mode: u32,
        /// The whole content.
        bytes: Vec<u8>,
    },
    /// A symlink, directory or special file: never equal to a saved state.
    Other,
}

/// What is at a path, opened but not yet read: a checkpoint copies a file from here to its
/// blob without holding the whole of it in memory.
#[derive(Debug)]
pub(crate) enum OpenedState {
    /// Nothing.
    Absent,
    /// A regular file with these permission bits, open for reading.
    File {
        /// `mode & 0o7777`.
        mode: u32,
        /// The file, checked to be the entry that was looked at.
        file: fs::File,
    },
    /// A symlink, directory or special file.
    Other,
}

/// Opens the entry at `path` without following it if it is a symlink.
pub(crate) fn open_state(path: &Path) -> Result<OpenedState, CheckpointError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(OpenedState::Absent),
        Err(error) => return Err(CheckpointError::io(path, error)),
    };
    if !meta.is_file() {
        return Ok(OpenedState::Other);
    }
    let io = |source| CheckpointError::io(path, source);
    let file = fs::File::open(path).map_err(io)?;
    let opened = file.metadata().map_err(io)?;
    // The entry could have been swapped for a symlink between the two looks; only
    // trust the bytes if the open file is the one that was inspected.
    if opened.dev() != meta.dev() || opened.ino() != meta.ino() {
        return Err(CheckpointError::Symlink {
            path: path.to_path_buf(),
        });
    }
    Ok(OpenedState::File {
        mode: opened.mode() & MODE_BITS,
        file,
    })
}

/// Reads the entry at `path` without following it if it is a symlink.
pub(crate) fn read_state(path: &Path) -> Result<FileState, CheckpointError> {
    Ok(match open_state(path)? {
        OpenedState::Absent => FileState::Absent,
        OpenedState::Other => FileState::Other,
        OpenedState::File { mode, mut file } => {
            let len = file.metadata().map_or(0, |meta| meta.len());
            let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            file.read_to_end(&mut bytes)
                .map_err(|source| CheckpointError::io(path, source))?;
            FileState::File { mode, bytes }
        }
    })
}

/// Reads a saved copy and checks its length against the manifest.
pub(crate) fn read_blob(path: &Path, len: u64) -> Result<Vec<u8>, CheckpointError> {
    let bytes = fs::read(path).map_err(|error| CheckpointError::DamagedBlob {
        path: path.to_path_buf(),
        reason: error.to_string(),
    })?;
    if bytes.len() as u64 != len {
        return Err(CheckpointError::DamagedBlob {
            path: path.to_path_buf(),
            reason: format!("{} bytes where {len} were saved", bytes.len()),
        });
    }
    Ok(bytes)
}

/// Replaces the entry `name` in `dir` with a regular file holding `bytes` with permission
/// bits `mode`. Whatever the entry was (a file, a symlink planted since) is replaced by
/// the rename, so nothing is ever written through a link.
pub(crate) fn write_back(
    dir: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    mode: u32,
) -> Result<(), CheckpointError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".larik-undo-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let target = dir.join(name);
    let result = (|| {
        // create_new refuses an existing entry, symlinks included.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|source| CheckpointError::io(&tmp, source))?;
        let io = |source| CheckpointError::io(&tmp, source);
        file.write_all(bytes).map_err(io)?;
        file.set_permissions(Permissions::from_mode(mode & MODE_BITS))
            .map_err(io)?;
        file.sync_all().map_err(io)?;
        fs::rename(&tmp, &target).map_err(|source| CheckpointError::io(&target, source))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    // The content is already safe; a directory that cannot be flushed only weakens
    // crash durability, so it does not fail the restore.
    let _ = fs::File::open(dir).and_then(|d| d.sync_all());
    Ok(())
}

/// Removes the entry at `path` (a file, or a symlink itself — never its target). An entry
/// already gone is fine; a directory is refused rather than removed recursively.
pub(crate) fn remove_entry(path: &Path) -> Result<(), CheckpointError> {
    match fs::symlink_metadata(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(CheckpointError::io(path, error)),
        Ok(meta) if meta.is_dir() => Err(CheckpointError::NotAFile {
            path: path.to_path_buf(),
        }),
        Ok(_) => fs::remove_file(path).map_err(|source| CheckpointError::io(path, source)),
    }
}

/// Removes up to `count` directories from `dir` upwards, stopping at the first that is
/// not empty and never reaching `root`.
pub(crate) fn remove_empty_dirs(dir: &Path, count: usize, root: &Path) {
    let mut current: PathBuf = dir.to_path_buf();
    for _ in 0..count {
        if current == root || !current.starts_with(root) || fs::remove_dir(&current).is_err() {
            return;
        }
        match current.parent() {
            Some(parent) => current = parent.to_path_buf(),
            None => return,
        }
    }
}
