//! The per-server log file: every message in and out (shortened), garbage the server wrote,
//! and lifecycle notes. The server's own stderr is appended to the same file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use larik_protocol::sync::locked;

use crate::LspError;

/// Messages longer than this are cut in the log; full diagnostics lists can be huge.
const MAX_LOGGED: usize = 2000;

/// An append-only log file shared by the connection's tasks; none when the file could not
/// be opened (a full or read-only data directory), and the server runs without one.
pub(crate) struct Log {
    file: Option<Mutex<File>>,
    started: Instant,
}

impl Log {
    /// Opens (creating the directory and file if needed) the log at `path`, and returns a
    /// second handle to the same file for the server's stderr.
    pub(crate) fn open(path: &Path) -> Result<(Self, File), LspError> {
        let error = |source| LspError::Log {
            path: PathBuf::from(path),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(error)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(error)?;
        let stderr = file.try_clone().map_err(error)?;
        Ok((
            Self {
                file: Some(Mutex::new(file)),
                started: Instant::now(),
            },
            stderr,
        ))
    }

    /// A log that keeps nothing.
    pub(crate) fn none() -> Self {
        Self {
            file: None,
            started: Instant::now(),
        }
    }

    /// Writes one line: `direction` is `-->` (to the server), `<--` (from it), `!!` for
    /// garbage, `##` for our own notes.
    pub(crate) fn line(&self, direction: &str, text: &str) {
        let Some(file) = &self.file else {
            return;
        };
        let shown = match text.char_indices().nth(MAX_LOGGED) {
            Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
            None => text.to_string(),
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut file = locked(file);
        // A log that cannot be written must not break the connection.
        let _ = writeln!(file, "[{elapsed:9.3}] {direction} {shown}");
    }
}
