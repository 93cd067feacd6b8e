//! The per-server log, `<data dir>/logs/mcp-<name>.log`: when it started and how, why it
//! failed, what it said through MCP logging, and (for a stdio server) its own stderr.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use larik_protocol::sync::locked;

/// Lines longer than this are cut in the log.
const MAX_LOGGED: usize = 2000;

/// An append-only log file, opened (with its directory) at its first line, so a server that
/// never starts costs no file; a log that cannot be written is no error for the server.
pub struct ServerLog {
    file: OnceLock<Option<Mutex<File>>>,
    path: PathBuf,
    started: Instant,
}

impl ServerLog {
    /// The log of the server `name` in `logs_dir`.
    pub fn open(logs_dir: &Path, name: &str) -> Self {
        ServerLog {
            file: OnceLock::new(),
            path: logs_dir.join(format!("mcp-{}.log", crate::naming::sanitize(name))),
            started: Instant::now(),
        }
    }

    /// The open file, or `None` when it cannot be opened.
    fn file(&self) -> Option<&Mutex<File>> {
        self.file
            .get_or_init(|| {
                let dir = self.path.parent()?;
                std::fs::create_dir_all(dir)
                    .and_then(|()| {
                        OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&self.path)
                    })
                    .ok()
                    .map(Mutex::new)
            })
            .as_ref()
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the file, for a child's stderr.
    pub(crate) fn for_stderr(&self) -> Option<File> {
        self.file().and_then(|file| locked(file).try_clone().ok())
    }

    /// Writes one line.
    pub fn line(&self, text: &str) {
        let Some(file) = self.file() else {
            return;
        };
        let shown = match text.char_indices().nth(MAX_LOGGED) {
            Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
            None => text.to_string(),
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        let _ = writeln!(locked(file), "[larik {elapsed:9.3}] {shown}");
    }
}
