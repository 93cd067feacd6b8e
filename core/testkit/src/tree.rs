//! What stands at a path on disk, recursively and without following links, so a test can
//! compare a directory before and after something ran.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A directory's entries, a file's bytes and permission bits, or a link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// A directory and its entries by name.
    Dir(BTreeMap<String, Tree>),
    /// A file: its bytes and permission bits.
    File(Vec<u8>, u32),
    /// A symbolic link: its target.
    Link(PathBuf),
}

/// What stands at `path`; `None` when nothing does.
///
/// # Panics
/// When something there cannot be read, which leaves a test nothing to compare.
pub fn tree(path: &Path) -> Option<Tree> {
    let meta = path.symlink_metadata().ok()?;
    Some(if meta.file_type().is_symlink() {
        Tree::Link(std::fs::read_link(path).expect("a link"))
    } else if meta.is_dir() {
        let mut entries = BTreeMap::new();
        for entry in std::fs::read_dir(path).expect("list a directory") {
            let entry = entry.expect("a directory entry");
            if let Some(child) = tree(&entry.path()) {
                entries.insert(entry.file_name().to_string_lossy().into_owned(), child);
            }
        }
        Tree::Dir(entries)
    } else {
        Tree::File(
            std::fs::read(path).expect("read a file"),
            meta.permissions().mode() & 0o7777,
        )
    })
}
