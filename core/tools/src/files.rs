//! Where the file tools get the text they show and put the text they write.
//!
//! `read`, `write`, `edit` and `multi_edit` go through a [`FileAccess`] for file contents,
//! so a front end attached to an editor can serve reads from unsaved buffers and route
//! writes through the editor (whose review and undo then see every edit). [`DiskFiles`] is
//! the default: plain files, written atomically. Whether a path exists, is a directory, how
//! big it is and image bytes still come from the disk, since the seam speaks only text.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Reads and writes whole text files for the file tools.
#[async_trait::async_trait]
pub trait FileAccess: Send + Sync + std::fmt::Debug {
    /// Reads a whole text file (absolute path). A missing file is an error of kind
    /// [`io::ErrorKind::NotFound`]; text that is not UTF-8 one of kind
    /// [`io::ErrorKind::InvalidData`].
    async fn read_text(&self, path: &Path) -> io::Result<String>;

    /// Writes (creates or replaces) a whole text file (absolute path), creating missing
    /// parent directories.
    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()>;

    /// A sentence the edit tools add to their result after a successful write, saying where
    /// the change went when that is not plainly the disk (an editor applied it).
    fn write_remark(&self) -> Option<&'static str> {
        None
    }
}

/// The files on disk. A write goes to a temporary file beside the target that is then
/// renamed over it, so a crash or a full disk never leaves a half-written file; it keeps
/// the mode of the file it replaces, and through a symlink it replaces the file linked to.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFiles;

#[async_trait::async_trait]
impl FileAccess for DiskFiles {
    async fn read_text(&self, path: &Path) -> io::Result<String> {
        tokio::fs::read_to_string(path).await
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        let (path, bytes) = (path.to_path_buf(), text.as_bytes().to_vec());
        tokio::task::spawn_blocking(move || replace_file(&path, &bytes))
            .await
            .map_err(io::Error::other)?
    }
}

/// Writes `bytes` as the whole content of the file at `path`, following a symlink and
/// creating missing parent directories.
fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(error) if error.kind() == io::ErrorKind::NotFound => path.to_path_buf(),
        Err(error) => return Err(error),
    };
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("cannot create its directory {}: {error}", parent.display()),
            )
        })?;
    }
    write_atomically(&target, bytes)
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
