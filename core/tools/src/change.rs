//! Planning a file change and then making it atomically.
//!
//! `write`, `edit` and `multi_edit` all compute the whole new text first (a
//! [`PlannedChange`]), which serves both the preview shown before the permission step and
//! the run. Committing writes a temporary file beside the target and renames it over, so a
//! crash or a full disk never leaves a half-written file, and keeps the mode of the file it
//! replaces.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use larik_protocol::FileChange;

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
    /// The change in the protocol's shape.
    pub fn to_file_change(&self) -> FileChange {
        FileChange {
            path: self.path.display().to_string(),
            old_text: self.old_text.clone(),
            new_text: self.new_text.clone(),
        }
    }

    /// Writes the new text: creates missing parent directories, then writes atomically.
    pub fn commit(&self, shown: &str) -> Result<(), ChangeError> {
        let io_error = |action, source| ChangeError::Io {
            action,
            path: shown.to_string(),
            source,
        };
        // Writing through a symlink must replace the file it points to, not the link.
        let target = match fs::canonicalize(&self.path) {
            Ok(real) => real,
            Err(error) if error.kind() == io::ErrorKind::NotFound => self.path.clone(),
            Err(error) => return Err(io_error("resolve", error)),
        };
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)
                .map_err(|error| io_error("create the directory of", error))?;
        }
        write_atomically(&target, self.new_text.as_bytes())
            .map_err(|error| io_error("write", error))
    }
}

/// The text of the file at `path`, `None` when it does not exist. With `lossy`, bytes
/// that are not UTF-8 are replaced rather than refused (for a file about to be replaced
/// whole).
pub fn read_text(path: &Path, shown: &str, lossy: bool) -> Result<Option<String>, ChangeError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(ChangeError::IsDirectory(shown.to_string())),
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(ChangeError::Io {
                action: "read",
                path: shown.to_string(),
                source: error,
            });
        }
    }
    let bytes = fs::read(path).map_err(|source| ChangeError::Io {
        action: "read",
        path: shown.to_string(),
        source,
    })?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(text)),
        Err(error) if lossy => Ok(Some(String::from_utf8_lossy(error.as_bytes()).into_owned())),
        Err(_) => Err(ChangeError::NotText(shown.to_string())),
    }
}

/// Distinguishes temporary files of concurrent writes within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to a new file beside `target` and renames it over `target`, keeping the
/// permissions of an existing `target`.
fn write_atomically(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing_permissions = fs::metadata(target).ok().map(|meta| meta.permissions());
    let (temp_path, mut file) = loop {
        let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let candidate = dir.join(format!(".{name}.larik-{}-{unique}.tmp", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => break (candidate, file),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    };
    let result = (|| {
        file.write_all(bytes)?;
        if let Some(permissions) = existing_permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&temp_path, target)
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage once the write failed.
        let _ = fs::remove_file(&temp_path);
    }
    result
}
