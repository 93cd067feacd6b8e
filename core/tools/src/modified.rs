//! Reading the modification times of many files found by a walk, cheaply.
//!
//! `glob` lists the newest matches first, so it needs every match's modification time.
//! Asking for it by absolute path makes the kernel look up each component of the path again
//! for every file, which on a deep tree costs more than the rest of the search. A walker
//! thread hands over a directory's entries one after another, so a [`ModifiedTimes`] (one
//! per thread) keeps the directory of the last match open once a second match turns up in
//! it, and asks for later times relative to it: one component to look up instead of the
//! whole path. A directory with one match costs what it did before.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ignore::DirEntry;

/// One walker thread's reader of modification times (see the module's paragraph).
#[derive(Debug, Default)]
pub(crate) struct ModifiedTimes {
    /// The directory of the last match, and whether it was seen with a match before.
    parent: Option<PathBuf>,
    #[cfg(target_os = "linux")]
    open: Option<rustix::fd::OwnedFd>,
}

impl ModifiedTimes {
    /// When `entry` (a file, symlinks not followed) was last modified; the Unix epoch when
    /// that cannot be read (the file went away during the walk), so it sorts last.
    pub(crate) fn of(&mut self, entry: &DirEntry) -> SystemTime {
        let path = entry.path();
        if let Some(time) = self.relative_to_parent(path) {
            return time;
        }
        entry
            .metadata()
            .ok()
            .and_then(|meta| meta.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// The time read relative to `path`'s directory when that directory was the last one
    /// seen (opened now if this is its second match); `None` when the whole path is the way.
    #[cfg(target_os = "linux")]
    fn relative_to_parent(&mut self, path: &Path) -> Option<SystemTime> {
        use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;

        // The walk makes each path by joining a name onto its directory's path, so the last
        // separator splits the two; comparing bytes costs less than comparing components.
        let bytes = path.as_os_str().as_bytes();
        let cut = bytes.iter().rposition(|byte| *byte == b'/')?;
        let (parent, name) = (&bytes[..cut], &bytes[cut + 1..]);
        if parent.is_empty() || name.is_empty() || name == b"." || name == b".." {
            return None;
        }
        let same_parent = self
            .parent
            .as_ref()
            .is_some_and(|known| known.as_os_str().as_bytes() == parent);
        if !same_parent {
            self.parent = Some(PathBuf::from(OsStr::from_bytes(parent)));
            self.open = None;
            return None;
        }
        let (parent, name) = (
            Path::new(OsStr::from_bytes(parent)),
            OsStr::from_bytes(name),
        );
        if self.open.is_none() {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            self.open = rustix::fs::open(parent, flags, Mode::empty()).ok();
        }
        let directory = self.open.as_ref()?;
        let found = rustix::fs::statx(
            directory,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::MTIME,
        )
        .ok()?;
        if found.stx_mask & StatxFlags::MTIME.bits() == 0 {
            return None;
        }
        let time = found.stx_mtime;
        if time.tv_sec >= 0 {
            SystemTime::UNIX_EPOCH
                .checked_add(Duration::new(time.tv_sec.unsigned_abs(), time.tv_nsec))
        } else {
            // Before the epoch: `tv_nsec` still counts forward from `tv_sec`.
            let whole = Duration::from_secs(time.tv_sec.unsigned_abs());
            SystemTime::UNIX_EPOCH
                .checked_sub(whole)?
                .checked_add(Duration::from_nanos(u64::from(time.tv_nsec)))
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn relative_to_parent(&mut self, _path: &Path) -> Option<SystemTime> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ignore::WalkBuilder;

    fn entries(root: &Path) -> Vec<DirEntry> {
        let mut found: Vec<DirEntry> = WalkBuilder::new(root)
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
            .collect();
        found.sort_by(|a, b| a.path().cmp(b.path()));
        found
    }

    #[test]
    fn times_match_what_the_whole_path_gives_in_and_across_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let times = [
            SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789),
            SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 1),
            SystemTime::UNIX_EPOCH - Duration::new(86_400, 0) + Duration::new(0, 500),
            SystemTime::UNIX_EPOCH + Duration::new(1_800_000_000, 999_999_999),
        ];
        let mut made = 0;
        for sub in ["a", "b/c", "d"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
            for file in 0..3 {
                let path = dir.path().join(sub).join(format!("f{file}.txt"));
                std::fs::write(&path, "x").expect("write");
                let handle = std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .expect("open");
                handle
                    .set_modified(times[made % times.len()])
                    .expect("set the time");
                made += 1;
            }
        }
        let mut reader = ModifiedTimes::default();
        let found = entries(dir.path());
        assert_eq!(found.len(), 9);
        for entry in &found {
            let expected = std::fs::symlink_metadata(entry.path())
                .and_then(|meta| meta.modified())
                .expect("the time");
            assert_eq!(reader.of(entry), expected, "{}", entry.path().display());
        }
        #[cfg(target_os = "linux")]
        assert!(reader.open.is_some(), "later matches in a directory use it");
    }

    #[test]
    fn a_file_gone_during_the_walk_sorts_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["one", "two", "three"] {
            std::fs::write(dir.path().join(name), "x").expect("write");
        }
        let found = entries(dir.path());
        for entry in &found {
            std::fs::remove_file(entry.path()).expect("remove");
        }
        let mut reader = ModifiedTimes::default();
        for entry in &found {
            assert_eq!(reader.of(entry), SystemTime::UNIX_EPOCH);
        }
    }
}
