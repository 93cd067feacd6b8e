//! The one error type of this crate.

use std::path::PathBuf;

/// A checkpoint could not be taken, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file or directory operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The path is outside the project root, lexically or once symlinks are resolved.
    #[error("{path} is outside the project")]
    OutsideProject {
        /// The path as given (or as recorded in the manifest).
        path: PathBuf,
    },
    /// The path matches a protected pattern (for example `.git/`).
    #[error("{path} is protected: checkpoints never write it")]
    Protected {
        /// The path as given.
        path: PathBuf,
    },
    /// The path, or a directory it needs, is a symbolic link that cannot be followed safely.
    #[error("{path} is a symbolic link: checkpoints do not follow it")]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The path exists but is a directory or a special file, not a regular file.
    #[error("{path} is not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The path cannot name a checkpointed file at all.
    #[error("{path} cannot be checkpointed: {reason}")]
    InvalidPath {
        /// The path as given.
        path: PathBuf,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A saved copy is missing or does not match what the manifest records.
    #[error("saved copy {path} is damaged: {reason}")]
    DamagedBlob {
        /// The blob file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A manifest could not be encoded.
    #[error("cannot encode a checkpoint manifest: {0}")]
    Encode(#[from] serde_json::Error),
}

impl CheckpointError {
    /// Wraps an IO error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CheckpointError::Io {
            path: path.into(),
            source,
        }
    }
}
