//! The checkpoint store of one session: opening it from disk (tolerating what a crash can
//! leave behind), capturing a path before a turn first writes it, and dropping a turn.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::error::CheckpointError;
use crate::files::{self, FileState, OpenedState};
use crate::manifest::{self, BLOBS, Before, Entry, MANIFEST_TMP, Manifest, ReadProblem};
use crate::paths::Project;

/// The prefix of a turn directory renamed away before it is deleted, so that a crash in
/// the middle of deleting never leaves a half-deleted turn that still looks valid.
const TRASH_PREFIX: &str = "trash-";

/// What [`CheckpointStore::capture`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureOutcome {
    /// The path's prior state was saved: this is the turn's first write of it.
    Saved,
    /// The turn already saved this path; nothing more was saved.
    AlreadySaved,
}

/// One turn's checkpoint, as loaded or built in memory.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub seq: u64,
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Turn {
    /// The state an entry recorded, reading its blob.
    pub fn saved_state(&self, entry: &Entry) -> Result<FileState, CheckpointError> {
        match &entry.before {
            Before::Absent => Ok(FileState::Absent),
            Before::File { mode, len, blob } => Ok(FileState::File {
                mode: *mode,
                bytes: files::read_blob(&self.dir.join(BLOBS).join(blob), *len)?,
            }),
        }
    }
}

#[derive(Debug)]
pub(crate) struct State {
    /// Oldest first.
    pub turns: Vec<Turn>,
    pub next_seq: u64,
    /// Marks the session as in use once it has checkpoints on disk, so no prune deletes
    /// them while the store is open.
    pub in_use: Option<std::fs::File>,
}

/// The checkpoints of one session, on disk under one directory. See the crate docs for
/// the layout and the guarantees.
///
/// `Send + Sync`: every operation takes an internal lock, so an `Arc<CheckpointStore>`
/// can be shared between tools. Operations are blocking file IO on small files.
#[derive(Debug)]
pub struct CheckpointStore {
    pub(crate) dir: PathBuf,
    pub(crate) project: Project,
    pub(crate) state: Mutex<State>,
    damaged: Vec<PathBuf>,
}

