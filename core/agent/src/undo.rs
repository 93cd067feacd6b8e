//! Checkpoints and `/undo` in the agent: each turn gets its own [`TurnCheckpoint`], which
//! the file tools call before changing a file, backed by the session's checkpoint store;
//! [`Runner::undo`] restores the latest turn that changed files and leaves a note the model
//! reads with the next prompt, so it does not go on from files that are no longer there.

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use larik_checkpoints::{CheckpointStore, UndoReport};
use larik_protocol::Event;
use larik_tools::Checkpoint;

use crate::runner::Runner;

/// The checkpoint of one turn: saves each file the first time the turn changes it.
#[derive(Debug)]
pub(crate) struct TurnCheckpoint {
    pub(crate) store: Arc<CheckpointStore>,
    pub(crate) turn: String,
}

impl Checkpoint for TurnCheckpoint {
    fn before_change(&self, path: &Path) -> Result<(), Box<dyn Error + Send + Sync>> {
        self.store.capture(&self.turn, path)?;
        Ok(())
    }
}

impl Runner {
    /// The checkpoint for a turn starting now, when the session keeps checkpoints. Turn ids
    /// sort in turn order and stay unique across resumes.
    pub(crate) fn turn_checkpoint(&self) -> Option<Arc<dyn Checkpoint>> {
        if let Some(fixed) = &self.fixed_checkpoint {
            return Some(Arc::clone(fixed));
        }
        let store = self.config.checkpoints.as_ref()?;
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        Some(Arc::new(TurnCheckpoint {
            store: Arc::clone(store),
            turn: format!("turn-{:06}-{millis}", self.turn_number),
        }))
    }

    /// `/undo`: restores the latest turn that changed files and reports it.
    pub(crate) fn undo(&mut self) {
        let Some(store) = self.config.checkpoints.clone() else {
            self.events.emit(Event::Undone {
                turn: None,
                restored: Vec::new(),
                deleted: Vec::new(),
                failed: vec!["this session keeps no checkpoints".into()],
            });
            return;
        };
        match store.undo_latest() {
            Ok(None) => self.events.emit(Event::Undone {
                turn: None,
                restored: Vec::new(),
                deleted: Vec::new(),
                failed: Vec::new(),
            }),
            Ok(Some(report)) => {
                if let Some(note) = report.note_for_model() {
                    // Kept in the session too, so a later run still delivers it.
                    self.record_note(&note);
                    self.notes_for_model.push(note);
                }
                // Restored files changed on disk: an edit must read them again first, which
                // the read tracker's staleness check already demands.
                self.events.emit(undone(&report));
            }
            Err(error) => self.events.emit(Event::Undone {
                turn: None,
                restored: Vec::new(),
                deleted: Vec::new(),
                failed: vec![error.to_string()],
            }),
        }
    }
}

fn undone(report: &UndoReport) -> Event {
    let shown = |paths: &[std::path::PathBuf]| {
        paths
            .iter()
            .map(|path| path.display().to_string())
            .collect()
    };
    Event::Undone {
        turn: Some(report.turn.clone()),
        restored: shown(&report.restored),
        deleted: shown(&report.deleted),
        failed: report
            .failed
            .iter()
            .map(|failure| format!("{}: {}", failure.path.display(), failure.reason))
            .collect(),
    }
}
