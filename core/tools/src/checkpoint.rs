//! The seam through which file changes can be undone: before a tool changes a file, it
//! asks the context's [`Checkpoint`] to save what the file is now (or that it does not
//! exist). The agent gives each turn its own, backed by the session's checkpoint store; a
//! failure to save stops the change, so nothing is ever changed that could not be undone.

use std::path::Path;

/// Saves files before they change.
pub trait Checkpoint: Send + Sync + std::fmt::Debug {
    /// Called before `path` (absolute) is written or deleted; an error (one line, saying
    /// why) stops the change.
    fn before_change(&self, path: &Path) -> Result<(), String>;
}
