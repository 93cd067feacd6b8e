//! The before-and-after guard: what a sandbox cannot make read-only, Larik puts back.
//!
//! Landlock can only grant access beneath a directory, never take it back for a path
//! below, so under Landlock the protected paths inside the writable project are writable.
//! Before such a command runs, [`Snapshot::of_all`] records every protected path (each file's
//! bytes and mode, each directory's entries, each link's target, or that nothing is there);
//! once the command and everything it started have ended, [`Snapshot::restore`] compares and
//! puts back what changed: created entries are removed, changed files rewritten (a new file
//! renamed over the entry, which also cuts a hard link made to it), removed ones recreated.
//! Nothing is followed through a symbolic link. Inside `.git/modules`, the submodules'
//! object stores (`objects/`) are not recorded: they hold no code git runs.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::protected::ProtectedSet;

/// What a command did to a protected path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// It created it.
    Created,
    /// It changed it (content, permissions, type or link target).
    Changed,
    /// It removed (or renamed away) it.
    Removed,
}

/// A protected path a sandboxed command changed, and whether it was put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedChange {
    /// The path, relative to the project root.
    pub path: PathBuf,
    /// What the command did.
    pub change: ChangeKind,
    /// `Ok` when it is back as it was; otherwise why it could not be put back.
    pub restored: Result<(), RestoreError>,
}

/// Why a protected path could not be put back: the failed file system call's error, kept
/// as its kind and message so a [`ProtectedChange`] can be cloned and compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RestoreError {
    /// What kind of failure it was.
    pub kind: io::ErrorKind,
    /// The error's message.
    message: String,
}

impl From<io::Error> for RestoreError {
    fn from(error: io::Error) -> Self {
        RestoreError {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

impl fmt::Display for ProtectedChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (did, undone) = match self.change {
            ChangeKind::Created => ("created", "removed again"),
            ChangeKind::Changed => ("changed", "put back"),
            ChangeKind::Removed => ("removed", "restored"),
        };
        match &self.restored {
            Ok(()) => write!(f, "{} ({did}; {undone})", self.path.display()),
            Err(why) => write!(
                f,
                "{} ({did}; could not be put back: {why})",
                self.path.display()
            ),
        }
    }
}

/// What a file system entry was, enough to tell a change and to put it back.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        stamp: Stamp,
        bytes: Vec<u8>,
    },
    Link {
        target: PathBuf,
    },
    /// A FIFO, socket or device: told apart by its stamp, not restorable.
    Other {
        stamp: Stamp,
    },
    /// A directory not followed (an object store).
    Unread,
}

/// An entry's identity and times: any write, permission change or new link changes the
/// change time, which no program can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    nlink: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Self {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            nlink: meta.nlink(),
        }
    }
}

/// How much of a protected path the snapshot covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// The entry and everything beneath it.
    Whole,
    /// Only that it is a directory (`.git`, whose protected entries are covered one by one).
    TypeOnly,
}

/// The protected paths of one project before a command ran.
#[derive(Debug)]
pub(crate) struct Snapshot {
    root: PathBuf,
    /// The covered paths (relative), parents first.
    covered: Vec<(PathBuf, Depth)>,
    /// Every entry found, by relative path; a covered path missing here was absent.
    nodes: BTreeMap<PathBuf, Node>,
}

impl Snapshot {
    /// Records every protected path of `set` (in the project at `root`); `.git`, when it is
    /// a directory, only as one (its protected entries are in `set`).
    pub(crate) fn of_all(root: &Path, set: &ProtectedSet) -> Self {
        let mut snapshot = Self::empty(root);
        if set.git_dir.is_some() {
            snapshot.cover(PathBuf::from(".git"), Depth::TypeOnly);
        }
        for protected in &set.paths {
            snapshot.cover(protected.relative.clone(), Depth::Whole);
        }
        snapshot
    }

