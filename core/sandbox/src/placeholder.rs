//! Placeholders for protected paths that do not exist yet, so bubblewrap can bind them
//! read-only like the ones that do.
//!
//! A mount needs something to land on, so before a command starts, Larik puts an empty
//! directory or file at each missing protected path and bubblewrap binds it onto itself
//! read-only: inside the sandbox it cannot be written, and as a mount point it cannot be
//! removed or renamed. When the command ends the placeholder is removed again, so nothing
//! is left on disk. A placeholder is empty and dated at the epoch (1970-01-01), which is how
//! one is told from a user's own file, also after a crash left one behind. The one
//! exception to empty is `.git/commondir`: git reads that file whenever it exists and fails
//! on an empty one, so its placeholder holds `.`, which sends git to the `.git` directory
//! it is in, as if the file were not there. Placeholders a killed process left are removed
//! when the next sandbox is set up ([`sweep`]).
//!
//! Removing a placeholder that another running command has bound would take the mount
//! away inside that command's sandbox (the kernel detaches mounts on paths removed from
//! another mount namespace), so every command holds a shared lock on the placeholders it
//! uses, in any Larik process, and only the last one out removes it.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::protected::Kind;

/// A placeholder a command is using: it holds a shared lock on it until dropped, and
/// removes it on drop when no other command uses it any more.
#[derive(Debug)]
pub(crate) struct Placeholder {
    path: PathBuf,
    file: File,
    kind: Kind,
}

/// Puts a placeholder at the missing path `path` (or takes the one already there, made
/// by another command), locked for this command. `Ok(None)` when a real entry stands there
/// (someone created it meanwhile); the caller protects it like any existing path.
pub(crate) fn hold(path: &Path, kind: Kind) -> io::Result<Option<Placeholder>> {
    // A few rounds cover the races with other commands creating or removing the same
    // placeholder at the same moment.
    for _ in 0..8 {
        match path.symlink_metadata() {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                if !create(path, kind)? {
                    continue;
                }
            }
            Err(error) => return Err(error),
            Ok(meta) if !is_placeholder(path, &meta, kind) => return Ok(None),
            Ok(_) => {}
        }
        // Another process's sweep may remove it between the look and the open: look again.
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        file.lock_shared()?;
        // The placeholder may have been removed (or replaced) between the look and the
        // lock; only one that is still at the path counts.
        if same_entry(&file, path) {
            return Ok(Some(Placeholder {
                path: path.to_path_buf(),
                file,
                kind,
            }));
        }
    }
    Err(io::Error::other(format!(
        "{} kept changing while a placeholder was put there",
        path.display()
    )))
}

/// Removes the placeholders under the project at `root` that no command holds: those a
/// killed Larik process left behind. Run when a sandbox is set up, so a crash's leftovers
/// do not outlive the next start.
pub(crate) fn sweep(root: &Path) {
    for protected in crate::protected::protected_set(root).paths {
        let Ok(meta) = protected.path.symlink_metadata() else {
            continue;
        };
        if !is_placeholder(&protected.path, &meta, protected.kind) {
            continue;
        }
        // A command still using it holds a shared lock, in this process or another.
        let Ok(file) = File::open(&protected.path) else {
            continue;
        };
        // Locked, it is still ours to remove only if it is still the same placeholder.
        if file.try_lock().is_ok()
            && same_entry(&file, &protected.path)
            && protected
                .path
                .symlink_metadata()
                .is_ok_and(|meta| is_placeholder(&protected.path, &meta, protected.kind))
        {
            let _ = remove(&protected.path, protected.kind);
        }
    }
}

/// What a file placeholder at `path` holds: nothing, but `.` for a `commondir` (see the
/// module documentation).
fn file_content(path: &Path) -> &'static [u8] {
    if path.file_name().is_some_and(|name| name == "commondir") {
        b"."
    } else {
        b""
    }
}

/// Whether `meta` (of `path`) is a placeholder: an entry of the right kind dated at the
/// epoch, empty (or, for a file, holding only what [`file_content`] puts there).
pub(crate) fn is_placeholder(path: &Path, meta: &fs::Metadata, kind: Kind) -> bool {
    let dated = meta.mtime() == 0 && meta.mtime_nsec() == 0;
    dated
        && match kind {
            Kind::Dir => {
                meta.file_type().is_dir()
                    && fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
            }
            Kind::File => {
                let content = file_content(path);
                meta.file_type().is_file()
                    && meta.len() == content.len() as u64
                    && (content.is_empty() || fs::read(path).is_ok_and(|bytes| bytes == content))
            }
        }
}

