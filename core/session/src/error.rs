//! The one error type of this crate.

use std::path::PathBuf;

/// A session could not be created, read, found or written.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A file or directory operation failed.
    #[error("session file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The data directory cannot be written, so a session cannot be started or continued
    /// there (it is read-only, full, or not Larik's to write).
    #[error("the data directory {dir} cannot be written: {path}: {source}")]
    DataDirNotWritable {
        /// The data directory.
        dir: PathBuf,
        /// The file or directory the write failed on.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An earlier append failed, so the file ends there: appending more would leave a gap
    /// in the conversation it holds.
    #[error("session file {path}: no longer written after an earlier write failed")]
    Stopped {
        /// The file.
        path: PathBuf,
    },
    /// The file holds no meta entry, so it is not a session.
    #[error("{path} is not a session file: it has no meta entry")]
    NoMeta {
        /// The file.
        path: PathBuf,
    },
    /// No session with this id exists in any project.
    #[error("no session with id `{id}`")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The id could name a file outside the sessions directory.
    #[error("`{id}` is not a valid session id")]
    InvalidId {
        /// The id given.
        id: String,
    },
    /// A fork point that would split a turn.
    #[error(
        "cannot fork at message {keep}: a fork must keep whole turns \
         (the index of a prompt, or {len} to keep everything)"
    )]
    NotATurnBoundary {
        /// The number of messages asked to keep.
        keep: usize,
        /// The number of messages in the session.
        len: usize,
    },
    /// Rewinding to a prompt the session does not have.
    #[error("cannot rewind to prompt {number}: the session has {count} prompt(s)")]
    NoSuchPrompt {
        /// The 1-based prompt number asked for.
        number: usize,
        /// How many prompts the session has.
        count: usize,
    },
    /// An entry could not be encoded, e.g. a cwd that is not UTF-8.
    #[error("cannot encode a session entry: {0}")]
    Encode(#[from] serde_json::Error),
}

impl SessionError {
    /// Wraps an IO error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }

    /// The same error, a failed write under `data_dir` told as the data directory's.
    pub(crate) fn in_data_dir(self, data_dir: &std::path::Path) -> Self {
        match self {
            SessionError::Io { path, source } => SessionError::DataDirNotWritable {
                dir: data_dir.to_path_buf(),
                path,
                source,
            },
            other => other,
        }
    }
}