    /// Records the protected paths `relatives` (relative to `root`), each with everything
    /// beneath it.
    pub(crate) fn of<'a>(root: &Path, relatives: impl IntoIterator<Item = &'a Path>) -> Self {
        let mut snapshot = Self::empty(root);
        for relative in relatives {
            snapshot.cover(relative.to_path_buf(), Depth::Whole);
        }
        snapshot
    }

    fn empty(root: &Path) -> Self {
        Snapshot {
            root: root.to_path_buf(),
            covered: Vec::new(),
            nodes: BTreeMap::new(),
        }
    }

    /// Whether nothing is covered (nothing to put back).
    pub(crate) fn is_empty(&self) -> bool {
        self.covered.is_empty()
    }

    fn cover(&mut self, relative: PathBuf, depth: Depth) {
        self.record(&relative, depth);
        self.covered.push((relative, depth));
    }

    fn record(&mut self, relative: &Path, depth: Depth) {
        let path = self.root.join(relative);
        let Ok(meta) = path.symlink_metadata() else {
            return;
        };
        let node = node(&path, &meta, skipped(relative));
        let descend = depth == Depth::Whole && matches!(node, Node::Dir { .. });
        self.nodes.insert(relative.to_path_buf(), node);
        if descend {
            for name in children(&path) {
                self.record(&relative.join(name), Depth::Whole);
            }
        }
    }

    /// Puts back every covered path that changed; returns what changed, each with whether
    /// it could be put back. Call it only once the command and everything it started have
    /// ended.
    pub(crate) fn restore(&self) -> Vec<ProtectedChange> {
        let mut changes = Vec::new();
        for (relative, depth) in &self.covered {
            self.restore_entry(relative, *depth, &mut changes);
        }
        changes
    }

    fn restore_entry(&self, relative: &Path, depth: Depth, changes: &mut Vec<ProtectedChange>) {
        let path = self.root.join(relative);
        let before = self.nodes.get(relative);
        let now = path.symlink_metadata().ok();
        let mut report = |change, restored: io::Result<()>| {
            changes.push(ProtectedChange {
                path: relative.to_path_buf(),
                change,
                restored: restored.map_err(RestoreError::from),
            });
        };
        match (before, now) {
            (None | Some(Node::Unread), None) => {}
            (Some(Node::Unread), Some(_)) => {}
            (None, Some(meta)) => report(ChangeKind::Created, remove_entry(&path, &meta)),
            (Some(_), None) => report(ChangeKind::Removed, self.recreate(relative, depth)),
            (Some(node), Some(meta)) if !same_type(node, &meta) => {
                let restored =
                    remove_entry(&path, &meta).and_then(|()| self.recreate(relative, depth));
                report(ChangeKind::Changed, restored);
            }
            (Some(Node::Dir { mode }), Some(meta)) => {
                if meta.permissions().mode() & 0o7777 != *mode {
                    let restored = fs::set_permissions(&path, fs::Permissions::from_mode(*mode));
                    report(ChangeKind::Changed, restored);
                }
                if depth == Depth::Whole {
                    let mut names: Vec<PathBuf> = children(&path)
                        .into_iter()
                        .map(|name| relative.join(name))
                        .collect();
                    names.extend(
                        self.nodes
                            .keys()
                            .filter(|key| key.parent() == Some(relative))
                            .cloned(),
                    );
                    names.sort();
                    names.dedup();
                    for child in names {
                        self.restore_entry(&child, Depth::Whole, changes);
                    }
                }
            }
            (Some(Node::File { mode, stamp, bytes }), Some(meta)) => {
                if Stamp::of(&meta) != *stamp
                    && (meta.nlink() > 1
                        || meta.permissions().mode() & 0o7777 != *mode
                        || fs::read(&path).ok().as_deref() != Some(bytes.as_slice()))
                {
                    report(ChangeKind::Changed, write_file(&path, bytes, *mode));
                }
            }
            (Some(Node::Link { target }), Some(_)) => {
                if fs::read_link(&path).ok().as_ref() != Some(target) {
                    let restored = fs::remove_file(&path)
                        .and_then(|()| std::os::unix::fs::symlink(target, &path));
                    report(ChangeKind::Changed, restored);
                }
            }
            (Some(Node::Other { stamp }), Some(meta)) => {
                if Stamp::of(&meta) != *stamp {
                    report(
                        ChangeKind::Changed,
                        Err(io::Error::other("it is not a file Larik can rewrite")),
                    );
                }
            }
        }
    }

    /// Recreates `relative` (and, for a whole entry, everything beneath it) as recorded.
    fn recreate(&self, relative: &Path, depth: Depth) -> io::Result<()> {
        let path = self.root.join(relative);
        match self.nodes.get(relative) {
            None | Some(Node::Unread) => Ok(()),
            Some(Node::Dir { mode }) => {
                fs::create_dir(&path)?;
                fs::set_permissions(&path, fs::Permissions::from_mode(*mode))?;
                if depth == Depth::Whole {
                    let children: Vec<&PathBuf> = self
                        .nodes
                        .keys()
                        .filter(|key| key.parent() == Some(relative))
                        .collect();
                    for child in children {
                        self.recreate(child, Depth::Whole)?;
                    }
                }
                Ok(())
            }
            Some(Node::File { mode, bytes, .. }) => write_file(&path, bytes, *mode),
            Some(Node::Link { target }) => std::os::unix::fs::symlink(target, &path),
            Some(Node::Other { .. }) => {
                Err(io::Error::other("it was not a file Larik can recreate"))
            }
        }
    }
}

