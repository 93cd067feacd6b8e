//! Undo: which turns really changed files, and restoring the latest of them.
//!
//! A turn "changed" a path when the state it saved differs from the state after the turn:
//! the state the next later turn saved for that path, or what is on disk now when no
//! later turn touched it. A turn whose paths are all unchanged (a `bash` command whose
//! listed paths it never wrote, a write that failed after capture) has nothing to undo.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::CheckpointError;
use crate::files::{self, FileState};
use crate::manifest::Entry;
use crate::store::{CheckpointStore, Turn, remove_turn_dir};

/// A turn that changed files, as listed by [`CheckpointStore::turns_with_changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    /// The caller's turn id.
    pub turn: String,
    /// When the turn first captured a path.
    pub started: SystemTime,
    /// The paths the turn changed, relative to the project root, in capture order.
    pub paths: Vec<PathBuf>,
}

/// A path undo could not restore, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreFailure {
    /// Relative to the project root.
    pub path: PathBuf,
    /// The error, as text for the user.
    pub reason: String,
}

/// What [`CheckpointStore::undo_latest`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReport {
    /// The turn undone.
    pub turn: String,
    /// Paths written back to their earlier bytes and mode, relative to the project root.
    pub restored: Vec<PathBuf>,
    /// Paths the turn created, now deleted, relative to the project root.
    pub deleted: Vec<PathBuf>,
    /// Paths that could not be restored. When any failed, the checkpoint is kept and
    /// `/undo` can be retried once the cause is fixed; paths already restored are then
    /// unchanged and simply not listed again.
    pub failed: Vec<RestoreFailure>,
    /// Later turns that had captured paths but changed none of them; their checkpoints
    /// were dropped on the way to `turn`.
    pub skipped_turns: Vec<String>,
}

impl UndoReport {
    /// Whether every path was restored, so the turn's checkpoint is gone.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }

    /// A note for the model naming the files reverted, or `None` if nothing was.
    pub fn note_for_model(&self) -> Option<String> {
        if self.restored.is_empty() && self.deleted.is_empty() {
            return None;
        }
        let mut note = String::from("The user undid your last changes to files.");
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.restored.is_empty() {
            let _ = write!(
                note,
                " Restored to their earlier content: {}.",
                list(&self.restored)
            );
        }
        if !self.deleted.is_empty() {
            let _ = write!(
                note,
                " Deleted (they did not exist before): {}.",
                list(&self.deleted)
            );
        }
        if !self.failed.is_empty() {
            let failed: Vec<PathBuf> = self.failed.iter().map(|f| f.path.clone()).collect();
            let _ = write!(note, " Could not be restored: {}.", list(&failed));
        }
        note.push_str(" Read these files again before editing them.");
        Some(note)
    }
}

/// How one path came back.
enum Restored {
    Written,
    Deleted,
}

impl CheckpointStore {
    /// The turns that changed at least one file, oldest first, each with the paths it
    /// changed. Reads the saved copies and the files on disk to decide.
    pub fn turns_with_changes(&self) -> Vec<TurnSummary> {
        let state = self.lock();
        // The state each path had after the turn being looked at: `None` when it cannot
        // be read, which counts as a change so that undo reports it.
        let mut after: HashMap<String, Option<FileState>> = HashMap::new();
        let mut summaries = Vec::new();
        for turn in state.turns.iter().rev() {
            let mut paths = Vec::new();
            let mut befores = Vec::new();
            for entry in &turn.manifest.entries {
                let before = turn.saved_state(entry).ok();
                let after_state = match after.get(&entry.path) {
                    Some(state) => state.clone(),
                    None => self.disk_state(&entry.path).ok(),
                };
                if before.is_none() || before != after_state {
                    paths.push(PathBuf::from(&entry.path));
                }
                befores.push((entry.path.clone(), before));
            }
            after.extend(befores);
            if !paths.is_empty() {
                summaries.push(TurnSummary {
                    turn: turn.manifest.turn.clone(),
                    started: turn.manifest.created(),
                    paths,
                });
            }
        }
        summaries.reverse();
        summaries
    }

    /// Restores the most recent turn that changed files: its paths in reverse capture
    /// order, each written back with its saved bytes and permission bits, or deleted if
    /// it did not exist before. Turns after it that changed nothing are dropped.
    ///
    /// Returns `None` when no turn changed anything. When every path is restored the
    /// turn's checkpoint is removed, so the next call goes one turn further back; when
    /// some fail, it is kept and the report says which. An `Err` means a checkpoint
    /// could not be removed from disk.
    pub fn undo_latest(&self) -> Result<Option<UndoReport>, CheckpointError> {
        let mut state = self.lock();
        let mut skipped_turns = Vec::new();
        while let Some(turn) = state.turns.last() {
            let changed: Vec<&Entry> = turn
                .manifest
                .entries
                .iter()
                .rev()
                .filter(|entry| self.entry_changed(turn, entry))
                .collect();
            if changed.is_empty() {
                remove_turn_dir(&self.dir, turn)?;
                let turn = state.turns.pop().expect("the last turn was just looked at");
                skipped_turns.push(turn.manifest.turn);
                continue;
            }
            let mut report = UndoReport {
                turn: turn.manifest.turn.clone(),
                restored: Vec::new(),
                deleted: Vec::new(),
                failed: Vec::new(),
                skipped_turns,
            };
            for entry in changed {
                let path = PathBuf::from(&entry.path);
                match self.restore_entry(turn, entry) {
                    Ok(Restored::Written) => report.restored.push(path),
                    Ok(Restored::Deleted) => report.deleted.push(path),
                    Err(error) => report.failed.push(RestoreFailure {
                        path,
                        reason: error.to_string(),
                    }),
                }
            }
            // If removing the checkpoint fails it stays; its files now match it, so the
            // next undo sees it as unchanged and tries to drop it again.
            if report.is_complete() && remove_turn_dir(&self.dir, turn).is_ok() {
                state.turns.pop();
            }
            return Ok(Some(report));
        }
        Ok(None)
    }

    /// What a recorded path holds now, or why it cannot be looked at safely.
    fn disk_state(&self, rel: &str) -> Result<FileState, CheckpointError> {
        let resolved = self.project.resolve(&self.project.real_root().join(rel))?;
        if !resolved.missing.is_empty() {
            return Ok(FileState::Absent);
        }
        files::read_state(&resolved.target())
    }

    fn entry_changed(&self, turn: &Turn, entry: &Entry) -> bool {
        match (turn.saved_state(entry), self.disk_state(&entry.path)) {
            (Ok(saved), Ok(now)) => saved != now,
            // Unreadable either way: let the restore attempt report why.
            _ => true,
        }
    }

    fn restore_entry(&self, turn: &Turn, entry: &Entry) -> Result<Restored, CheckpointError> {
        let original = self.project.real_root().join(&entry.path);
        let resolved = self.project.resolve(&original)?;
        match turn.saved_state(entry)? {
            FileState::File { mode, bytes } => {
                resolved.create_parents()?;
                files::write_back(&resolved.parent(), &resolved.name, &bytes, mode)?;
                Ok(Restored::Written)
            }
            FileState::Absent | FileState::Other => {
                if resolved.missing.is_empty() {
                    let parent = resolved.parent();
                    files::remove_entry(&parent.join(&resolved.name))?;
                    files::remove_empty_dirs(&parent, entry.created_dirs, self.project.real_root());
                }
                Ok(Restored::Deleted)
            }
        }
    }
}
