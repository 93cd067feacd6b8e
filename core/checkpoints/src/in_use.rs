//! The mark that a session's checkpoints are in use: every open store of a session with
//! checkpoints on disk holds a shared lock on `<dir>/open.lock`, and [`crate::prune`] deletes a session's checkpoints only when it
//! can take that lock exclusively, so it never deletes those of a session still open in any
//! process (this one included). A lock taken on a file that was deleted meanwhile does not
//! count: both sides check that the path still names the file they locked.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::CheckpointError;

/// The lock file's name inside a session's checkpoint directory.
pub(crate) const LOCK_FILE: &str = "open.lock";

/// Marks the session whose checkpoints live in `dir` as in use until the returned file is
/// dropped; creates `dir` when needed.
pub(crate) fn mark(dir: &Path) -> Result<File, CheckpointError> {
    let path = dir.join(LOCK_FILE);
    // A few rounds cover a prune deleting the directory between our open and our lock.
    for _ in 0..8 {
        fs::create_dir_all(dir).map_err(|source| CheckpointError::io(dir, source))?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| CheckpointError::io(&path, source))?;
        file.lock_shared()
            .map_err(|source| CheckpointError::io(&path, source))?;
        if same_file(&file, &path) {
            return Ok(file);
        }
    }
    Err(CheckpointError::io(
        &path,
        io::Error::other("the checkpoint directory kept disappearing"),
    ))
}

/// What [`claim`] found.
pub(crate) enum Claim {
    /// Nobody has the session open; the lock (if the session has a lock file) is held until
    /// this is dropped.
    Free(#[allow(dead_code)] Option<File>),
    /// A store of the session is open somewhere.
    InUse,
}

/// Takes the session in `dir` for deletion when no store of it is open.
pub(crate) fn claim(dir: &Path) -> io::Result<Claim> {
    let path = dir.join(LOCK_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Claim::Free(None)),
        Err(error) => return Err(error),
    };
    match file.try_lock() {
        Ok(()) if same_file(&file, &path) => Ok(Claim::Free(Some(file))),
        // The file was replaced meanwhile: whoever made the new one has it open.
        Ok(()) => Ok(Claim::InUse),
        Err(TryLockError::WouldBlock) => Ok(Claim::InUse),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), path.metadata()) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}