/// Whether the object stores of submodules' repositories are left out.
fn skipped(relative: &Path) -> bool {
    relative.starts_with(".git/modules")
        && relative.file_name().is_some_and(|name| name == "objects")
}

fn node(path: &Path, meta: &fs::Metadata, skip: bool) -> Node {
    let kind = meta.file_type();
    let mode = meta.permissions().mode() & 0o7777;
    if kind.is_symlink() {
        Node::Link {
            target: fs::read_link(path).unwrap_or_default(),
        }
    } else if kind.is_dir() && skip {
        Node::Unread
    } else if kind.is_dir() {
        Node::Dir { mode }
    } else if kind.is_file() {
        match fs::read(path) {
            Ok(bytes) => Node::File {
                mode,
                stamp: Stamp::of(meta),
                bytes,
            },
            // Unreadable: any change to it shows in its stamp, but it cannot be rewritten.
            Err(_) => Node::Other {
                stamp: Stamp::of(meta),
            },
        }
    } else {
        Node::Other {
            stamp: Stamp::of(meta),
        }
    }
}

fn same_type(node: &Node, meta: &fs::Metadata) -> bool {
    let kind = meta.file_type();
    match node {
        Node::Dir { .. } | Node::Unread => kind.is_dir(),
        Node::File { .. } => kind.is_file(),
        Node::Link { .. } => kind.is_symlink(),
        Node::Other { .. } => !kind.is_dir() && !kind.is_file() && !kind.is_symlink(),
    }
}

