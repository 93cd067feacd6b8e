//! Where the file tools get the text they show and put the text they write.
//!
//! `read`, `write`, `edit` and `multi_edit` go through a [`FileAccess`] for file contents,
//! so a front end attached to an editor can serve reads from unsaved buffers and route
//! writes through the editor (whose review and undo then see every edit). [`DiskFiles`] is
//! the default: plain files, written atomically. Whether a path exists, is a directory, how
//! big it is and image bytes still come from the disk, since the seam speaks only text.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use tokio::io::AsyncWriteExt;

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
        // The text goes to the file in pieces (tokio's file writes each on the blocking
        // pool), so a file of many megabytes is not copied whole for the blocking task.
        let path = path.to_path_buf();
        // A write dropped part way (its call cancelled) leaves no temporary file behind,
        // even when it is dropped while the blocking pool is still making that file.
        let leftover = Leftover::default();
        let state = Arc::clone(&leftover.0);
        let temp = blocking(move || {
            let temp = TempFile::beside(&path)?;
            let mut state = locked(&state);
            if state.dropped {
                let _ = fs::remove_file(&temp.path);
                return Err(io::Error::other("the write was dropped"));
            }
            state.path = Some(temp.path.clone());
            Ok(temp)
        })
        .await?;
        let mut file = tokio::fs::File::from_std(temp.file);
        let written = async {
            file.write_all(text.as_bytes()).await?;
            file.flush().await
        }
        .await;
        let file = file.into_std().await;
        let (temp_path, target, permissions) = (temp.path, temp.target, temp.permissions);
        blocking(move || {
            written.and_then(|()| {
                if let Some(permissions) = permissions {
                    file.set_permissions(permissions)?;
                }
                file.sync_all()?;
                drop(file);
                fs::rename(&temp_path, &target)
            })
        })
        // A failed write drops `leftover`, which removes the temporary file.
        .await?;
        leftover.disarm();
        Ok(())
    }
}

/// A write's temporary file, removed when the write is dropped before it is renamed into
/// place. The blocking task that makes the file records its path here, or removes the file
/// itself when the write was dropped meanwhile.
#[derive(Default)]
struct Leftover(Arc<Mutex<LeftoverState>>);

#[derive(Default)]
struct LeftoverState {
    path: Option<PathBuf>,
    dropped: bool,
}

impl Leftover {
    /// The file was renamed into place: nothing to remove.
    fn disarm(&self) {
        locked(&self.0).path = None;
    }
}

impl Drop for Leftover {
    fn drop(&mut self) {
        let mut state = locked(&self.0);
        state.dropped = true;
        if let Some(path) = state.path.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

/// A new, empty temporary file beside the file a write replaces, to be renamed over it.
struct TempFile {
    path: PathBuf,
    file: fs::File,
    /// The file it replaces, symlinks followed.
    target: PathBuf,
    /// The permissions of the file it replaces, if that exists.
    permissions: Option<fs::Permissions>,
}

impl TempFile {
    /// Follows a symlink at `path` and creates missing parent directories first.
    fn beside(path: &Path) -> io::Result<TempFile> {
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
        let dir = target.parent().unwrap_or(Path::new("/"));
        let name = target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let permissions = fs::metadata(&target).ok().map(|meta| meta.permissions());
        loop {
            let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let candidate = dir.join(format!(".{name}.larik-{}-{unique}.tmp", std::process::id()));
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&candidate)
            {
                Ok(file) => {
                    return Ok(TempFile {
                        path: candidate,
                        file,
                        target,
                        permissions,
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

/// Distinguishes temporary files of concurrent writes within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);