/// Creates a placeholder at `path`: made under a temporary name, dated, then renamed into
/// place only if nothing is there, so no other process ever sees one that is not dated.
/// Returns false when something appeared at `path` first.
fn create(path: &Path, kind: Kind) -> io::Result<bool> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("a protected path has a name"))?;
    let temp = path.with_file_name(format!(
        ".{}.larik-placeholder-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    match kind {
        Kind::Dir => fs::create_dir(&temp)?,
        Kind::File => File::create_new(&temp)?.write_all(file_content(path))?,
    }
    let placed = File::open(&temp)
        .and_then(|file| file.set_modified(SystemTime::UNIX_EPOCH))
        .and_then(|()| rename_no_replace(&temp, path));
    match placed {
        Ok(()) => Ok(true),
        Err(error) => {
            let _ = remove(&temp, kind);
            if error.kind() == io::ErrorKind::AlreadyExists {
                Ok(false)
            } else {
                Err(error)
            }
        }
    }
}

/// `rename` that fails with `AlreadyExists` instead of replacing what is at `to`.
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    let c = |path: &Path| {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::other("a path with a NUL byte"))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both pointers are NUL-terminated strings that live across the call, which
    // only renames a directory entry.
    #[allow(unsafe_code)]
    let result = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `path` still names the entry `file` has open.
fn same_entry(file: &File, path: &Path) -> bool {
    match (file.metadata(), path.symlink_metadata()) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

fn remove(path: &Path, kind: Kind) -> io::Result<()> {
    match kind {
        Kind::Dir => fs::remove_dir(path),
        Kind::File => fs::remove_file(path),
    }
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        // Another command (here or in another Larik process) still holding its shared
        // lock keeps the placeholder; the last one removes it. Someone who wrote into it
        // in the meantime made it theirs: it stays.
        if self.file.try_lock().is_ok()
            && same_entry(&self.file, &self.path)
            && self
                .path
                .symlink_metadata()
                .is_ok_and(|meta| is_placeholder(&self.path, &meta, self.kind))
        {
            let _ = remove(&self.path, self.kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_is_removed_by_the_last_command_using_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(".larik");
        let first = hold(&path, Kind::Dir)
            .expect("held")
            .expect("a placeholder");
        let meta = path.symlink_metadata().expect("it exists");
        assert!(is_placeholder(&path, &meta, Kind::Dir));
        let second = hold(&path, Kind::Dir).expect("held").expect("the same one");
        drop(first);
        assert!(path.exists(), "the second command still uses it");
        drop(second);
        assert!(!path.exists(), "the last one out removed it");
        // Nothing else was left in the directory (no temporary names).
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn a_file_placeholder_that_someone_wrote_into_stays() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(".mcp.json");
        let held = hold(&path, Kind::File)
            .expect("held")
            .expect("a placeholder");
        assert_eq!(fs::read(&path).expect("read"), b"");
        fs::write(&path, "{\"mcpServers\":{}}").expect("the user writes it");
        drop(held);
        assert_eq!(
            fs::read_to_string(&path).expect("kept"),
            "{\"mcpServers\":{}}"
        );
    }

    #[test]
    fn a_sweep_removes_what_a_crash_left_but_not_what_a_command_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        fs::create_dir_all(root.join(".git/hooks")).expect("a repository");
        // Left by a killed process, whose locks went with it.
        let left = [root.join(".larik"), root.join(".git/commondir")];
        fs::create_dir(&left[0]).expect("mkdir");
        fs::write(&left[1], ".").expect("write");
        for path in &left {
            File::open(path)
                .and_then(|file| file.set_modified(SystemTime::UNIX_EPOCH))
                .expect("dated");
        }
        // In use by a running command.
        let held = hold(&root.join(".claude"), Kind::Dir)
            .expect("held")
            .expect("a placeholder");
        // The user's own empty file.
        fs::write(root.join(".mcp.json"), "").expect("write");
        sweep(root);
        assert!(
            !left[0].exists() && !left[1].exists(),
            "the leftovers are gone"
        );
        assert!(root.join(".claude").exists(), "a held placeholder stays");
        assert!(root.join(".mcp.json").exists(), "a user's file stays");
        drop(held);
        assert!(!root.join(".claude").exists());
    }

    #[test]
    fn the_commondir_placeholder_points_git_at_its_own_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("commondir");
        let held = hold(&path, Kind::File)
            .expect("held")
            .expect("a placeholder");
        assert_eq!(fs::read(&path).expect("read"), b".");
        let meta = path.symlink_metadata().expect("stat");
        assert!(is_placeholder(&path, &meta, Kind::File));
        drop(held);
        assert!(!path.exists());
    }

    #[test]
    fn a_real_entry_is_not_a_placeholder_and_a_stale_placeholder_is_reused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = dir.path().join(".claude");
        fs::create_dir(&real).expect("mkdir");
        assert!(hold(&real, Kind::Dir).expect("looked").is_none());
        // One left behind by a crash: empty and dated at the epoch.
        let stale = dir.path().join(".larik");
        fs::create_dir(&stale).expect("mkdir");
        File::open(&stale)
            .and_then(|file| file.set_modified(SystemTime::UNIX_EPOCH))
            .expect("dated");
        let held = hold(&stale, Kind::Dir).expect("held").expect("reused");
        drop(held);
        assert!(!stale.exists(), "the stale placeholder was cleaned up");
        assert!(real.exists());
    }
}