/// The names in directory `path`, sorted (none when it cannot be read).
fn children(path: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().into())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Removes whatever is at `path` (a directory with everything in it), never following a
/// link.
fn remove_entry(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    if meta.file_type().is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// Writes `bytes` with `mode` to a new file beside `path` and renames it over the entry,
/// so a link planted there is replaced rather than written through.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(
        ".{name}.larik-restore-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = fs::write(&temp, bytes)
        .and_then(|()| fs::set_permissions(&temp, fs::Permissions::from_mode(mode)))
        .and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protected::protected_set;

    fn world() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").expect("write");
        fs::write(root.join(".git/config"), "[core]\n").expect("write");
        fs::create_dir_all(root.join(".git/objects")).expect("mkdir");
        fs::write(root.join(".mcp.json"), "{}").expect("write");
        (dir, root)
    }

    fn changed(changes: &[ProtectedChange]) -> Vec<(String, ChangeKind)> {
        changes
            .iter()
            .map(|change| {
                assert_eq!(change.restored, Ok(()), "{change}");
                (change.path.display().to_string(), change.change)
            })
            .collect()
    }

    #[test]
    fn nothing_changed_reports_nothing() {
        let (_dir, root) = world();
        let snapshot = Snapshot::of_all(&root, &protected_set(&root));
        fs::write(root.join("src.txt"), "ordinary work").expect("write");
        fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("git's own files");
        assert_eq!(snapshot.restore(), Vec::new());
    }

    #[test]
    fn created_changed_and_removed_paths_are_put_back() {
        let (_dir, root) = world();
        let snapshot = Snapshot::of_all(&root, &protected_set(&root));
        fs::write(root.join(".git/hooks/pre-commit"), "evil").expect("write");
        fs::write(root.join(".git/config"), "[core]\nfsmonitor = evil\n").expect("write");
        fs::create_dir_all(root.join(".claude")).expect("mkdir");
        fs::write(root.join(".claude/settings.json"), "{}").expect("write");
        fs::remove_file(root.join(".mcp.json")).expect("remove");
        fs::create_dir_all(root.join(".git/modules/sub/hooks")).expect("mkdir");
        let changes = snapshot.restore();
        assert_eq!(
            changed(&changes),
            [
                (".git/hooks/pre-commit".into(), ChangeKind::Created),
                (".git/config".into(), ChangeKind::Changed),
                (".git/modules".into(), ChangeKind::Created),
                (".claude".into(), ChangeKind::Created),
                (".mcp.json".into(), ChangeKind::Removed),
            ]
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert_eq!(
            fs::read_to_string(root.join(".git/config")).expect("read"),
            "[core]\n"
        );
        assert!(!root.join(".claude").exists());
        assert!(!root.join(".git/modules").exists());
        assert_eq!(
            fs::read_to_string(root.join(".mcp.json")).expect("read"),
            "{}"
        );
        assert_eq!(
            Snapshot::of_all(&root, &protected_set(&root)).restore(),
            Vec::new()
        );
    }

    #[test]
    fn a_replaced_git_directory_and_planted_links_are_undone() {
        let (_dir, root) = world();
        let outside = tempfile::tempdir().expect("temp dir");
        let snapshot = Snapshot::of_all(&root, &protected_set(&root));
        // `.git` renamed away and a new one made with other hooks; a hard link to the
        // config; a symlink where the settings directory would be.
        fs::rename(root.join(".git"), root.join(".git.old")).expect("rename");
        fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        fs::write(root.join(".git/hooks/post-checkout"), "evil").expect("write");
        std::os::unix::fs::symlink(outside.path(), root.join(".larik")).expect("symlink");
        let changes = snapshot.restore();
        let paths: Vec<String> = changed(&changes)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert!(
            paths.contains(&".git/hooks/post-checkout".to_string()),
            "{paths:?}"
        );
        assert!(paths.contains(&".git/config".to_string()), "{paths:?}");
        assert!(paths.contains(&".larik".to_string()), "{paths:?}");
        assert!(!root.join(".git/hooks/post-checkout").exists());
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert_eq!(
            fs::read_to_string(root.join(".git/config")).expect("read"),
            "[core]\n"
        );
        assert!(root.join(".larik").symlink_metadata().is_err());

        // A hard link made to the config: the config is rewritten as a new file, so the
        // link no longer reaches it.
        let snapshot = Snapshot::of_all(&root, &protected_set(&root));
        fs::hard_link(root.join(".git/config"), root.join("config-link")).expect("link");
        fs::write(root.join("config-link"), "[core]\nhooksPath = /tmp\n").expect("write");
        assert_eq!(
            changed(&snapshot.restore()),
            [(".git/config".into(), ChangeKind::Changed)]
        );
        fs::write(root.join("config-link"), "[core]\nhooksPath = /x\n").expect("write");
        assert_eq!(
            fs::read_to_string(root.join(".git/config")).expect("read"),
            "[core]\n"
        );
    }

    #[test]
    fn a_single_protected_link_is_put_back() {
        let (_dir, root) = world();
        let target = tempfile::tempdir().expect("temp dir");
        std::os::unix::fs::symlink(target.path(), root.join(".claude")).expect("symlink");
        let snapshot = Snapshot::of(&root, [Path::new(".claude")]);
        fs::remove_file(root.join(".claude")).expect("remove");
        fs::create_dir(root.join(".claude")).expect("mkdir");
        fs::write(root.join(".git/config"), "not covered here").expect("write");
        assert_eq!(
            changed(&snapshot.restore()),
            [(".claude".into(), ChangeKind::Changed)]
        );
        assert_eq!(
            fs::read_link(root.join(".claude")).expect("a link again"),
            target.path()
        );
    }
}
