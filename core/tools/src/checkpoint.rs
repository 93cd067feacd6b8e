//! The seam through which file changes can be undone: before a tool changes a file, it
//! asks the context's [`Checkpoint`] to save what the file is now (or that it does not
//! exist). The agent gives each turn its own, backed by the session's checkpoint store; a
//! failure to save stops the change, so nothing is ever changed that could not be undone.

use std::error::Error;
use std::path::{Path, PathBuf};

/// Saves files before they change.
pub trait Checkpoint: Send + Sync + std::fmt::Debug {
    /// Called before `path` (absolute) is written or deleted; an error (its message one
    /// line, saying why) stops the change.
    fn before_change(&self, path: &Path) -> Result<(), Box<dyn Error + Send + Sync>>;
}

/// A change stopped because its file could not be saved for undo first; the message is
/// the one the model reads.
#[derive(Debug, thiserror::Error)]
#[error(
    "Nothing was written: {} could not be saved for undo first ({reason}).",
    path.display()
)]
pub struct NotSavedForUndo {
    /// The file (absolute) that was to change.
    pub path: PathBuf,
    /// Why the [`Checkpoint`] could not save it.
    #[source]
    pub reason: Box<dyn Error + Send + Sync>,
}
