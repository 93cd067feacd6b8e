//! Planning a file change and then making it.
//!
//! `write`, `edit` and `multi_edit` all compute the whole new text first (a
//! [`PlannedChange`]), which serves both the preview shown before the permission step and
//! the run. The text before comes from, and the text after goes to, the context's
//! [`FileAccess`], so an editor's unsaved buffer is what gets changed; whether the file
//! exists or is a directory is asked of the disk.

use std::io;
use std::path::{Path, PathBuf};

use larik_protocol::FileChange;

use crate::FileAccess;

/// Why a file could not be read as text or written.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The path names a directory.
    #[error("{0} is a directory, not a file")]
    IsDirectory(String),
    /// The file is not valid UTF-8 text.
    #[error("{0} is not UTF-8 text; it cannot be edited as text")]
    NotText(String),
    /// An IO operation failed.
    #[error("could not {action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "read".
        action: &'static str,
        /// The path, as shown to the model.
        path: String,
        /// Why.
        source: io::Error,
    },
}

/// The new text of one file, computed but not yet written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    /// Absolute path of the file.
    pub path: PathBuf,
    /// The text before, `None` when the file does not exist.
    pub old_text: Option<String>,
    /// The text after.
    pub new_text: String,
}

impl PlannedChange {
    /// The change in the protocol's shape. It takes the texts rather than copying them:
    /// a file of many megabytes is held as few times as can be.
    pub fn into_file_change(self) -> FileChange {
        FileChange {
            path: self.path.display().to_string(),
            old_text: self.old_text,
            new_text: self.new_text,
        }
    }

    /// Writes the new text through `files`.
    pub async fn commit(&self, files: &dyn FileAccess, shown: &str) -> Result<(), ChangeError> {
        files
            .write_text(&self.path, &self.new_text)
            .await
            .map_err(|source| ChangeError::Io {
                action: "write",
                path: shown.to_string(),
                source,
            })
    }
}

/// The text of the file at `path` as `files` serves it, `None` when it does not exist.
/// With `lossy`, bytes that are not UTF-8 are replaced rather than refused (for a file
/// about to be replaced whole).
pub async fn read_text(
    files: &dyn FileAccess,
    path: &Path,
    shown: &str,
    lossy: bool,
) -> Result<Option<String>, ChangeError> {
    let io_error = |source| ChangeError::Io {
        action: "read",
        path: shown.to_string(),
        source,
    };
    match tokio::fs::metadata(path).await {
        Ok(meta) if meta.is_dir() => return Err(ChangeError::IsDirectory(shown.to_string())),
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(error)),
    }
    match files.read_text(path).await {
        Ok(text) => Ok(Some(text)),
        // Removed between the two looks: it no longer exists.
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        // A seam that speaks text cannot hand over the bytes; the disk has them.
        Err(error) if error.kind() == io::ErrorKind::InvalidData && lossy => {
            let bytes = tokio::fs::read(path).await.map_err(io_error)?;
            Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
        Err(error) if error.kind() == io::ErrorKind::InvalidData => {
            Err(ChangeError::NotText(shown.to_string()))
        }
        Err(error) => Err(io_error(error)),
    }
}