impl CheckpointStore {
    /// Opens the store in `dir` for the project at `project_root`, loading every turn
    /// recorded there. From the moment the session has checkpoints on disk (at open, or at
    /// its first capture) the store marks it in use until it is dropped, and
    /// [`crate::prune`] leaves it alone meanwhile, in any process. Both paths must be
    /// absolute; the project root must exist. `dir` is created at the first capture.
    ///
    /// Leftovers of a crash are tolerated: a temp manifest or a blob the manifest does
    /// not list is ignored (the write it preceded never happened), a turn directory
    /// without a manifest is skipped, and a turn renamed for deletion is deleted. A
    /// manifest that cannot be read is left on disk and listed by
    /// [`CheckpointStore::damaged`].
    pub fn open(dir: PathBuf, project_root: PathBuf) -> Result<Self, CheckpointError> {
        if !dir.is_absolute() {
            return Err(CheckpointError::InvalidPath {
                path: dir,
                reason: "the checkpoint directory must be an absolute path",
            });
        }
        let project = Project::new(&project_root)?;
        // Marked before the turns are read, so a prune cannot delete them meanwhile.
        let in_use = if dir.is_dir() {
            Some(crate::in_use::mark(&dir)?)
        } else {
            None
        };
        let mut turns = Vec::new();
        let mut damaged = Vec::new();
        let mut next_seq = 1;
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => Some(entries),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(CheckpointError::io(&dir, error)),
        };
        for entry in entries.into_iter().flatten() {
            let entry = entry.map_err(|source| CheckpointError::io(&dir, source))?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if name.starts_with(TRASH_PREFIX) {
                if is_dir {
                    let _ = fs::remove_dir_all(&path);
                }
                continue;
            }
            let Ok(seq) = name.parse::<u64>() else {
                continue;
            };
            next_seq = next_seq.max(seq + 1);
            if !is_dir {
                continue;
            }
            // A temp manifest is a replacement that never got renamed in: the manifest
            // beside it is the last complete one.
            let _ = fs::remove_file(path.join(MANIFEST_TMP));
            match manifest::read(&path) {
                Ok(manifest) => turns.push(Turn {
                    seq,
                    dir: path,
                    manifest,
                }),
                Err(ReadProblem::Missing) => {}
                Err(ReadProblem::Damaged) => damaged.push(path),
            }
        }
        turns.sort_by_key(|turn| turn.seq);
        damaged.sort();
        Ok(CheckpointStore {
            dir,
            project,
            state: Mutex::new(State {
                turns,
                next_seq,
                in_use,
            }),
            damaged,
        })
    }

    /// Replaces the protected patterns (default: [`crate::DEFAULT_PROTECTED`]). A pattern
    /// is a `/`-separated path relative to the project root; a leading `**/` matches at
    /// any depth and a trailing `/` covers a directory and everything under it.
    pub fn with_protected(mut self, patterns: Vec<String>) -> Self {
        self.project.set_protected(&patterns);
        self
    }

    /// The directory this store keeps its turns in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Turn directories whose manifest could not be read when the store was opened; they
    /// are left on disk untouched and take no part in undo.
    pub fn damaged(&self) -> &[PathBuf] {
        &self.damaged
    }

    /// Saves what `path` holds (its bytes and permission bits, or that it does not exist)
    /// before turn `turn` first writes it. Call it before every write; only the first call
    /// per path and turn saves anything. `path` is absolute or relative to the project root.
    ///
    /// Turns are ordered by their first capture; `turn` is any id the caller chooses (a
    /// turn number or uuid). Returns an error — and the caller must then not write — when
    /// the path is outside the project, protected, a symlink, not a regular file, or the
    /// copy cannot be saved durably.
    pub fn capture(&self, turn: &str, path: &Path) -> Result<CaptureOutcome, CheckpointError> {
        let resolved = self.project.resolve(path)?;
        let rel = resolved
            .rel
            .to_str()
            .ok_or_else(|| CheckpointError::InvalidPath {
                path: path.to_path_buf(),
                reason: "the path is not valid UTF-8",
            })?
            .to_string();
        let mut state = self.lock();
        if state.in_use.is_none() {
            state.in_use = Some(crate::in_use::mark(&self.dir)?);
        }
        let existing = state.turns.iter().rposition(|t| t.manifest.turn == turn);
        if let Some(index) = existing
            && state.turns[index]
                .manifest
                .entries
                .iter()
                .any(|entry| entry.path == rel)
        {
            return Ok(CaptureOutcome::AlreadySaved);
        }
        let before = if resolved.missing.is_empty() {
            // Opened now, copied to its blob below: never read whole into memory.
            match files::open_state(&resolved.target())? {
                OpenedState::Other => {
                    let target = resolved.target();
                    let is_link = fs::symlink_metadata(&target)
                        .is_ok_and(|meta| meta.file_type().is_symlink());
                    return Err(if is_link {
                        CheckpointError::Symlink { path: target }
                    } else {
                        CheckpointError::NotAFile { path: target }
                    });
                }
                other => other,
            }
        } else {
            OpenedState::Absent
        };
        let now = SystemTime::now();
        let mut turn_state = match existing {
            Some(index) => state.turns[index].clone(),
            None => {
                let seq = state.next_seq;
                // The number is used up even if this capture fails, so a directory left
                // by a failed first capture is never reused.
                state.next_seq += 1;
                let dir = self.dir.join(format!("{seq:06}"));
                let blobs = dir.join(BLOBS);
                fs::create_dir_all(&blobs).map_err(|source| CheckpointError::io(&blobs, source))?;
                manifest::sync_dir(&self.dir)?;
                Turn {
                    seq,
                    dir,
                    manifest: Manifest::new(turn, now),
                }
            }
        };
        let saved = match before {
            OpenedState::File { mode, mut file } => {
                // Named by position: a blob left by a crash at this position was never
                // recorded, so overwriting it loses nothing.
                let blob = turn_state.manifest.entries.len().to_string();
                let blob_path = turn_state.dir.join(BLOBS).join(&blob);
                let len = manifest::copy_synced(&blob_path, &mut file)?;
                manifest::sync_dir(&turn_state.dir.join(BLOBS))?;
                Before::File { mode, len, blob }
            }
            OpenedState::Absent | OpenedState::Other => Before::Absent,
        };
        turn_state.manifest.entries.push(Entry {
            path: rel,
            before: saved,
            created_dirs: resolved.missing.len(),
        });
        turn_state.manifest.updated_ms = manifest::unix_ms(now);
        manifest::write(&turn_state.dir, &turn_state.manifest)?;
        match existing {
            Some(index) => state.turns[index] = turn_state,
            None => state.turns.push(turn_state),
        }
        Ok(CaptureOutcome::Saved)
    }

    /// Drops the most recent turn's checkpoint without restoring anything, for example
    /// when its undo keeps failing on a path the user has decided to keep. Returns the
    /// dropped turn's id, or `None` when there is no checkpoint.
    pub fn discard_latest(&self) -> Result<Option<String>, CheckpointError> {
        let mut state = self.lock();
        let Some(turn) = state.turns.last() else {
            return Ok(None);
        };
        remove_turn_dir(&self.dir, turn)?;
        let turn = state.turns.pop().expect("the last turn was just looked at");
        Ok(Some(turn.manifest.turn))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // Memory only changes after the disk write succeeded, so the state behind a
        // poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Deletes a turn's directory: first renamed (atomic), then removed, so a crash leaves
/// either the whole turn or a trash directory the next open deletes.
pub(crate) fn remove_turn_dir(store_dir: &Path, turn: &Turn) -> Result<(), CheckpointError> {
    let trash = store_dir.join(format!("{TRASH_PREFIX}{:06}", turn.seq));
    if trash.exists() {
        let _ = fs::remove_dir_all(&trash);
    }
    fs::rename(&turn.dir, &trash).map_err(|source| CheckpointError::io(&turn.dir, source))?;
    let _ = manifest::sync_dir(store_dir);
    // Once renamed the turn no longer counts; a failed removal is retried at the next open.
    let _ = fs::remove_dir_all(&trash);
    Ok(())
}
